package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// The padding glamour adds to every line is dropped where it draws nothing; a space
// with a background, reverse video or underline, and the text itself, stay.
func TestTrimPadding(t *testing.T) {
	fg := func(p string) string { return "\x1b[" + p + "m \x1b[m" }
	for _, tc := range []struct{ name, in, want string }{
		{"256-colour foreground", "  \x1b[38;5;252mword\x1b[m" + strings.Repeat(fg("38;5;252"), 60), "  \x1b[38;5;252mword\x1b[m"},
		{"true-colour foreground", "x" + fg("38;2;10;20;30") + fg("31") + fg("97") + fg("39") + fg(""), "x"},
		{"plain spaces", "  word   ", "  word"},
		{"background", "x" + fg("48;5;236"), "x" + fg("48;5;236")},
		{"foreground then background", "x" + fg("48;5;236") + fg("38;5;252"), "x" + fg("48;5;236")},
		{"reverse", "x" + fg("7"), "x" + fg("7")},
		{"underline", "x" + fg("38;5;252;4"), "x" + fg("38;5;252;4")},
		{"short true colour", "x" + fg("38;2;1"), "x" + fg("38;2;1")},
		{"styled text last", "\x1b[38;5;252mword \x1b[m", "\x1b[38;5;252mword \x1b[m"},
		{"spaces inside a background span", "\x1b[48;5;236mcode   \x1b[m", "\x1b[48;5;236mcode   \x1b[m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := trimPadding(tc.in); got != tc.want {
				t.Errorf("trimPadding(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// A rendered paragraph keeps its text and loses the padding: at 120 columns a short
// line is a tenth of what glamour returned.
func TestMarkdownLinesCarryNoPadding(t *testing.T) {
	const text = "A line of the model's answer, long enough to matter."
	for _, style := range []string{"dark", "light", "notty"} {
		out := markdownFor(style).render(text, 118)
		if got := strings.TrimSpace(ansi.Strip(out)); got != text {
			t.Errorf("%s: the text reads %q", style, got)
		}
		if strings.HasSuffix(ansi.Strip(out), " ") || len(out) > 200 {
			t.Errorf("%s: the line keeps its padding (%d bytes): %q", style, len(out), out)
		}
	}
}
