package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// TestParagraphEnd: a paragraph ends at a blank line outside a code fence; the line still
// growing and a blank line inside a fence end nothing.
func TestParagraphEnd(t *testing.T) {
	for _, tc := range []struct {
		text  string
		want  int
		fence bool
	}{
		{"one line still growing", 0, false},
		{"first\n\nsecond", len("first\n\n"), false},
		{"a\n\nb\n\nc", len("a\n\nb\n\n"), false},
		{"```go\nx := 1\n\ny := 2\n", 0, false},
		{"```go\nx := 1\n\ny := 2\n```\n\nafter", len("```go\nx := 1\n\ny := 2\n```\n\n"), false},
		{"text\n\n```\ncode\n\n", len("text\n\n"), false},
	} {
		got, fence := paragraphEnd(tc.text, 0, false)
		if got != tc.want || fence != tc.fence {
			t.Errorf("paragraphEnd(%q) = %d, %v; want %d, %v", tc.text, got, fence, tc.want, tc.fence)
		}
	}
}

// TestStreamedEqualsWhole: an answer rendered piece by piece, as it streams, shows what
// the same answer rendered at once shows, code block and all.
func TestStreamedEqualsWhole(t *testing.T) {
	text := "Intro paragraph.\n\n```go\nfunc f() {\n\n\treturn\n}\n```\n\n- one\n- two\n\nThe end."
	md := markdownFor("notty")
	var streamed paragraphs
	for i := 1; i <= len(text); i += 7 {
		streamed.render(md, text[:i], 60) // the pieces as they stream; the last render counts
	}
	got := streamed.render(md, text, 60)
	want := md.render(text, 60) // the whole document at once, no paragraphs
	if plain(got) != plain(want) {
		t.Errorf("streamed:\n%s\nwhole:\n%s", got, want)
	}
	if !strings.Contains(ansi.Strip(got), "func f() {") || strings.Count(ansi.Strip(got), "The end.") != 1 {
		t.Errorf("rendered:\n%s", got)
	}
}

// plain is rendered text as a person reads it: no escapes, no trailing blanks.
func plain(s string) string {
	lines := strings.Split(ansi.Strip(s), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}
