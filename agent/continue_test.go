package agent_test

import (
	"context"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model/scripted"
)

func TestSessionIDChosenByTheCaller(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	root := t.TempDir()
	const id = "0b7c2f7e-3f4a-4d1e-9b7a-2c1d5e6f7a8b"
	r := st.runner(scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "done"}, {Text: "again"}}}))
	res, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "p", Root: root, SessionID: id})
	if err != nil || res.SessionID != id {
		t.Fatalf("Run: %v, session %q", err, res.SessionID)
	}
	if s, err := st.sessions.Get(context.Background(), id); err != nil || s.Root == "" {
		t.Fatalf("stored session: %+v, %v", s, err)
	}
	// The same id again is the store's refusal, and nothing runs.
	if _, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "p", Root: root, SessionID: id}); sema.CodeOf(err) != "session.exists" {
		t.Fatalf("a taken id: %v", err)
	}
	for _, tc := range []struct {
		name string
		spec agent.TaskSpec
	}{
		{"not a uuid", agent.TaskSpec{Prompt: "p", Root: root, SessionID: "../x"}},
		{"uppercase", agent.TaskSpec{Prompt: "p", Root: root, SessionID: "0B7C2F7E-3F4A-4D1E-9B7A-2C1D5E6F7A8B"}},
		{"with a resume", agent.TaskSpec{Prompt: "p", Root: root, SessionID: id, Resume: &agent.Resume{SessionID: id}}},
	} {
		if _, err := r.Run(context.Background(), tc.spec); sema.CodeOf(err) != agent.CodeSessionIDInvalid {
			t.Errorf("%s: got %v, want %s", tc.name, err, agent.CodeSessionIDInvalid)
		}
	}
}

func TestContinueAsksTheModelAgainWithoutAPrompt(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	root := t.TempDir()
	// The first leg stops before the model answers (a model error, as a crash would
	// leave it): the transcript ends with the prompt.
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{Error: &sema.Error{Code: "model.overloaded", Message: "try later"}},
		{Text: "the answer"},
	}})
	r := st.runner(p)
	first, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "question", Root: root})
	if err != nil || first.Status == sema.StatusCompleted {
		t.Fatalf("first leg: %v %v", err, first.Status)
	}
	// Without Continue, a resume needs a prompt.
	if _, err := r.Run(context.Background(), agent.TaskSpec{Root: root, Resume: &agent.Resume{SessionID: first.SessionID}}); sema.CodeOf(err) != agent.CodePromptMissing {
		t.Fatalf("resume without a prompt: %v", err)
	}
	res, err := r.Run(context.Background(), agent.TaskSpec{Root: root, Resume: &agent.Resume{SessionID: first.SessionID, Continue: true}})
	if err != nil || res.Status != sema.StatusCompleted || res.Result != "the answer" {
		t.Fatalf("continue: %v %+v", err, res)
	}
	reqs := p.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	last := reqs[1].Messages
	if len(last) != 1 || last[0].Content[0].Text != "question" {
		t.Fatalf("the continued request carries %+v, want the one prompt", last)
	}
	// Continuing a session whose model has answered asks nothing more: the answer stands.
	again, err := r.Run(context.Background(), agent.TaskSpec{Root: root, Resume: &agent.Resume{SessionID: first.SessionID, Continue: true}})
	if err != nil || again.Status != sema.StatusCompleted || again.Result != "the answer" || again.NumTurns != 0 {
		t.Fatalf("continue after the answer: %v %+v", err, again)
	}
	if n := len(p.Requests()); n != 2 {
		t.Fatalf("continuing an answered session made a request (%d in all)", n)
	}
}
