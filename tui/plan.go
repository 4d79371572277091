package tui

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The plan gate's dialog shows the plan as the conversation shows the model's text:
// rendered markdown, in a window of the screen's half that ↑/↓ and PgUp/PgDn scroll.

// planView is the rendered plan of the open question, kept per plan and width so a
// frame does not render it again.
type planView struct {
	plan  string
	width int
	lines []string
	top   int // the first line shown
}

// planOf is the plan an ExitPlanMode question carries; "" for any other question.
func planOf(tool string, input json.RawMessage) string {
	if tool != "ExitPlanMode" {
		return ""
	}
	var in struct {
		Plan string `json:"plan"`
	}
	if json.Unmarshal(input, &in) != nil {
		return ""
	}
	return strings.TrimSpace(in.Plan)
}

// planHeight is how many lines of the plan the dialog shows at once.
func (m *Model) planHeight() int { return max(4, m.height/2-4) }

// planLines renders the open question's plan at width inner and returns the lines in
// the window, with a line saying where the window is when the plan is longer.
func (m *Model) planLines(plan string, inner int) []string {
	p := m.plan
	if p == nil || p.plan != plan || p.width != inner {
		top := 0
		if p != nil && p.plan == plan {
			top = p.top
		}
		rendered := m.md.render(sanitizeLines(plan), inner)
		p = &planView{plan: plan, width: inner, lines: strings.Split(rendered, "\n"), top: top}
		m.plan = p
	}
	h := m.planHeight()
	if len(p.lines) <= h {
		return p.lines
	}
	p.top = min(max(0, p.top), len(p.lines)-h)
	out := append([]string(nil), p.lines[p.top:p.top+h]...)
	where := fmt.Sprintf("lines %d–%d of %d · ↑/↓ PgUp/PgDn scroll the plan", p.top+1, p.top+h, len(p.lines))
	return append(out, m.styles.dim.Render(where))
}

// planKey scrolls the plan of the open question; it reports whether k was a scroll key.
func (m *Model) planKey(k string) bool {
	if m.plan == nil || planOf(m.question.Request.Tool, m.question.Request.Input) == "" {
		return false
	}
	switch k {
	case "up":
		m.plan.top--
	case "down":
		m.plan.top++
	case "pgup":
		m.plan.top -= m.planHeight()
	case "pgdown":
		m.plan.top += m.planHeight()
	default:
		return false
	}
	m.plan.top = min(max(0, m.plan.top), max(0, len(m.plan.lines)-m.planHeight()))
	return true
}

// planless is the action lines of a question whose plan is not shown apart: a plan gate
// with a plan has none beyond it.
func planless(tool string, input json.RawMessage) []line {
	if planOf(tool, input) != "" {
		return nil
	}
	return actionLines(tool, input)
}
