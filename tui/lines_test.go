package tui

import (
	"slices"
	"testing"
)

// TestLineChunksSlice: a window of the conversation's lines crosses the entries' chunks
// and copies just the lines asked for.
func TestLineChunksSlice(t *testing.T) {
	c := &lineChunks{}
	for _, ch := range [][]string{{"a", "b"}, nil, {"c"}, {"d", "e"}} {
		c.add(ch)
	}
	if c.total != 5 {
		t.Fatalf("total = %d, want 5", c.total)
	}
	for _, tc := range []struct {
		lo, hi int
		want   []string
	}{
		{0, 5, []string{"a", "b", "c", "d", "e"}},
		{1, 4, []string{"b", "c", "d"}},
		{4, 5, []string{"e"}},
		{2, 2, []string{}},
	} {
		got := c.slice(tc.lo, tc.hi)
		if !slices.Equal(got, tc.want) {
			t.Errorf("slice(%d, %d) = %q, want %q", tc.lo, tc.hi, got, tc.want)
		}
	}
	got := c.slice(0, 2)
	got[0] = "changed"
	if c.chunks[0][0] != "a" {
		t.Error("a window shares the entry's lines: writing to it changed the entry")
	}
}

// TestAppendTextAfterReplace: a piece streamed after the text was replaced (the whole
// response arrived) extends the new text, not the builder's old one.
func TestAppendTextAfterReplace(t *testing.T) {
	e := &entry{}
	e.appendText("one ")
	e.appendText("two")
	if e.text != "one two" {
		t.Fatalf("text = %q", e.text)
	}
	e.text = "replaced"
	e.appendText(" and more")
	if e.text != "replaced and more" {
		t.Errorf("text = %q, want %q", e.text, "replaced and more")
	}
	e.text = "as long as before" // the builder's length, other bytes
	e.appendText("!")
	if e.text != "as long as before!" {
		t.Errorf("text = %q, want %q", e.text, "as long as before!")
	}
}
