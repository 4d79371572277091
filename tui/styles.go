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
	for i, l := range lines {
		lines[i] = trimPadding(l)
	}
	return strings.Join(lines, "\n")
}

// trimPadding drops the spaces glamour pads a line to the wrap width with: each is its
// own span with a foreground colour only (or, without colour, a plain space), which
// draws nothing a blank cell does not. At 120 columns they were 950 of a short line's
// 1,000 bytes, kept for every line of the conversation: 9 of a 10,000-line
// conversation's 16 MiB. A space with a background or any other attribute stays.
func trimPadding(line string) string {
	if !strings.Contains(line, "\x1b") {
		return strings.TrimRight(line, " ")
	}
	for {
		rest, ok := strings.CutSuffix(line, " \x1b[m")
		if !ok {
			return line
		}
		i := strings.LastIndex(rest, "\x1b[")
		if i < 0 || !strings.HasSuffix(rest, "m") || !foregroundOnly(rest[i+2:len(rest)-1]) {
			return line
		}
		line = rest[:i]
	}
}

// foregroundOnly reports whether the SGR parameters set at most a foreground colour
// (or reset), so a space in their style looks like no character at all. It reads the
// parameters in place: it runs for every padding space of every line rendered.
func foregroundOnly(params string) bool {
	next := func() string {
		p, rest, _ := strings.Cut(params, ";")
		params = rest
		return p
	}
	for params != "" {
		switch p := next(); {
		case p == "38":
			n := 0 // the colour's own parameters: 5;N or 2;R;G;B
			switch next() {
			case "5":
				n = 1
			case "2":
				n = 3
			default:
				return false
			}
			for range n {
				if next() == "" {
					return false
				}
			}
		case p == "0", p == "39", len(p) == 2 && (p[0] == '3' || p[0] == '9') && p[1] >= '0' && p[1] <= '7':
		default:
			return false
		}
	}
	return true
}
