package tui

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// foldLines is how many lines of a tool call's output Ctrl-O shows before folding the
// rest into "… N more lines".
const foldLines = 8

// toolCall keeps what a tool call's expanded view shows: its input (an edit's diff) and
// its answer (a command's output).
type toolCall struct {
	name   string
	input  json.RawMessage
	output string
}

// toggleExpand is Ctrl-O: the tool calls show their output under their one-line
// summaries, or stop showing it. Every tool entry renders again.
func (m *Model) toggleExpand() {
	m.expand = !m.expand
	for _, e := range m.entries {
		if e.kind == entryTool {
			e.cache = ""
		}
	}
}

// toolDetail is the expanded view of a tool call, "" when Ctrl-O has not expanded the
// calls or the call has nothing to show yet: an edit's removed and added lines, a
// write's content, else the answer's text, each folded after foldLines lines.
func (m *Model) toolDetail(e *entry, pad, width int) string {
	if !m.expand || e.call == nil {
		return ""
	}
	var body []line
	switch e.call.name {
	case "Edit", "Write", "MultiEdit":
		for _, l := range actionLines(e.call.name, e.call.input) {
			if !strings.HasPrefix(l.text, "path: ") {
				body = append(body, l)
			}
		}
	}
	if len(body) == 0 || e.failed {
		body = nil
		out := strings.TrimRight(e.call.output, "\n")
		if out == "" {
			return ""
		}
		for _, l := range strings.Split(out, "\n") {
			body = append(body, line{text: sanitize(strings.TrimSuffix(l, "\r"))})
		}
	}
	s := m.styles
	indent := strings.Repeat(" ", pad) + "│ "
	var lines []string
	for i, l := range body {
		if i == foldLines {
			lines = append(lines, s.dim.Render(indent+fmt.Sprintf("… %d more lines", len(body)-i)))
			break
		}
		st := s.dim
		switch l.kind {
		case lineAdded:
			st = s.added
		case lineRemoved:
			st = s.removed
		}
		lines = append(lines, st.Render(ansi.Truncate(indent+l.text, width, "…")))
	}
	return "\n" + strings.Join(lines, "\n")
}

// window picks the conversation's lines the screen has room for: the last ones, or,
// scrolled back (PgUp), the ones from the line the view was scrolled to, which stays put
// as new output arrives. The last line then says how much is below.
func (m *Model) window(c *lineChunks, room int) []string {
	total := c.total
	if !m.scrolled || total <= room {
		m.scrolled = false
		return c.slice(max(0, total-room), total)
	}
	top := min(m.scrollTop, total-room)
	m.scrollTop = top
	out := c.slice(top, top+room)
	if below := total - top - room; below > 0 && room > 0 {
		out[room-1] = m.styles.dim.Render(fmt.Sprintf("  ↓ %d more lines below · PgDn", below))
	}
	return out
}

// scroll moves the view by a page: up (PgUp) back through the conversation, down (PgDn)
// towards its end, where it follows new output again.
func (m *Model) scroll(up bool) {
	room := max(1, m.height-len(m.bottom()))
	total := m.convo().total
	if total <= room {
		m.scrolled = false
		return
	}
	page := max(1, room-2)
	top := m.scrollTop
	if !m.scrolled {
		top = total - room
	}
	if up {
		top = max(0, top-page)
	} else {
		top += page
	}
	m.scrollTop, m.scrolled = top, top < total-room
}
