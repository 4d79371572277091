package linediff

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// Stat gives the counts of the script Script builds, for any pair of texts and any
// work bound: random texts over a few lines (so most lines repeat), texts that share
// nothing, and edits of a long file, each under bounds that cut the search off and
// bounds that do not.
func TestStatIsTheScriptsCount(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	words := []string{"a\n", "b\n", "c\n", "d\n", "e\n", "f", "g\n"}
	gen := func(n int, words []string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = words[r.IntN(len(words))]
		}
		return out
	}
	check := func(a, b []string, maxEdits int) {
		t.Helper()
		wantA, wantR := Count(Script(a, b, maxEdits))
		gotA, gotR := Stat(a, b, maxEdits)
		if gotA != wantA || gotR != wantR {
			t.Fatalf("Stat(%q, %q, %d) = +%d -%d, the script says +%d -%d", a, b, maxEdits, gotA, gotR, wantA, wantR)
		}
	}
	bounds := []int{0, 1, 2, 3, 5, 8, 1000}
	for range 3000 {
		a, b := gen(r.IntN(14), words), gen(r.IntN(14), words)
		for _, maxEdits := range bounds {
			check(a, b, maxEdits)
		}
	}
	// Some lines only one side holds, some both.
	for range 1000 {
		a := gen(r.IntN(20), append(words, "only a\n", "also only a\n"))
		b := gen(r.IntN(20), append(words, "only b\n"))
		for _, maxEdits := range bounds {
			check(a, b, maxEdits)
		}
	}
	// A file rewritten from scratch, and a long file with a few edits.
	var long []string
	for i := range 500 {
		long = append(long, strings.Repeat("x", i%7)+"\n", "}\n")
	}
	scratch := make([]string, 300)
	for i := range scratch {
		scratch[i] = "new " + strings.Repeat("y", i) + "\n"
	}
	edited := append([]string(nil), long...)
	for range 20 {
		i := r.IntN(len(edited))
		switch r.IntN(3) {
		case 0:
			edited = append(edited[:i], edited[i+1:]...)
		case 1:
			edited = append(edited[:i], append([]string{"inserted\n"}, edited[i:]...)...)
		default:
			edited[i] = "changed\n"
		}
	}
	for _, maxEdits := range []int{0, 10, 30, 100, 1000} {
		check(long, scratch, maxEdits)
		check(scratch, long, maxEdits)
		check(long, edited, maxEdits)
		check(edited, long, maxEdits)
		check(nil, long, maxEdits)
		check(long, nil, maxEdits)
	}
}
