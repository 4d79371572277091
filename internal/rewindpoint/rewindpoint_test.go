package rewindpoint

import (
	"testing"

	"github.com/sema-agent/sema/history"
)

func TestForResume(t *testing.T) {
	counts := map[int]int{1: 0, 3: 2}
	for _, c := range []struct {
		name       string
		turn       int
		restoresAt bool
		turns      int
		want       Point
		ok         bool
	}{
		{name: "none asked", turn: -1, turns: 3},
		{name: "a counted turn", turn: 3, turns: 3, want: Point{Turn: 3, At: 2, Counted: true}, ok: true},
		{name: "a turn without a count", turn: 2, turns: 3, want: Point{Turn: 2}, ok: true},
		{name: "the beginning", turn: 0, turns: 3, want: Point{Turn: 0}, ok: true},
		{name: "at the end of a counted turn", restoresAt: true, turn: -1, turns: 3, want: Point{Turn: 4, At: 2, Counted: true, End: true}, ok: true},
		{name: "at the end of a turn without a count", restoresAt: true, turn: -1, turns: 2, want: Point{Turn: 3, End: true}, ok: true},
		{name: "at a chain without turns", restoresAt: true, turn: -1, turns: 0, want: Point{Turn: 1, At: 0, Counted: true}, ok: true},
	} {
		got, ok := ForResume(c.turn, c.restoresAt, c.turns, counts)
		if ok != c.ok || got != c.want {
			t.Errorf("%s: %+v %v, want %+v %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

func TestBoundaryFrom(t *testing.T) {
	bs := []history.Boundary{
		{ID: 10, Turn: 1, Kind: history.KindTurn},
		{ID: 11, Turn: 3, Kind: history.KindTurn},
		{ID: 12, Turn: 1, Kind: history.KindRewind},
	}
	for _, c := range []struct {
		name     string
		at, turn int
		end      bool
		want     int64
		ok       bool
	}{
		{name: "the turn's own boundary", at: 1, turn: 3, want: 11, ok: true},
		{name: "a turn that minted none starts at the next", at: 1, turn: 2, want: 11, ok: true},
		{name: "the end of a turn skips its own boundary", at: 1, turn: 3, end: true, want: 12, ok: true},
		{name: "the end of a turn that minted none", at: 1, turn: 2, end: true, want: 11, ok: true},
		{name: "a rewind boundary is not the turn's own", at: 2, turn: 1, end: true, want: 12, ok: true},
		{name: "nothing changed since", at: 3, turn: 4},
		{name: "without end, the boundary after the count, whatever minted it", at: 2, turn: 1, want: 12, ok: true},
		{name: "a negative count", at: -1, turn: 1},
	} {
		got, ok := BoundaryFrom(bs, c.at, c.turn, c.end)
		if ok != c.ok || got != c.want {
			t.Errorf("%s: %d %v, want %d %v", c.name, got, ok, c.want, c.ok)
		}
	}
	if _, ok := BoundaryFrom(bs[:2], 1, 3, true); ok {
		t.Error("the end of the last turn, whose own boundary is the last, restores from a boundary")
	}
}
