package tui

import (
	"encoding/json"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model"
)

// facts are what the session's events said that the slash commands and the status line
// report: the latest leg's manifest, the todo list, how full the context window was at
// the last request, and the background tasks still running.
type facts struct {
	manifest *agent.Manifest
	todos    []agent.Todo
	// todosKnown: a TodoWrite list (or a result's) arrived, empty or not.
	todosKnown bool
	// lastInput is the size of the last top-level request in tokens, as the provider
	// reported it (input, cache reads and writes); lastModel the model that answered it.
	lastInput int64
	lastModel string
	// compacted is the last compaction; nil when there was none.
	compacted *agent.CompactionInfo
	// background are the Bash calls that asked for the background, by call id, until
	// their answer; running counts the tasks they started that still run.
	background map[string]bool
	running    int
}

// note folds one event into the facts. Only the leg's own events count: a child leg
// has its own window and its own list.
func (f *facts) note(ev agent.Event) {
	if ev.ParentToolUseID != "" {
		return
	}
	switch ev.Type {
	case agent.EventInit:
		f.manifest = ev.Manifest
	case agent.EventAssistant:
		if r := ev.Response; r != nil {
			if n := r.Usage.InputTokens + r.Usage.CacheReadTokens + r.Usage.CacheWriteTokens; n > 0 {
				f.lastInput = n
			}
			if r.Model != "" {
				f.lastModel = r.Model
			}
		}
	case agent.EventCompaction:
		f.compacted = ev.Compaction
		if ev.Compaction != nil {
			f.lastInput = ev.Compaction.TokensAfter // the next request starts from here
		}
	case agent.EventTodos:
		f.todos, f.todosKnown = ev.Todos, true
	case agent.EventToolUse:
		f.toolUse(ev.ToolUse)
	case agent.EventToolResult:
		if r := ev.ToolResult; r != nil {
			f.toolResult(r.ID, r.IsError)
		}
	case agent.EventResult:
		if r := ev.Result; r != nil {
			// The result lists what still runs; the rest was stopped with the leg.
			f.running, f.background = len(r.BackgroundTasks), nil
			if r.Todos != nil {
				f.todos, f.todosKnown = r.Todos, true
			}
		}
	}
}

// toolUse notes a Bash call sent to the background and a KillShell call.
func (f *facts) toolUse(u *agent.ToolUse) {
	if u == nil {
		return
	}
	var in struct {
		Background bool `json:"run_in_background"`
	}
	switch u.Name {
	case "Bash":
		if json.Unmarshal(u.Input, &in) != nil || !in.Background {
			return
		}
	case "KillShell":
	default:
		return
	}
	if f.background == nil {
		f.background = map[string]bool{}
	}
	f.background[u.ID] = in.Background
}

// toolResult counts a background task started or stopped by the call id.
func (f *facts) toolResult(id string, failed bool) {
	start, ok := f.background[id]
	if !ok {
		return
	}
	delete(f.background, id)
	switch {
	case failed:
	case start:
		f.running++
	case f.running > 0:
		f.running--
	}
}

// window is the context window of the model that answers, in tokens; 0 when unknown.
func (f *facts) window(name string) int {
	if f.lastModel != "" {
		if w, ok := model.ContextWindow(f.lastModel); ok {
			return w
		}
	}
	w, _ := model.ContextWindow(name)
	return w
}
