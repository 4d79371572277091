package agent_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/session"
)

// updateCounter is the memory store, counting the calls to Update (every other method,
// the optional ones too, is the memory store's own).
type updateCounter struct {
	*session.Memory
	updates atomic.Int32
}

func (u *updateCounter) Update(ctx context.Context, id string, fn func(*session.Session) error) (session.Session, error) {
	u.updates.Add(1)
	return u.Memory.Update(ctx, id, fn)
}

// TestLegStoresItsModeOnlyWhenItChanged: a session is created holding the modes its first
// leg runs in, and a leg's close writes the session only when it ends in other modes than
// the row holds — a mode asked for on resume, or one changed while the leg runs — so that
// the next leg starts where the last one ended, in every order.
func TestLegStoresItsModeOnlyWhenItChanged(t *testing.T) {
	t.Parallel()
	st := &updateCounter{Memory: session.NewMemory()}
	hist := history.NewMemory()
	t.Cleanup(func() { st.Close(); hist.Close() })
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "1"}, {Text: "2"}, {Text: "3"}, {Text: "4"}, {Text: "5"}}})
	r := agent.New(agent.Deps{Provider: p, Store: st, History: hist})
	ctx := context.Background()
	root := t.TempDir()
	stored := func(id string) session.Session {
		t.Helper()
		s, err := st.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	check := func(step string, id string, updates int32, mode, effective, prePlan string) {
		t.Helper()
		s := stored(id)
		if s.Mode != mode || s.EffectiveMode != effective || s.PrePlanMode != prePlan {
			t.Errorf("%s: stored modes %q/%q/%q, want %q/%q/%q", step, s.Mode, s.EffectiveMode, s.PrePlanMode, mode, effective, prePlan)
		}
		if got := st.updates.Load(); got != updates {
			t.Errorf("%s: %d session updates in all, want %d", step, got, updates)
		}
	}

	a, err := r.Run(ctx, agent.TaskSpec{Prompt: "one", Root: root, PermissionMode: permission.ModeDefault})
	if err != nil {
		t.Fatal(err)
	}
	check("a new session's leg", a.SessionID, 0, "default", "default", "")

	if _, err := r.Run(ctx, agent.TaskSpec{Prompt: "two", Root: root, Resume: &agent.Resume{SessionID: a.SessionID}, PermissionMode: permission.ModeAcceptEdits}); err != nil {
		t.Fatal(err)
	}
	check("a resume that asks for another mode", a.SessionID, 1, "acceptEdits", "acceptEdits", "")

	// A mode changed while the leg runs, as the command line's control request does.
	ctl := &agent.Control{}
	changed := false
	for ev, err := range r.Events(ctx, agent.TaskSpec{Prompt: "three", Root: root, Resume: &agent.Resume{SessionID: a.SessionID}, Control: ctl}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == agent.EventInit && !changed {
			if _, err := ctl.SetPermissionMode(ctx, permission.ModePlan); err != nil {
				t.Fatal(err)
			}
			changed = true
		}
	}
	check("a mode changed during the leg", a.SessionID, 2, "plan", "plan", "acceptEdits")

	d, err := r.Run(ctx, agent.TaskSpec{Prompt: "four", Root: root, Resume: &agent.Resume{SessionID: a.SessionID}})
	if err != nil {
		t.Fatal(err)
	}
	if d.Manifest.Mode.Requested != "plan" {
		t.Errorf("the leg after the change starts in %q, want plan", d.Manifest.Mode.Requested)
	}
	check("a resume in the stored mode", a.SessionID, 2, "plan", "plan", "acceptEdits")
}
