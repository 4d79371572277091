package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/session"
)

// frozenRenewals stands for a process stopped (SIGSTOP, a laptop asleep) while its leg
// waits: renewals of its lease do not happen, though the leg believes they did. When
// thawed, they reach the store again.
type frozenRenewals struct {
	session.Store
	frozen atomic.Bool
	// refused counts the appends the store refused for the lease.
	refused atomic.Int32
}

func (s *frozenRenewals) Append(ctx context.Context, e session.Entry) (string, error) {
	id, err := s.Store.Append(ctx, e)
	if sema.IsCode(err, session.CodeLeaseLost) {
		s.refused.Add(1)
		// The leg's renewals are real again from its first refused entry on: thawed
		// any earlier, a renewal tick could renew the expired lease before the entry
		// and leave the path under test untried.
		s.frozen.Store(false)
	}
	return id, err
}

func (s *frozenRenewals) RenewLease(ctx context.Context, id, holder string, ttl time.Duration) (session.Lease, error) {
	if s.frozen.Load() {
		return session.Lease{SessionID: id, Holder: holder, ExpiresAt: time.Now().Add(ttl)}, nil
	}
	return s.Store.RenewLease(ctx, id, holder, ttl)
}

// stalledProvider answers from script, but holds its answer to request number at
// (from 1) until release is closed; arrived is closed when that request came.
type stalledProvider struct {
	*scripted.Provider
	at      int32
	n       atomic.Int32
	arrived chan struct{}
	release chan struct{}
}

func (p *stalledProvider) Stream(ctx context.Context, req *model.Request, d func(model.Delta)) (*model.Response, error) {
	if p.n.Add(1) == p.at {
		close(p.arrived)
		<-p.release
	}
	return p.Provider.Stream(ctx, req, d)
}

// checkToolResults fails t unless every tool_use of the conversation a resume rebuilds
// is answered by a tool_result in the next message, as a provider's API demands.
func checkToolResults(t *testing.T, req *model.Request) {
	t.Helper()
	for i, m := range req.Messages {
		r := model.Response{Content: m.Content}
		for _, call := range r.ToolCalls() {
			answered := false
			if i+1 < len(req.Messages) {
				for _, b := range req.Messages[i+1].Content {
					answered = answered || (b.Kind == model.KindToolResult && b.ID == call.ID)
				}
			}
			if !answered {
				t.Fatalf("tool_use %s (%s) of message %d has no tool_result after it", call.ID, call.Name, i)
			}
		}
	}
}

// A leg stalled past its lease while another run took the session over: when it wakes,
// its next entries are refused by the store (not merely skipped by its own check), its
// next tool call never starts, it ends with session.lease_lost, and the transcript the
// new holder continued stays one a provider accepts.
func TestStalledLegCannotWriteAfterTakeover(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	st := newStores(t)
	store := &frozenRenewals{Store: st.sessions}
	p := &stalledProvider{
		Provider: scripted.New(scripted.Script{Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{write("a.txt", "a\n")}},
			{ToolCalls: []scripted.ToolCall{write("b.txt", "b\n")}},
			{Text: "done"},
		}}),
		at: 2, arrived: make(chan struct{}), release: make(chan struct{}),
	}
	const ttl = 100 * time.Millisecond
	id := session.NewID()
	type out struct {
		res *agent.TaskResult
		err error
	}
	done := make(chan out, 1)
	go func() {
		r := agent.New(agent.Deps{Provider: p, Store: store, History: st.history, SessionLease: ttl})
		res, err := r.Run(t.Context(), agent.TaskSpec{Prompt: "write two", Root: root, PermissionMode: "acceptEdits", SessionID: id})
		done <- out{res, err}
	}()
	select {
	case <-p.arrived:
	case o := <-done:
		t.Fatalf("the leg ended before its second request: %v %+v", o.err, o.res)
	}
	store.frozen.Store(true) // the process stops while it waits for the model
	// Another run waits out the lease and continues the session.
	next := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "taken over"}}})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	res2, err := agent.New(agent.Deps{Provider: next, Store: st.sessions, History: st.history, SessionLease: time.Minute}).Run(ctx,
		agent.TaskSpec{Prompt: "go on", Root: root, PermissionMode: "acceptEdits", Resume: &agent.Resume{SessionID: id, Wait: true}})
	if err != nil || res2.Status != sema.StatusCompleted {
		t.Fatalf("the run that took over: %v %+v", err, res2)
	}
	checkToolResults(t, next.Requests()[0])
	// The stalled process wakes up with the model's answer: another Write.
	close(p.release)
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.res.Status != sema.StatusError || o.res.Error == nil || o.res.Error.Code != session.CodeLeaseLost {
		t.Fatalf("the stalled leg ended %s with %v, want an error with %s", o.res.Status, o.res.Error, session.CodeLeaseLost)
	}
	if _, err := os.Stat(filepath.Join(root, "b.txt")); !os.IsNotExist(err) {
		t.Fatalf("the stalled leg ran a tool after it lost its session: b.txt %v", err)
	}
	chain, err := st.sessions.Transcript(t.Context(), id, "")
	if err != nil {
		t.Fatal(err)
	}
	legs, _ := st.sessions.Legs(t.Context(), id)
	if len(legs) != 2 {
		t.Fatalf("%d legs, want 2", len(legs))
	}
	takeover := -1
	for i, e := range chain {
		if e.LegID == legs[1].ID && takeover < 0 {
			takeover = i
		}
		if takeover >= 0 && e.LegID == legs[0].ID {
			t.Fatalf("entry %d (%s) of the stalled leg is after the takeover", i, e.Kind)
		}
	}
	if takeover < 0 {
		t.Fatal("no entry of the run that took over")
	}
	// The head is the new holder's last entry, and a third leg rebuilds a valid conversation.
	third := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "third"}}})
	res3, err := agent.New(agent.Deps{Provider: third, Store: st.sessions, History: st.history}).Run(t.Context(),
		agent.TaskSpec{Prompt: "and on", Root: root, Resume: &agent.Resume{SessionID: id}})
	if err != nil || res3.Status != sema.StatusCompleted {
		t.Fatalf("a third leg: %v %+v", err, res3)
	}
	checkToolResults(t, third.Requests()[0])
}

// A leg whose lease expired while it stalled, with nobody taking the session, renews it
// when the store refuses its next entry, and goes on as if nothing happened.
func TestStalledLegRenewsAnExpiredLeaseNobodyTook(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	st := newStores(t)
	store := &frozenRenewals{Store: st.sessions}
	p := &stalledProvider{
		Provider: scripted.New(scripted.Script{Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{write("a.txt", "a\n")}},
			{ToolCalls: []scripted.ToolCall{write("b.txt", "b\n")}},
			{Text: "done"},
		}}),
		at: 2, arrived: make(chan struct{}), release: make(chan struct{}),
	}
	const ttl = 60 * time.Millisecond
	id := session.NewID()
	done := make(chan *agent.TaskResult, 1)
	go func() {
		r := agent.New(agent.Deps{Provider: p, Store: store, History: st.history, SessionLease: ttl})
		res, _ := r.Run(t.Context(), agent.TaskSpec{Prompt: "write two", Root: root, PermissionMode: "acceptEdits", SessionID: id})
		done <- res
	}()
	select {
	case <-p.arrived:
	case res := <-done:
		t.Fatalf("the leg ended before its second request: %+v", res)
	}
	store.frozen.Store(true)
	time.Sleep(4 * ttl) // the lease expires; nobody wants the session
	close(p.release)
	res := <-done
	if res.Status != sema.StatusCompleted {
		t.Fatalf("the leg whose lease expired ended %s: %v", res.Status, res.Error)
	}
	if store.refused.Load() == 0 {
		t.Fatal("no entry was refused: the lease did not expire, and the test tried nothing")
	}
	if b, err := os.ReadFile(filepath.Join(root, "b.txt")); err != nil || string(b) != "b\n" {
		t.Fatalf("b.txt: %q %v", b, err)
	}
}
