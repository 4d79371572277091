package linediff

// Stat returns what Count(Script(a, b, maxEdits)) returns, at a fraction of the cost. A
// shortest script removes n−L lines of a and adds m−L of b, L being the length of their
// longest common subsequence, so only L is needed. A line of one side that the other
// side does not hold is in no common subsequence: it is removed (or added) in every
// script, and dropping it first leaves L as it was. What is left goes through Myers'
// search for the edit distance alone, on line numbers instead of strings, with no trace
// kept. A file rewritten from scratch shares no line with its restored self, and
// nothing is left to search. When the shortest script has more than maxEdits edits,
// Script gives up and removes the whole middle, then adds all of b's: then so does the
// count.
func Stat(a, b []string, maxEdits int) (added, removed int) {
	p, s := commonEnds(a, b)
	a, b = a[p:len(a)-s], b[p:len(b)-s]
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return m, n
	}
	x, y := sharedLineNumbers(a, b)
	dropped := n - len(x) + m - len(y)
	if d, ok := editDistance(x, y, maxEdits-dropped); ok {
		l := (len(x) + len(y) - d) / 2
		return m - l, n - l
	}
	return m, n
}

// sharedLineNumbers numbers the lines of a and b (equal lines, equal numbers) and
// returns each side's numbers with the lines the other side does not hold left out.
func sharedLineNumbers(a, b []string) (x, y []int32) {
	ids := make(map[string]int32, len(a)+len(b))
	var in []uint8 // per number, the sides holding it (bit 1: a, 2: b)
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
	x, y = number(a, 1), number(b, 2)
	keep := func(s []int32) []int32 {
		out := s[:0]
		for _, id := range s {
			if in[id] == 3 {
				out = append(out, id)
			}
		}
		return out
	}
	return keep(x), keep(y)
}

// editDistance is the number of lines a shortest script from a to b removes and adds,
// and false when that is more than maxD.
func editDistance(a, b []int32, maxD int) (int, bool) {
	if maxD < 0 {
		return 0, false
	}
	if len(a) == 0 || len(b) == 0 {
		return len(a) + len(b), len(a)+len(b) <= maxD
	}
	_, d, ok := search(a, b, maxD, false)
	return d, ok
}
