package tui

import (
	"context"
	"strings"

	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
)

// A shell line is what the person types after a "!" at the start of the empty input:
// the input's marker turns into "!", Enter sends the line to the back-end (ShellRunner),
// which runs it through its permission gate as a Bash call and adds its output to the
// conversation, and Backspace on the empty line leaves the mode. In the queue and the
// prompt history a shell line is kept with its "!", so a recalled or pasted "!cmd" is a
// shell line too.

// shellPlaceholder is the empty shell line's hint.
const shellPlaceholder = "a shell command, run through the permission gate · Backspace leaves"

// shellKey handles the keys of the shell mode: "!" on the empty input enters it,
// Backspace (or Ctrl-C) on the empty line leaves it, Enter sends the line. It reports
// whether it took the key.
func (m *Model) shellKey(msg tea.KeyPressMsg, k string) (tea.Cmd, bool) {
	if m.search != nil {
		return nil, false
	}
	empty := m.input.Value() == ""
	switch {
	case !m.shell && empty && msg.Text == "!":
		m.setShell(true)
		return nil, true
	case m.shell && empty && (k == "backspace" || k == "ctrl+c"):
		m.setShell(false)
		return nil, true
	case m.shell && k == "enter" && m.comp == nil:
		text := strings.TrimSpace(m.input.Value())
		if text == "" {
			return nil, true
		}
		m.input.Reset()
		m.setShell(false)
		line := "!" + text
		m.remember(line)
		return m.submit(line), true
	}
	return nil, false
}

// setShell turns the shell mode on or off: the input's marker and its hint say which.
func (m *Model) setShell(on bool) {
	m.shell = on
	mark, hint := "› ", promptPlaceholder
	if on {
		mark, hint = "! ", shellPlaceholder
	}
	m.input.SetPromptFunc(2, func(p textarea.PromptInfo) string {
		if p.LineNumber == 0 {
			return mark
		}
		return "  "
	})
	m.input.Placeholder = hint
}

// legRun is how a sent line runs: a prompt on the back-end, or a "!" line on its shell.
// It returns nil, having said why, for a shell line that cannot run: an empty one, or
// one sent to a back-end without a shell (a remote service runs prompts only).
func (m *Model) legRun(text string) func(context.Context, func(agent.Event)) error {
	backend := m.opts.Backend
	line, isShell := strings.CutPrefix(text, "!")
	if !isShell {
		return func(ctx context.Context, emit func(agent.Event)) error { return backend.Prompt(ctx, text, emit) }
	}
	line = strings.TrimSpace(line)
	sh, ok := backend.(ShellRunner)
	switch {
	case line == "":
		m.add(&entry{kind: entryError, text: "the shell line is empty; type a command after the !"})
		return nil
	case !ok:
		m.add(&entry{kind: entryError, text: "shell lines (!) need a local session: this screen sends prompts to a service, which runs prompts only"})
		return nil
	}
	return func(ctx context.Context, emit func(agent.Event)) error { return sh.Shell(ctx, line, emit) }
}

// saidByTool reports whether a leg's error is the answer of the last tool call shown,
// as a refused shell line's is: the tool line shows it already.
func (m *Model) saidByTool(err *sema.Error) bool {
	for i := len(m.entries) - 1; i >= 0; i-- {
		if e := m.entries[i]; e.kind == entryTool && !e.child {
			return e.failed && e.code == err.Code && e.call != nil && e.call.output == err.Message
		}
	}
	return false
}
