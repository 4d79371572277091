package tui

import (
	"os"
	"strings"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"

	"github.com/sema-agent/sema/permission"
)

// The dialog's second steps: after 3 a line for the model, after 2 where the rule is
// kept. Both live here so keys.go and view.go only hand over to them.

// denyNote is the sentence being typed after 3: the denial waits for Enter.
type denyNote struct {
	text string
}

// noteLimit keeps the sentence a sentence: the model reads it as the refusal's reason.
const noteLimit = 500

// savePick is the open "where is the rule kept" choice after 2. The call is already
// allowed and the rule is in force for the session; the pick only says which file, if
// any, keeps it for later sessions.
type savePick struct {
	rule string
}

// dialogKey answers the open question: 1 allow once, 2 allow always (not offered for a
// person-only question), 3 deny with an optional sentence, Esc or Ctrl-C deny at once.
// Other keys are ignored, so a stray keystroke meant for the input never answers.
func (m *Model) dialogKey(msg tea.KeyPressMsg) tea.Cmd {
	k := msg.String()
	if m.note != nil {
		return m.noteKey(msg, k)
	}
	if m.planKey(k) {
		return nil
	}
	var c Choice
	switch k {
	case "1":
		c = ChoiceAllowOnce
	case "2":
		if m.question.Request.Ask.PersonOnly {
			return nil
		}
		c = ChoiceAllowAlways
	case "3":
		m.note = &denyNote{}
		return nil
	case "esc", "ctrl+c":
		c = ChoiceDeny
	default:
		return nil
	}
	m.closeQuestion(c, "")
	return nil
}

// noteKey edits the sentence of a denial: Enter sends it (empty for none), Esc or
// Ctrl-C deny at once without it.
func (m *Model) noteKey(msg tea.KeyPressMsg, k string) tea.Cmd {
	switch m.note.key(msg, k) {
	case noteSend:
		m.closeQuestion(ChoiceDeny, m.note.sentence())
	case noteCancel:
		m.closeQuestion(ChoiceDeny, "")
	}
	return nil
}

// noteAction is what a key did to a sentence being typed.
type noteAction int

const (
	noteEditing noteAction = iota // the sentence changed, or the key was ignored
	noteSend                      // Enter: deny with the sentence
	noteCancel                    // Esc or Ctrl-C: deny without it
)

// key applies one key to the sentence: Backspace takes the last character back, text
// is added (a line break becomes a space: the model reads one line), up to noteLimit.
func (n *denyNote) key(msg tea.KeyPressMsg, k string) noteAction {
	switch k {
	case "enter":
		return noteSend
	case "esc", "ctrl+c":
		return noteCancel
	case "backspace":
		if _, size := utf8.DecodeLastRuneInString(n.text); size > 0 {
			n.text = n.text[:len(n.text)-size]
		}
	default:
		if msg.Text != "" && utf8.RuneCountInString(n.text+msg.Text) <= noteLimit {
			n.text += strings.Map(func(r rune) rune {
				if r == '\n' || r == '\r' || r == '\t' {
					return ' '
				}
				return r
			}, msg.Text)
		}
	}
	return noteEditing
}

// sentence is what is sent to the model: the typed text, trimmed and made safe to show.
func (n *denyNote) sentence() string { return strings.TrimSpace(sanitize(n.text)) }

// closeQuestion sends the answer, records it in the conversation and, after 2, opens
// the choice of where the rule is kept.
func (m *Model) closeQuestion(c Choice, note string) {
	q := m.question
	m.question, m.note, m.plan = nil, nil, nil
	q.answerWith(c, note)
	words := answerWords(c, q.Request)
	if note != "" {
		words += " — told the model: " + note
	}
	m.add(&entry{kind: entryNotice, text: words})
	if c == ChoiceAllowAlways {
		// Kept in a settings file, a rule means what its syntax says: it is offered only
		// when one can name this call and nothing more (permission.NarrowRule).
		if rule := permission.NarrowRule(q.Request.Tool, q.Request.Input, m.taskRoot()); rule != "" {
			m.saving = &savePick{rule: rule}
		} else {
			m.add(&entry{kind: entryNotice, text: "kept for this session only: no rule names just this call to keep in a settings file" +
				" (a command with a pattern, an operator or an expansion; a path with a pattern character)"})
		}
	}
}

// taskRoot is the session's task root ("" when it has none).
func (m *Model) taskRoot() string {
	if len(m.opts.Roots) > 0 {
		return m.opts.Roots[0]
	}
	return ""
}

// saveKey picks where the rule of "allow always" is kept: 1 this session only, 2 this
// project for me, 3 this project shared, 4 all my projects. Esc keeps it for the session.
func (m *Model) saveKey(k string) tea.Cmd {
	rule := m.saving.rule
	var scope ruleScope
	switch k {
	case "1", "esc", "ctrl+c":
		m.saving = nil
		return nil
	case "2":
		scope = scopeLocal
	case "3":
		scope = scopeProject
	case "4":
		scope = scopeUser
	default:
		return nil
	}
	m.saving = nil
	home, _ := os.UserHomeDir()
	path, err := saveRule(scope, m.taskRoot(), home, rule)
	if err != nil {
		m.add(&entry{kind: entryError, text: err.Error()})
		return nil
	}
	m.add(&entry{kind: entryNotice, text: "saved " + rule + " in " + path})
	return nil
}

// noteView is the sentence line under the dialog's choices while 3 waits for Enter.
func (m *Model) noteView(inner int) []string { return m.note.view(m.styles, inner) }

// view is the prompt for the sentence and the sentence typed so far.
func (n *denyNote) view(s styles, inner int) []string {
	return []string{
		s.dim.Width(inner).Render("tell the model why (Enter to send, empty for none; Esc denies without it)"),
		"› " + sanitize(n.text) + "▏",
	}
}

// saveView is the choice of where the rule of "allow always" is kept.
func (m *Model) saveView() []string {
	s := m.styles
	w := max(20, min(m.width, 100))
	body := []string{
		s.title.Render("allowed always: " + sanitize(m.saving.rule) + " · keep the rule in"),
		"1 this session only (Esc)",
		"2 this project, for me   (" + localFile + ")",
		"3 this project, shared   (" + projectFile + ")",
		"4 all my projects        (~/" + userFile + ")",
	}
	return strings.Split(s.dialog.Width(w).Render(strings.Join(body, "\n")), "\n")
}
