package tui

import (
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/sema-agent/sema/permission"
)

// keyHelp lists every key and command of the session, in the order /help shows them.
var keyHelp = [][2]string{
	{"Enter", "send the prompt (while a turn runs it is queued)"},
	{"!", "first on the line: a shell command, run through the gate; the model sees its output"},
	{"Esc", "interrupt the running turn; in a question: deny"},
	{"Shift+Tab", "cycle the mode: default → acceptEdits → plan"},
	{"1 / 2 / 3", "in a question: allow once / allow always, kept where you pick / deny, with a why"},
	{"Ctrl-C", "clear the input; twice on an empty input: exit"},
	{"Ctrl-D", "exit (on an empty input)"},
	{"Alt+Enter", "a new line in the prompt (also Ctrl-J)"},
	{"Up / Down", "earlier prompts of this directory"},
	{"Ctrl-R", "search the earlier prompts"},
	{"@", "complete a path under the task's roots (Tab)"},
	{"Ctrl-O", "show or hide the output of the tool calls"},
	{"PgUp / PgDn", "scroll the conversation"},
	{"/help", "this list"},
	{"/cost", "the tokens and dollars so far"},
	{"/mode NAME", "set the mode (default, acceptEdits, plan, …)"},
	{"/resume", "pick a session of this directory to continue"},
	{"/rewind", "pick a turn; rewind its files, the conversation or both (F forces over your edits)"},
	{"/rewind undo", "take the files of the last rewind back to where they were before it"},
	{"/clear", "the next prompt starts a new session"},
	{"/questions", "answer the questions other runs parked in this directory"},
	{"/exit", "exit (also /quit)"},
}

// key handles one key press.
func (m *Model) key(msg tea.KeyPressMsg) tea.Cmd {
	k := msg.String()
	if m.question != nil {
		return m.dialogKey(msg)
	}
	if m.saving != nil {
		return m.saveKey(k)
	}
	if m.picker != nil {
		return m.pickerKey(k)
	}
	if m.questions != nil {
		return m.questionsKey(msg)
	}
	if k != "ctrl+c" {
		m.ctrlC = false
	}
	if cmd, done := m.shellKey(msg, k); done {
		return cmd
	}
	if cmd, done := m.inputKey(msg, k); done {
		return cmd
	}
	switch k {
	case "ctrl+c":
		if m.input.Value() != "" {
			m.input.Reset()
			return nil
		}
		if m.ctrlC {
			return m.quit()
		}
		m.ctrlC = true
		return nil
	case "ctrl+d":
		if m.input.Value() == "" {
			return m.quit()
		}
		return nil
	case "shift+tab":
		return m.cycleMode()
	case "esc":
		if m.running && m.cancel != nil {
			m.cancel()
		}
		return nil
	case "enter":
		text := strings.TrimSpace(m.input.Value())
		m.input.Reset()
		if text == "" {
			return nil
		}
		m.remember(text)
		return m.submit(text)
	}
	return m.typed(msg)
}

// answerWords records the person's answer in the conversation.
func answerWords(c Choice, req permission.ApprovalRequest) string {
	s := summary(req.Tool, req.Input)
	switch c {
	case ChoiceAllowOnce:
		return "allowed once: " + s
	case ChoiceAllowAlways:
		return "allowed always: " + Rule(req)
	default:
		return "denied: " + s
	}
}

// modeCycle is the order Shift+Tab walks the modes in.
func (m *Model) modeCycle() []permission.Mode {
	c := []permission.Mode{permission.ModeDefault, permission.ModeAcceptEdits, permission.ModePlan}
	if m.bypass {
		c = append(c, permission.ModeBypassPermissions)
	}
	return c
}

// nextMode is the mode after the current one; a mode outside the cycle (auto, dontAsk)
// goes back to default.
func (m *Model) nextMode() permission.Mode {
	c := m.modeCycle()
	for i, mode := range c {
		if mode == m.mode {
			return c[(i+1)%len(c)]
		}
	}
	return permission.ModeDefault
}

// cycleMode moves to the next mode at once and tells the back-end; its answer (modeMsg)
// corrects the status line if the leg runs in another mode.
func (m *Model) cycleMode() tea.Cmd {
	return m.setMode(string(m.nextMode()))
}

// setMode is /mode NAME: any mode word the gate knows, told to the back-end as
// Shift+Tab's are; without a word it says the mode and the words.
func (m *Model) setMode(word string) tea.Cmd {
	if word == "" {
		var words []string
		for _, md := range permission.Modes() {
			words = append(words, string(md))
		}
		m.add(&entry{kind: entryNotice, text: "mode: " + string(m.mode) + "; /mode " + strings.Join(words, "|") + " changes it"})
		return nil
	}
	mode, err := permission.ParseMode(word)
	if err != nil {
		m.add(&entry{kind: entryError, text: err.Error()})
		return nil
	}
	prev := m.mode
	m.mode = mode
	m.modes.seq++
	seq, modes, backend, ctx := m.modes.seq, m.modes, m.opts.Backend, m.ctx
	modes.latest.Store(seq)
	return func() tea.Msg {
		// One change at a time, and none that a later press already replaced: the
		// back-end ends in the mode the person chose last.
		modes.mu.Lock()
		defer modes.mu.Unlock()
		if modes.latest.Load() != seq {
			return nil
		}
		got, err := backend.SetMode(ctx, mode)
		return modeMsg{seq: seq, mode: got, err: err, prev: prev}
	}
}

// quit closes the screen: an open question is denied and the running leg interrupted.
func (m *Model) quit() tea.Cmd {
	if m.question != nil {
		m.question.answer(ChoiceDeny)
		m.question = nil
	}
	if m.cancel != nil {
		m.cancel()
	}
	m.quitting = true
	return tea.Quit
}
