package tui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sema-agent/sema/agent"
)

type entryKind int

const (
	entryUser entryKind = iota
	entryAssistant
	entryTool
	entryNotice
	entryError
	entryHelp
	entryThinking
)

// entry is one item of the conversation as the screen shows it.
type entry struct {
	kind entryKind
	text string
	// A tool call's state: a child leg's call (indented), finished, failed with code.
	child, done, failed bool
	code                string
	// detail is a failed call's first line of its answer, shown under it.
	detail string
	// cache is the entry rendered at cacheW columns (an assistant entry's is rendered, its
	// rendering kept in paras); "" when it must be rendered again. lines and tail are the
	// rendering's lines, tail an assistant entry's paragraph still growing.
	cache       string
	cacheW      int
	lines, tail []string
	// buf holds a streaming entry's text as it grows: text is its String, so a piece
	// appended does not copy the text before it.
	buf strings.Builder
	// paras keeps an assistant entry's finished paragraphs rendered at cacheW.
	paras paragraphs
	// call is a tool call's input and answer, shown when Ctrl-O expands the calls.
	call *toolCall
}

// View implements tea.Model.
func (m *Model) View() tea.View {
	v := tea.NewView(m.frame())
	v.AltScreen = true
	v.WindowTitle = "sema"
	return v
}

// frame renders the screen: the conversation's last lines above what sits at the
// bottom — the queued prompts, the open question, the input and the status line.
func (m *Model) frame() string {
	if m.quitting {
		return ""
	}
	bottom := m.bottom()
	room := max(0, m.height-len(bottom))
	lines := m.window(m.convo(), room)
	for len(lines) < room {
		lines = append(lines, "")
	}
	lines = append(lines, bottom...)
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, m.width, "")
	}
	return strings.Join(lines, "\n")
}

// rendered is the cache of an assistant entry whose lines are current.
const rendered = "rendered"

// blankLine parts the turns' parts; never written to.
var blankLine = []string{""}

// lineChunks are the conversation's lines as the entries keep them, not copied: a frame
// copies only the lines it shows, so its cost does not grow with the conversation's text.
type lineChunks struct {
	chunks [][]string
	total  int
}

func (c *lineChunks) add(lines []string) {
	if len(lines) > 0 {
		c.chunks, c.total = append(c.chunks, lines), c.total+len(lines)
	}
}

// slice copies the lines from lo up to hi.
func (c *lineChunks) slice(lo, hi int) []string {
	out := make([]string, 0, max(0, hi-lo))
	at := 0
	for _, ch := range c.chunks {
		if at >= hi {
			break
		}
		if end := at + len(ch); end > lo {
			out = append(out, ch[max(0, lo-at):min(len(ch), hi-at)]...)
		}
		at += len(ch)
	}
	return out
}

// conversation renders every entry, a blank line between turns' parts.
func (m *Model) conversation() []string {
	c := m.convo()
	return c.slice(0, c.total)
}

// convo renders the entries not rendered at this width yet and returns every entry's
// lines, a blank line between turns' parts.
func (m *Model) convo() *lineChunks {
	c := &lineChunks{chunks: make([][]string, 0, 2*len(m.entries)+1)}
	for i, e := range m.entries {
		if i > 0 && (e.kind == entryUser || e.kind == entryAssistant || e.kind == entryHelp || e.kind == entryThinking) {
			c.add(blankLine)
		}
		if e.cacheW != m.width {
			e.cache, e.paras = "", paragraphs{}
		}
		if e.cache == "" {
			m.renderLines(e)
			e.cacheW = m.width
		}
		c.add(e.lines)
		c.add(e.tail)
	}
	return c
}

// renderLines renders e into its lines.
func (m *Model) renderLines(e *entry) {
	if e.kind == entryAssistant {
		e.lines, e.tail = e.paras.lines(m.md, e.text, max(20, m.width)-2)
		e.cache = rendered
		return
	}
	e.cache = m.renderEntry(e)
	e.lines, e.tail = strings.Split(e.cache, "\n"), nil
}

// appendText adds a streamed piece to e's text.
func (e *entry) appendText(s string) {
	if e.buf.Len() != len(e.text) || e.buf.String() != e.text { // the text was replaced
		e.buf.Reset()
		e.buf.WriteString(e.text)
	}
	e.buf.WriteString(s)
	e.text = e.buf.String()
}

func (m *Model) renderEntry(e *entry) string {
	s, w := m.styles, max(20, m.width)
	wrap := lipgloss.NewStyle().Width(w - 2)
	switch e.kind {
	case entryUser:
		return s.user.Render("› ") + indentRest(wrap.Render(sanitizeLines(e.text)), "  ")
	case entryAssistant:
		return e.paras.render(m.md, e.text, w-2)
	case entryTool:
		mark := s.dim.Render("…")
		switch {
		case e.failed:
			mark = s.failed.Render("✗ " + e.code)
		case e.done:
			mark = s.ok.Render("✓")
		}
		lead := "  ● "
		if e.child {
			lead = "      ⤷ "
		}
		out := s.tool.Render(lead+e.text) + " " + mark
		if e.detail != "" {
			out += "\n" + s.dim.Render(hanging(strings.Repeat(" ", len(lead))+"└ ", sanitize(e.detail), w))
		}
		return out + m.toolDetail(e, len(lead), w)
	case entryNotice:
		return s.dim.Render(hanging("  · ", e.text, w))
	case entryError:
		return s.errText.Render(hanging("  ✗ ", e.text, w))
	case entryThinking:
		return s.dim.Italic(true).Render(hanging("  ∴ ", sanitizeLines(e.text), w))
	case entryHelp:
		lines := []string{s.title.Render("keys and commands")}
		for _, k := range append(keyHelp[:len(keyHelp):len(keyHelp)], m.helpCommands()...) {
			lines = append(lines, fmt.Sprintf("  %-12s %s", k[0], k[1]))
		}
		return strings.Join(lines, "\n")
	}
	return e.text
}

// bottom is what sits under the conversation, top to bottom.
func (m *Model) bottom() []string {
	var out []string
	for _, q := range m.queue {
		out = append(out, m.styles.dim.Render("  queued › "+sanitize(q)))
	}
	if m.question != nil {
		out = append(out, strings.Split(m.dialog(), "\n")...)
	} else if m.saving != nil {
		out = append(out, m.saveView()...)
	}
	if m.picker != nil {
		out = append(out, m.pickerView()...)
	}
	out = append(out, m.questionsView()...)
	if m.ctrlC {
		out = append(out, m.styles.dim.Render("  press Ctrl-C again to exit"))
	}
	out = append(out, m.inputLines()...)
	out = append(out, strings.Split(m.input.View(), "\n")...)
	out = append(out, m.statusLine())
	return out
}

// dialog renders the open question: the tool, the exact action, the gate's sentence and
// the numbered choices, with the rule "allow always" adds.
func (m *Model) dialog() string {
	q, s := m.question.Request, m.styles
	w := max(20, min(m.width, 100))
	inner := w - 4 // the border and the padding
	body := []string{s.title.Render("permission · " + sanitize(q.Tool))}
	if q.Agent != "" {
		body = append(body, s.dim.Render("asked by the "+sanitize(q.Agent)+" agent"))
	}
	if plan := planOf(q.Tool, q.Input); plan != "" {
		body = append(body, m.planLines(plan, inner)...)
	}
	for _, l := range planless(q.Tool, q.Input) {
		st := lipgloss.NewStyle()
		switch l.kind {
		case lineDim:
			st = s.dim
		case lineAdded:
			st = s.added
		case lineRemoved:
			st = s.removed
		}
		body = append(body, st.Width(inner).Render(l.text))
	}
	if r := strings.TrimSpace(q.Ask.Reason); r != "" {
		body = append(body, s.dim.Width(inner).Render(sanitize(r)))
	}
	choices := "1 allow once · 2 allow always: " + sanitize(Rule(q)) + " · 3 deny · Esc denies"
	if q.Ask.PersonOnly {
		choices = "1 allow once · 3 deny · Esc denies (asked every time)"
	}
	body = append(body, lipgloss.NewStyle().Bold(true).Width(inner).Render(choices))
	if m.note != nil {
		body = append(body, m.noteView(inner)...)
	}
	return s.dialog.Width(w).Render(strings.Join(body, "\n"))
}

// statusLine is the model, the mode, the sandbox, the tokens and the cost so far.
func (m *Model) statusLine() string {
	s := m.styles
	var who string
	if m.opts.Demo {
		who = s.demo.Render("DEMO (scripted, no API)")
	} else {
		who = orDash(m.opts.Model)
	}
	parts := []string{
		who,
		"mode: " + string(m.mode),
		"sandbox: " + orDash(m.sandbox),
		fmt.Sprintf("%s in/%s out", tokens(m.usage.InputTokens+m.usage.CacheReadTokens+m.usage.CacheWriteTokens), tokens(m.usage.OutputTokens)),
		m.costText(),
	}
	parts = m.statusFacts(parts)
	lead := "  " // the mark of a running turn, "● ", takes its place
	if m.running {
		lead = "● "
	}
	line := lead + strings.Join(parts, " · ")
	if m.width > 0 {
		// Cut where the screen ends, saying so, rather than mid-word by the terminal.
		line = ansi.Truncate(line, m.width, "…")
	}
	return s.status.Render(line)
}

func (m *Model) costText() string {
	switch {
	case m.opts.Demo:
		return "no cost"
	case m.costUnknown:
		return fmt.Sprintf("≥ $%.4f (a model has no price)", m.cost)
	default:
		return fmt.Sprintf("$%.4f", m.cost)
	}
}

func tokens(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// sandboxWord says in a word what the kernel does for the leg's commands.
func sandboxWord(sh agent.ShellFacts) string {
	switch {
	case !sh.FullShell && !sh.ReadOnlyShell:
		return "no shell"
	case sh.Sandbox.Enforced && sh.Sandbox.Reason == "":
		return "on"
	case sh.Sandbox.Enforced:
		return "partial"
	}
	return "off"
}

// hanging wraps text to width after lead, indenting the lines after the first under it.
func hanging(lead, text string, width int) string {
	pad := strings.Repeat(" ", ansi.StringWidth(lead))
	body := lipgloss.NewStyle().Width(max(10, width-len(pad))).Render(text)
	lines := strings.Split(body, "\n")
	for i := range lines {
		p := pad
		if i == 0 {
			p = lead
		}
		lines[i] = p + strings.TrimRight(lines[i], " ")
	}
	return strings.Join(lines, "\n")
}

// sanitizeLines sanitizes each line of a multi-line text, keeping its line breaks.
func sanitizeLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = sanitize(strings.TrimSuffix(l, "\r"))
	}
	return strings.Join(lines, "\n")
}
