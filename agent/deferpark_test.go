package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
)

// goneApprover is an approver whose person went away: every question is deferred.
type goneApprover struct {
	declares bool // it says it may defer (permission.Deferring)
	asked    int
}

func (g *goneApprover) Approve(context.Context, permission.ApprovalRequest) (permission.ApprovalDecision, error) {
	g.asked++
	return permission.ApprovalDecision{}, permission.ErrDefer
}

func (g *goneApprover) MayDefer() bool { return g.declares }

// TestDeferredQuestionParks: an approver whose person went away with the question open
// defers it (permission.ErrDefer), and the leg parks the exact call as a parking task
// would: the result is awaiting_approval with the checkpoint, nothing ran, and a later
// answer (sema approve's Runner.Resume) runs it once. An approver that defers without
// declaring it may, or a run with no store to park in, refuses the call instead.
func TestDeferredQuestionParks(t *testing.T) {
	script := func() *scripted.Provider {
		return scripted.New(scripted.Script{Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{write("note.txt", "hi\n")}}, {Text: "written"}}})
	}
	t.Run("parks", func(t *testing.T) {
		st, root := newStores(t), t.TempDir()
		gone := &goneApprover{declares: true}
		r := agent.New(agent.Deps{Provider: script(), Store: st.sessions, History: st.history, Approver: gone})
		res, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "write", Root: root, OnAsk: agent.OnAskApprover})
		if err != nil {
			t.Fatal(err)
		}
		cp, parked := res.Parked()
		if !parked || cp.Tool != "Write" || gone.asked != 1 {
			t.Fatalf("status %s, parked %v (%+v), asked %d; want the Write parked", res.Status, parked, cp, gone.asked)
		}
		if _, err := os.Stat(filepath.Join(root, "note.txt")); !os.IsNotExist(err) {
			t.Fatalf("the deferred call ran: %v", err)
		}
		done, err := r.Resume(context.Background(), agent.TaskSpec{Root: root, OnAsk: agent.OnAskPark, Resume: &agent.Resume{SessionID: res.SessionID}},
			agent.Answer{CheckpointID: cp.ID, Allow: true})
		if err != nil || done.Status != sema.StatusCompleted {
			t.Fatalf("the later answer: %+v, %v", done, err)
		}
		if b, err := os.ReadFile(filepath.Join(root, "note.txt")); err != nil || string(b) != "hi\n" {
			t.Fatalf("note.txt after the answer: %q, %v", b, err)
		}
	})
	for name, deps := range map[string]func(st stores, a *goneApprover) agent.Deps{
		"undeclared": func(st stores, a *goneApprover) agent.Deps {
			a.declares = false
			return agent.Deps{Provider: script(), Store: st.sessions, History: st.history, Approver: a}
		},
		"no store": func(st stores, a *goneApprover) agent.Deps {
			return agent.Deps{Provider: script(), Approver: a}
		},
	} {
		t.Run(name, func(t *testing.T) {
			st, root := newStores(t), t.TempDir()
			gone := &goneApprover{declares: true}
			res, err := agent.New(deps(st, gone)).Run(context.Background(), agent.TaskSpec{Prompt: "write", Root: root, OnAsk: agent.OnAskApprover})
			if err != nil {
				t.Fatal(err)
			}
			if _, parked := res.Parked(); parked || res.Status != sema.StatusCompleted || len(res.PermissionDenials) != 1 {
				t.Fatalf("status %s, parked %v, denials %+v; want the call refused and the run on", res.Status, parked, res.PermissionDenials)
			}
			if _, err := os.Stat(filepath.Join(root, "note.txt")); !os.IsNotExist(err) {
				t.Fatalf("the refused call ran: %v", err)
			}
		})
	}
}
