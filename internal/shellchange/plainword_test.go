package shellchange

import (
	"regexp"
	"strings"
	"testing"
)

// plainWordRE is what plainWord checks by hand.
var plainWordRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// FuzzPlainWord: plainWord and the regular expression it stands for agree on every
// string — so a scope or leg that names its directory as it is was always a plain word,
// and one with a separator, a dot first or a byte outside ASCII is hashed.
func FuzzPlainWord(f *testing.F) {
	for _, s := range []string{"", "a", "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9", "../x", ".hidden", "-x", "a/b", "a b",
		"é", "a\x00", strings.Repeat("a", 128), strings.Repeat("a", 129), "A_b.c-9", "_x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := plainWord(s), plainWordRE.MatchString(s); got != want {
			t.Fatalf("plainWord(%q) = %v, the expression says %v", s, got, want)
		}
	})
}
