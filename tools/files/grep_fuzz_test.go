package files

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// FuzzGrepMatcher checks the whole-buffer matcher (literal prefilter, chunks, rewritten
// anchors and classes) against the plain definition: a line matches when the regexp
// matches it alone.
func FuzzGrepMatcher(f *testing.F) {
	seeds := []struct {
		pattern, content string
		fold             bool
	}{
		{"beta", "alpha beta\nGamma\n", false},
		{`func \w+Reader\(`, "func NewReader(r)\nfunc x()\n", false},
		{`^$`, "a\n\nb", false},
		{`\s+x`, "a\n x\nx", false},
		{`[^a]b`, "a\nb\ncb", false},
		{`(?i)k`, "\u212A\nk\n", false},
		{"kelvin", "\u212Aelvin", true},
		{`foo|bar`, "xfoo\nbar\nbaz", false},
		{`\Aa|b\z`, "a\nab\nb", false},
		{`x*`, "", false},
		{`(?s).`, "\n\n", false},
	}
	for _, s := range seeds {
		f.Add(s.pattern, s.content, s.fold)
	}
	f.Fuzz(func(t *testing.T, pattern, content string, fold bool) {
		m, err := compileGrep(pattern, fold, false)
		if err != nil {
			return
		}
		ref := pattern
		if fold {
			ref = "(?i)" + pattern
		}
		re, err := regexp.Compile(ref)
		if err != nil {
			t.Fatalf("compileGrep accepted %q but regexp refuses it: %v", pattern, err)
		}
		var want []int
		lines := strings.Split(content, "\n")
		if strings.HasSuffix(content, "\n") || content == "" {
			lines = lines[:len(lines)-1] // no line after the final newline; none in an empty file
		}
		for i, l := range lines {
			if re.MatchString(l) {
				want = append(want, i+1)
			}
		}
		if got := matchedLines(t, m, content); !sameOrStoppedAtNUL(got, want, content) {
			t.Fatalf("pattern %q (fold %v) on %q: lines %v, want %v", pattern, fold, content, got, want)
		}
	})
}

// sameOrStoppedAtNUL reports whether the lines a scan reported are the lines want, or,
// in a buffer holding a NUL byte (binary: never shown), the lines of want up to the line
// of the first NUL at least.
func sameOrStoppedAtNUL(got, want []int, content string) bool {
	nul := strings.IndexByte(content, 0)
	if nul < 0 {
		return slices.Equal(got, want)
	}
	nulLine := strings.Count(content[:nul], "\n") + 1
	if len(got) > len(want) || !slices.Equal(got, want[:len(got)]) {
		return false
	}
	for _, l := range want[len(got):] {
		if l < nulLine {
			return false
		}
	}
	return true
}
