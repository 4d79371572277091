package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/session"
)

// gatedProvider answers once gate is closed (or ctx ends), so a leg stays running for as
// long as a test needs it to.
type gatedProvider struct {
	gate  chan struct{}
	calls atomic.Int32
}

func (p *gatedProvider) Name() string { return "gated" }

func (p *gatedProvider) Stream(ctx context.Context, _ *model.Request, _ func(model.Delta)) (*model.Response, error) {
	p.calls.Add(1)
	select {
	case <-p.gate:
		return &model.Response{Content: []model.Block{model.TextBlock("done")}, StopReason: model.StopEndTurn}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// sqliteSession creates a session in a SQLite file by running one leg, and returns the
// file's path and the session.
func sqliteSession(t *testing.T, root string) (string, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sema.db")
	st, err := session.OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "first"}}})
	res, err := agent.New(agent.Deps{Provider: p, Store: st}).Run(t.Context(), agent.TaskSpec{Prompt: "one", Root: root})
	if err != nil || res.Status != sema.StatusCompleted {
		t.Fatalf("first leg: %v %+v", err, res)
	}
	return path, res.SessionID
}

// Fifty resumes of one session at once, each with its own Runner and its own handle on
// the SQLite file: exactly one runs, the others are refused with session.busy before they
// write anything.
func TestFiftySimultaneousResumesOneRuns(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	path, id := sqliteSession(t, root)
	const n = 50
	p := &gatedProvider{gate: make(chan struct{})}
	var busy atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	results := make([]*agent.TaskResult, n)
	errs := make([]error, n)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	for i := range n {
		st, err := session.OpenSQLite(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		r := agent.New(agent.Deps{Provider: p, Store: st})
		wg.Go(func() {
			<-start
			results[i], errs[i] = r.Run(ctx, agent.TaskSpec{Prompt: "again", Root: root, Resume: &agent.Resume{SessionID: id}})
			if sema.IsCode(errs[i], session.CodeBusy) && busy.Add(1) == n-1 {
				close(p.gate) // every other resume was refused: the one running may finish
			}
		})
	}
	close(start)
	wg.Wait()
	ran := 0
	for i := range n {
		switch {
		case errs[i] == nil:
			ran++
			if results[i].Status != sema.StatusCompleted {
				t.Fatalf("the running resume ended %s: %v", results[i].Status, results[i].Error)
			}
		case !sema.IsCode(errs[i], session.CodeBusy):
			t.Fatalf("resume %d: %v", i, errs[i])
		}
	}
	if ran != 1 || busy.Load() != n-1 || p.calls.Load() != 1 {
		t.Fatalf("%d resumes ran, %d were busy, the model was asked %d times; want 1, %d, 1", ran, busy.Load(), p.calls.Load(), n-1)
	}
	st, _ := session.OpenSQLite(path)
	defer st.Close()
	legs, _ := st.Legs(ctx, id)
	if len(legs) != 2 {
		t.Fatalf("the session has %d legs, want 2: a refused resume starts none", len(legs))
	}
	// The finished leg released the session: the next resume runs at once.
	next := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "third"}}})
	res, err := agent.New(agent.Deps{Provider: next, Store: st}).Run(ctx, agent.TaskSpec{Prompt: "more", Root: root, Resume: &agent.Resume{SessionID: id}})
	if err != nil || res.Status != sema.StatusCompleted {
		t.Fatalf("resume after the leg ended: %v %+v", err, res)
	}
}

// A lease whose holder died is taken over once it expires; until then a resume is busy,
// or waits with Resume.Wait, for as long as its ctx allows.
func TestDeadHoldersLeaseIsTakenOver(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	path, id := sqliteSession(t, root)
	st, err := session.OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := t.Context()
	if _, err := st.AcquireLease(ctx, id, "a process that was killed", 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "resumed"}}})
	r := agent.New(agent.Deps{Provider: p, Store: st})
	resume := func(ctx context.Context, wait bool) (*agent.TaskResult, error) {
		return r.Run(ctx, agent.TaskSpec{Prompt: "go on", Root: root, Resume: &agent.Resume{SessionID: id, Wait: wait}})
	}
	if _, err := resume(ctx, false); !sema.IsCode(err, session.CodeBusy) || !strings.Contains(err.Error(), "a process that was killed") {
		t.Fatalf("resume of a held session: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := resume(short, true); !sema.IsCode(err, session.CodeBusy) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a wait its ctx cut short: %v", err)
	}
	res, err := resume(ctx, true)
	if err != nil || res.Status != sema.StatusCompleted || res.Result != "resumed" {
		t.Fatalf("resume after the dead holder's lease expired: %v %+v", err, res)
	}
	// The store's own clock took it over: the dead holder can no longer renew.
	if _, err := st.RenewLease(ctx, id, "a process that was killed", time.Minute); !sema.IsCode(err, session.CodeLeaseLost) {
		t.Fatalf("the dead holder renewed: %v", err)
	}
}

// A leg longer than its lease renews it, so the session stays its own.
func TestRunningLegRenewsItsLease(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	root := t.TempDir()
	first, err := st.runner(scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "one"}}})).Run(t.Context(), agent.TaskSpec{Prompt: "one", Root: root})
	if err != nil {
		t.Fatal(err)
	}
	p := &gatedProvider{gate: make(chan struct{})}
	// Long enough that a renewal is never late on a loaded machine (under -race a 60 ms
	// lease expired between renewals), short enough to pass four times over.
	const lease = 300 * time.Millisecond
	r := agent.New(agent.Deps{Provider: p, Store: st.sessions, SessionLease: lease})
	done := make(chan *agent.TaskResult, 1)
	go func() {
		res, _ := r.Run(t.Context(), agent.TaskSpec{Prompt: "slow", Root: root, Resume: &agent.Resume{SessionID: first.SessionID}})
		done <- res
	}()
	for p.calls.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(4 * lease)
	// A second resume that is wrongly let in would wait at the gate: its ctx ends it.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	other := agent.New(agent.Deps{Provider: p, Store: st.sessions})
	if _, err := other.Run(ctx, agent.TaskSpec{Prompt: "x", Root: root, Resume: &agent.Resume{SessionID: first.SessionID}}); !sema.IsCode(err, session.CodeBusy) {
		close(p.gate)
		t.Fatalf("a second resume while the first renews its lease: %v (the first: %+v)", err, <-done)
	}
	close(p.gate)
	if res := <-done; res.Status != sema.StatusCompleted {
		t.Fatalf("the slow leg ended %s: %v", res.Status, res.Error)
	}
}

// lostLeaseStore says, at the first renewal, that another run took the session.
type lostLeaseStore struct{ session.Store }

func (s lostLeaseStore) RenewLease(_ context.Context, id, holder string, _ time.Duration) (session.Lease, error) {
	return session.Lease{}, sema.Errorf(session.CodeLeaseLost, "taken by another run")
}

// A leg that loses its lease stops at once with session.lease_lost and writes nothing
// more to the session.
func TestLegThatLosesItsLeaseStops(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	p := &gatedProvider{gate: make(chan struct{})}
	r := agent.New(agent.Deps{Provider: p, Store: lostLeaseStore{st.sessions}, SessionLease: 30 * time.Millisecond})
	res, err := r.Run(t.Context(), agent.TaskSpec{Prompt: "slow", Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sema.StatusError || res.Error == nil || res.Error.Code != session.CodeLeaseLost {
		t.Fatalf("status %s error %v", res.Status, res.Error)
	}
	entries, _ := st.sessions.Transcript(t.Context(), res.SessionID, "")
	if len(entries) != 1 || entries[0].Kind != "user" {
		t.Fatalf("the leg wrote after losing its lease: %d entries", len(entries))
	}
}

// A rewind changes the session's files and head: while a leg holds the session, a rewind
// is refused with session.busy and changes nothing.
func TestRewindRefusesABusySession(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	store, hist := session.NewMemory(), history.NewMemory()
	model := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "Write", Input: json.RawMessage(`{"file_path":"a.txt","content":"a\n"}`)}}},
		{Text: "done"},
	}})
	runner := agent.New(agent.Deps{Provider: model, Store: store, History: hist})
	res, err := runner.Run(context.Background(), agent.TaskSpec{Prompt: "write", Root: root, PermissionMode: "acceptEdits"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.AcquireLease(context.Background(), res.SessionID, "another run", time.Minute); err != nil {
		t.Fatal(err)
	}
	_, err = runner.Rewind(context.Background(), agent.RewindSpec{SessionID: res.SessionID, ToTurn: 1, Files: true})
	if !sema.IsCode(err, session.CodeBusy) {
		t.Fatalf("rewind of a held session: %v, want session.busy", err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "a\n" {
		t.Fatalf("the refused rewind changed a.txt: %q", b)
	}
	if err := store.ReleaseLease(context.Background(), res.SessionID, "another run"); err != nil {
		t.Fatal(err)
	}
	if _, err := runner.Rewind(context.Background(), agent.RewindSpec{SessionID: res.SessionID, ToTurn: 1, Files: true}); err != nil {
		t.Fatalf("rewind once the session is free: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "a.txt")); !os.IsNotExist(err) {
		t.Fatalf("a.txt after the rewind: %v", err)
	}
}
