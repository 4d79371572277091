package mcp

import (
	"regexp"
	"strings"
	"testing"
)

// serverNameRE is the rule validServerName checks by hand.
var serverNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// FuzzServerName: validServerName and the regular expression of the rule agree on every
// name — a dot, a slash, a space, a byte outside ASCII or a 65th character is refused.
func FuzzServerName(f *testing.F) {
	for _, s := range []string{"", "github", "my-server_2", "a.b", "a/b", "a b", "é", "-", "_x", strings.Repeat("a", 64), strings.Repeat("a", 65), "x\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validServerName(s), serverNameRE.MatchString(s); got != want {
			t.Fatalf("validServerName(%q) = %v, the rule says %v", s, got, want)
		}
	})
}
