package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// A rendered paragraph keeps its text and carries no padding to the width: the lines
// of a long conversation are kept, and padding would be most of their bytes.
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
