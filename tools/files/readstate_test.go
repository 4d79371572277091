package files

import (
	"slices"
	"testing"
)

func TestMergeRange(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   []LineRange
		add  LineRange
		want []LineRange
	}{
		{nil, LineRange{3, 5}, []LineRange{{3, 5}}},
		{[]LineRange{{1, 2}}, LineRange{3, 5}, []LineRange{{1, 5}}},         // touching joins
		{[]LineRange{{1, 2}}, LineRange{5, 6}, []LineRange{{1, 2}, {5, 6}}}, // a gap stays
		{[]LineRange{{5, 6}}, LineRange{1, 2}, []LineRange{{1, 2}, {5, 6}}}, // order kept
		{[]LineRange{{1, 2}, {8, 9}}, LineRange{2, 8}, []LineRange{{1, 9}}}, // bridges two
		{[]LineRange{{1, 2}, {8, 9}}, LineRange{4, 5}, []LineRange{{1, 2}, {4, 5}, {8, 9}}},
	}
	for _, c := range cases {
		if got := mergeRange(slices.Clone(c.in), c.add); !slices.Equal(got, c.want) {
			t.Errorf("mergeRange(%v, %v) = %v, want %v", c.in, c.add, got, c.want)
		}
	}
}

// TestRecordPart: parts of one content widen its ranges; a whole read or new content
// replaces them; a whole read stays whole.
func TestRecordPart(t *testing.T) {
	t.Parallel()
	s := NewReadState()
	a := ReadRecord{Size: 10, Hash: "a"}
	s.recordPart("/f", a, 1, 2)
	s.recordPart("/f", a, 5, 6)
	if r, _ := s.Lookup("/f"); !slices.Equal(r.Ranges, []LineRange{{1, 2}, {5, 6}}) {
		t.Fatalf("ranges %v", r.Ranges)
	}
	s.recordPart("/f", ReadRecord{Size: 11, Hash: "b"}, 3, 3)
	if r, _ := s.Lookup("/f"); r.Hash != "b" || !slices.Equal(r.Ranges, []LineRange{{3, 3}}) {
		t.Fatalf("new content %+v", r)
	}
	s.Record("/f", ReadRecord{Size: 11, Hash: "b"})
	s.recordPart("/f", ReadRecord{Size: 11, Hash: "b"}, 1, 1)
	if r, _ := s.Lookup("/f"); len(r.Ranges) != 0 {
		t.Fatalf("a whole read became partial: %+v", r)
	}
	snap := s.Snapshot()
	s.Forget("/f")
	if _, ok := snap["/f"]; !ok {
		t.Fatal("the snapshot is not a copy")
	}
}
