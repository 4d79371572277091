package permission

import (
	"errors"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/internal/rulematch"
)

// CodeRuleInvalid refuses a permission rule that does not parse.
const CodeRuleInvalid = "config.rule_invalid"

// Rule is one parsed permission rule: Tool alone covers every call of the tool;
// Tool(specifier) covers the calls the specifier names. The zero Rule is not valid;
// build rules with ParseRule.
type Rule struct {
	// Tool is the tool name as written ("Bash", "Edit", "mcp__github").
	Tool string
	// Specifier is the text between the parentheses as written (trimmed), "" for a
	// whole-tool rule.
	Specifier string
}

// String returns the rule in the syntax ParseRule reads; ParseRule(r.String()) returns
// a rule equal to r.
func (r Rule) String() string {
	if r.Specifier == "" {
		return r.Tool
	}
	return r.Tool + "(" + r.Specifier + ")"
}

// ParseRule parses one rule: "Tool", "Tool(specifier)", "mcp__server", "mcp__server__tool".
// Specifiers: for Bash a command, exact ("Bash(git status)") or a prefix when it ends in
// ":*" or " *" ("Bash(npm run test:*)", "Bash(git diff *)"); for the file tools a
// gitignore-style glob ("Read(./secrets/**)", "Edit(src/**)", "Edit(//etc/hosts)",
// "Read(~/.ssh/**)", "Read(*.pem)"); for WebFetch "domain:host". A bad rule is refused
// with config.rule_invalid naming it.
func ParseRule(s string) (Rule, error) {
	c, err := rulematch.Parse(s)
	if err != nil {
		var bad *rulematch.Invalid
		if errors.As(err, &bad) {
			return Rule{}, ruleError(bad.Rule, bad.Why)
		}
		return Rule{}, ruleError(strings.TrimSpace(s), err.Error())
	}
	return Rule{Tool: c.Tool, Specifier: c.Specifier}, nil
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

// RuleSet is the merged rules of every layer. Deny rules win at any layer: the fold
// reads every deny rule before any ask rule, and every ask rule before any allow rule.
type RuleSet struct {
	// Allow lists the rules that let a call they name run without a question.
	Allow []Rule
	// Deny lists the rules that refuse a call they name; nothing outranks them.
	Deny []Rule
	// Ask lists the rules that put a call they name to the leg's answerers.
	Ask []Rule
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
