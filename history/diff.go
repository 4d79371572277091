package history

import (
	"fmt"
	"strings"
)

// Limits of the diffs a rewind shows. A diff is there for a person to judge what a
// rewind would overwrite, not a patch to apply, so a huge one is cut rather than
// computed in full.
const (
	diffContext  = 3    // unchanged lines around each change
	diffMaxEdits = 1000 // the line diff's work bound (Myers' D); past it, one block replaces the changed region
	diffMaxLines = 400  // hunk lines printed before the diff is cut
)

type diffOp struct {
	kind byte // ' ' kept, '-' removed, '+' added
	text string
}

// splitLines splits s into lines, each keeping its newline; a last line without one is
// marked so the diff can say so.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// lineDiff returns the edit script from a to b: the common prefix and suffix are kept
// outright, and the middle goes through Myers' algorithm, bounded by diffMaxEdits.
func lineDiff(a, b []string) []diffOp {
	var ops []diffOp
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	for _, l := range a[:p] {
		ops = append(ops, diffOp{' ', l})
	}
	ops = append(ops, myers(a[p:len(a)-s], b[p:len(b)-s])...)
	for _, l := range a[len(a)-s:] {
		ops = append(ops, diffOp{' ', l})
	}
	return ops
}

// myers is the O((N+M)·D) shortest edit script; past diffMaxEdits it gives up and
// replaces all of a with all of b, which is still a correct (if longer) script.
func myers(a, b []string) []diffOp {
	n, m := len(a), len(b)
	block := func() []diffOp {
		ops := make([]diffOp, 0, n+m)
		for _, l := range a {
			ops = append(ops, diffOp{'-', l})
		}
		for _, l := range b {
			ops = append(ops, diffOp{'+', l})
		}
		return ops
	}
	if n == 0 || m == 0 {
		return block()
	}
	maxD := min(n+m, diffMaxEdits)
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	var trace [][]int
	for d := 0; d <= maxD; d++ {
		// Only diagonals -d..d can have been reached: keeping just those bounds the
		// trace to O(D²).
		trace = append(trace, append([]int(nil), v[off-d:off+d+1]...))
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
				return backtrack(a, b, trace, d)
			}
		}
	}
	return block()
}

func backtrack(a, b []string, trace [][]int, d int) []diffOp {
	x, y := len(a), len(b)
	var rev []diffOp
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
			rev = append(rev, diffOp{' ', a[x]})
		}
		if x == px {
			y--
			rev = append(rev, diffOp{'+', b[y]})
		} else {
			x--
			rev = append(rev, diffOp{'-', a[x]})
		}
	}
	for x > 0 && y > 0 {
		x, y = x-1, y-1
		rev = append(rev, diffOp{' ', a[x]})
	}
	ops := make([]diffOp, len(rev))
	for i, op := range rev {
		ops[len(rev)-1-i] = op
	}
	return ops
}

// diffStat counts the lines a change from old to new adds and removes.
func diffStat(old, new string) (added, removed int) {
	if old == new {
		return 0, 0
	}
	for _, op := range lineDiff(splitLines(old), splitLines(new)) {
		switch op.kind {
		case '+':
			added++
		case '-':
			removed++
		}
	}
	return added, removed
}

// unifiedDiff renders the change from old (labelled from) to new (labelled to) as a
// unified diff, "" when they are equal. A missing file is /dev/null, as diff -N shows.
func unifiedDiff(from, to, old, new string) string {
	if old == new && from == to {
		return ""
	}
	ops := lineDiff(splitLines(old), splitLines(new))
	var w strings.Builder
	fmt.Fprintf(&w, "--- %s\n+++ %s\n", from, to)
	printed := 0
	for i := 0; i < len(ops); {
		// A hunk starts diffContext lines before the next change and runs until a
		// stretch of more than 2·diffContext kept lines.
		j := i
		for j < len(ops) && ops[j].kind == ' ' {
			j++
		}
		if j == len(ops) {
			break
		}
		start := max(i, j-diffContext)
		end := j
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*diffContext {
				end = min(run, end+diffContext)
				break
			}
			end = run
		}
		aStart, bStart := 1, 1
		for _, op := range ops[:start] {
			if op.kind != '+' {
				aStart++
			}
			if op.kind != '-' {
				bStart++
			}
		}
		aLen, bLen := 0, 0
		for _, op := range ops[start:end] {
			if op.kind != '+' {
				aLen++
			}
			if op.kind != '-' {
				bLen++
			}
		}
		fmt.Fprintf(&w, "@@ -%s +%s @@\n", hunkRange(aStart, aLen), hunkRange(bStart, bLen))
		for _, op := range ops[start:end] {
			if printed == diffMaxLines {
				fmt.Fprintf(&w, "… (diff cut after %d lines)\n", diffMaxLines)
				return w.String()
			}
			printed++
			w.WriteByte(op.kind)
			w.WriteString(op.text)
			if !strings.HasSuffix(op.text, "\n") {
				w.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i = end
	}
	return w.String()
}

func hunkRange(start, n int) string {
	if n == 0 {
		start-- // an empty range names the line before it, as diff does
	}
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}
