package linediff

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// apply replays a script on a; it must give b back, and its kept and removed lines must
// be a's in order.
func apply(t *testing.T, a []string, ops []Op) []string {
	t.Helper()
	var out []string
	i := 0
	for _, op := range ops {
		switch op.Kind {
		case ' ', '-':
			if i >= len(a) || a[i] != op.Text {
				t.Fatalf("op %q does not follow a at line %d", op, i)
			}
			i++
			if op.Kind == ' ' {
				out = append(out, op.Text)
			}
		case '+':
			out = append(out, op.Text)
		default:
			t.Fatalf("op kind %q", op.Kind)
		}
	}
	if i != len(a) {
		t.Fatalf("the script consumed %d of %d lines", i, len(a))
	}
	return out
}

func TestScriptTurnsAIntoB(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"a\n", "b\n", "c\n", "d\n", "e"}
	gen := func() []string {
		n := r.IntN(12)
		out := make([]string, n)
		for i := range out {
			out[i] = words[r.IntN(len(words))]
		}
		return out
	}
	for range 2000 {
		a, b := gen(), gen()
		for _, maxEdits := range []int{1, 3, 1000} {
			ops := Script(a, b, maxEdits)
			if got := apply(t, a, ops); strings.Join(got, "") != strings.Join(b, "") {
				t.Fatalf("Script(%q, %q, %d) gives %q", a, b, maxEdits, got)
			}
		}
		// With room for every edit the script is a shortest one: it keeps a longest
		// common subsequence.
		_, removed := Count(Script(a, b, 1000))
		if want := len(a) - lcs(a, b); removed != want {
			t.Fatalf("%q → %q removes %d lines, a shortest script removes %d", a, b, removed, want)
		}
	}
}

func TestScriptKeepsCommonLinesAndGivesUpPastTheBound(t *testing.T) {
	a := Lines("one\ntwo\nthree\nfour")
	b := Lines("one\n2\nthree\nfour")
	ops := Script(a, b, 1000)
	if added, removed := Count(ops); added != 1 || removed != 1 || len(ops) != 5 {
		t.Fatalf("ops %q", ops)
	}
	big := Script(Lines("x\ny\nz\n"), Lines("p\nq\nr\n"), 1)
	if added, removed := Count(big); added != 3 || removed != 3 {
		t.Fatalf("past the bound: %q", big)
	}
	if Lines("") != nil || len(Lines("a")) != 1 || len(Lines("a\n")) != 1 {
		t.Fatal("Lines")
	}
}

// lcs is the length of a longest common subsequence, by dynamic programming.
func lcs(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}
