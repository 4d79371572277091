package history

import (
	"fmt"
	"strings"

	"github.com/sema-agent/sema/internal/linediff"
)

// Limits of the diffs a rewind shows. A diff is there for a person to judge what a
// rewind would overwrite, not a patch to apply, so a huge one is cut rather than
// computed in full.
const (
	diffContext  = 3    // unchanged lines around each change
	diffMaxEdits = 1000 // the line diff's work bound (Myers' D); past it, one block replaces the changed region
	diffMaxLines = 400  // hunk lines printed before the diff is cut
)

// diffStat counts the lines a change from old to new adds and removes: the counts of
// the script a Diff shows (linediff.Count of script(old, new)), without building it.
func diffStat(old, new string) (added, removed int) {
	if old == new {
		return 0, 0
	}
	return diffCount(linediff.Lines(old), linediff.Lines(new), diffMaxEdits)
}

// diffCount returns what linediff.Count(linediff.Script(a, b, maxEdits)) returns, at a
// fraction of the cost. A shortest script removes n−L lines of a and adds m−L of b, L
// being the length of their longest common subsequence, so only L is needed. A line of
// one side that the other side does not hold is in no common subsequence: it is
// removed (or added) in every script, and dropping it first leaves L as it was. What is
// left goes through Myers' search for the edit distance alone, on line numbers instead
// of strings, with no trace kept. A file rewritten from scratch shares no line with its
// restored self, and nothing is left to search. When the shortest script has more than
// maxEdits edits, Script gives up and removes the whole middle, then adds all of b's:
// then so does the count.
func diffCount(a, b []string, maxEdits int) (added, removed int) {
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	a, b = a[p:len(a)-s], b[p:len(b)-s]
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return m, n
	}
	// Number the lines; in is set for a number the other side holds (bit 1: a, 2: b).
	ids := make(map[string]int32, n+m)
	var in []uint8
	number := func(lines []string, side uint8) []int32 {
		out := make([]int32, len(lines))
		for i, l := range lines {
			id, ok := ids[l]
			if !ok {
				id = int32(len(in))
				ids[l] = id
				in = append(in, 0)
			}
			in[id] |= side
			out[i] = id
		}
		return out
	}
	x, y := number(a, 1), number(b, 2)
	keep := func(s []int32) []int32 {
		out := s[:0]
		for _, id := range s {
			if in[id] == 3 {
				out = append(out, id)
			}
		}
		return out
	}
	x, y = keep(x), keep(y)
	dropped := n - len(x) + m - len(y)
	if d, ok := editDistance(x, y, maxEdits-dropped); ok {
		l := (len(x) + len(y) - d) / 2
		return m - l, n - l
	}
	return m, n
}

// editDistance is the number of lines a shortest script from a to b removes and adds
// (Myers' forward search), and false when that is more than maxD.
func editDistance(a, b []int32, maxD int) (int, bool) {
	n, m := len(a), len(b)
	if maxD < 0 {
		return 0, false
	}
	if n == 0 || m == 0 {
		return n + m, n+m <= maxD
	}
	maxD = min(maxD, n+m)
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	for d := 0; d <= maxD; d++ {
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
				return d, true
			}
		}
	}
	return 0, false
}

// unifiedDiff renders the change from old (labelled from) to new (labelled to) as a
// unified diff, "" when they are equal. A missing file is /dev/null, as diff -N shows.
func unifiedDiff(from, to, old, new string) string {
	if old == new && from == to {
		return ""
	}
	ops := script(old, new)
	var w strings.Builder
	fmt.Fprintf(&w, "--- %s\n+++ %s\n", from, to)
	printed := 0
	for i := 0; i < len(ops); {
		// A hunk starts diffContext lines before the next change and runs until a
		// stretch of more than 2·diffContext kept lines.
		j := i
		for j < len(ops) && ops[j].Kind == ' ' {
			j++
		}
		if j == len(ops) {
			break
		}
		start := max(i, j-diffContext)
		end := j
		for end < len(ops) {
			if ops[end].Kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].Kind == ' ' {
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
			if op.Kind != '+' {
				aStart++
			}
			if op.Kind != '-' {
				bStart++
			}
		}
		aLen, bLen := 0, 0
		for _, op := range ops[start:end] {
			if op.Kind != '+' {
				aLen++
			}
			if op.Kind != '-' {
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
			w.WriteByte(op.Kind)
			w.WriteString(op.Text)
			if !strings.HasSuffix(op.Text, "\n") {
				w.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i = end
	}
	return w.String()
}

// script is the line edit script from old to new.
func script(old, new string) []linediff.Op {
	return linediff.Script(linediff.Lines(old), linediff.Lines(new), diffMaxEdits)
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
