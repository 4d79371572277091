package files

import (
	"bytes"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dfaLines runs the DFA of pattern (no fallback) over content and returns the 1-based
// numbers of the lines it reports; ok is false when the pattern has no DFA or it gave up.
func dfaLines(t *testing.T, pattern string, fold bool, content string) (lines []int, ok bool) {
	t.Helper()
	m, err := compileGrep(pattern, fold, false)
	if err != nil {
		t.Fatalf("compileGrep(%q): %v", pattern, err)
	}
	return matcherDFALines(t, m, content)
}

// matcherDFALines is dfaLines with the pattern compiled.
func matcherDFALines(t *testing.T, m *grepMatcher, content string) (lines []int, ok bool) {
	t.Helper()
	if m.dfas.New == nil {
		return nil, false
	}
	d := m.dfas.Get().(*lineDFA)
	defer m.dfas.Put(d)
	buf := []byte(content)
	_, ok = d.scan(buf, 0, func(start, end int) bool {
		if bytes.IndexByte(buf[start:end], '\n') >= 0 || start > 0 && buf[start-1] != '\n' || end < len(buf) && buf[end] != '\n' {
			t.Fatalf("pattern %q: span [%d,%d) is not one whole line of %q", m.re, start, end, content)
		}
		lines = append(lines, bytes.Count(buf[:start], []byte{'\n'})+1)
		return true
	})
	return lines, ok
}

// regexpLines is the reference: the lines the regexp matches, each line alone.
func regexpLines(t *testing.T, pattern string, fold bool, content string) []int {
	t.Helper()
	if fold {
		pattern = "(?i)" + pattern
	}
	re := regexp.MustCompile(pattern)
	lines := strings.Split(content, "\n")
	if strings.HasSuffix(content, "\n") || content == "" {
		lines = lines[:len(lines)-1]
	}
	var want []int
	for i, l := range lines {
		if re.MatchString(l) {
			want = append(want, i+1)
		}
	}
	return want
}

func TestLineDFA(t *testing.T) {
	t.Parallel()
	text := "alpha beta\nGamma delta\n\nfunc NewReader(r io.Reader)\nCONSTANT_NAME = 1\n  indented\ncafé Ünïcode\n\xff\xfe invalid\nlast line"
	cases := []struct {
		pattern string
		fold    bool
		content string
	}{
		{`[A-Z]{4,}`, false, text},
		{`[A-Z]{4,}`, true, text},
		{`^$`, false, text},
		{`^`, false, "a\nb\n"},
		{`$`, false, "a\nb"},
		{`x*`, false, "a\n\nb"},
		{`^\s+\w`, false, text},
		{`\w+$`, false, text},
		{`\bdelta\b`, false, text},
		{`\Bet\B`, false, text},
		{`\B`, false, "\n!\na\n"},
		{`\b`, false, "\n!\na\n"},
		{`[^a-z ]\)`, false, text},
		{`.é`, false, text},
		{`[\x{80}-\x{10FFFF}]`, false, text},
		{`\x{FFFD}`, false, text},       // an invalid byte reads as U+FFFD, as the regexp reads it
		{`ü`, true, text},               // non-ASCII case folding
		{`\x{212A}`, true, "k\nK\nx\n"}, // the Kelvin sign folds to k
		{`(a|b)*c`, false, "abac\nabab\nc"},
		{`[[:upper:]][[:lower:]]+ [[:lower:]]`, false, text},
		{`\pL{5}`, false, text},
		{`(?:^|,)x`, false, "x\na,x\nax\n"},
		{`a$|^b`, false, "ba\nab\nb\na"},
		{`[^\n]`, false, "\n\nx\n"},
		{`\S+\s\S+`, false, text},
	}
	// A NUL byte makes a buffer binary: the scan stops there.
	if got, _ := dfaLines(t, `[a-z]`, false, "a\nb\x00\nc\n"); !slices.Equal(got, []int{1, 2}) && !slices.Equal(got, []int{1}) {
		t.Errorf("the scan went past a NUL byte: lines %v", got)
	}
	for _, c := range cases {
		got, ok := dfaLines(t, c.pattern, c.fold, c.content)
		if !ok {
			t.Errorf("pattern %q: no DFA, or it gave up", c.pattern)
			continue
		}
		if want := regexpLines(t, c.pattern, c.fold, c.content); !slices.Equal(got, want) {
			t.Errorf("pattern %q (fold %v) on %q: lines %v, want %v", c.pattern, c.fold, c.content, got, want)
		}
	}
}

func TestSameOnHighRunes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pattern string
		fold    bool
		want    bool
	}{
		{`[A-Z]{12,}`, false, true},
		{`[^a-z ]\)`, false, true}, // a negated class holds every non-ASCII rune
		{`\S+\s`, false, true},
		{`.x`, false, true},
		{`\bab+c\b`, false, true},
		{`ab`, true, true},     // no ASCII letter but k and s folds outside ASCII
		{`k`, true, false},     // the Kelvin sign
		{`s`, true, false},     // the long s
		{`é`, false, false},    // one non-ASCII rune
		{`\pL`, false, false},  // some non-ASCII runes
		{`[a-z]`, true, false}, // the folded class holds the Kelvin sign
	} {
		m, err := compileGrep(c.pattern, c.fold, false)
		if err != nil {
			t.Fatal(err)
		}
		if m.dfas.New == nil {
			t.Fatalf("pattern %q has no DFA", c.pattern)
		}
		if got := m.dfas.Get().(*lineDFA).sameHigh; got != c.want {
			t.Errorf("pattern %q (fold %v): sameHigh %v, want %v", c.pattern, c.fold, got, c.want)
		}
	}
}

// TestLineDFARandomText compares the DFA with the regexp over random text drawn from an
// alphabet that exercises classes, word boundaries, anchors and multibyte runes.
func TestLineDFARandomText(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 5))
	alphabet := []string{"a", "b", "A", "Z", "_", "0", " ", "\t", "\n", "\n", "(", ")", "é", "Ü", "世", "\xff", "\u212A", "k", "s", "\u017F"}
	type pair struct {
		m   *grepMatcher
		ref *regexp.Regexp
	}
	var pairs []pair
	for _, p := range []string{`[A-Z]{2,}`, `\b[a-z]+\b`, `^\s*\(`, `\)\s*$`, `[^ab]{3}`, `(?i)k+s`, `\w\W\w`, `^.{0,3}$`, `(a|b|ab)*Z`, `\pL\PL`, `[éÜ世]+`, `^$|^ $`, `\B`, `a\B`} {
		for _, fold := range []bool{false, true} {
			m, err := compileGrep(p, fold, false)
			if err != nil {
				t.Fatal(err)
			}
			ref := p
			if fold {
				ref = "(?i)" + p
			}
			pairs = append(pairs, pair{m, regexp.MustCompile(ref)})
		}
	}
	for range 300 {
		var b strings.Builder
		for range rng.IntN(300) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		content := b.String()
		lines := strings.Split(content, "\n")
		if strings.HasSuffix(content, "\n") || content == "" {
			lines = lines[:len(lines)-1]
		}
		for _, p := range pairs {
			var want []int
			for i, l := range lines {
				if p.ref.MatchString(l) {
					want = append(want, i+1)
				}
			}
			got, ok := matcherDFALines(t, p.m, content)
			if !ok {
				t.Fatalf("pattern %s: no DFA, or it gave up", p.ref)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("pattern %s on %q: lines %v, want %v", p.ref, content, got, want)
			}
		}
	}
}

// TestLineDFAGivesUp: a pattern whose DFA needs more than dfaMaxStates states (the 15th
// character from a match's end is an a) makes the DFA give up mid-buffer; the regexp
// finishes from the line it stopped on, and the answer is the same.
func TestLineDFAGivesUp(t *testing.T) {
	t.Parallel()
	const pattern = `a[ab]{14}`
	rng := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	for i := range 400 {
		for range 1 + rng.IntN(200) {
			b.WriteByte("ab"[rng.IntN(2)])
		}
		if i%3 == 0 {
			b.WriteString(" x") // a line a match cannot reach the end of
		}
		b.WriteByte('\n')
	}
	content := b.String()
	m, err := compileGrep(pattern, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if m.lits != nil || m.dfas.New == nil {
		t.Fatalf("pattern %q should be scanned by the DFA (literals %v)", pattern, m.lits)
	}
	d := m.dfas.New().(*lineDFA)
	resume, ok := d.scan([]byte(content), 0, func(int, int) bool { return true })
	if ok || d.giveUps != 1 {
		t.Fatalf("the DFA did not give up (%d states)", len(d.states))
	}
	if resume <= 0 || content[resume-1] != '\n' {
		t.Errorf("the DFA resumes at %d, not at the start of a later line", resume)
	}
	if len(d.states) > dfaMaxStates {
		t.Errorf("the DFA kept %d states, more than %d", len(d.states), dfaMaxStates)
	}
	want := regexpLines(t, pattern, false, content)
	for round := range dfaMaxGiveUps + 1 { // the DFAs the matcher hands out give up, then refuse
		if got := matchedLines(t, m, content); !slices.Equal(got, want) {
			t.Fatalf("round %d: lines %v, want %v", round, got, want)
		}
	}
}

// FuzzLineDFA checks the DFA alone (no fallback, no literal prefilter) against the regexp
// run on each line.
func FuzzLineDFA(f *testing.F) {
	for _, s := range []string{`[A-Z]{3,}`, `\bx\b`, `^\s*$`, `(?i)é+`, `[^a]$`, `\B.\B`, `a|^b|c$`} {
		f.Add(s, "AB xCDE x\n\nÉé ab\n\xffz", false)
	}
	f.Fuzz(func(t *testing.T, pattern, content string, fold bool) {
		if _, err := compileGrep(pattern, fold, false); err != nil {
			return
		}
		got, ok := dfaLines(t, pattern, fold, content)
		if !ok {
			return
		}
		if want := regexpLines(t, pattern, fold, content); !sameOrStoppedAtNUL(got, want, content) {
			t.Fatalf("pattern %q (fold %v) on %q: lines %v, want %v", pattern, fold, content, got, want)
		}
	})
}
