// Package linediff computes line edit scripts: the one line diff of the module, used by
// the write lane (the diff an Edit answers with) and by file history (the diff a rewind
// shows). Rendering stays with each caller; the script is the shared part.
package linediff

import "strings"

// Op is one line of an edit script.
type Op struct {
	// Kind is ' ' for a kept line, '-' for a removed one, '+' for an added one.
	Kind byte
	// Text is the line, with its newline when it had one.
	Text string
}

// Lines splits s after each '\n'; a last line without one is kept as it is. The empty
// string has no lines.
func Lines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// Script returns an edit script from a to b: the common prefix and suffix are kept
// outright and the middle goes through Myers' O((N+M)·D) algorithm. When more than
// maxEdits lines would differ it gives up on the middle and removes all of it, then adds
// all of b's — still a correct script, only a longer one — so a huge change costs
// bounded work.
func Script(a, b []string, maxEdits int) []Op {
	p, s := commonEnds(a, b)
	ops := make([]Op, 0, len(a)+len(b)-p-s)
	for _, l := range a[:p] {
		ops = append(ops, Op{' ', l})
	}
	ops = append(ops, myers(a[p:len(a)-s], b[p:len(b)-s], maxEdits)...)
	for _, l := range a[len(a)-s:] {
		ops = append(ops, Op{' ', l})
	}
	return ops
}

// Count returns how many lines a script from a to b adds and removes.
func Count(ops []Op) (added, removed int) {
	for _, op := range ops {
		switch op.Kind {
		case '+':
			added++
		case '-':
			removed++
		}
	}
	return added, removed
}

// commonEnds returns how many lines a and b share at their start (p) and, past those,
// at their end (s).
func commonEnds[T comparable](a, b []T) (p, s int) {
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	return p, s
}

func myers(a, b []string, maxEdits int) []Op {
	if len(a) > 0 && len(b) > 0 {
		if trace, d, ok := search(a, b, maxEdits, true); ok {
			return backtrack(a, b, trace, d)
		}
	}
	ops := make([]Op, 0, len(a)+len(b))
	for _, l := range a {
		ops = append(ops, Op{'-', l})
	}
	for _, l := range b {
		ops = append(ops, Op{'+', l})
	}
	return ops
}

// search is Myers' forward search: the edit distance d from a to b (lines removed plus
// lines added by a shortest script), and false when it is more than maxD. With
// keepTrace it also returns, for each d' < d, the furthest x reached on diagonals
// -d'..d' before round d' — what backtrack needs to recover the script.
func search[T comparable](a, b []T, maxD int, keepTrace bool) (trace [][]int, d int, ok bool) {
	n, m := len(a), len(b)
	if maxD < 0 {
		return nil, 0, false
	}
	maxD = min(maxD, n+m)
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	for d := 0; d <= maxD; d++ {
		if keepTrace {
			// Only diagonals -d..d can have been reached: keeping just those bounds
			// the trace to O(D²).
			trace = append(trace, append([]int(nil), v[off-d:off+d+1]...))
		}
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				return trace, d, true
			}
		}
	}
	return nil, 0, false
}

func backtrack(a, b []string, trace [][]int, d int) []Op {
	x, y := len(a), len(b)
	var rev []Op
	for ; d > 0; d-- {
		v := trace[d] // diagonal k is v[k+d]
		k := x - y
		var pk int
		if k == -d || (k != d && v[k-1+d] < v[k+1+d]) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := v[pk+d]
		py := px - pk
		for x > px && y > py {
			x, y = x-1, y-1
			rev = append(rev, Op{' ', a[x]})
		}
		if x == px {
			y--
			rev = append(rev, Op{'+', b[y]})
		} else {
			x--
			rev = append(rev, Op{'-', a[x]})
		}
	}
	for x > 0 && y > 0 {
		x, y = x-1, y-1
		rev = append(rev, Op{' ', a[x]})
	}
	ops := make([]Op, len(rev))
	for i, op := range rev {
		ops[len(rev)-1-i] = op
	}
	return ops
}
