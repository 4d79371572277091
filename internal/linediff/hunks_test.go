package linediff

import (
	"fmt"
	"testing"
)

// Two changes with at most twice the context between them share a hunk; further apart
// they get one each, and each hunk numbers its first lines on both sides.
func TestHunksMergeCloseChangesAndNumberTheirLines(t *testing.T) {
	kept := func(n int) []Op {
		ops := make([]Op, n)
		for i := range ops {
			ops[i] = Op{' ', fmt.Sprintf("k%d\n", i)}
		}
		return ops
	}
	script := func(gap int) []Op {
		ops := append(kept(5), Op{'-', "old\n"}, Op{'+', "new\n"}, Op{'+', "more\n"})
		ops = append(ops, kept(gap)...)
		return append(append(ops, Op{'-', "gone\n"}), kept(5)...)
	}
	for _, c := range []struct {
		gap  int
		want []Hunk
	}{
		{gap: 6, want: []Hunk{{Start: 2, End: 18, OldLine: 2, NewLine: 2, OldLen: 14, NewLen: 14}}},
		{gap: 7, want: []Hunk{
			{Start: 2, End: 11, OldLine: 2, NewLine: 2, OldLen: 7, NewLen: 8},
			{Start: 12, End: 19, OldLine: 10, NewLine: 11, OldLen: 7, NewLen: 6},
		}},
	} {
		got := Hunks(script(c.gap), 3)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("gap %d: Hunks = %+v, want %+v", c.gap, got, c.want)
		}
	}
	if got := Hunks(kept(4), 3); len(got) != 0 {
		t.Errorf("a script with no change has hunks %+v", got)
	}
}
