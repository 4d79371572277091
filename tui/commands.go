package tui

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/sema-agent/sema/agent"
)

// commandHelp lists the slash commands after the keys, in the order /help shows them.
var commandHelp = [][2]string{
	{"/model NAME", "show the model; with NAME, switch the later turns to it"},
	{"/context", "how full the context window was at the last request"},
	{"/compact", "compact the conversation (text after it: what to keep)"},
	{"/permissions", "the permission rules in force and where each came from"},
	{"/mcp", "the MCP servers and their state"},
	{"/agents", "the agent types the Task tool offers"},
	{"/sandbox", "what the sandbox confines and what it does not"},
	{"/todos", "the model's latest todo list"},
	{"/init", "ask the model to write AGENTS.md from a survey of the repository"},
}

// initPrompt is what /init sends: a fixed instruction, shown as such.
const initPrompt = "Survey this repository — its layout, languages, build and test commands, conventions and anything a newcomer must know — and write what you find to AGENTS.md at the task root, concise and specific to this codebase. If AGENTS.md exists, improve it instead of replacing what is still right."

// commandMsg is the answer of a command that asked the back-end: it updates the model
// on the model's goroutine.
type commandMsg func(m *Model)

// command runs a slash command.
func (m *Model) command(text string) tea.Cmd {
	name, _, _ := strings.Cut(text, " ")
	arg := strings.TrimSpace(strings.TrimPrefix(text, name))
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
		return m.setMode(arg)
	case "/context":
		m.notice(m.contextText())
		return nil
	case "/todos":
		m.notice(todosText(m.facts))
		return nil
	case "/sandbox":
		m.notice(sandboxText(m.facts.manifest))
		return nil
	case "/mcp":
		m.notice(mcpText(m.facts.manifest))
		return nil
	case "/init":
		m.notice("/init: asking the model to survey the repository and write AGENTS.md")
		return m.submitPrompt(initPrompt)
	case "/model":
		return m.switchModel(arg)
	case "/compact":
		return m.compact(arg)
	case "/permissions":
		return m.permissions()
	case "/agents":
		return m.agents()
	case "/rewind":
		if arg == "undo" {
			return m.undoRewind()
		}
		if arg != "" {
			m.add(&entry{kind: entryError, text: "/rewind takes no argument but undo: /rewind picks a turn, /rewind undo takes the last rewind's files back"})
			return nil
		}
		return m.sessionCommand(name)
	case "/resume", "/clear":
		return m.sessionCommand(name)
	case "/questions":
		return m.questionsCommand()
	}
	if m.customCommand(name) {
		return m.submitPrompt(text) // the back-end expands it, as the headless command line does
	}
	m.add(&entry{kind: entryError, text: "unknown command " + sanitize(name) + "; /help lists the commands"})
	return nil
}

func (m *Model) notice(text string) { m.add(&entry{kind: entryNotice, text: sanitizeLines(text)}) }

// submitPrompt sends text as a prompt: at once, or queued behind the running turn.
func (m *Model) submitPrompt(text string) tea.Cmd {
	if m.running {
		m.queue = append(m.queue, text)
		return nil
	}
	return m.start(text)
}

// customCommand reports whether /name is one of the back-end's custom commands.
func (m *Model) customCommand(name string) bool {
	cl, ok := m.opts.Backend.(CommandLister)
	if !ok {
		return false
	}
	for _, c := range cl.Commands() {
		if "/"+c.Name == name {
			return true
		}
	}
	return false
}

// ask runs call on the back-end off the model's goroutine; its answer (or its refusal)
// comes back as a commandMsg.
func (m *Model) ask(what string, call func(ctx context.Context) (func(m *Model), error)) tea.Cmd {
	ctx := m.ctx
	return func() tea.Msg {
		apply, err := call(ctx)
		if err != nil {
			return commandMsg(func(m *Model) { m.add(&entry{kind: entryError, text: what + ": " + sanitize(err.Error())}) })
		}
		return commandMsg(apply)
	}
}

// notOffered says the back-end does not offer a command.
func (m *Model) notOffered(name, why string) tea.Cmd {
	m.add(&entry{kind: entryError, text: name + " is not offered by this session's back-end: " + why})
	return nil
}

// switchModel is /model: without a name it says the model; with one, the back-end
// resolves it as --model and the later legs run it.
func (m *Model) switchModel(ref string) tea.Cmd {
	if ref == "" {
		m.notice("model: " + cmp.Or(m.model(), "the provider's default") + "; /model NAME switches the later turns (as --model NAME)")
		return nil
	}
	ms, ok := m.opts.Backend.(ModelSwitcher)
	if !ok {
		return m.notOffered("/model", "it cannot open another model")
	}
	return m.ask("the model did not change", func(ctx context.Context) (func(*Model), error) {
		name, err := ms.SetModel(ctx, ref)
		if err != nil {
			return nil, err
		}
		return func(m *Model) {
			m.opts.Model, m.facts.lastModel = name, ""
			m.opts.Demo = false // the demo label names the scripted model, which no longer answers
			m.notice("model: " + name + " from the next turn on")
		}, nil
	})
}

// model is the name of the model the session runs.
func (m *Model) model() string {
	if m.opts.Demo {
		return "scripted (demo)"
	}
	return m.opts.Model
}

// compact is /compact: the back-end compacts the running leg before its next request,
// or the stored conversation at once.
func (m *Model) compact(instructions string) tea.Cmd {
	c, ok := m.opts.Backend.(Compacter)
	if !ok {
		return m.notOffered("/compact", "it has no way to ask the engine for a compaction")
	}
	return m.ask("the conversation was not compacted", func(ctx context.Context) (func(*Model), error) {
		info, err := c.Compact(ctx, instructions)
		if err != nil {
			return nil, err
		}
		return func(m *Model) {
			if info == nil {
				m.notice("compaction asked for: the running turn compacts before its next model request")
				return
			}
			m.facts.compacted, m.facts.lastInput = info, info.TokensAfter
			m.notice(fmt.Sprintf("the conversation was compacted (%s): about %s tokens → %s", info.Kind, tokens(info.TokensBefore), tokens(info.TokensAfter)))
		}, nil
	})
}

// permissions is /permissions: the rules in force and where each came from.
func (m *Model) permissions() tea.Cmd {
	p, ok := m.opts.Backend.(PermissionReporter)
	if !ok {
		return m.notOffered("/permissions", "it cannot read the permission rules")
	}
	return m.ask("the permission rules could not be read", func(ctx context.Context) (func(*Model), error) {
		rep, err := p.Permissions(ctx)
		if err != nil {
			return nil, err
		}
		return func(m *Model) {
			var always []string
			if m.opts.Approver != nil {
				always = m.opts.Approver.Always()
			}
			m.notice(permissionsText(rep) + alwaysText(always))
		}, nil
	})
}

// agents is /agents: the agent types the Task tool offers.
func (m *Model) agents() tea.Cmd {
	a, ok := m.opts.Backend.(AgentLister)
	if !ok {
		return m.notOffered("/agents", "it cannot list the agent types")
	}
	return m.ask("the agent types could not be read", func(ctx context.Context) (func(*Model), error) {
		defs, err := a.Agents(ctx)
		if err != nil && len(defs) == 0 {
			return nil, err
		}
		lines := []string{"agent types the Task tool offers:"}
		for _, d := range defs {
			lines = append(lines, "  "+d.Name+" — "+firstLine(strings.TrimSpace(d.Description)))
		}
		if err != nil {
			lines = append(lines, "  not loaded: "+err.Error())
		}
		return func(m *Model) { m.notice(strings.Join(lines, "\n")) }, nil
	})
}

// contextText is /context: the last request's size against the model's window.
func (m *Model) contextText() string {
	f := &m.facts
	if f.lastInput == 0 {
		return "context: no request yet"
	}
	w := f.window(m.opts.Model)
	s := "context: the last request was " + tokens(f.lastInput) + " tokens"
	if w == 0 {
		s += "; the window of " + cmp.Or(f.lastModel, m.opts.Model, "this model") + " is not known"
	} else {
		s += fmt.Sprintf(" of a %s window (%s%%); the conversation is compacted at %d%%", tokens(int64(w)), percent(f.lastInput, w), int(agent.DefaultCompactThreshold*100))
	}
	if c := f.compacted; c != nil {
		s += fmt.Sprintf("; last compaction (%s, %s): %s → %s", c.Kind, c.Reason, tokens(c.TokensBefore), tokens(c.TokensAfter))
	}
	return s
}

// percent is n of w in whole percent; "<1" below one.
func percent(n int64, w int) string {
	p := n * 100 / int64(w)
	if p == 0 && n > 0 {
		return "<1"
	}
	return fmt.Sprint(p)
}

// statusFacts puts what the events said into the status line's parts (model, mode,
// sandbox, tokens, cost): the context fill ("ctx 25%") stands for the tokens when the
// window is known (/cost still says them), and the background tasks still running ("1
// bg") come before the cost. Short words, so that the line fits 80 columns.
func (m *Model) statusFacts(parts []string) []string {
	if w := m.facts.window(m.opts.Model); w > 0 && m.facts.lastInput > 0 && len(parts) > 3 {
		parts[3] = fmt.Sprintf("ctx %s%%", percent(m.facts.lastInput, w))
	}
	if n := m.facts.running; n > 0 && len(parts) > 0 {
		parts = slices.Insert(parts, len(parts)-1, fmt.Sprintf("%d bg", n))
	}
	return parts
}
