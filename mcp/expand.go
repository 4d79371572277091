package mcp

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// Expand returns a copy of s with variable references replaced in Command, each of
// Args, the values of Env, URL, and the values of Headers (never in names or keys),
// reading variables through lookup (nil: os.LookupEnv). The grammar is Claude Code's:
//
//   - ${NAME} is the value of NAME. NAME is a letter or '_' followed by letters,
//     digits and '_'. A variable that is set gives its value, even when empty.
//   - ${NAME:-DEFAULT} is the value of NAME when it is set, else DEFAULT: the text up
//     to the first '}', taken literally (it is not expanded in turn, and cannot hold a
//     '}').
//   - Every other '$' is literal: "$HOME", "$$" and a trailing "$" stay as written.
//     There is no escape, so a value cannot hold a literal "${"; a "$${A}" is "$"
//     followed by the value of A.
//
// Expand refuses, with a *sema.Error of code CodeConfigInvalid naming the server and
// the field: a ${NAME} whose variable is not set and that has no default (every such
// name is listed, in the detail "variables" as well), and a "${" that does not begin
// a reference as above — no closing '}', an empty or malformed name, an operator other
// than ":-" — rather than passing it on as text the server would misread.
func (s Server) Expand(lookup func(string) (string, bool)) (Server, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	x := expander{lookup: lookup}
	out := s
	out.Command = x.expand(s.Command, "command")
	if s.Args != nil {
		out.Args = make([]string, len(s.Args))
		for i, a := range s.Args {
			out.Args[i] = x.expand(a, fmt.Sprintf("args[%d]", i))
		}
	}
	out.Env = x.expandMap(s.Env, "env")
	out.URL = x.expand(s.URL, "url")
	out.Headers = x.expandMap(s.Headers, "headers")
	switch {
	case x.syntax != "":
		return Server{}, configError(s.Source, s.Name, x.syntax)
	case len(x.unset) > 0:
		names := slices.Sorted(maps.Keys(x.unset))
		refs := make([]string, len(names))
		for i, n := range names {
			refs[i] = "${" + n + "}"
		}
		what := fmt.Sprintf("uses %s, which %s not set and %s no default; set %s or write ${%s:-default}",
			strings.Join(refs, ", "), plural(len(names), "is", "are"), plural(len(names), "has", "have"), plural(len(names), "it", "them"), names[0])
		return Server{}, configError(s.Source, s.Name, what).With("variables", names)
	}
	return out, nil
}

// expander expands the fields of one server, remembering the first syntax error and
// every unset variable, so one message can name them all.
type expander struct {
	lookup func(string) (string, bool)
	syntax string          // the first malformed reference, as the end of a sentence
	unset  map[string]bool // variables referenced without default and not set
}

// expandMap expands the values of m into a new map.
func (x *expander) expandMap(m map[string]string, field string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out[k] = x.expand(m[k], fmt.Sprintf("%s[%q]", field, k))
	}
	return out
}

// expand returns v with its references replaced. field names v in a message.
func (x *expander) expand(v, field string) string {
	if !strings.Contains(v, "${") {
		return v
	}
	var b strings.Builder
	for {
		i := strings.Index(v, "${")
		if i < 0 {
			b.WriteString(v)
			return b.String()
		}
		b.WriteString(v[:i])
		rest := v[i+2:]
		end := strings.IndexByte(rest, '}')
		if end < 0 {
			x.fail(fmt.Sprintf("has \"${\" without a closing \"}\" in its %s; close the reference as ${NAME}", field))
			return ""
		}
		body := rest[:end]
		name, def, hasDef := strings.Cut(body, ":-")
		if !isVarName(name) {
			x.fail(fmt.Sprintf("has the reference ${%s} in its %s; write ${NAME} or ${NAME:-default}, NAME being letters, digits and '_' not starting with a digit", clip(body, 40), field))
			return ""
		}
		switch val, ok := x.lookup(name); {
		case ok:
			b.WriteString(val)
		case hasDef:
			b.WriteString(def)
		default:
			if x.unset == nil {
				x.unset = make(map[string]bool)
			}
			x.unset[name] = true
		}
		v = rest[end+1:]
	}
}

// fail records the first malformed reference.
func (x *expander) fail(what string) {
	if x.syntax == "" {
		x.syntax = what
	}
}

// isVarName reports whether s is a variable name: [A-Za-z_][A-Za-z0-9_]*.
func isVarName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// plural picks the singular or plural word for n things.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
