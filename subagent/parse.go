package subagent

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/permission"
)

// Parse reads an agent file in Claude Code's format: a first line "---", YAML front
// matter, a closing line "---", then the body, which (trimmed) is the Prompt. path is
// the file's path; it becomes the Source and names the file in every refusal.
//
// The front matter keys read are name and description (both required), tools,
// disallowedTools, model and permissionMode. tools and disallowedTools take a
// comma-separated string ("Read, Grep"), a flow list ([Read, Grep]) or a block list of
// "- Read" lines; an absent or empty tools lets the agent use every tool of the parent,
// "tools: []" is refused as ambiguous, and a duplicate name counts once. hooks,
// isolation, allowed-tools and misspellings of the keys read refuse the file (see the
// package invariants), as does a key given twice; every other key, with whatever value,
// is ignored.
//
// Values may be bare, 'single-quoted' (a doubled quote stands for one), "double-quoted"
// (with the escapes \" \\ \/ \n \t \r \uXXXX), or "|" (literal) and ">" (folded) block
// scalars whose text is the indented lines below the key. A bare value may continue on
// indented lines, which fold into one line. Values are trimmed of surrounding white
// space, and a bare ~ or null is no value. Lines starting with '#' are comments; a UTF-8
// byte order mark and CRLF line endings are accepted.
//
// Every refusal is a *sema.Error with CodeDefinitionInvalid whose message names the file,
// the line when there is one, and what to change. A definition Parse returns passes
// Validate.
func Parse(path string, data []byte) (Definition, error) {
	p := parser{path: path}
	if p.path == "" {
		p.path = "agent file"
	}
	if !utf8.Valid(data) {
		return Definition{}, p.fail(0, "the file is not valid UTF-8; save it as UTF-8")
	}
	text := strings.TrimPrefix(string(data), "\uFEFF")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	lines := strings.Split(text, "\n")
	if !isFence(lines[0]) {
		return Definition{}, p.fail(0, "an agent file starts with front matter: a line ---, the keys name and description, "+
			"and a closing line ---, followed by the agent's prompt")
	}
	end := -1
	for i := 1; i < len(lines); i++ {
		if isFence(lines[i]) {
			end = i
			break
		}
	}
	if end < 0 {
		return Definition{}, p.fail(1, "the front matter opened here is never closed; add a line --- after its last key")
	}
	entries, err := p.entries(lines[1:end], 2)
	if err != nil {
		return Definition{}, err
	}
	d := Definition{Source: path, Prompt: strings.TrimSpace(strings.Join(lines[end+1:], "\n"))}
	var named, described bool
	for _, e := range entries {
		if err := p.apply(&d, e); err != nil {
			return Definition{}, err
		}
		named = named || e.key == "name"
		described = described || e.key == "description"
	}
	if !named {
		return Definition{}, p.fail(0, "%s to the front matter", checkName(""))
	}
	if !described {
		return Definition{}, p.fail(0, "%s", checkDescription(""))
	}
	return d, nil
}

// apply checks one front matter entry and sets what it says on d; a key Parse does not
// read is ignored (the refused ones were refused by entries).
func (p *parser) apply(d *Definition, e *entry) error {
	switch e.key {
	case "name":
		s, err := p.scalar(e)
		if err != nil {
			return err
		}
		if msg := checkName(s); msg != "" {
			return p.fail(e.n, "%s", msg)
		}
		d.Name = s
	case "description":
		s, err := p.scalar(e)
		if err != nil {
			return err
		}
		if msg := checkDescription(s); msg != "" {
			return p.fail(e.n, "%s", msg)
		}
		d.Description = s
	case "model":
		s, err := p.scalar(e)
		if err != nil {
			return err
		}
		if msg := checkModel(s); msg != "" {
			return p.fail(e.n, "%s", msg)
		}
		d.Model = s
	case "permissionMode":
		s, err := p.scalar(e)
		if err != nil {
			return err
		}
		if s == "" {
			return nil // no value: the parent's mode, as when the key is absent
		}
		m, err := permission.ParseMode(s)
		if err != nil {
			refusal := p.fail(e.n, "%s", checkMode(s))
			refusal.Err = err
			return refusal
		}
		d.PermissionMode = m
	case "tools":
		tools, err := p.list(e)
		if err != nil {
			return err
		}
		if tools != nil && len(tools) == 0 {
			return p.fail(e.n, "tools: [] lists no tool; leave tools out to let the agent use every tool "+
				"of the parent, or list the tools it may use")
		}
		d.Tools = tools
	case "disallowedTools":
		tools, err := p.list(e)
		if err != nil {
			return err
		}
		if len(tools) > 0 {
			d.DisallowedTools = tools
		}
	}
	return nil
}

// isFence reports whether a line opens or closes the front matter.
func isFence(line string) bool { return strings.TrimRight(line, " \t\r") == "---" }

// readKeys are the front matter keys Parse reads.
var readKeys = []string{"name", "description", "tools", "disallowedTools", "model", "permissionMode"}

// refusedKeys holds, by folded spelling (see foldKey), the keys whose meaning sema does
// not carry out and would narrow what the agent may do: dropping one would run the agent
// with more than its author allowed.
var refusedKeys = map[string]string{
	"hooks": "hooks in an agent file are not supported; remove the key, or configure the hooks in settings, " +
		"where they guard every leg",
	"isolation": "isolation is not supported; remove the key (the agent works in the task's workspace, " +
		"inside the parent's fence)",
	"tool":           "the key is tools, not tool; write tools",
	"disallowedtool": "the key is disallowedTools, not disallowedTool; write disallowedTools",
	"allowedtools": "allowed-tools is not a key of agent files (it belongs to skills and restricts nothing there); " +
		"list the tools the agent may use under tools",
}

// foldKey spells a key without case, '-' or '_', so that permission_mode and
// PermissionMode are recognized as misspellings of permissionMode rather than ignored.
func foldKey(k string) string {
	return strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(k))
}

// srcLine is one line of the front matter and its number in the file.
type srcLine struct {
	n    int
	text string
}

// entry is one top-level key of the front matter with the text of its value: what
// follows "key:" on its line and the lines that continue it.
type entry struct {
	key    string
	n      int
	inline string
	more   []srcLine
}

type parser struct {
	path string
}

// fail builds a refusal naming the file and, when n > 0, the line.
func (p *parser) fail(n int, format string, args ...any) *sema.Error {
	msg := fmt.Sprintf(format, args...)
	if n > 0 {
		return sema.Errorf(CodeDefinitionInvalid, "%s:%d: %s", p.path, n, msg).With("path", p.path).With("line", n)
	}
	return sema.Errorf(CodeDefinitionInvalid, "%s: %s", p.path, msg).With("path", p.path)
}

// entries splits the front matter into top-level keys. A key starts at column 0; the
// indented lines, blank lines and column-0 list items ("- x") after it continue its
// value. Column-0 comments are dropped here; indented ones are left to the value, since
// in a block scalar they are text.
func (p *parser) entries(lines []string, first int) ([]*entry, error) {
	var out []*entry
	seen := map[string]int{}
	var cur *entry
	for i, t := range lines {
		n := first + i
		t = strings.TrimRight(t, "\r")
		switch {
		case strings.TrimSpace(t) == "":
			if cur != nil {
				cur.more = append(cur.more, srcLine{n, t})
			}
			continue
		case t[0] == '\t':
			return nil, p.fail(n, "the line is indented with a tab; YAML indents with spaces")
		case t[0] == '#':
			continue
		case t[0] == ' ' || isItem(t):
			if cur == nil {
				return nil, p.fail(n, "this line continues a value, but no key comes before it; start the front matter "+
					"with a key such as \"name: code-reviewer\" at the start of a line")
			}
			cur.more = append(cur.more, srcLine{n, t})
			continue
		}
		key, rest, ok := splitKey(t)
		if !ok {
			return nil, p.fail(n, "expected \"key: value\", found %s; a value that goes on over several lines "+
				"continues on indented lines", short(t))
		}
		if prev, dup := seen[key]; dup {
			return nil, p.fail(n, "the key %s appears twice (first on line %d); keep one", clip(key), prev)
		}
		seen[key] = n
		folded := foldKey(key)
		if msg, refused := refusedKeys[folded]; refused {
			return nil, p.fail(n, "%s", msg)
		}
		for _, k := range readKeys {
			if folded == foldKey(k) && key != k {
				return nil, p.fail(n, "the key %s is not read; write %s (keys are case-sensitive)", key, k)
			}
		}
		cur = &entry{key: key, n: n, inline: rest}
		out = append(out, cur)
	}
	return out, nil
}

// splitKey splits "key: value" at the first colon followed by a space, a tab or the
// end of the line. A key that starts with a YAML indicator (a quote, a bracket, an
// anchor…) is not one this parser reads.
func splitKey(t string) (key, rest string, ok bool) {
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case '#':
			if i > 0 && (t[i-1] == ' ' || t[i-1] == '\t') {
				return "", "", false // a comment before any colon
			}
		case ':':
			if i+1 < len(t) && t[i+1] != ' ' && t[i+1] != '\t' {
				continue
			}
			key = strings.TrimRight(t[:i], " \t")
			if key == "" || strings.ContainsRune("\"'[]{}&*!|>%@`,?:-#", rune(key[0])) {
				return "", "", false
			}
			return key, strings.TrimLeft(t[i+1:], " \t"), true
		}
	}
	return "", "", false
}

// isItem reports whether s (with its indentation removed) is a block list item.
func isItem(s string) bool {
	return s == "-" || strings.HasPrefix(s, "- ") || strings.HasPrefix(s, "-\t")
}

// indentOf counts a line's leading spaces.
func indentOf(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }

// isComment reports whether a line is a comment line at any indentation.
func isComment(s string) bool { return strings.HasPrefix(strings.TrimLeft(s, " \t"), "#") }

// significant returns the lines of more that are neither blank nor comments.
func significant(more []srcLine) []srcLine {
	var out []srcLine
	for _, l := range more {
		if strings.TrimSpace(l.text) != "" && !isComment(l.text) {
			out = append(out, l)
		}
	}
	return out
}

// stripComment cuts a " #" comment off a bare value.
func stripComment(s string) string {
	for i := 1; i < len(s); i++ {
		if s[i] == '#' && (s[i-1] == ' ' || s[i-1] == '\t') {
			return s[:i]
		}
	}
	if strings.HasPrefix(s, "#") {
		return ""
	}
	return s
}

// short quotes a value for a message, clipped.
func short(s string) string { return strconv.Quote(clip(s)) }

// clip cuts a value to a length a message can carry; a 256 KiB line quoted whole would
// bury the sentence around it.
func clip(s string) string {
	if utf8.RuneCountInString(s) > 60 {
		r := []rune(s)
		s = string(r[:57]) + "..."
	}
	return s
}

// scalar reads the single value of e.
func (p *parser) scalar(e *entry) (string, error) {
	v := e.inline
	switch {
	case v == "" || v[0] == '#':
		return p.continued(e, "")
	case v[0] == '|' || v[0] == '>':
		return p.block(e)
	case v[0] == '"' || v[0] == '\'':
		s, err := p.quotedValue(e.key, e.n, v)
		if err != nil {
			return "", err
		}
		if extra := significant(e.more); len(extra) > 0 {
			return "", p.fail(extra[0].n, "unexpected line after the quoted value of %s; a quoted value must close "+
				"on the line it starts", e.key)
		}
		return strings.TrimSpace(s), nil
	}
	s, err := p.bare(e.key, e.n, v)
	if err != nil {
		return "", err
	}
	if len(significant(e.more)) == 0 {
		switch s {
		case "~", "null", "Null", "NULL":
			return "", nil
		}
	}
	return p.continued(e, s)
}

// bare reads a bare value that starts on its key's line.
func (p *parser) bare(key string, n int, v string) (string, error) {
	switch {
	case v[0] == '[':
		return "", p.fail(n, "%s takes one value, not a list", key)
	case v[0] == '{':
		return "", p.fail(n, "%s takes one value, not a mapping", key)
	case strings.ContainsRune("&*!", rune(v[0])):
		return "", p.fail(n, "the value of %s starts with %q: YAML anchors, aliases and tags are not read; "+
			"put the value in quotes", key, v[:1])
	case strings.ContainsRune("%@`", rune(v[0])):
		return "", p.fail(n, "the value of %s starts with %q, which YAML reserves; put the value in quotes", key, v[:1])
	case isItem(v):
		return "", p.fail(n, "%s takes one value, not a list", key)
	}
	return strings.TrimSpace(stripComment(v)), nil
}

// continued folds the lines continuing a bare value into it: lines join with a space,
// and a blank line between them becomes a line break, as YAML folds a plain scalar.
// first is the part on the key's line, "" when the value starts on the next line.
func (p *parser) continued(e *entry, first string) (string, error) {
	var b strings.Builder
	b.WriteString(first)
	blanks := 0
	lead := first == ""
	for _, l := range e.more {
		t := strings.TrimSpace(l.text)
		switch {
		case t == "":
			blanks++
			continue
		case strings.HasPrefix(t, "#"):
			continue
		case l.text[0] != ' ':
			return "", p.fail(l.n, "%s takes one value, not a list", e.key)
		}
		if lead {
			// The value starts on this line: it may be a quoted value, and must not be a
			// list or a mapping.
			lead = false
			if isItem(t) {
				return "", p.fail(l.n, "%s takes one value, not a list", e.key)
			}
			if _, _, ok := splitKey(t); ok {
				return "", p.fail(l.n, "%s takes one value, not a mapping", e.key)
			}
			if t[0] == '"' || t[0] == '\'' {
				s, err := p.quotedValue(e.key, l.n, t)
				if err != nil {
					return "", err
				}
				for _, x := range significant(e.more) {
					if x.n > l.n {
						return "", p.fail(x.n, "unexpected line after the quoted value of %s; a quoted value must "+
							"close on the line it starts", e.key)
					}
				}
				return strings.TrimSpace(s), nil
			}
			s, err := p.bare(e.key, l.n, t)
			if err != nil {
				return "", err
			}
			b.WriteString(s)
			blanks = 0
			continue
		}
		if b.Len() > 0 {
			if blanks > 0 {
				b.WriteString(strings.Repeat("\n", blanks))
			} else {
				b.WriteByte(' ')
			}
		}
		blanks = 0
		b.WriteString(strings.TrimSpace(stripComment(t)))
	}
	return strings.TrimSpace(b.String()), nil
}

// block reads a "|" or ">" block scalar: the header on the key's line, the text on the
// indented lines below. Chomping indicators are accepted; they change only trailing
// line breaks, which the trimming of every value removes anyway.
func (p *parser) block(e *entry) (string, error) {
	style, header := e.inline[0], e.inline[1:]
	indent := 0
	for i := 0; i < 2 && header != ""; i++ {
		c := header[0]
		if c == '-' || c == '+' {
			header = header[1:]
		} else if c >= '1' && c <= '9' && indent == 0 {
			indent = int(c - '0')
			header = header[1:]
		}
	}
	if header = strings.TrimLeft(header, " \t"); header != "" && header[0] != '#' {
		return "", p.fail(e.n, "after %c only a chomping indicator (- or +) may follow; put the text of %s on the "+
			"indented lines below", style, e.key)
	}
	var lines []string
	for _, l := range e.more {
		if strings.TrimSpace(l.text) == "" {
			lines = append(lines, "")
			continue
		}
		sp := indentOf(l.text)
		if indent == 0 {
			indent = sp
		}
		if sp < indent || sp == 0 {
			return "", p.fail(l.n, "this line is indented less than the text of %s above it; indent every line "+
				"of the block at least as much as its first", e.key)
		}
		lines = append(lines, l.text[indent:])
	}
	if style == '|' {
		return strings.TrimSpace(strings.Join(lines, "\n")), nil
	}
	// Folded: lines join with a space; a blank line is a line break; a more-indented
	// line keeps its breaks, as YAML folds.
	var b strings.Builder
	blanks, started, prevMore := 0, false, false
	for _, l := range lines {
		if l == "" {
			blanks++
			continue
		}
		more := l[0] == ' ' || l[0] == '\t'
		if started {
			if more || prevMore {
				b.WriteByte('\n')
			} else if blanks == 0 {
				b.WriteByte(' ')
			}
			b.WriteString(strings.Repeat("\n", blanks))
		}
		b.WriteString(l)
		started, prevMore, blanks = true, more, 0
	}
	return strings.TrimSpace(b.String()), nil
}

// quotedValue reads a quoted value that makes up the rest of its line, a comment aside.
func (p *parser) quotedValue(key string, n int, v string) (string, error) {
	s, rest, err := p.quoted(key, n, v)
	if err != nil {
		return "", err
	}
	if rest = strings.TrimSpace(rest); rest != "" && rest[0] != '#' {
		return "", p.fail(n, "text follows the closing quote of %s; put the whole value inside the quotes", key)
	}
	return s, nil
}

// quoted reads the quoted scalar at the start of v and returns it and what follows it.
func (p *parser) quoted(key string, n int, v string) (s, rest string, err error) {
	var b strings.Builder
	if v[0] == '\'' {
		for i := 1; i < len(v); i++ {
			if v[i] != '\'' {
				b.WriteByte(v[i])
				continue
			}
			if i+1 < len(v) && v[i+1] == '\'' {
				b.WriteByte('\'')
				i++
				continue
			}
			return b.String(), v[i+1:], nil
		}
		return "", "", p.fail(n, "the single-quoted value of %s is not closed on its line; end it with ' "+
			"(a quoted value must fit on one line)", key)
	}
	for i := 1; i < len(v); i++ {
		switch c := v[i]; c {
		case '"':
			return b.String(), v[i+1:], nil
		case '\\':
			if i+1 == len(v) {
				return "", "", p.fail(n, "the double-quoted value of %s ends in a lone backslash; write \\\\ for a backslash", key)
			}
			i++
			switch e := v[i]; e {
			case '"', '\\', '/':
				b.WriteByte(e)
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'u':
				r, err := strconv.ParseUint(v[i+1:min(i+5, len(v))], 16, 32)
				if err != nil || i+5 > len(v) || !utf8.ValidRune(rune(r)) {
					return "", "", p.fail(n, "a \\u escape in the value of %s is not four hex digits naming a character; "+
						"write it as \\u followed by four hex digits, such as \\u00e9", key)
				}
				b.WriteRune(rune(r))
				i += 4
			default:
				r, _ := utf8.DecodeRuneInString(v[i:])
				return "", "", p.fail(n, "the double-quoted value of %s has the escape %s, which is not read; "+
					"write \\\\ for a backslash, or use \\\" \\n \\t \\r \\/ \\uXXXX", key, strconv.Quote("\\"+string(r)))
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", "", p.fail(n, "the double-quoted value of %s is not closed on its line; end it with \" "+
		"(a quoted value must fit on one line)", key)
}

// list reads the value of tools or disallowedTools: a comma-separated string, a flow
// list or a block list. It returns nil for no value, and a non-nil empty list only for
// an explicit [] (which Parse refuses for tools). Names are checked and deduplicated.
func (p *parser) list(e *entry) ([]string, error) {
	var items []srcLine
	v := e.inline
	sig := significant(e.more)
	switch {
	case strings.HasPrefix(v, "["):
		var err error
		if items, err = p.flow(e, sig); err != nil {
			return nil, err
		}
		if items == nil {
			items = []srcLine{}
		}
	case (v == "" || v[0] == '#') && len(sig) > 0 && isItem(strings.TrimLeft(sig[0].text, " ")):
		indent := indentOf(sig[0].text)
		for _, l := range sig {
			t := l.text[min(indent, len(l.text)):]
			if indentOf(l.text) != indent || !isItem(t) {
				return nil, p.fail(l.n, "expected an item \"- ToolName\" of %s at the indentation of the first, found %s",
					e.key, short(l.text))
			}
			item := strings.TrimSpace(t[1:])
			if item == "" || item[0] == '#' {
				return nil, p.fail(l.n, "an empty item in %s; write a tool name after the -", e.key)
			}
			if item[0] == '"' || item[0] == '\'' {
				s, err := p.quotedValue(e.key, l.n, item)
				if err != nil {
					return nil, err
				}
				item = s
			} else {
				item = strings.TrimSpace(stripComment(item))
			}
			items = append(items, srcLine{l.n, strings.TrimSpace(item)})
		}
	default:
		s, err := p.scalar(e)
		if err != nil {
			return nil, err
		}
		if s == "" {
			return nil, nil
		}
		for part := range strings.SplitSeq(s, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				return nil, p.fail(e.n, "%s has an empty name between commas; remove the extra comma", e.key)
			}
			items = append(items, srcLine{e.n, part})
		}
	}
	out := make([]string, 0, len(items))
	seen := map[string]bool{}
	for _, it := range items {
		if msg := checkTool(e.key, it.text); msg != "" {
			return nil, p.fail(it.n, "%s", msg)
		}
		if !seen[it.text] {
			seen[it.text] = true
			out = append(out, it.text)
		}
	}
	return out, nil
}

// flow reads a flow list, "[a, b]", which may go on over indented lines. A trailing
// comma is allowed, as YAML allows it.
func (p *parser) flow(e *entry, sig []srcLine) ([]srcLine, error) {
	var b strings.Builder
	b.WriteString(stripComment(e.inline))
	for _, l := range sig {
		b.WriteByte(' ')
		b.WriteString(strings.TrimSpace(stripComment(l.text)))
	}
	s := b.String()[1:]
	var items []srcLine
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return nil, p.fail(e.n, "the list of %s is not closed; end it with ]", e.key)
		}
		if s[0] == ']' {
			if rest := strings.TrimSpace(s[1:]); rest != "" {
				return nil, p.fail(e.n, "text follows the ] that closes the list of %s; remove it", e.key)
			}
			return items, nil
		}
		var item string
		if s[0] == '"' || s[0] == '\'' {
			var err error
			if item, s, err = p.quoted(e.key, e.n, s); err != nil {
				return nil, err
			}
			item = strings.TrimSpace(item)
		} else {
			j := strings.IndexAny(s, ",]")
			if j < 0 {
				return nil, p.fail(e.n, "the list of %s is not closed; end it with ]", e.key)
			}
			item, s = strings.TrimSpace(s[:j]), s[j:]
		}
		if item == "" {
			return nil, p.fail(e.n, "the list of %s has an empty item; remove the extra comma", e.key)
		}
		items = append(items, srcLine{e.n, item})
		s = strings.TrimLeft(s, " \t")
		switch {
		case strings.HasPrefix(s, ","):
			s = s[1:]
		case strings.HasPrefix(s, "]"):
		default:
			return nil, p.fail(e.n, "expected , or ] after %s in the list of %s", strconv.Quote(item), e.key)
		}
	}
}
