package tui

import (
	"strings"

	tea "charm.land/bubbletea/v2"
)

// inputKey handles the keys of the input's helpers before the session's own keys: the
// history search, the @ list, Up and Down through the history, Ctrl-O and the page
// keys. It reports whether it took the key.
func (m *Model) inputKey(msg tea.KeyPressMsg, k string) (tea.Cmd, bool) {
	if m.search != nil {
		m.searchKey(k, msg.Text)
		return nil, true
	}
	if m.comp != nil && m.completionKey(k) {
		return nil, true
	}
	switch k {
	case "ctrl+r":
		if m.opts.History == nil {
			return nil, true
		}
		m.comp = nil
		m.search = &histSearch{saved: m.input.Value(), found: m.findPrompt("", -1)}
		return nil, true
	case "up":
		return nil, m.historyUp()
	case "down":
		return nil, m.historyDown()
	case "ctrl+o":
		m.toggleExpand()
		return nil, true
	case "pgup":
		m.scroll(true)
		return nil, true
	case "pgdown":
		m.scroll(false)
		return nil, true
	case "ctrl+c":
		m.comp, m.compShut = nil, false
	}
	return nil, false
}

// typed hands a key (or a paste) to the input, then opens, narrows or closes the @ list.
func (m *Model) typed(msg tea.Msg) tea.Cmd {
	if p, ok := msg.(tea.PasteMsg); ok && m.search != nil {
		m.searchKey("", strings.ReplaceAll(p.Content, "\n", " ")) // a paste narrows the search
		return nil
	}
	cmd := m.typeIntoInput(msg)
	return tea.Batch(cmd, m.refreshCompletion())
}

// inputLines is what the input's helpers show above it: the @ list or the search line.
func (m *Model) inputLines() []string {
	if m.search != nil {
		return []string{m.searchLine()}
	}
	return m.completionLines()
}
