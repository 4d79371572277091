package permission

import (
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/shellscan"
)

// CodeRuleInvalid refuses a permission rule that does not parse.
const CodeRuleInvalid = "config.rule_invalid"

// ruleKind says what a rule's specifier means.
type ruleKind uint8

const (
	// kindTool covers every call of the tool (no specifier, or "*").
	kindTool ruleKind = iota
	// kindServer covers every tool of one MCP server ("mcp__server", "mcp__server__*").
	kindServer
	// kindBashPrefix covers a simple command whose words begin with the rule's words.
	kindBashPrefix
	// kindBashExact covers a simple command whose words are exactly the rule's words.
	kindBashExact
	// kindPath covers a file tool call whose path matches a gitignore-style glob.
	kindPath
	// kindDomain covers a WebFetch of one host (or, with "*.", of its subdomains).
	kindDomain
)

// anchor says what a path rule's pattern is relative to.
type anchor uint8

const (
	anchorRoot anchor = iota // "./x", "/x", "x/y": the task root
	anchorAny                // "x" (no inner slash): any depth below the task root
	anchorAbs                // "//x": the filesystem root
	anchorHome               // "~/x": the home directory
)

// Rule is one parsed permission rule: Tool alone covers every call of the tool;
// Tool(specifier) covers the calls the specifier names. The zero Rule is not valid;
// build rules with ParseRule.
type Rule struct {
	// Tool is the tool name as written ("Bash", "Edit", "mcp__github").
	Tool string
	// Specifier is the text between the parentheses as written (trimmed), "" for a
	// whole-tool rule.
	Specifier string

	kind    ruleKind
	words   []string // Bash: the literal words of the command (prefix or exact)
	anchor  anchor   // path rules
	pattern string   // path rules: the glob below the anchor, no leading slash
	domain  string   // WebFetch: the lower-case host, "*." kept for subdomains
}

// String returns the rule in the syntax ParseRule reads; ParseRule(r.String()) returns
// a rule equal to r.
func (r Rule) String() string {
	if r.Specifier == "" {
		return r.Tool
	}
	return r.Tool + "(" + r.Specifier + ")"
}

// The tools whose rules take a path specifier, and which of them a rule covers.
var (
	// editTools are the covered write tools: an Edit rule covers all of them.
	editTools = []string{"Edit", "Write", "MultiEdit", "NotebookEdit"}
	// readTools are the file-reading tools a Read rule covers.
	readTools = []string{"Read", "Glob", "Grep", "LS", "NotebookRead"}
)

func isEditTool(name string) bool { return inList(editTools, name) }
func isReadTool(name string) bool { return inList(readTools, name) }

func inList(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ParseRule parses one rule: "Tool", "Tool(specifier)", "mcp__server", "mcp__server__tool".
// Specifiers: for Bash a command, exact ("Bash(git status)") or a prefix when it ends in
// ":*" or " *" ("Bash(npm run test:*)", "Bash(git diff *)"); for the file tools a
// gitignore-style glob ("Read(./secrets/**)", "Edit(src/**)", "Edit(//etc/hosts)",
// "Read(~/.ssh/**)", "Read(*.pem)"); for WebFetch "domain:host". A bad rule is refused
// with config.rule_invalid naming it.
func ParseRule(s string) (Rule, error) {
	s = strings.TrimSpace(s)
	r := Rule{}
	open := strings.IndexByte(s, '(')
	if open < 0 {
		r.Tool = s
	} else {
		if !strings.HasSuffix(s, ")") {
			return Rule{}, ruleError(s, "it opens a parenthesis it does not close at the end")
		}
		r.Tool = strings.TrimSpace(s[:open])
		r.Specifier = strings.TrimSpace(s[open+1 : len(s)-1])
		if r.Specifier == "" {
			return Rule{}, ruleError(s, "its parentheses are empty; write the tool name alone to cover every call")
		}
	}
	if err := checkToolName(s, r.Tool); err != nil {
		return Rule{}, err
	}
	if mcpServerWildcard(r.Tool) {
		if r.Specifier != "" {
			return Rule{}, ruleError(s, "an MCP rule takes no specifier")
		}
		r.kind = kindServer
		return r, nil
	}
	if r.Specifier == "" || r.Specifier == "*" {
		r.kind = kindTool
		return r, nil
	}
	switch {
	case r.Tool == "Bash":
		return parseBashSpec(s, r)
	case isEditTool(r.Tool) || isReadTool(r.Tool):
		return parsePathSpec(s, r)
	case r.Tool == "WebFetch":
		return parseDomainSpec(s, r)
	case strings.HasPrefix(r.Tool, "mcp__"):
		return Rule{}, ruleError(s, "an MCP rule takes no specifier")
	}
	return Rule{}, ruleError(s, "the tool "+r.Tool+" takes no specifier; write "+r.Tool+" alone to cover every call")
}

// MustParseRule is ParseRule for rules written in code; it panics on a bad rule.
func MustParseRule(s string) Rule {
	r, err := ParseRule(s)
	if err != nil {
		panic(err)
	}
	return r
}

func ruleError(rule, why string) error {
	return sema.Errorf(CodeRuleInvalid, "the permission rule %q is not valid: %s", rule, why).With("rule", rule)
}

// checkToolName accepts names of letters, digits, '_' and '-', starting with a letter,
// and the MCP server wildcard "mcp__server__*".
func checkToolName(rule, name string) error {
	if name == "" {
		return ruleError(rule, "it names no tool")
	}
	body := strings.TrimSuffix(name, "__*")
	if body != name && !strings.HasPrefix(name, "mcp__") {
		return ruleError(rule, "only an MCP rule may end in __*")
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case (c >= '0' && c <= '9' || c == '_' || c == '-') && i > 0:
		default:
			return ruleError(rule, "the tool name "+quote(name)+" may hold only letters, digits, '_' and '-', and must start with a letter")
		}
	}
	if strings.HasPrefix(name, "mcp__") {
		server := strings.TrimPrefix(body, "mcp__")
		if server == "" || strings.HasPrefix(server, "_") || strings.HasSuffix(server, "_") ||
			(body != name && strings.Contains(server, "__")) {
			return ruleError(rule, "an MCP rule is mcp__server, mcp__server__* or mcp__server__tool")
		}
	}
	return nil
}

// mcpServerWildcard reports whether name is a whole-server rule: "mcp__server" (no
// second "__") or "mcp__server__*".
func mcpServerWildcard(name string) bool {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return false
	}
	rest = strings.TrimSuffix(rest, "__*")
	return !strings.Contains(rest, "__")
}

// mcpServerPrefix is the tool-name prefix a whole-server rule covers: "mcp__server__".
func mcpServerPrefix(name string) string {
	return strings.TrimSuffix(name, "__*") + "__"
}

func quote(s string) string { return "\"" + s + "\"" }

// parseBashSpec reads a command specifier. The command is parsed by shellscan, the
// reader the commands themselves are judged with, and must be ONE simple command of
// literal words: quotes are removed as the shell removes them, so the rule's words
// compare with the words of a command.
func parseBashSpec(rule string, r Rule) (Rule, error) {
	text := r.Specifier
	r.kind = kindBashExact
	if t, ok := strings.CutSuffix(text, ":*"); ok {
		text, r.kind = t, kindBashPrefix
	} else if t, ok := strings.CutSuffix(text, " *"); ok {
		text, r.kind = t, kindBashPrefix
	}
	words, why := literalCommand(text)
	if why != "" {
		return Rule{}, ruleError(rule, why)
	}
	if len(words) == 0 {
		return Rule{}, ruleError(rule, "it names no command")
	}
	r.words = words
	return r, nil
}

// literalCommand parses text as one simple command and returns its literal words, or a
// reason it is not one.
func literalCommand(text string) ([]string, string) {
	if strings.TrimSpace(text) == "" {
		return nil, ""
	}
	s, err := shellscan.Parse(text)
	if err != nil {
		return nil, "its command does not parse (" + err.Error() + ")"
	}
	if why := s.Ambiguous(); why != "" {
		return nil, "its command has " + why + "; write it on one plain line"
	}
	if len(s.Segments) != 1 || s.HasSubstitution || s.HasBackground || s.HasPipe || s.HasControl || len(s.CompoundRedirects) > 0 {
		return nil, "it holds more than one command or an operator; write one rule per plain command"
	}
	seg := s.Segments[0]
	if len(seg.Redirects) > 0 || len(seg.Assignments) > 0 {
		return nil, "its command is not one plain command (no redirections or assignments)"
	}
	words := make([]string, 0, len(seg.Words))
	for _, w := range seg.Words {
		if !w.Static {
			return nil, "its word " + w.Raw + " would be expanded by the shell; a rule names literal words, and a '*' is allowed only at the end (\"npm run test:*\" or \"git diff *\"); quote a character to mean itself"
		}
		words = append(words, w.Lit)
	}
	return words, ""
}

// parsePathSpec reads a gitignore-style path glob. "//x" is absolute, "~/x" is below the
// home directory, "/x", "./x" and "x/y" are below the task root, and a pattern with no
// slash but a trailing one ("*.pem", "secrets/") matches at any depth below the root.
func parsePathSpec(rule string, r Rule) (Rule, error) {
	p := r.Specifier
	switch {
	case strings.HasPrefix(p, "//"):
		r.anchor, p = anchorAbs, p[2:]
	case p == "~" || strings.HasPrefix(p, "~/"):
		r.anchor, p = anchorHome, strings.TrimPrefix(p[1:], "/")
	case strings.HasPrefix(p, "~"):
		return Rule{}, ruleError(rule, "only the own home directory (~/) may begin a path rule")
	case strings.HasPrefix(p, "./"):
		r.anchor, p = anchorRoot, p[2:]
	case p == ".":
		r.anchor, p = anchorRoot, ""
	case strings.HasPrefix(p, "/"):
		r.anchor, p = anchorRoot, p[1:]
	case strings.Contains(strings.TrimRight(p, "/"), "/"):
		r.anchor = anchorRoot
	default:
		r.anchor = anchorAny
	}
	p = strings.TrimRight(p, "/")
	for _, c := range strings.Split(p, "/") {
		if c == ".." || c == "." {
			return Rule{}, ruleError(rule, "a path rule may not hold '.' or '..' components; write the path from the root (./x), the home (~/x) or the filesystem root (//x)")
		}
		if c == "" && p != "" {
			return Rule{}, ruleError(rule, "its path holds an empty component")
		}
	}
	if r.anchor == anchorAny && p == "" {
		return Rule{}, ruleError(rule, "it names no path")
	}
	if !doublestar.ValidatePattern("/" + p) {
		return Rule{}, ruleError(rule, "its path is not a valid glob")
	}
	r.kind = kindPath
	r.pattern = p
	return r, nil
}

// parseDomainSpec reads "domain:host" or "domain:*.host".
func parseDomainSpec(rule string, r Rule) (Rule, error) {
	host, ok := strings.CutPrefix(r.Specifier, "domain:")
	if !ok {
		return Rule{}, ruleError(rule, "a WebFetch rule is WebFetch(domain:example.com)")
	}
	base := strings.TrimPrefix(host, "*.")
	if base == "" || strings.HasPrefix(base, ".") || strings.HasSuffix(base, ".") || strings.Contains(base, "..") {
		return Rule{}, ruleError(rule, "its domain is not a host name")
	}
	for i := 0; i < len(base); i++ {
		c := base[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return Rule{}, ruleError(rule, "its domain is not a host name")
		}
	}
	r.kind = kindDomain
	r.domain = strings.ToLower(host)
	return r, nil
}

// RuleSet is the merged rules of every layer. Deny rules win at any layer: the fold
// reads every deny rule before any ask rule, and every ask rule before any allow rule.
type RuleSet struct {
	Allow []Rule
	Deny  []Rule
	Ask   []Rule
}

// Merge returns the rules of s followed by those of every layer.
func (s RuleSet) Merge(layers ...RuleSet) RuleSet {
	out := RuleSet{
		Allow: append([]Rule(nil), s.Allow...),
		Deny:  append([]Rule(nil), s.Deny...),
		Ask:   append([]Rule(nil), s.Ask...),
	}
	for _, l := range layers {
		out.Allow = append(out.Allow, l.Allow...)
		out.Deny = append(out.Deny, l.Deny...)
		out.Ask = append(out.Ask, l.Ask...)
	}
	return out
}

// ParseRules parses three lists of rules into a RuleSet; the first bad rule refuses.
func ParseRules(allow, deny, ask []string) (RuleSet, error) {
	var s RuleSet
	for _, l := range []struct {
		in  []string
		out *[]Rule
	}{{allow, &s.Allow}, {deny, &s.Deny}, {ask, &s.Ask}} {
		for _, text := range l.in {
			r, err := ParseRule(text)
			if err != nil {
				return RuleSet{}, err
			}
			*l.out = append(*l.out, r)
		}
	}
	return s, nil
}

// RulesFromFlags parses the values of --allowed-tools and --disallowed-tools. Each value
// may hold several rules separated by commas or blanks outside parentheses
// ("Read,Bash(git diff *)").
func RulesFromFlags(allowed, disallowed []string) (RuleSet, error) {
	var allow, deny []string
	for _, v := range allowed {
		allow = append(allow, SplitRuleList(v)...)
	}
	for _, v := range disallowed {
		deny = append(deny, SplitRuleList(v)...)
	}
	return ParseRules(allow, deny, nil)
}

// SplitRuleList splits a list of rules at commas and blanks that are not inside
// parentheses, dropping empty items.
func SplitRuleList(s string) []string {
	var out []string
	depth, start := 0, 0
	flush := func(end int) {
		if t := strings.TrimSpace(s[start:end]); t != "" {
			out = append(out, t)
		}
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '(':
			depth++
		case c == ')':
			if depth > 0 {
				depth--
			}
		case depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\n'):
			flush(i)
			start = i + 1
		}
	}
	flush(len(s))
	return out
}
