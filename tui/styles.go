package tui

import (
	"image/color"
	"strings"
	"sync"

	"charm.land/glamour/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// styles are the screen's colours, chosen for the terminal's background; with NO_COLOR
// every style is plain (the weight stays, so the structure still reads).
type styles struct {
	user, tool, ok, failed, dim, errText, added, removed lipgloss.Style
	status, demo, dialog, title                          lipgloss.Style
}

func (m *Model) restyle() {
	m.styles = newStyles(m.dark, m.opts.NoColor)
	style := "light"
	switch {
	case m.opts.NoColor:
		style = "notty"
	case m.dark:
		style = "dark"
	}
	m.md = markdownFor(style)
	m.input.SetStyles(inputStyles(m.dark, m.opts.NoColor))
	for _, e := range m.entries {
		e.cache, e.paras = "", paragraphs{}
	}
}

func newStyles(dark, noColor bool) styles {
	ld := lipgloss.LightDark(dark)
	fg := func(light, darkC string) lipgloss.Style {
		if noColor {
			return lipgloss.NewStyle()
		}
		return lipgloss.NewStyle().Foreground(ld(lipgloss.Color(light), lipgloss.Color(darkC)))
	}
	var border color.Color = ld(lipgloss.Color("#8a5cf5"), lipgloss.Color("#b79cff"))
	dialog := lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).Padding(0, 1)
	if !noColor {
		dialog = dialog.BorderForeground(border)
	}
	demo := fg("#a15c00", "#ffb454").Bold(true)
	return styles{
		user:    fg("#1f5fbf", "#7fb4ff").Bold(true),
		tool:    fg("#555555", "#b0b0b0"),
		ok:      fg("#1a7f37", "#56d364"),
		failed:  fg("#b42318", "#ff7b72"),
		dim:     fg("#6e6e6e", "#8b8b8b"),
		errText: fg("#b42318", "#ff7b72"),
		added:   fg("#1a7f37", "#56d364"),
		removed: fg("#b42318", "#ff7b72"),
		status:  fg("#444444", "#c8c8c8").Reverse(noColor),
		demo:    demo,
		dialog:  dialog,
		title:   fg("#8a5cf5", "#b79cff").Bold(true),
	}
}

// markdown renders the model's text with glamour, one renderer per width, built on
// first use (building one reads its style sheet).
type markdown struct {
	style string
	mu    sync.Mutex
	byW   map[int]*glamour.TermRenderer
}

var (
	markdownMu     sync.Mutex
	markdownStyles = map[string]*markdown{}
)

func markdownFor(style string) *markdown {
	markdownMu.Lock()
	defer markdownMu.Unlock()
	md := markdownStyles[style]
	if md == nil {
		md = &markdown{style: style, byW: map[int]*glamour.TermRenderer{}}
		markdownStyles[style] = md
	}
	return md
}

// render renders text at width; text glamour refuses is shown as it is.
func (md *markdown) render(text string, width int) string {
	md.mu.Lock()
	r := md.byW[width]
	if r == nil {
		var err error
		r, err = glamour.NewTermRenderer(glamour.WithStandardStyle(md.style), glamour.WithWordWrap(width))
		if err != nil {
			md.mu.Unlock()
			return text
		}
		md.byW[width] = r
	}
	out, err := r.Render(text)
	md.mu.Unlock()
	if err != nil {
		return text
	}
	return trimBlankLines(out)
}

// trimBlankLines drops the blank lines (spaces and escapes only) glamour puts around a
// document, so paragraphs rendered apart join with one blank line between them.
func trimBlankLines(s string) string {
	lines := strings.Split(s, "\n")
	blank := func(l string) bool { return strings.TrimSpace(ansi.Strip(l)) == "" }
	for len(lines) > 0 && blank(lines[0]) {
		lines = lines[1:]
	}
	for len(lines) > 0 && blank(lines[len(lines)-1]) {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n")
}
