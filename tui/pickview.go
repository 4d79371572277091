package tui

import (
	"fmt"
	"strings"

	"charm.land/lipgloss/v2"

	"github.com/sema-agent/sema/history"
)

// pickerView renders the open picker as a box above the input: its title, the lines to
// pick from around the cursor (as many as half the screen holds), and its keys.
func (m *Model) pickerView() []string {
	p, s := m.picker, m.styles
	w := max(20, min(m.width, 100))
	inner := w - 4
	var title, keys string
	var lines []string
	switch p.step {
	case pickSession:
		title, keys = "resume a session of this directory", "↑/↓ move · Enter continues it · Esc closes"
		for _, x := range p.sessions {
			lines = append(lines, sessionTitle(x)+s.dim.Render(fmt.Sprintf(" · %s · %s · %s", orDash(x.Mode), x.UpdatedAt.UTC().Format("Jan 2 15:04"), x.ID)))
		}
	case pickTurn:
		title, keys = "rewind to the start of a turn", "↑/↓ move · Enter picks · Esc closes"
		for _, t := range p.turns {
			lines = append(lines, turnLine(t)+m.filesText(t.Files))
		}
	case pickWhat:
		title = fmt.Sprintf("rewind to the start of turn %d", p.turn.N)
		keys = "f the files · c the conversation · b both · Esc closes"
		lines = []string{turnLine(p.turn) + m.filesText(p.turn.Files)}
	case pickConfirm:
		title = fmt.Sprintf("rewind to the start of turn %d", p.turn.N)
		lines, keys = m.confirmLines()
	}
	body := []string{s.title.Render(title)}
	if p.loading {
		body = append(body, s.dim.Render("reading…"))
	} else {
		body = append(body, m.pickerWindow(lines, inner)...)
	}
	body = append(body, lipgloss.NewStyle().Bold(true).Width(inner).Render(keys))
	return strings.Split(s.dialog.Width(w).Render(strings.Join(body, "\n")), "\n")
}

// pickerWindow is the picker's visible lines: the cursor's line marked, and as many lines
// around it as a third of the screen holds.
func (m *Model) pickerWindow(lines []string, width int) []string {
	p := m.picker
	cursor := p.cursor
	if p.step != pickSession && p.step != pickTurn {
		cursor = -1
	}
	room := max(3, m.height/3)
	from := 0
	if cursor >= room {
		from = cursor - room + 1
	}
	var out []string
	for i := from; i < len(lines) && i < from+room; i++ {
		lead := "  "
		if i == cursor {
			lead = "› "
		}
		if cursor < 0 { // what a rewind will do: every word of a conflict's reason counts
			out = append(out, hanging(lead, lines[i], width))
			continue
		}
		out = append(out, lipgloss.NewStyle().MaxWidth(width).Render(lead+lines[i]))
	}
	return out
}

// turnLine is a turn in a line: its number, the prompt that led to it, what was said.
func turnLine(t TurnSummary) string {
	parts := []string{fmt.Sprintf("turn %d", t.N)}
	if t.Prompt != "" {
		parts = append(parts, "“"+sanitize(firstLine(t.Prompt))+"”")
	}
	if t.Said != "" {
		parts = append(parts, sanitize(firstLine(t.Said)))
	}
	return strings.Join(parts, " · ")
}

func (m *Model) filesText(files []string) string {
	if len(files) == 0 {
		return ""
	}
	return m.styles.dim.Render(" · changed " + sanitize(strings.Join(files, ", ")))
}

// confirmLines is what the confirmed rewind will do: each file and its fate (a conflict
// with its reason), and the conversation's move; and the keys.
func (m *Model) confirmLines() ([]string, string) {
	p, s := m.picker, m.styles
	var lines []string
	conflicts := 0
	if p.files && p.plan != nil {
		for _, e := range p.plan.Entries {
			line := fmt.Sprintf("%-9s %s", e.Status, sanitize(e.Path))
			if e.Added+e.Removed > 0 {
				line += fmt.Sprintf(" (+%d −%d)", e.Added, e.Removed)
			}
			switch e.Status {
			case history.StatusConflict, history.StatusFailed:
				conflicts++
				lines = append(lines, s.errText.Render(line+": "+sanitize(e.Reason)))
			default:
				lines = append(lines, line)
			}
		}
		if len(p.plan.Entries) == 0 {
			lines = append(lines, "no file changed since then")
		}
	}
	if p.conv {
		lines = append(lines, "the conversation goes back to just before this turn's response; the later turns stay stored")
	}
	keys := "y rewinds · Esc cancels"
	if conflicts > 0 {
		keys = "y rewinds the rest, leaving the files in conflict as they are · F overwrites them too (/rewind undo brings them back) · Esc cancels"
	}
	return lines, keys
}
