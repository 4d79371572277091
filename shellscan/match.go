package shellscan

import (
	"strings"

	"github.com/sema-agent/sema"
)

// CodeRuleInvalid is the *sema.Error code RulePattern returns for a specifier it cannot use.
const CodeRuleInvalid = "config.rule_invalid"

// PrefixMatch reports whether a segment's first words are exactly prefix, for a rule such as
// `Bash(npm run test:*)`. Only static words match (a word with any expansion never equals a
// rule word), matching is by whole words (`test` does not match `testing`), and a segment with a
// leading assignment or a redirection that writes a file (other than /dev/null) never matches:
// a rule never reaches across a redirection. A rule judges one segment; the caller judges every
// segment of a script, those inside substitutions included. No segment of a script whose text
// bash could read differently (Script.Ambiguous) matches.
func PrefixMatch(seg Segment, prefix []string) bool {
	if len(prefix) == 0 || len(seg.Words) < len(prefix) || !ruleMatchable(seg) {
		return false
	}
	for i, p := range prefix {
		if w := seg.Words[i]; !w.Static || w.Lit != p {
			return false
		}
	}
	return true
}

// ExactMatch reports whether a segment's words are exactly words, for a rule such as
// `Bash(git status)`, under the same conditions as PrefixMatch.
func ExactMatch(seg Segment, words []string) bool {
	return len(seg.Words) == len(words) && PrefixMatch(seg, words)
}

func ruleMatchable(seg Segment) bool {
	if len(seg.Assignments) > 0 || seg.ambiguous {
		return false
	}
	for _, r := range seg.Redirects {
		if r.Writes && !(r.Target.Static && r.Target.Lit == "/dev/null") {
			return false
		}
	}
	return true
}

// RulePattern reads a Bash rule specifier: "npm run test:*" is the prefix [npm run test],
// "git status" the exact command [git status]. The specifier must be one simple command of
// literal words, without redirection, assignment, substitution or operators; anything else is
// a *sema.Error with code CodeRuleInvalid.
func RulePattern(specifier string) (words []string, prefix bool, err error) {
	body, prefix := strings.CutSuffix(specifier, ":*")
	s, perr := Parse(body)
	if perr != nil {
		return nil, false, &sema.Error{Code: CodeRuleInvalid, Message: "the Bash rule `" + specifier + "` is not a valid shell command", Err: perr}
	}
	if s.ambiguous != "" {
		return nil, false, sema.Errorf(CodeRuleInvalid, "the Bash rule `%s` has %s; write it on one plain line", specifier, s.ambiguous)
	}
	if len(s.Segments) != 1 || s.HasSubstitution || s.HasBackground || s.HasPipe || s.HasControl ||
		len(s.Segments[0].Assignments) > 0 || len(s.Segments[0].Redirects) > 0 || len(s.Segments[0].Words) == 0 {
		return nil, false, sema.Errorf(CodeRuleInvalid, "the Bash rule `%s` must be one simple command of plain words, like `npm run test:*` or `git status`", specifier)
	}
	for _, w := range s.Segments[0].Words {
		if !w.Static {
			return nil, false, sema.Errorf(CodeRuleInvalid, "the Bash rule `%s` has the word `%s`, which the shell would expand; write literal words only", specifier, w.Raw)
		}
		words = append(words, w.Lit)
	}
	return words, prefix, nil
}
