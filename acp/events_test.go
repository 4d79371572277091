package acp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/session"
)

// promptUpdates runs one prompt whose leg emits events (run may change the disk in
// between) and returns the updates the client got and the prompt's answer.
func promptUpdates(t *testing.T, root string, run func(emit func(agent.Event))) ([]SessionUpdate, answer) {
	t.Helper()
	b := &fakeBackend{run: func(_ context.Context, _ string, _ permission.Approver, emit func(agent.Event)) { run(emit) }}
	p := startAgent(t, Options{Open: func(_ context.Context, s SessionSetup) (*Session, error) {
		return &Session{Backend: b, Root: root, Store: session.NewMemory()}, nil
	}})
	p.initialize()
	p.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`)
	p.until("1")
	p.send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"go"}]}}`)
	a, before := p.until("2")
	var out []SessionUpdate
	for _, m := range before {
		if m.Method != MethodSessionUpdate {
			continue
		}
		var n struct {
			Update SessionUpdate `json:"update"`
		}
		if err := json.Unmarshal(m.Params, &n); err != nil {
			t.Fatal(err)
		}
		if n.Update.SessionUpdate != UpdateAvailableCommands {
			out = append(out, n.Update)
		}
	}
	return out, a
}

func assistant(stop model.StopReason, blocks ...model.Block) agent.Event {
	return agent.Event{Type: agent.EventAssistant, Message: &model.Message{Role: model.RoleAssistant, Content: blocks}, Response: &model.Response{StopReason: stop, Content: blocks}}
}

func TestEventsBecomeUpdates(t *testing.T) {
	root := t.TempDir()
	input, _ := json.Marshal(map[string]string{"file_path": "new.txt", "content": "fresh\n"})
	updates, a := promptUpdates(t, root, func(emit func(agent.Event)) {
		emit(agent.Event{Type: agent.EventText, Text: "stream"})
		emit(assistant(model.StopToolUse, model.Block{Kind: model.KindThinking, Text: "hmm"}, model.Block{Kind: model.KindText, Text: "stream"},
			model.Block{Kind: model.KindToolUse, ID: "w1", Name: "Write", Input: input}))
		emit(agent.Event{Type: agent.EventToolUse, ToolUse: &agent.ToolUse{ID: "w1", Name: "Write", Input: input}})
		os.WriteFile(filepath.Join(root, "new.txt"), []byte("fresh\n"), 0o644)
		emit(agent.Event{Type: agent.EventToolResult, ToolResult: &agent.ToolResult{ID: "w1", Name: "Write", Text: "wrote new.txt"}})
		emit(agent.Event{Type: agent.EventTodos, Todos: []agent.Todo{{Content: "Read", Status: "completed"}, {Content: "Fix", Status: "in_progress"}}})
		emit(agent.Event{Type: agent.EventText, Text: "child", ParentToolUseID: "t1"})
		emit(assistant(model.StopMaxTokens, model.Block{Kind: model.KindText, Text: "not streamed"}))
		emit(agent.Event{Type: agent.EventResult, Result: &agent.TaskResult{Status: sema.StatusCompleted}})
	})
	var got []string
	for _, u := range updates {
		line := u.SessionUpdate
		switch c := u.Content.(type) {
		case map[string]any:
			line += " " + c["text"].(string)
		case []any:
			b, _ := json.Marshal(c)
			line += " " + string(b)
		}
		if u.Status != "" {
			line += " " + u.Status
		}
		if u.Kind != "" {
			line += " " + u.Kind
		}
		if u.Entries != nil {
			b, _ := json.Marshal(*u.Entries)
			line += " " + string(b)
		}
		got = append(got, line)
	}
	path := filepath.Join(root, "new.txt")
	want := []string{
		"agent_message_chunk stream",
		"agent_thought_chunk hmm",
		"tool_call pending edit",
		`tool_call_update [{"newText":"fresh\n","path":"` + path + `","type":"diff"}] completed`,
		`plan [{"content":"Read","priority":"medium","status":"completed"},{"content":"Fix","priority":"medium","status":"in_progress"}]`,
		"agent_message_chunk not streamed",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("updates:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if string(a.Result) != `{"stopReason":"max_tokens"}` {
		t.Fatalf("answered %s %v, want max_tokens (the last response's stop)", a.Result, a.Error)
	}
}

func TestStatusesBecomeStopReasons(t *testing.T) {
	for _, c := range []struct {
		status sema.Status
		stop   model.StopReason
		want   string
	}{
		{sema.StatusCompleted, model.StopEndTurn, `{"stopReason":"end_turn"}`},
		{sema.StatusCompleted, model.StopRefusal, `{"stopReason":"refusal"}`},
		{sema.StatusMaxTurns, model.StopToolUse, `{"stopReason":"max_turn_requests"}`},
		{sema.StatusBudgetExceeded, model.StopToolUse, `{"stopReason":"max_tokens"}`},
		{sema.StatusCancelled, model.StopToolUse, `{"stopReason":"cancelled"}`},
	} {
		_, a := promptUpdates(t, t.TempDir(), func(emit func(agent.Event)) {
			emit(assistant(c.stop, model.Block{Kind: model.KindText, Text: "x"}))
			emit(agent.Event{Type: agent.EventResult, Result: &agent.TaskResult{Status: c.status}})
		})
		if string(a.Result) != c.want {
			t.Errorf("%s after %s: answered %s %v, want %s", c.status, c.stop, a.Result, a.Error, c.want)
		}
	}
	_, a := promptUpdates(t, t.TempDir(), func(emit func(agent.Event)) {
		emit(agent.Event{Type: agent.EventResult, Result: &agent.TaskResult{Status: sema.StatusError, Error: sema.Errorf("model.unavailable", "the model is down")}})
	})
	if a.Error == nil || a.Error.Code != CodeInternalError || !strings.Contains(a.Error.Message, "the model is down") || !strings.Contains(string(mustJSON(a.Error.Data)), "model.unavailable") {
		t.Fatalf("a failed leg answered %s %+v, want an internal error with sema's code", a.Result, a.Error)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func TestACallNeverAnsweredIsNotLeftRunning(t *testing.T) {
	updates, _ := promptUpdates(t, t.TempDir(), func(emit func(agent.Event)) {
		emit(agent.Event{Type: agent.EventToolUse, ToolUse: &agent.ToolUse{ID: "b1", Name: "Bash", Input: json.RawMessage(`{"command":"make"}`)}})
		emit(agent.Event{Type: agent.EventResult, Result: &agent.TaskResult{Status: sema.StatusCancelled}})
	})
	if n := len(updates); n != 2 || updates[1].SessionUpdate != UpdateToolCallUpdate || updates[1].ToolCallID != "b1" || updates[1].Status != StatusFailed {
		t.Fatalf("updates %+v, want the call announced, then failed", updates)
	}
}
