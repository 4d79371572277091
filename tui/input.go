package tui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
)

// inputMaxLines is how many lines the input grows to before it scrolls inside itself.
const inputMaxLines = 8

// promptPlaceholder is the empty input's hint; a shell line has its own (shellmode.go).
const promptPlaceholder = "ask anything · /help for keys"

// newInput returns the prompt's editor: a text area that is one line until the prompt
// has more (Alt+Enter or Ctrl-J, or a pasted text with line breaks), so a multi-line
// prompt is still one prompt. Enter is not its key: the model sends the prompt on it.
func newInput() textarea.Model {
	in := textarea.New()
	in.ShowLineNumbers = false
	in.Prompt = "› "
	in.SetPromptFunc(2, func(p textarea.PromptInfo) string {
		if p.LineNumber == 0 {
			return "› "
		}
		return "  "
	})
	in.Placeholder = promptPlaceholder
	in.DynamicHeight = true
	in.MinHeight = 1
	in.MaxHeight = inputMaxLines
	in.CharLimit = 0
	in.EndOfBufferCharacter = ' '
	in.KeyMap.InsertNewline = key.NewBinding(key.WithKeys("alt+enter", "ctrl+j", "shift+enter"))
	// Up and Down walk the prompt history on the first and last line (history.go);
	// Ctrl-P and Ctrl-N stay the editor's.
	in.KeyMap.LinePrevious = key.NewBinding(key.WithKeys("up", "ctrl+p"))
	in.KeyMap.LineNext = key.NewBinding(key.WithKeys("down", "ctrl+n"))
	in.SetHeight(1)
	in.Focus()
	return in
}

// inputStyles are the editor's styles: no background on the cursor's line, so the input
// reads as the one-line prompt it usually is; a faint placeholder without colours.
func inputStyles(dark, noColor bool) textarea.Styles {
	s := textarea.DefaultStyles(dark)
	for _, st := range []*textarea.StyleState{&s.Focused, &s.Blurred} {
		st.CursorLine = lipgloss.NewStyle()
		st.Text = lipgloss.NewStyle()
		st.Prompt = lipgloss.NewStyle()
		st.EndOfBuffer = lipgloss.NewStyle()
		if noColor {
			st.Placeholder = lipgloss.NewStyle().Faint(true)
		}
	}
	if noColor {
		s.Cursor.Color = nil
	}
	s.Cursor.Blink = false
	return s
}

// indentRest indents every line of s after the first by pad: a multi-line prompt in the
// conversation stands under its "› " as one block.
func indentRest(s, pad string) string {
	return strings.ReplaceAll(s, "\n", "\n"+pad)
}

// typeIntoInput hands a key to the editor.
func (m *Model) typeIntoInput(msg tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	return cmd
}
