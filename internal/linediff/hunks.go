package linediff

// Hunk is a stretch of a script printed under one "@@" header: one or more changes with
// up to the context's kept lines around them.
type Hunk struct {
	// Start and End bound the hunk's ops: ops[Start:End].
	Start, End int
	// OldLine and NewLine count the lines of a and of b before ops[Start].
	OldLine, NewLine int
	// OldLen and NewLen count the lines of a and of b the hunk shows.
	OldLen, NewLen int
}

// Hunks groups a script's changes with context kept lines on each side, merging two
// changes whose gap is at most twice that, as diff -U does.
func Hunks(ops []Op, context int) []Hunk {
	var hunks []Hunk
	oldLine, newLine := 0, 0
	i := 0
	advance := func(to int) {
		for ; i < to; i++ {
			oldLine, newLine = oldLine+oldSide(ops[i]), newLine+newSide(ops[i])
		}
	}
	for {
		first := nextChange(ops, i)
		if first == len(ops) {
			return hunks
		}
		last := first
		for j := nextChange(ops, first+1); j < len(ops) && j-last-1 <= 2*context; j = nextChange(ops, j+1) {
			last = j
		}
		h := Hunk{Start: max(first-context, i), End: min(last+context+1, len(ops))}
		advance(h.Start)
		h.OldLine, h.NewLine = oldLine, newLine
		advance(h.End)
		h.OldLen, h.NewLen = oldLine-h.OldLine, newLine-h.NewLine
		hunks = append(hunks, h)
	}
}

// nextChange returns the index of the first op at or after i that is not a kept line,
// len(ops) when there is none.
func nextChange(ops []Op, i int) int {
	for i < len(ops) && ops[i].Kind == ' ' {
		i++
	}
	return i
}

// oldSide is 1 for an op that shows a line of a (kept or removed).
func oldSide(op Op) int {
	if op.Kind == '+' {
		return 0
	}
	return 1
}

// newSide is 1 for an op that shows a line of b (kept or added).
func newSide(op Op) int {
	if op.Kind == '-' {
		return 0
	}
	return 1
}
