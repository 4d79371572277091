// Package rulematch compiles permission rules into the form the gate matches calls
// with, and answers what one compiled rule names: a tool, a command's words, a path, a
// domain. permission.ParseRule validates through it, and the gate compiles a RuleSet's
// rules through it again, so both read a rule's text the same way.
package rulematch

import (
	"net/url"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/sema-agent/sema/shellscan"
)

// Rule is a permission rule compiled for matching.
type Rule struct {
	// Tool is the tool name as written ("Bash", "Edit", "mcp__github").
	Tool string
	// Specifier is the text between the parentheses as written (trimmed), "" for a
	// whole-tool rule.
	Specifier string

	// Kind says what the specifier means; the fields below it hold its compiled parts.
	Kind    Kind
	Words   []string // Bash: the literal words of the command (prefix or exact)
	Anchor  Anchor   // path rules
	Pattern string   // path rules: the glob below the anchor, no leading slash
	Domain  string   // WebFetch: the lower-case host, "*." kept for subdomains
}

// String returns the rule in the syntax Parse reads; Parse(r.String()) compiles to a
// rule equal to r, which is what lets the gate compile permission.Rule values again.
func (r Rule) String() string {
	if r.Specifier == "" {
		return r.Tool
	}
	return r.Tool + "(" + r.Specifier + ")"
}

// Invalid refuses a rule that does not parse; permission.ParseRule turns it into its
// coded error.
type Invalid struct {
	// Rule is the rule's text, trimmed.
	Rule string
	// Why is the reason, a clause that completes "the rule is not valid: ...".
	Why string
}

func (e *Invalid) Error() string {
	return "the permission rule " + quote(e.Rule) + " is not valid: " + e.Why
}

func ruleError(rule, why string) error { return &Invalid{Rule: rule, Why: why} }

// Kind says what a rule's specifier means.
type Kind uint8

const (
	// KindTool covers every call of the tool (no specifier, or "*").
	KindTool Kind = iota
	// KindServer covers every tool of one MCP server ("mcp__server", "mcp__server__*").
	KindServer
	// KindBashPrefix covers a simple command whose words begin with the rule's words.
	KindBashPrefix
	// KindBashExact covers a simple command whose words are exactly the rule's words.
	KindBashExact
	// KindPath covers a file tool call whose path matches a gitignore-style glob.
	KindPath
	// KindDomain covers a WebFetch of one host (or, with "*.", of its subdomains).
	KindDomain
)

// Anchor says what a path rule's pattern is relative to.
type Anchor uint8

const (
	AnchorRoot Anchor = iota // "./x", "/x", "x/y": the task root
	AnchorAny                // "x" (no inner slash): any depth below the task root
	AnchorAbs                // "//x": the filesystem root
	AnchorHome               // "~/x": the home directory
)

// The tools whose rules take a path specifier, and which of them a rule covers.
var (
	// editTools are the covered write tools: an Edit rule covers all of them.
	editTools = []string{"Edit", "Write", "MultiEdit", "NotebookEdit"}
	// readTools are the file-reading tools a Read rule covers.
	readTools = []string{"Read", "Glob", "Grep", "LS", "NotebookRead"}
)

// IsEditTool reports whether name is a covered write tool (an Edit rule covers it).
func IsEditTool(name string) bool { return inList(editTools, name) }

// IsReadTool reports whether name is a file-reading tool (a Read rule covers it).
func IsReadTool(name string) bool { return inList(readTools, name) }

func inList(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
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
	r.Kind = KindBashExact
	if t, ok := strings.CutSuffix(text, ":*"); ok {
		text, r.Kind = t, KindBashPrefix
	} else if t, ok := strings.CutSuffix(text, " *"); ok {
		text, r.Kind = t, KindBashPrefix
	}
	words, why := LiteralCommand(text)
	if why != "" {
		return Rule{}, ruleError(rule, why)
	}
	if len(words) == 0 {
		return Rule{}, ruleError(rule, "it names no command")
	}
	r.Words = words
	return r, nil
}

// LiteralCommand parses text as one simple command and returns its literal words, or a
// reason it is not one.
func LiteralCommand(text string) ([]string, string) {
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
		r.Anchor, p = AnchorAbs, p[2:]
	case p == "~" || strings.HasPrefix(p, "~/"):
		r.Anchor, p = AnchorHome, strings.TrimPrefix(p[1:], "/")
	case strings.HasPrefix(p, "~"):
		return Rule{}, ruleError(rule, "only the own home directory (~/) may begin a path rule")
	case strings.HasPrefix(p, "./"):
		r.Anchor, p = AnchorRoot, p[2:]
	case p == ".":
		r.Anchor, p = AnchorRoot, ""
	case strings.HasPrefix(p, "/"):
		r.Anchor, p = AnchorRoot, p[1:]
	case strings.Contains(strings.TrimRight(p, "/"), "/"):
		r.Anchor = AnchorRoot
	default:
		r.Anchor = AnchorAny
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
	if r.Anchor == AnchorAny && p == "" {
		return Rule{}, ruleError(rule, "it names no path")
	}
	if !doublestar.ValidatePattern("/" + p) {
		return Rule{}, ruleError(rule, "its path is not a valid glob")
	}
	r.Kind = KindPath
	r.Pattern = p
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
	r.Kind = KindDomain
	r.Domain = strings.ToLower(host)
	return r, nil
}

// Parse compiles one rule: "Tool", "Tool(specifier)", "mcp__server", "mcp__server__tool".
// Specifiers: for Bash a command, exact ("Bash(git status)") or a prefix when it ends in
// ":*" or " *" ("Bash(npm run test:*)", "Bash(git diff *)"); for the file tools a
// gitignore-style glob ("Read(./secrets/**)", "Edit(src/**)", "Edit(//etc/hosts)",
// "Read(~/.ssh/**)", "Read(*.pem)"); for WebFetch "domain:host". A bad rule is refused
// with an *Invalid naming it.
func Parse(s string) (Rule, error) {
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
		r.Kind = KindServer
		return r, nil
	}
	if r.Specifier == "" || r.Specifier == "*" {
		r.Kind = KindTool
		return r, nil
	}
	switch {
	case r.Tool == "Bash":
		return parseBashSpec(s, r)
	case IsEditTool(r.Tool) || IsReadTool(r.Tool):
		return parsePathSpec(s, r)
	case r.Tool == "WebFetch":
		return parseDomainSpec(s, r)
	case strings.HasPrefix(r.Tool, "mcp__"):
		return Rule{}, ruleError(s, "an MCP rule takes no specifier")
	}
	return Rule{}, ruleError(s, "the tool "+r.Tool+" takes no specifier; write "+r.Tool+" alone to cover every call")
}

// CoversTool reports whether the rule's tool part covers a call of name. An Edit rule
// covers every covered write tool; a Read rule covers the file-reading tools and, when
// restrictive (deny or ask), the write tools too: a path one may not read, one may not
// write either. A whole-server MCP rule covers every tool of its server.
func (r *Rule) CoversTool(name string, restrictive bool) bool {
	switch {
	case r.Kind == KindServer:
		return strings.HasPrefix(name, mcpServerPrefix(r.Tool))
	case r.Tool == name:
		return true
	case r.Tool == "Edit":
		return IsEditTool(name)
	case r.Tool == "Read":
		return IsReadTool(name) || restrictive && IsEditTool(name)
	}
	return false
}

// GlobFor returns the rule's absolute doublestar pattern for a leg rooted at root with
// home directory home; ok is false when the pattern cannot be placed (a "~/" rule on a
// leg with no home).
func (r *Rule) GlobFor(root, home string) (string, bool) {
	var base string
	switch r.Anchor {
	case AnchorAbs:
		return "/" + r.Pattern, true
	case AnchorHome:
		if home == "" {
			return "", false
		}
		base = home
	case AnchorAny:
		base = root
		if base == "/" {
			return "/**/" + r.Pattern, true
		}
		return EscapeMeta(base) + "/**/" + r.Pattern, true
	default:
		base = root
	}
	if r.Pattern == "" {
		return EscapeMeta(base), true
	}
	if base == "/" {
		return "/" + r.Pattern, true
	}
	return EscapeMeta(base) + "/" + r.Pattern, true
}

// EscapeMeta escapes the glob characters of a literal path.
func EscapeMeta(s string) string {
	if !strings.ContainsAny(s, `*?[]{}\`) {
		return s
	}
	var b strings.Builder
	for _, c := range []byte(s) {
		if strings.IndexByte(`*?[]{}\`, c) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

// TreeGlob returns the pattern that matches what glob matches and everything below it
// (gitignore: a pattern naming a directory covers its content). doublestar's trailing
// "/**" matches the directory itself too.
func TreeGlob(glob string) string {
	switch {
	case glob == "/":
		return "/**"
	case strings.HasSuffix(glob, "/**"):
		return glob
	}
	return glob + "/**"
}

// PathMatches reports whether the rule names the absolute path p on a leg rooted at root
// with home directory home. The gate reads the same answer through its glob cache.
func (r *Rule) PathMatches(p, root, home string) bool {
	g, ok := r.GlobFor(root, home)
	return ok && p != "" && doublestar.MatchUnvalidated(TreeGlob(g), p)
}

// DomainMatches reports whether a WebFetch domain rule names the url's host. An url that
// does not parse is named by no rule here; callers read that as "not allowed".
func (r *Rule) DomainMatches(raw string) (match, parsed bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return false, false
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if base, ok := strings.CutPrefix(r.Domain, "*."); ok {
		return strings.HasSuffix(host, "."+base), true
	}
	return host == r.Domain, true
}
