package shellscan

import (
	"strings"
	"testing"

	"github.com/sema-agent/sema/shellscan/shellscantest"
)

// unmarked returns a copy of s with its ambiguity cleared: the reading the analysis made
// before it knew about the class.
func unmarked(s *Script) *Script {
	c := *s
	c.ambiguous = ""
	c.Segments = append([]Segment(nil), s.Segments...)
	for i := range c.Segments {
		c.Segments[i].ambiguous = false
	}
	return &c
}

func TestLexerHostileFailsClosed(t *testing.T) {
	t.Parallel()
	if len(shellscantest.LexerHostile) < 10 {
		t.Fatalf("only %d hostile spellings", len(shellscantest.LexerHostile))
	}
	for _, tc := range shellscantest.LexerHostile {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			if !shellscantest.BashCreatesMarker(t, tc.Cmd) {
				t.Fatalf("calibration: bash did not create the marker with %q, so the case proves nothing", tc.Cmd)
			}
			if v := ReadOnlyCommand(tc.Cmd, nil); v.OK {
				t.Errorf("%q is read-only", tc.Cmd)
			}
			if v := ReadOnlyCommand(tc.Cmd, []string{"echo", "cat", "ls", "touch"}); v.OK {
				t.Errorf("%q is read-only under an allowlist naming touch", tc.Cmd)
			}
			s, err := Parse(tc.Cmd)
			if err != nil {
				return // the text is refused outright: nothing is judged
			}
			if s.Ambiguous() == "" {
				t.Fatalf("%q is not marked ambiguous", tc.Cmd)
			}
			if v := ReadOnly(s, nil); v.OK || !strings.Contains(v.Reason, "read differently") {
				t.Errorf("ReadOnly(%q) = %+v", tc.Cmd, v)
			}
			for _, seg := range s.Segments {
				for _, rule := range [][]string{{"echo"}, {"cat"}, {"ls"}, {"touch"}} {
					if PrefixMatch(seg, rule) {
						t.Errorf("the prefix rule %v matches a segment of %q", rule, tc.Cmd)
					}
				}
				if len(seg.Words) > 0 && seg.Words[0].Static {
					words := make([]string, 0, len(seg.Words))
					for _, w := range seg.Words {
						words = append(words, w.Lit)
					}
					if ExactMatch(seg, words) || PrefixMatch(seg, words[:1]) {
						t.Errorf("a rule made of the segment's own words %q matches it", words)
					}
				}
			}
			if _, complete := WriteTargets(s); complete {
				t.Errorf("the write targets of %q are complete", tc.Cmd)
			}
			if _, complete := ReadTargets(s); complete {
				t.Errorf("the read targets of %q are complete", tc.Cmd)
			}
			if AcceptsFileCommand(s, false) {
				t.Errorf("acceptEdits accepts %q", tc.Cmd)
			}
			if ReadOnly(unmarked(s), nil).OK {
				t.Logf("without the mark, %q would have been read-only", tc.Cmd)
			}
		})
	}
}

// TestAmbiguousText covers what cannot be calibrated through bash -c (a NUL cannot be passed in
// an argument) and the ordinary texts that must stay unambiguous.
func TestAmbiguousText(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{
		"echo a\x00; touch x",
		"echo a\x01b",
		"echo a\x7fb",
		"echo a\x1b[31m",
		"echo a\u202eb",
		"echo a\u200bb",
		"echo a\u2028b",
		"echo a\u0085b",
		"echo a\rb",
		"echo \"a\\\nb\"",
		"echo 'a \\\nb'",
		"echo $'a \\\nb'",
		"echo a\\\\\nb",
		"echo a\\ \\\nb",
		"cat <<E \\\n-n\nx\nE",
		"echo # x \\\nls",
		"echo a;\\\nls",
		"\\\nls",
	} {
		s, err := Parse(cmd)
		if err != nil {
			continue
		}
		if s.Ambiguous() == "" {
			t.Errorf("%q is not marked ambiguous", cmd)
		}
		if ReadOnly(s, nil).OK {
			t.Errorf("%q is read-only", cmd)
		}
	}
	for _, cmd := range []string{
		"ls -la",
		"echo héllo wörld ✓",
		"echo 'a\nb'",
		"ls \\\n  -la \\\n  src",
		"git log \\\n\t--oneline",
		"grep -n foo \\\n  a.txt | head",
		"cat <<E\nx\nE",
		"echo a # comment\nls",
		"ls\t-la",
		"echo 'a\\b'",
	} {
		s, err := Parse(cmd)
		if err != nil {
			t.Fatalf("%q: %v", cmd, err)
		}
		if why := s.Ambiguous(); why != "" {
			t.Errorf("%q is marked ambiguous: %s", cmd, why)
		}
	}
}
