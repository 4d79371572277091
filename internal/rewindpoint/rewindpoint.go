// Package rewindpoint finds where a file rewind starts restoring: which turn a resume's
// file rewind returns to, and which of a history scope's boundaries holds the first
// records to restore, given how many boundaries the scope held when the turn started.
// Turns mint their boundaries lazily, at their first change of a file, so a turn's number
// alone does not find its boundary; the count its transcript entry recorded does.
package rewindpoint

import "github.com/sema-agent/sema/history"

// Point is where a file rewind returns a scope to: the start of Turn or, with End, the
// end of the turn before it.
type Point struct {
	Turn int
	// At is how many boundaries the scope held at that point, when Counted; else the
	// rewind finds Turn's boundary by its number.
	At      int
	Counted bool
	End     bool
}

// ForResume is the point a resumed leg's file rewind returns to, before its first turn.
// turn is the turn a RewindFilesTo names (-1: none); restoresAt asks instead for the
// end of the resumed chain, whose last turn is turns, as RestoreFilesAt does. boundaries
// holds the counts the chain's turns recorded. ok is false when no rewind is asked for.
func ForResume(turn int, restoresAt bool, turns int, boundaries map[int]int) (p Point, ok bool) {
	if restoresAt {
		turn = turns + 1 // the branch starts before the turn after At
	}
	if turn < 0 {
		return Point{}, false
	}
	p = Point{Turn: turn}
	p.At, p.Counted = boundaries[turn]
	if restoresAt {
		// The end of the chain's last turn; before the first turn, the scope's beginning.
		p.At, p.Counted = boundaries[turns]
		p.End = true
		if turns == 0 {
			p.At, p.Counted, p.End = 0, true, false
		}
	}
	return p, true
}

// BoundaryFrom returns the id of the first boundary of bs (the scope's, in mint order)
// that a rewind to the start of turn restores from, given at, the count of boundaries the
// turn's assistant entry recorded; ok is false when there is none (the turn and every
// later one changed nothing). With end, it is the first boundary after the turn instead:
// the turn's own boundary, if it minted one, is skipped.
func BoundaryFrom(bs []history.Boundary, at, turn int, end bool) (from int64, ok bool) {
	if end && at < len(bs) && bs[at].Kind == history.KindTurn && bs[at].Turn == turn {
		at++
	}
	if at < 0 || at >= len(bs) {
		return 0, false
	}
	return bs[at].ID, true
}
