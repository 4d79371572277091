package tui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/history"
)

// pickStep is what the open picker asks for.
type pickStep int

const (
	pickSession pickStep = iota // /resume: which session to continue
	pickTurn                    // /rewind: which turn to return to the start of
	pickWhat                    // /rewind: the files, the conversation or both
	pickConfirm                 // /rewind: what will happen; y does it
)

// picker is the open picker of /resume or /rewind. It sits above the input like the
// question dialog and takes the keys while it is open; the conversation stays visible.
type picker struct {
	step     pickStep
	cursor   int
	loading  bool // a list or plan is on its way from the back-end
	sessions []SessionSummary
	turns    []TurnSummary // newest first
	turn     TurnSummary   // the chosen turn
	files    bool          // the rewind restores files
	conv     bool          // the rewind moves the conversation
	plan     *history.Ledger
}

// Messages of the back-end's answers to the pickers (pickerMsg marks them for Update).
type (
	sessionsMsg struct {
		list []SessionSummary
		err  error
	}
	switchedMsg struct {
		view SessionView
		err  error
	}
	turnsMsg struct {
		turns []TurnSummary
		err   error
	}
	planMsg struct {
		plan *history.Ledger
		err  error
	}
	rewoundMsg struct {
		turn TurnSummary
		conv bool
		undo bool // /rewind undo
		res  *agent.RewindResult
		err  error
	}
)

type pickerMsg interface{ pickerMsg() }

func (sessionsMsg) pickerMsg() {}
func (switchedMsg) pickerMsg() {}
func (turnsMsg) pickerMsg()    {}
func (planMsg) pickerMsg()     {}
func (rewoundMsg) pickerMsg()  {}

// sessionCommand runs /resume, /rewind or /clear: only between turns, and only on a
// back-end that offers Sessions.
func (m *Model) sessionCommand(name string) tea.Cmd {
	s, ok := m.opts.Backend.(Sessions)
	if !ok {
		m.add(&entry{kind: entryError, text: name + " needs a back-end that keeps sessions; this one does not"})
		return nil
	}
	if m.running {
		m.add(&entry{kind: entryError, text: name + " waits for the turn to end; Esc interrupts it"})
		return nil
	}
	ctx := m.ctx
	switch name {
	case "/clear":
		s.Clear()
		m.clearConversation()
		m.add(&entry{kind: entryNotice, text: "the next prompt starts a new session; the previous one stays stored (/resume picks it)"})
		return nil
	case "/resume":
		m.picker = &picker{step: pickSession, loading: true}
		return func() tea.Msg {
			l, err := s.List(ctx)
			return sessionsMsg{list: l, err: err}
		}
	default: // /rewind
		m.picker = &picker{step: pickTurn, loading: true}
		return func() tea.Msg {
			t, err := s.Turns(ctx)
			return turnsMsg{turns: t, err: err}
		}
	}
}

// clearConversation empties the screen's conversation (the counters stay: they are the
// spend of this screen).
func (m *Model) clearConversation() {
	m.entries, m.streaming, m.tools = nil, nil, map[string]*entry{}
}

// pickerUpdate folds a back-end's answer into the picker or the conversation.
func (m *Model) pickerUpdate(msg pickerMsg) tea.Cmd {
	p := m.picker
	switch msg := msg.(type) {
	case sessionsMsg:
		if p == nil || p.step != pickSession {
			return nil
		}
		if m.pickFailed(msg.err, len(msg.list) == 0, "there are no sessions in this directory yet") {
			return nil
		}
		p.sessions, p.loading = msg.list, false
	case turnsMsg:
		if p == nil || p.step != pickTurn {
			return nil
		}
		if m.pickFailed(msg.err, len(msg.turns) == 0, "this session has no turns to rewind yet") {
			return nil
		}
		for i := len(msg.turns) - 1; i >= 0; i-- {
			p.turns = append(p.turns, msg.turns[i])
		}
		p.loading = false
	case planMsg:
		if p == nil || p.step != pickConfirm {
			return nil
		}
		if m.pickFailed(msg.err, false, "") {
			return nil
		}
		p.plan, p.loading = msg.plan, false
	case switchedMsg:
		m.switched(msg)
	case rewoundMsg:
		m.rewound(msg)
	}
	return nil
}

// pickFailed closes the picker with the back-end's refusal, or with empty when there is
// nothing to pick; it reports whether it did.
func (m *Model) pickFailed(err error, nothing bool, empty string) bool {
	switch {
	case err != nil:
		m.add(&entry{kind: entryError, text: sanitize(err.Error())})
	case nothing:
		m.add(&entry{kind: entryNotice, text: empty})
	default:
		return false
	}
	m.picker = nil
	return true
}

// switched replaces the conversation with the session now continued: its title, its
// turns and its last exchanges.
func (m *Model) switched(msg switchedMsg) {
	if msg.err != nil {
		m.add(&entry{kind: entryError, text: "the session did not open: " + sanitize(msg.err.Error())})
		return
	}
	v := msg.view
	m.clearConversation()
	m.add(&entry{kind: entryNotice, text: fmt.Sprintf("continuing %s (%s), %d turns; the next prompt goes on from its last",
		sessionTitle(v.SessionSummary), v.ID, v.Turns)})
	for _, s := range v.Recent {
		kind := entryAssistant
		if s.Role == "user" {
			kind = entryUser
		}
		m.add(&entry{kind: kind, text: s.Text})
	}
}

// undoRewind takes the files of the session's last rewind back (RewindSpec.Undo), as
// sema rewind --undo does; undoing again redoes.
func (m *Model) undoRewind() tea.Cmd {
	s, ok := m.opts.Backend.(Sessions)
	if !ok {
		m.add(&entry{kind: entryError, text: "/rewind undo needs a back-end that keeps sessions; this one does not"})
		return nil
	}
	if m.running {
		m.add(&entry{kind: entryError, text: "/rewind undo waits for the turn to end; Esc interrupts it"})
		return nil
	}
	ctx := m.ctx
	return func() tea.Msg {
		r, err := s.Rewind(ctx, agent.RewindSpec{Files: true, Undo: true})
		return rewoundMsg{undo: true, res: r, err: err}
	}
}

// rewound says what a rewind did.
func (m *Model) rewound(msg rewoundMsg) {
	if msg.err != nil {
		m.add(&entry{kind: entryError, text: "the rewind did not happen: " + sanitize(msg.err.Error())})
		return
	}
	if msg.undo {
		text := "the last rewind is undone"
		if l := msg.res.Ledger; l != nil {
			text += ": " + ledgerCounts(*l)
		}
		m.add(&entry{kind: entryNotice, text: text + " (/rewind undo again redoes it)"})
		return
	}
	var parts []string
	if l := msg.res.Ledger; l != nil {
		parts = append(parts, ledgerCounts(*l))
	}
	if msg.conv {
		// The library's turn start is just before the turn's response: a prompt that
		// led to it stays in the conversation, and the next prompt follows it.
		parts = append(parts, "the next prompt continues from just before that turn's response")
	}
	m.add(&entry{kind: entryNotice, text: fmt.Sprintf("rewound to the start of turn %d: %s", msg.turn.N, strings.Join(parts, "; "))})
}

// ledgerCounts says in words what a file rewind did or would do.
func ledgerCounts(l history.Ledger) string {
	var out []string
	for _, st := range []history.Status{history.StatusRestored, history.StatusDeleted, history.StatusConflict, history.StatusFailed} {
		if n := l.Count(st); n > 0 {
			out = append(out, fmt.Sprintf("%d %s", n, st))
		}
	}
	if len(out) == 0 {
		return "no file to change"
	}
	return "files: " + strings.Join(out, ", ")
}

func sessionTitle(s SessionSummary) string {
	if t := strings.TrimSpace(s.Title); t != "" {
		return "“" + sanitize(firstLine(t)) + "”"
	}
	return "an untitled session"
}

// pickerKey handles a key while the picker is open: ↑/↓ (or k/j) move, Enter picks,
// Esc closes; the rewind's later steps take their letters.
func (m *Model) pickerKey(k string) tea.Cmd {
	p := m.picker
	if k == "esc" || k == "ctrl+c" {
		m.picker = nil
		return nil
	}
	if p.loading {
		return nil
	}
	switch p.step {
	case pickWhat:
		return m.pickWhatKey(k)
	case pickConfirm:
		switch {
		case k == "y" || k == "enter":
			return m.doRewind(false)
		case k == "F" && p.files && p.plan != nil && p.plan.Count(history.StatusConflict) > 0:
			return m.doRewind(true)
		}
		return nil
	}
	n := len(p.sessions)
	if p.step == pickTurn {
		n = len(p.turns)
	}
	switch k {
	case "up", "k":
		p.cursor = max(0, p.cursor-1)
	case "down", "j":
		p.cursor = min(n-1, p.cursor+1)
	case "enter":
		if p.step == pickTurn {
			p.turn, p.step = p.turns[p.cursor], pickWhat
			return nil
		}
		return m.switchTo(p.sessions[p.cursor].ID)
	}
	return nil
}

// switchTo closes the picker and asks the back-end to continue session id.
func (m *Model) switchTo(id string) tea.Cmd {
	m.picker = nil
	s, ctx := m.opts.Backend.(Sessions), m.ctx
	return func() tea.Msg {
		v, err := s.Switch(ctx, id)
		return switchedMsg{view: v, err: err}
	}
}

// pickWhatKey takes what the rewind restores: f the files, c the conversation, b both.
// A file rewind is planned first (a dry run), so its conflicts show before anything is
// written.
func (m *Model) pickWhatKey(k string) tea.Cmd {
	p := m.picker
	switch k {
	case "f", "1":
		p.files = true
	case "c", "2":
		p.conv = true
	case "b", "3":
		p.files, p.conv = true, true
	default:
		return nil
	}
	p.step = pickConfirm
	if !p.files {
		return nil
	}
	p.loading = true
	s, ctx, turn := m.opts.Backend.(Sessions), m.ctx, p.turn.N
	return func() tea.Msg {
		r, err := s.Rewind(ctx, agent.RewindSpec{ToTurn: turn, Files: true, DryRun: true})
		var plan *history.Ledger
		if r != nil {
			plan = r.Ledger
		}
		return planMsg{plan: plan, err: err}
	}
}

// doRewind closes the picker and rewinds as confirmed. Files in conflict were shown; y
// leaves them as they are (a partial restore), F (force) overwrites them too — their
// bytes saved first, so /rewind undo brings them back.
func (m *Model) doRewind(force bool) tea.Cmd {
	p := m.picker
	m.picker = nil
	s, ctx := m.opts.Backend.(Sessions), m.ctx
	spec := agent.RewindSpec{ToTurn: p.turn.N, Files: p.files, Conversation: p.conv, AcceptPartialRestore: !force, Force: force}
	turn, conv := p.turn, p.conv
	return func() tea.Msg {
		r, err := s.Rewind(ctx, spec)
		return rewoundMsg{turn: turn, conv: conv, res: r, err: err}
	}
}
