package tui

import (
	"context"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/sema-agent/sema/agent"
)

// questionsPicker is the open /questions picker: the questions other processes parked in
// this directory's sessions, then the dialog of the one chosen. Like the session picker
// it sits above the input and takes the keys while it is open.
type questionsPicker struct {
	loading bool
	list    []PendingQuestion
	cursor  int
	chosen  *PendingQuestion // the question the dialog asks; nil while picking
	note    *denyNote        // the sentence for the model after 3; nil before
	raise   *raiseInput      // a budget question's new limit after 1; nil before
}

// checkParked asks a back-end that offers Parked how many questions wait, for the line
// that says so. A failed look is not worth a line: /questions says why.
func (m *Model) checkParked() tea.Cmd {
	p, ok := m.opts.Backend.(Parked)
	if !ok {
		return nil
	}
	ctx := m.ctx
	return func() tea.Msg {
		qs, err := p.Pending(ctx)
		if err != nil {
			return nil
		}
		return commandMsg(func(m *Model) { m.noteWaiting(len(qs)) })
	}
}

// noteWaiting says how many questions wait, once per change of the number.
func (m *Model) noteWaiting(n int) {
	if n == m.waiting {
		return
	}
	m.waiting = n
	switch {
	case n == 1:
		m.notice("1 question waits from another run — /questions")
	case n > 1:
		m.notice(fmt.Sprintf("%d questions wait from other runs — /questions", n))
	}
}

// questionsCommand opens the /questions picker: between turns, on a back-end that offers
// Parked.
func (m *Model) questionsCommand() tea.Cmd {
	p, ok := m.opts.Backend.(Parked)
	if !ok {
		m.add(&entry{kind: entryError, text: "/questions needs a back-end that reads parked questions; this one does not"})
		return nil
	}
	if m.running {
		m.add(&entry{kind: entryError, text: "/questions waits for the turn to end; Esc interrupts it"})
		return nil
	}
	m.questions = &questionsPicker{loading: true}
	ctx := m.ctx
	return func() tea.Msg {
		qs, err := p.Pending(ctx)
		return commandMsg(func(m *Model) { m.questionsListed(qs, err) })
	}
}

func (m *Model) questionsListed(qs []PendingQuestion, err error) {
	q := m.questions
	if q == nil || !q.loading {
		return // closed meanwhile
	}
	m.waiting = len(qs)
	switch {
	case err != nil:
		m.add(&entry{kind: entryError, text: sanitize(err.Error())})
	case len(qs) == 0:
		m.notice("no question waits in this directory's sessions")
	default:
		q.list, q.loading = qs, false
		return
	}
	m.questions = nil
}

// questionsKey handles a key while /questions is open: ↑/↓ move and Enter opens the
// dialog; in it 1 allows once and 3 denies, with a sentence for the model as the
// permission dialog takes one (a parked question has no "always": the rule would be
// this screen's, not the run's). Esc goes back without answering — the question stays
// parked for whoever answers it; once 3 was pressed, Esc denies without the sentence.
func (m *Model) questionsKey(msg tea.KeyPressMsg) tea.Cmd {
	q, k := m.questions, msg.String()
	if m.budgetKey(k) {
		return nil
	}
	switch {
	case q.note != nil:
		switch q.note.key(msg, k) {
		case noteSend:
			return m.answerParked(*q.chosen, false, q.note.sentence())
		case noteCancel:
			return m.answerParked(*q.chosen, false, "")
		}
		return nil
	case k == "ctrl+c" || (k == "esc" && q.chosen == nil):
		m.questions = nil
		return nil
	case q.loading:
		return nil
	case q.chosen != nil:
		switch k {
		case "esc":
			q.chosen = nil
		case "1":
			return m.answerParked(*q.chosen, true, "")
		case "3":
			q.note = &denyNote{}
		}
		return nil
	}
	switch k {
	case "up", "k":
		q.cursor = max(0, q.cursor-1)
	case "down", "j":
		q.cursor = min(len(q.list)-1, q.cursor+1)
	case "enter":
		c := q.list[q.cursor]
		q.chosen = &c
	}
	return nil
}

// answerParked closes the picker and resumes the question's leg here with the answer: its
// events stream in as a prompt's do, and a refusal (answered elsewhere meanwhile) ends
// it with the library's sentence.
func (m *Model) answerParked(q PendingQuestion, allow bool, note string) tea.Cmd {
	m.questions = nil
	m.waiting = max(0, m.waiting-1)
	word, reason := "denied", "the person denied it in a terminal session"
	switch {
	case allow:
		word, reason = "allowed once", ""
	case note != "":
		reason = note
	}
	line := fmt.Sprintf("%s: %s, parked in %s (%s)", word, questionSummary(q), sessionTitle(SessionSummary{Title: q.Title}), q.SessionID)
	if note != "" {
		line += " — told the model: " + note
	}
	m.notice(line)
	p := m.opts.Backend.(Parked)
	m.runLeg(func(ctx context.Context, emit func(agent.Event)) error {
		return p.Answer(ctx, q.ID, allow, reason, emit)
	})
	return nil
}

// questionsView renders the open /questions picker, or its dialog, in the picker's look.
func (m *Model) questionsView() []string {
	q := m.questions
	if q == nil {
		return nil
	}
	s := m.styles
	w := max(20, min(m.width, 100))
	inner := w - 4
	var body []string
	switch {
	case q.loading:
		body = []string{s.title.Render("questions parked by other runs in this directory"), s.dim.Render("reading…")}
	case q.chosen != nil:
		body = m.parkedDialog(*q.chosen, inner)
	default:
		body = []string{s.title.Render("questions parked by other runs in this directory")}
		room := max(3, m.height/3)
		from := max(0, q.cursor-room+1)
		for i := from; i < len(q.list) && i < from+room; i++ {
			lead := "  "
			if i == q.cursor {
				lead = "› "
			}
			x := q.list[i]
			line := sessionTitle(SessionSummary{Title: x.Title}) + askedBy(x) + " · " + questionSummary(x) +
				s.dim.Render(" · parked "+x.ParkedAt.UTC().Format("Jan 2 15:04"))
			body = append(body, lipgloss.NewStyle().MaxWidth(inner).Render(lead+line))
		}
		body = append(body, lipgloss.NewStyle().Bold(true).Width(inner).Render("↑/↓ move · Enter answers it · Esc closes"))
	}
	return strings.Split(s.dialog.Width(w).Render(strings.Join(body, "\n")), "\n")
}

// parkedDialog is the permission dialog of a parked question: the tool, the exact action
// as it will run, where it was parked, and the two answers it takes.
func (m *Model) parkedDialog(q PendingQuestion, inner int) []string {
	if q.Budget {
		return m.budgetDialog(q, inner)
	}
	s := m.styles
	title := "permission · " + sanitize(q.Tool)
	if q.PlanReview {
		title = "plan review · " + sanitize(q.Tool)
	}
	body := []string{s.title.Render(title),
		s.dim.Width(inner).Render("parked in " + sessionTitle(SessionSummary{Title: q.Title}) + " (" + q.SessionID + ")" + askedBy(q))}
	for _, l := range actionLines(q.Tool, q.Input) {
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
	if m.questions != nil && m.questions.note != nil {
		return append(body, m.questions.note.view(s, inner)...)
	}
	return append(body, lipgloss.NewStyle().Bold(true).Width(inner).
		Render("1 allow once · 3 deny · Esc goes back (the question stays parked)"))
}

// askedBy names the delegated agent that asked, for a child's question; "" for the
// session's own.
func askedBy(q PendingQuestion) string {
	if q.Agent == "" {
		return ""
	}
	return " · asked by its agent: " + sanitize(q.Agent)
}
