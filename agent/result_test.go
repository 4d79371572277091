package agent_test

import (
	"context"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
)

// A resume answers one question; whether the leg parks again depends on what the model
// does next. Parked is the one place that says so.
func TestParkedSaysWhetherEachLegParked(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	root := t.TempDir()
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{write("a.txt", "first")}},
		{ToolCalls: []scripted.ToolCall{write("b.txt", "second")}},
		{Text: "wrote both"},
	}})
	r := st.runner(p)
	ctx := context.Background()

	res, err := r.Run(ctx, agent.TaskSpec{OnAsk: agent.OnAskPark, Prompt: "write two files", Root: root})
	if err != nil {
		t.Fatal(err)
	}
	first, ok := res.Parked()
	if !ok || first == nil || first != res.Checkpoint || first.Tool != "Write" {
		t.Fatalf("first leg: Parked() = %+v, %v (status %s)", first, ok, res.Status)
	}

	// The answered write runs; the model's next write parks the resumed leg again.
	spec := agent.TaskSpec{OnAsk: agent.OnAskPark, Root: root, Resume: &agent.Resume{SessionID: res.SessionID}}
	res, err = r.Resume(ctx, spec, agent.Answer{CheckpointID: first.ID, Allow: true})
	if err != nil {
		t.Fatal(err)
	}
	second, ok := res.Parked()
	if !ok || second == nil || second.ID == first.ID {
		t.Fatalf("second leg: Parked() = %+v, %v (status %s)", second, ok, res.Status)
	}

	// This answer, given as a stream, lets the leg finish: nothing is parked, and there
	// is no checkpoint. The result is the last event.
	res = nil
	for ev, err := range r.ResumeEvents(ctx, spec, agent.Answer{CheckpointID: second.ID, Allow: true}) {
		if err != nil {
			t.Fatal(err)
		}
		if res != nil {
			t.Fatalf("an event after the result: %s", ev.Type)
		}
		res = ev.Result
	}
	if cp, ok := res.Parked(); ok || cp != nil || res.Checkpoint != nil || res.Status != sema.StatusCompleted {
		t.Fatalf("last leg: Parked() = %+v, %v; status %s, checkpoint %+v", cp, ok, res.Status, res.Checkpoint)
	}
}

func TestParkedNeedsTheStatusAndTheCheckpoint(t *testing.T) {
	t.Parallel()
	cp := &agent.CheckpointInfo{ID: "c1"}
	cases := []struct {
		name string
		res  *agent.TaskResult
		want bool
	}{
		{"nil result", nil, false},
		{"completed", &agent.TaskResult{Status: sema.StatusCompleted}, false},
		{"awaiting approval without a checkpoint", &agent.TaskResult{Status: sema.StatusAwaitingApproval}, false},
		{"a checkpoint on another status", &agent.TaskResult{Status: sema.StatusError, Checkpoint: cp}, false},
		{"parked", &agent.TaskResult{Status: sema.StatusAwaitingApproval, Checkpoint: cp}, true},
	}
	for _, c := range cases {
		got, ok := c.res.Parked()
		if ok != c.want || (ok && got != cp) || (!ok && got != nil) {
			t.Errorf("%s: Parked() = %+v, %v; want ok %v", c.name, got, ok, c.want)
		}
	}
}

// TaskSpec.PermissionMode's doc: an empty mode on a resume keeps the session's mode.
func TestResumeWithoutAModeKeepsTheSessionsMode(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	root := t.TempDir()
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "one"}, {Text: "two"}, {Text: "three"}}})
	r := st.runner(p)
	ctx := context.Background()
	a, err := r.Run(ctx, agent.TaskSpec{Prompt: "one", Root: root, PermissionMode: permission.ModeAcceptEdits})
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Run(ctx, agent.TaskSpec{Prompt: "two", Root: root, Resume: &agent.Resume{SessionID: a.SessionID}})
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Manifest.Mode.Requested; got != string(permission.ModeAcceptEdits) {
		t.Fatalf("resumed without a mode: requested %q, want acceptEdits", got)
	}
	c, err := r.Run(ctx, agent.TaskSpec{Prompt: "three", Root: root, Resume: &agent.Resume{SessionID: a.SessionID}, PermissionMode: permission.ModeDefault})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Manifest.Mode.Requested; got != string(permission.ModeDefault) {
		t.Fatalf("resumed with default: requested %q", got)
	}
}
