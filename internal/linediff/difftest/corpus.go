// Package difftest holds the fixed corpus the line diff's callers pin their output on,
// so a change to the shared diff that moves one byte of a rendered diff is seen.
package difftest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// Corpus returns pairs of texts (old, new), the same on every run: random texts over a
// few repeating lines (some without a last newline, some blank), a long file with
// scattered edits, and a rewrite large enough to pass any caller's work bound.
func Corpus() [][2]string {
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
	return append(pairs, [2]string{long.String(), scratch.String()}, [2]string{"", long.String()}, [2]string{long.String(), ""})
}

// Pin fails t unless the sha256 of render's output over the corpus, each output
// followed by a NUL, is want (hex).
func Pin(t testing.TB, want string, render func(old, new string) string) {
	t.Helper()
	h := sha256.New()
	for _, p := range Corpus() {
		h.Write([]byte(render(p[0], p[1])))
		h.Write([]byte{0})
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		t.Fatalf("digest of the corpus's diffs = %s, want %s", got, want)
	}
}
