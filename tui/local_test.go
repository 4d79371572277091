package tui

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/session"
)

// localLegs runs prompts one after another on a Local back-end over a real runner and
// returns each leg's events.
func localLegs(t *testing.T, l *Local, prompts ...string) [][]agent.Event {
	t.Helper()
	var legs [][]agent.Event
	for _, p := range prompts {
		var evs []agent.Event
		if err := l.Prompt(context.Background(), p, func(ev agent.Event) { evs = append(evs, ev) }); err != nil {
			t.Fatalf("prompt %q refused: %v", p, err)
		}
		legs = append(legs, evs)
	}
	return legs
}

func first(evs []agent.Event, typ agent.EventType) agent.Event {
	for _, ev := range evs {
		if ev.Type == typ && ev.ParentToolUseID == "" {
			return ev
		}
	}
	return agent.Event{}
}

// TestLocalContinuesTheSession: the second prompt continues the first's session, and a
// mode chosen between legs is the next leg's mode.
func TestLocalContinuesTheSession(t *testing.T) {
	dir := t.TempDir()
	prov := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "one"}, {Text: "two"}}})
	runner := agent.New(agent.Deps{Provider: prov, Store: session.NewMemory(), History: history.NewMemory(), Shell: &agent.ShellOptions{Sandbox: "off"}})
	l := NewLocal(runner, agent.TaskSpec{Root: dir, OnAsk: agent.OnAskDeny})
	legs := localLegs(t, l, "first")
	if got, err := l.SetMode(context.Background(), permission.ModeAcceptEdits); err != nil || got != permission.ModeAcceptEdits {
		t.Fatalf("SetMode between legs: %v, %v", got, err)
	}
	legs = append(legs, localLegs(t, l, "second")...)
	a, b := first(legs[0], agent.EventInit).Manifest, first(legs[1], agent.EventInit).Manifest
	if a == nil || b == nil || a.SessionID == "" || b.SessionID != a.SessionID {
		t.Fatalf("the second leg should continue the first's session: %+v / %+v", a, b)
	}
	if b.Mode.Effective != string(permission.ModeAcceptEdits) {
		t.Errorf("second leg's mode %q, want acceptEdits", b.Mode.Effective)
	}
	if r := first(legs[1], agent.EventResult).Result; r == nil || r.Result != "two" {
		t.Errorf("second leg's result %+v", r)
	}
}

// TestLocalAsksTheApprover: an edit in default mode is a question on the approver's
// inbox, and answering 1 lets the edit land.
func TestLocalAsksTheApprover(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "main.go")
	if err := os.WriteFile(path, []byte("Helo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	edit := func(old, repl string) scripted.ToolCall {
		in, _ := json.Marshal(map[string]any{"file_path": "main.go", "old_string": old, "new_string": repl})
		return scripted.ToolCall{Name: "Edit", Input: in}
	}
	read := scripted.ToolCall{Name: "Read", Input: json.RawMessage(`{"file_path":"main.go"}`)}
	prov := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{read}},
		{ToolCalls: []scripted.ToolCall{edit("Helo", "Hello")}},
		{Text: "fixed"},
	}})
	approver := NewApprover()
	runner := agent.New(agent.Deps{Provider: prov, Store: session.NewMemory(), History: history.NewMemory(), Approver: approver, Shell: &agent.ShellOptions{Sandbox: "off"}})
	l := NewLocal(runner, agent.TaskSpec{Root: dir, OnAsk: agent.OnAskApprover})

	asked := make(chan permission.ApprovalRequest, 4)
	go func() {
		for msg := range approver.inbox {
			if q, ok := msg.(QuestionMsg); ok {
				asked <- q.Request
				q.answer(ChoiceAllowOnce)
			}
		}
	}()
	defer close(approver.inbox)
	localLegs(t, l, "fix it")
	select {
	case req := <-asked:
		if req.Tool != "Edit" || Rule(req) != "Edit(main.go)" {
			t.Errorf("question %s, rule %s", req.Tool, Rule(req))
		}
	default:
		t.Fatal("the edit was not asked about")
	}
	if b, _ := os.ReadFile(path); string(b) != "Hello\n" {
		t.Errorf("main.go = %q after the edit was allowed", b)
	}
}

// TestLocalSetModeSteersTheRunningLeg: a mode chosen while a leg waits on a question
// reaches that leg through its agent.Control: steered to plan at the first Write's
// question, the leg puts its second Write's question in plan mode.
func TestLocalSetModeSteersTheRunningLeg(t *testing.T) {
	dir := t.TempDir()
	write := func(name string) scripted.ToolCall {
		return scripted.ToolCall{Name: "Write", Input: json.RawMessage(`{"file_path":"` + name + `","content":"x\n"}`)}
	}
	prov := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{write("a.txt")}}, {ToolCalls: []scripted.ToolCall{write("b.txt")}}, {Text: "done"}}})
	approver := NewApprover()
	runner := agent.New(agent.Deps{Provider: prov, Store: session.NewMemory(), History: history.NewMemory(), Approver: approver, Shell: &agent.ShellOptions{Sandbox: "off"}})
	l := NewLocal(runner, agent.TaskSpec{Root: dir, OnAsk: agent.OnAskApprover})
	var questions []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for msg := range approver.inbox {
			q := msg.(QuestionMsg)
			questions = append(questions, Rule(q.Request)+" in "+string(q.Request.Mode))
			if len(questions) > 1 {
				q.answer(ChoiceDeny)
				continue
			}
			if got, err := l.SetMode(context.Background(), permission.ModePlan); err != nil || got != permission.ModePlan {
				t.Errorf("SetMode while the leg runs: %q, %v", got, err)
			}
			q.answer(ChoiceAllowOnce)
		}
	}()
	legs := localLegs(t, l, "write both")
	close(approver.inbox)
	<-done
	if len(questions) != 2 || questions[0] != "Write(a.txt) in default" || questions[1] != "Write(b.txt) in plan" {
		t.Errorf("questions %q; the second should be asked in plan, where the steer put the leg", questions)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.txt")); err != nil {
		t.Errorf("the allowed Write: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "b.txt")); err == nil {
		t.Error("the Write after the steer to plan landed")
	}
	if r := first(legs[0], agent.EventResult).Result; r == nil || len(r.PermissionDenials) != 1 {
		t.Errorf("the leg's denials: %+v", r)
	}
}
