package tui

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/session"
)

// parkedWrite parks a leg at a Write of note.txt with one runner (as `sema -p --on-ask
// park` would) and returns a Local over another runner. With a SQLite file, each runner
// opens the file itself, as two processes would; else they share a memory store.
func parkedWrite(t *testing.T, sqlite bool) (*Local, string) {
	t.Helper()
	dir := t.TempDir()
	write := scripted.ToolCall{Name: "Write", Input: json.RawMessage(`{"file_path":"note.txt","content":"hi\n"}`)}
	prov := scripted.New(scripted.Script{Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{write}}, {Text: "written"}}})
	db := filepath.Join(t.TempDir(), "sessions.db")
	open := func() (session.Store, history.Store) {
		if !sqlite {
			return nil, nil
		}
		st, err := session.OpenSQLite(db)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st, history.NewMemory()
	}
	store, hist := open()
	if store == nil {
		store, hist = session.NewMemory(), history.NewMemory()
	}
	deps := agent.Deps{Provider: prov, Store: store, History: hist, Shell: &agent.ShellOptions{Sandbox: "off"}}
	res, err := agent.New(deps).Run(context.Background(), agent.TaskSpec{Prompt: "write a note", Root: dir, OnAsk: agent.OnAskPark})
	if err != nil || res.Status != sema.StatusAwaitingApproval {
		t.Fatalf("the parking leg: %+v, %v", res, err)
	}
	if sqlite {
		deps.Store, deps.History = open()
	}
	l := NewLocal(agent.New(deps), agent.TaskSpec{Root: dir, OnAsk: agent.OnAskDeny}).WithStores(deps.Store, deps.History)
	return l, dir
}

func pendingOne(t *testing.T, l *Local) PendingQuestion {
	t.Helper()
	qs, err := l.Pending(context.Background())
	if err != nil || len(qs) != 1 {
		t.Fatalf("Pending: %+v, %v; want the one parked Write", qs, err)
	}
	q := qs[0]
	if q.Tool != "Write" || q.Title != "write a note" || field(q.Input, "file_path") != "note.txt" {
		t.Errorf("the pending question %+v", q)
	}
	return q
}

// TestLocalAnswersAParkedQuestion: a Write parked by another runner is listed, allowed
// here: the file is written, the leg completes, and the question is no longer pending;
// a second answer is refused as already claimed and runs nothing.
func TestLocalAnswersAParkedQuestion(t *testing.T) {
	for _, sqlite := range []bool{false, true} {
		name := "memory"
		if sqlite {
			name = "sqlite"
		}
		t.Run(name, func(t *testing.T) { answerParked(t, sqlite) })
	}
}

func answerParked(t *testing.T, sqlite bool) {
	l, dir := parkedWrite(t, sqlite)
	q := pendingOne(t, l)
	var evs []agent.Event
	if err := l.Answer(context.Background(), q.ID, true, "", func(ev agent.Event) { evs = append(evs, ev) }); err != nil {
		t.Fatalf("Answer: %v", err)
	}
	if r := first(evs, agent.EventResult).Result; r == nil || r.Status != sema.StatusCompleted || r.SessionID != q.SessionID {
		t.Errorf("the resumed leg's result %+v, want completed in session %s", r, q.SessionID)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "note.txt")); err != nil || string(b) != "hi\n" {
		t.Errorf("note.txt = %q, %v after the allow", b, err)
	}
	if qs, err := l.Pending(context.Background()); err != nil || len(qs) != 0 {
		t.Errorf("Pending after the answer: %+v, %v", qs, err)
	}
	var again []agent.Event
	err := l.Answer(context.Background(), q.ID, false, "", func(ev agent.Event) { again = append(again, ev) })
	if !sema.IsCode(err, session.CodeAlreadyClaimed) || len(again) != 0 {
		t.Errorf("a second answer: %v with %d events, want %s before anything ran", err, len(again), session.CodeAlreadyClaimed)
	}
}

// TestLocalDeniesAParkedQuestion: denied, the parked Write does not run.
func TestLocalDeniesAParkedQuestion(t *testing.T) {
	l, dir := parkedWrite(t, false)
	q := pendingOne(t, l)
	var evs []agent.Event
	if err := l.Answer(context.Background(), q.ID, false, "not now", func(ev agent.Event) { evs = append(evs, ev) }); err != nil {
		t.Fatalf("Answer: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "note.txt")); err == nil {
		t.Error("the denied Write ran")
	}
	r := first(evs, agent.EventResult).Result
	if r == nil || r.Answered == nil || r.Answered.Allowed {
		t.Errorf("the resumed leg's result %+v, want the call answered no", r)
	}
}

// TestLocalAnswersAChildsQuestion: a delegated child parked its Write (the root session
// waits at it): Pending lists it under the root session, naming the agent that asked;
// allowed here, the child writes the file and the root's leg completes; a denial with a
// sentence reaches the child's model as the refusal's reason.
func TestLocalAnswersAChildsQuestion(t *testing.T) {
	for _, allow := range []bool{true, false} {
		t.Run(map[bool]string{true: "allow", false: "deny"}[allow], func(t *testing.T) {
			dir := t.TempDir()
			task := scripted.ToolCall{ID: "t1", Name: "Task", Input: json.RawMessage(`{"subagent_type":"general-purpose","description":"write the note","prompt":"CHILD: write note.txt"}`)}
			write := scripted.ToolCall{Name: "Write", Input: json.RawMessage(`{"file_path":"note.txt","content":"hi\n"}`)}
			prov := scripted.New(scripted.Script{
				Turns:   []scripted.Turn{{ToolCalls: []scripted.ToolCall{task}}, {Text: "root done"}},
				Threads: []scripted.Thread{{Match: "CHILD:", Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{write}}, {Text: "child done"}}}},
			})
			deps := agent.Deps{Provider: prov, Store: session.NewMemory(), History: history.NewMemory(), Shell: &agent.ShellOptions{Sandbox: "off"}}
			res, err := agent.New(deps).Run(context.Background(), agent.TaskSpec{Prompt: "delegate a note", Root: dir, OnAsk: agent.OnAskPark})
			if cp, parked := res.Parked(); err != nil || !parked || cp.Subagent == nil {
				t.Fatalf("the parking leg: %+v, %v; want a child's question", res, err)
			}
			l := NewLocal(agent.New(deps), agent.TaskSpec{Root: dir, OnAsk: agent.OnAskDeny}).WithStores(deps.Store, deps.History)
			qs, err := l.Pending(context.Background())
			if err != nil || len(qs) != 1 {
				t.Fatalf("Pending: %+v, %v; want the child's Write", qs, err)
			}
			q := qs[0]
			if q.Tool != "Write" || q.SessionID != res.SessionID || q.Agent != "write the note" || q.Title != "delegate a note" {
				t.Errorf("the pending question %+v; want the child's Write under the root session, asked by its agent", q)
			}
			var evs []agent.Event
			if err := l.Answer(context.Background(), q.ID, allow, "no notes today", func(ev agent.Event) { evs = append(evs, ev) }); err != nil {
				t.Fatalf("Answer: %v", err)
			}
			r := first(evs, agent.EventResult).Result
			if r == nil || r.Status != sema.StatusCompleted || r.SessionID != res.SessionID || r.Result != "root done" {
				t.Fatalf("the resumed root leg's result %+v, want the root session completed", r)
			}
			_, statErr := os.Stat(filepath.Join(dir, "note.txt"))
			if allow != (statErr == nil) {
				t.Errorf("allowed %v, note.txt: %v", allow, statErr)
			}
			sent, _ := json.Marshal(prov.Requests())
			if !allow && !strings.Contains(string(sent), "no notes today") {
				t.Errorf("the person's sentence did not reach the child's model")
			}
			if qs, err := l.Pending(context.Background()); err != nil || len(qs) != 0 {
				t.Errorf("Pending after the answer: %+v, %v", qs, err)
			}
		})
	}
}
