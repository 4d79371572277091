package tui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
)

// command runs a slash command.
func (m *Model) command(text string) tea.Cmd {
	name, _, _ := strings.Cut(text, " ")
	switch name {
	case "/help":
		m.add(&entry{kind: entryHelp})
		return nil
	case "/exit", "/quit":
		return m.quit()
	case "/cost":
		u := m.usage
		m.add(&entry{kind: entryNotice, text: fmt.Sprintf("%d input tokens (%d read from the cache, %d written to it), %d output tokens; %s",
			u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens, u.CacheReadTokens, u.CacheWriteTokens, u.OutputTokens, m.costText())})
		return nil
	case "/mode":
		return m.setMode(strings.TrimSpace(strings.TrimPrefix(text, name)))
	}
	m.add(&entry{kind: entryError, text: "unknown command " + sanitize(name) + "; /help lists the commands"})
	return nil
}
