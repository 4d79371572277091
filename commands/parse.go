package commands

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/permission"
)

// Codes of the package's refusals.
const (
	// CodeInvalid: a command file cannot be used — it is not UTF-8, its front matter is
	// not closed or not of the subset read, a rule of its allowed-tools is refused, its
	// name is empty — or an invocation's arguments cannot be split (a quote not closed).
	// The message names the file.
	CodeInvalid = "config.command_invalid"
	// CodeUnknown: a prompt has the form of a command ("/name", name of lowercase
	// letters, digits, "_", "-" and ":") and no command has that name. Detail
	// "available" lists the names there are.
	CodeUnknown = "config.command_unknown"
)

// MaxFileBytes is the largest command file read; a larger one is refused.
const MaxFileBytes = 1 << 20

// Scope says who chose a command: the workspace (a repository, maybe cloned) or the
// user.
type Scope string

// The scopes, in precedence order.
const (
	// ScopeProject is a command of the workspace's .sema/commands or .claude/commands.
	ScopeProject Scope = "project"
	// ScopeUser is a command of HOME/.sema/commands or HOME/.claude/commands.
	ScopeUser Scope = "user"
)

// Command is one command file, parsed.
type Command struct {
	// Name is what follows the "/" of an invocation: the file's path below its
	// commands directory without ".md", directories joined by ":".
	Name string `json:"name"`
	// Path is the file the command was read from.
	Path string `json:"path"`
	// Scope is who chose the command.
	Scope Scope `json:"scope"`
	// Claude reports that the command came from a .claude/commands directory.
	Claude bool `json:"claude,omitempty"`
	// Description is the front matter's description, "" when there is none.
	Description string `json:"description,omitempty"`
	// ArgumentHint is the front matter's argument-hint, as written.
	ArgumentHint string `json:"argument_hint,omitempty"`
	// Model is the front matter's model, "" when there is none.
	Model string `json:"model,omitempty"`
	// AllowedTools are the front matter's allowed-tools, one permission rule each
	// (already checked by package permission).
	AllowedTools []string `json:"allowed_tools,omitempty"`
	// Body is the prompt template: the file after its front matter.
	Body string `json:"-"`
	// UnknownKeys are the front matter's keys this package does not read, in file
	// order; they have no effect.
	UnknownKeys []string `json:"unknown_keys,omitempty"`
	// Warnings are sentences about what the file asks for and sema does not do.
	Warnings []string `json:"warnings,omitempty"`
	// Shadows are the files of the same name this command hides, highest first.
	Shadows []Shadowed `json:"shadows,omitempty"`
}

// Shadowed is a command file hidden by another of the same name.
type Shadowed struct {
	// Path is the hidden file.
	Path string `json:"path"`
	// Scope is the hidden file's scope.
	Scope Scope `json:"scope"`
}

// invalid is the CodeInvalid refusal of the file at path.
func invalid(path, format string, args ...any) *sema.Error {
	e := sema.Errorf(CodeInvalid, "the command file %s %s", path, fmt.Sprintf(format, args...))
	return e.With("path", path)
}

// Parse reads data, the content of the command file at path, as the command name.
// path is used in messages and recorded; Parse reads nothing from the filesystem. A
// refusal is a *sema.Error with CodeInvalid naming path.
func Parse(name, path string, data []byte) (*Command, error) {
	if err := checkName(name); err != "" {
		return nil, invalid(path, "has %s", err)
	}
	if len(data) > MaxFileBytes {
		return nil, invalid(path, "has %d bytes, more than the %d a command may have; shorten it", len(data), MaxFileBytes)
	}
	if !utf8.Valid(data) {
		return nil, invalid(path, "is not UTF-8 text; save it as UTF-8")
	}
	text := strings.TrimPrefix(string(data), "\ufeff")
	c := &Command{Name: name, Path: path}
	front, body, err := splitFrontMatter(text)
	if err != "" {
		return nil, invalid(path, "%s", err)
	}
	c.Body = body
	if front != nil {
		if err := c.readFrontMatter(front); err != "" {
			return nil, invalid(path, "%s", err)
		}
	}
	for _, k := range c.UnknownKeys {
		c.Warnings = append(c.Warnings, fmt.Sprintf("front matter key %q is not read by sema and has no effect", k))
	}
	if strings.Contains(body, "!`") {
		c.Warnings = append(c.Warnings, "the body has a !`…` shell line, which Claude Code runs; sema sends it to the model as text")
	}
	return c, nil
}

// checkName returns what is wrong with a command name, "" when nothing is.
func checkName(name string) string {
	switch {
	case name == "":
		return "an empty name; name the file NAME.md"
	case !utf8.ValidString(name):
		return "a name that is not UTF-8"
	}
	for _, part := range strings.Split(name, ":") {
		if part == "" {
			return fmt.Sprintf("the name %q with an empty part between colons", name)
		}
	}
	if i := strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == '/' }); i >= 0 {
		return fmt.Sprintf("the name %q holding a blank, a slash or a control character; rename the file", name)
	}
	return ""
}

// splitFrontMatter cuts text into its front matter lines (nil when the file has none)
// and its body. The front matter opens with a first line "---" and closes with the
// next line "---"; the problem is "" when the text is well formed.
func splitFrontMatter(text string) (front []string, body string, problem string) {
	first, rest, more := strings.Cut(text, "\n")
	if strings.TrimRight(first, " \t\r") != "---" {
		return nil, text, ""
	}
	if !more {
		return nil, "", "opens its front matter with --- and never closes it; add a line --- after the front matter"
	}
	front = []string{}
	for {
		line, after, more := strings.Cut(rest, "\n")
		if strings.TrimRight(line, " \t\r") == "---" {
			return front, after, ""
		}
		front = append(front, strings.TrimRight(line, "\r"))
		if !more {
			return nil, "", "opens its front matter with --- and never closes it; add a line --- after the front matter"
		}
		rest = after
	}
}

// fmValue is one front matter value: text, or a list.
type fmValue struct {
	text   string
	list   []string
	isList bool
}

// readFrontMatter reads the front matter lines into c; the problem is "" when they
// are of the subset read. Line numbers count the opening "---" as line 1.
func (c *Command) readFrontMatter(lines []string) string {
	seen := map[string]bool{}
	for i := 0; i < len(lines); {
		line, n := lines[i], i+2
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			i++
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			return fmt.Sprintf("has an indented line outside any key at line %d; start each key at the beginning of a line", n)
		}
		if isListItem(line) {
			return fmt.Sprintf("has a list item outside any key at line %d; put it under a key with no value (allowed-tools:)", n)
		}
		key, rest, ok := strings.Cut(line, ":")
		if !ok || !validKey(key) || rest != "" && rest[0] != ' ' && rest[0] != '\t' {
			return fmt.Sprintf("has a front matter line %d that is not \"key: value\": %q", n, line)
		}
		if seen[key] {
			return fmt.Sprintf("has the front matter key %q twice (line %d); keep one", key, n)
		}
		seen[key] = true
		rest = strings.TrimSpace(rest)
		// The key's own lines: blank ones, indented ones, and — under a key with no
		// value — list items at the margin.
		j := i + 1
		for j < len(lines) {
			l := lines[j]
			if strings.TrimSpace(l) == "" || l[0] == ' ' || l[0] == '\t' || rest == "" && isListItem(l) {
				j++
				continue
			}
			break
		}
		children := lines[i+1 : j]
		i = j
		switch key {
		case "description", "argument-hint", "model", "allowed-tools":
		default:
			c.UnknownKeys = append(c.UnknownKeys, key)
			continue
		}
		v, problem := readValue(key, rest, children, n)
		if problem != "" {
			return problem
		}
		if v.isList && key != "allowed-tools" {
			return fmt.Sprintf("has a list as its %s (line %d); write it as one line of text", key, n)
		}
		switch key {
		case "description":
			c.Description = v.text
		case "argument-hint":
			c.ArgumentHint = v.text
		case "model":
			c.Model = v.text
			if strings.ContainsFunc(v.text, unicode.IsSpace) {
				return fmt.Sprintf("names the model %q, which holds a blank; write PROVIDER/MODEL or a model name", v.text)
			}
		case "allowed-tools":
			items := v.list
			if !v.isList {
				items = []string{v.text}
			}
			for _, it := range items {
				c.AllowedTools = append(c.AllowedTools, permission.SplitRuleList(it)...)
			}
			if _, err := permission.ParseRules(c.AllowedTools, nil, nil); err != nil {
				return fmt.Sprintf("has an allowed-tools rule sema refuses (%s); write rules as for --allowed-tools", sema.MessageOf(err))
			}
		}
	}
	return ""
}

// validKey reports whether k is a plain front matter key.
func validKey(k string) bool {
	return k != "" && strings.IndexFunc(k, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
	}) < 0
}

// isListItem reports whether l, without its indentation, is a block list item.
func isListItem(l string) bool {
	t := strings.TrimLeft(l, " \t")
	return t == "-" || strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "-\t")
}

// readValue reads the value of key: rest is what follows the colon, children the
// key's further lines, n the key's line number.
func readValue(key, rest string, children []string, n int) (fmValue, string) {
	var nonBlank []string
	for _, l := range children {
		if strings.TrimSpace(l) != "" {
			nonBlank = append(nonBlank, l)
		}
	}
	switch {
	case rest == "":
		items := 0
		for _, l := range nonBlank {
			if isListItem(l) {
				items++
			}
		}
		switch {
		case len(nonBlank) == 0:
			return fmValue{}, ""
		case items == len(nonBlank):
			var v fmValue
			v.isList = true
			for _, l := range nonBlank {
				t := strings.TrimSpace(strings.TrimLeft(l, " \t")[1:])
				s, problem := scalar(key, t, n)
				if problem != "" {
					return fmValue{}, problem
				}
				if s != "" {
					v.list = append(v.list, s)
				}
			}
			return v, ""
		case items == 0:
			// Plain text that starts on the next line, folded as YAML folds it.
			return fmValue{text: fold(nonBlank)}, ""
		}
		return fmValue{}, fmt.Sprintf("mixes list items and text under %s (line %d); write a list of \"- item\" lines or one value", key, n)
	case rest == "|" || rest == "|-" || rest == "|+" || rest == ">" || rest == ">-" || rest == ">+":
		return fmValue{text: block(children, rest[0] == '>')}, ""
	case rest[0] == '[' && key == "allowed-tools":
		t := stripComment(rest)
		if !strings.HasSuffix(t, "]") || len(nonBlank) > 0 {
			return fmValue{}, fmt.Sprintf("has a list [ at line %d that is not closed on its line; close it with ] or write a list of \"- item\" lines", n)
		}
		v := fmValue{isList: true}
		for _, it := range splitFlow(t[1 : len(t)-1]) {
			s, problem := scalar(key, it, n)
			if problem != "" {
				return fmValue{}, problem
			}
			if s != "" {
				v.list = append(v.list, s)
			}
		}
		return v, ""
	case rest[0] == '"' || rest[0] == '\'':
		if len(nonBlank) > 0 {
			return fmValue{}, fmt.Sprintf("continues the quoted %s of line %d on the next line; keep a quoted value on one line", key, n)
		}
		s, problem := scalar(key, rest, n)
		return fmValue{text: s}, problem
	}
	lines := append([]string{stripComment(rest)}, nonBlank...)
	return fmValue{text: fold(lines)}, ""
}

// scalar reads one value: quoted ('…' or "…", nothing but a comment after the closing
// quote) or plain (a " #" comment removed).
func scalar(key, s string, n int) (string, string) {
	if s == "" || s[0] != '"' && s[0] != '\'' {
		return stripComment(s), ""
	}
	q := s[0]
	var b strings.Builder
	i := 1
	for ; i < len(s); i++ {
		c := s[i]
		if q == '\'' && c == '\'' {
			if i+1 < len(s) && s[i+1] == '\'' {
				b.WriteByte('\'')
				i++
				continue
			}
			break
		}
		if q == '"' && c == '"' {
			break
		}
		if q == '"' && c == '\\' && i+1 < len(s) {
			i++
			switch e := s[i]; e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case '"', '\\', '/':
				b.WriteByte(e)
			default:
				b.WriteByte('\\')
				b.WriteByte(e)
			}
			continue
		}
		b.WriteByte(c)
	}
	if i >= len(s) {
		return "", fmt.Sprintf("has a quote in its %s (line %d) that is not closed; close it with %c", key, n, q)
	}
	if after := strings.TrimSpace(s[i+1:]); after != "" && !strings.HasPrefix(after, "#") {
		return "", fmt.Sprintf("has text after the closing quote of its %s (line %d); put the whole value inside the quotes", key, n)
	}
	return b.String(), ""
}

// stripComment removes a YAML comment (" #" to the end) from a plain value and trims it.
func stripComment(s string) string {
	if strings.HasPrefix(s, "#") {
		return ""
	}
	for i := 1; i < len(s); i++ {
		if s[i] == '#' && (s[i-1] == ' ' || s[i-1] == '\t') {
			s = s[:i]
			break
		}
	}
	return strings.TrimSpace(s)
}

// fold joins the lines of a plain multi-line value with single spaces.
func fold(lines []string) string {
	parts := make([]string, 0, len(lines))
	for _, l := range lines {
		if t := strings.TrimSpace(l); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, " ")
}

// block reads a | (literal) or > (folded) block: the lines without their common
// indentation, joined by newlines, or folded to spaces where a line follows a line.
func block(lines []string, folded bool) string {
	indent := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if w := len(l) - len(strings.TrimLeft(l, " \t")); indent < 0 || w < indent {
			indent = w
		}
	}
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		if len(l) >= indent && indent >= 0 {
			l = l[indent:]
		}
		out = append(out, strings.TrimRight(l, " \t"))
	}
	text := strings.Join(out, "\n")
	if folded {
		paras := strings.Split(text, "\n\n")
		for i, p := range paras {
			paras[i] = strings.Join(strings.Fields(p), " ")
		}
		text = strings.Join(slices.DeleteFunc(paras, func(p string) bool { return p == "" }), "\n")
	}
	return strings.Trim(text, "\n")
}

// splitFlow splits the inside of a flow list at the commas outside parentheses and
// quotes.
func splitFlow(s string) []string {
	var out []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '(':
			depth++
		case c == ')' && depth > 0:
			depth--
		case c == ',' && depth == 0:
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}
