package tui

import (
	"image/color"
	"strings"

	"charm.land/lipgloss/v2"

	"github.com/sema-agent/sema/internal/termmd"
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

// markdown renders the model's text for the screen's background (termmd: Markdown as
// terminal text, wrapped to the width and coloured without a syntax highlighter's
// registries to initialise in every process).
type markdown struct {
	style termmd.Style
}

var markdownStyles = map[string]*markdown{
	"dark":  {termmd.Dark},
	"light": {termmd.Light},
	"notty": {termmd.NoTTY},
}

// markdownFor returns the renderer of a style: "dark", "light" or "notty" (no escapes).
func markdownFor(style string) *markdown {
	if md := markdownStyles[style]; md != nil {
		return md
	}
	return markdownStyles["notty"]
}

// render renders text at width: its lines, none blank at either end and none padded,
// each but a blank one after a margin of two spaces (the assistant's text sits under the
// user's, past the prompt's "› ").
func (md *markdown) render(text string, width int) string {
	out := termmd.Render(text, max(width-margin, 1), md.style)
	if out == "" {
		return ""
	}
	var b strings.Builder
	b.Grow(len(out) + margin*(strings.Count(out, "\n")+1))
	for line := range strings.Lines(out) {
		if line != "\n" {
			b.WriteString("  ")
		}
		b.WriteString(line)
	}
	return b.String()
}

// margin is the markdown's left margin, in cells.
const margin = 2
