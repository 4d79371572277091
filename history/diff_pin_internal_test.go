package history

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// The diffs a rewind shows and the counts it records are pinned byte for byte over a
// fixed corpus: random texts over a few repeating lines (some without a last newline),
// long files with scattered edits, and rewrites past the work bound. A change to the
// shared line diff or to the rendering that moves one byte changes the digest.
func TestDiffOutputIsPinned(t *testing.T) {
	const want = "0b45887523e4088597160869798b4939ebee68cfd99b526d986ab0e2fee5f846"
	h := sha256.New()
	for _, p := range diffCorpus() {
		added, removed := diffStat(p[0], p[1])
		fmt.Fprintf(h, "%d %d\n%s\x00", added, removed, unifiedDiff("a/f", "b/f", p[0], p[1]))
	}
	if got := fmt.Sprintf("%x", h.Sum(nil)); got != want {
		t.Fatalf("digest of the corpus's diffs = %s, want %s", got, want)
	}
}

// diffCorpus returns pairs of texts, the same on every run.
func diffCorpus() [][2]string {
	r := rand.New(rand.NewPCG(3, 5))
	words := []string{"a\n", "b\n", "c\n", "d\n", "e\n", "f", "g\n", "\n"}
	text := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(words[r.IntN(len(words))])
		}
		return b.String()
	}
	var pairs [][2]string
	for range 400 {
		pairs = append(pairs, [2]string{text(r.IntN(30)), text(r.IntN(30))})
	}
	var long strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&long, "line %d %s\n", i%50, strings.Repeat("x", i%5))
	}
	lines := strings.SplitAfter(long.String(), "\n")
	for range 20 {
		edited := append([]string(nil), lines...)
		for range 1 + r.IntN(40) {
			i := r.IntN(len(edited))
			edited[i] = fmt.Sprintf("changed %d\n", r.IntN(1000))
		}
		pairs = append(pairs, [2]string{long.String(), strings.Join(edited, "")})
	}
	var scratch strings.Builder
	for i := range 2500 {
		fmt.Fprintf(&scratch, "new %d\n", i)
	}
	pairs = append(pairs, [2]string{long.String(), scratch.String()}, [2]string{"", long.String()}, [2]string{long.String(), ""})
	return pairs
}
