package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/session"
)

// dyingStore stands for a process whose disk fails, or that is killed, at one moment:
// Append works until the store dies, and fails from then on. It dies before the
// Append number failAt (from 1) when failAt > 0, or right after the first entry of kind
// dieAfter is stored.
type dyingStore struct {
	session.Store
	mu       sync.Mutex
	n        int
	failAt   int
	dieAfter string
	dead     bool
}

func (s *dyingStore) Append(ctx context.Context, e session.Entry) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	if s.dead || s.n == s.failAt {
		s.dead = true
		return "", sema.Errorf("io.disk_full", "no space left on device")
	}
	id, err := s.Store.Append(ctx, e)
	if err == nil && e.Kind == s.dieAfter {
		s.dead = true
	}
	return id, err
}

// resultTexts returns the tool_result texts by call id of the last request's messages.
func resultTexts(p *scripted.Provider) map[string]string {
	reqs := p.Requests()
	out := map[string]string{}
	for _, m := range reqs[len(reqs)-1].Messages {
		for _, b := range m.Content {
			if b.Kind == model.KindToolResult {
				var parts []string
				for _, c := range b.Content {
					parts = append(parts, c.Text)
				}
				out[b.ID] = strings.Join(parts, " ")
			}
		}
	}
	return out
}

func writeCall(id, path, content string) scripted.ToolCall {
	c := write(path, content)
	c.ID = id
	return c
}

// A transcript entry that cannot be stored stops the leg before another tool starts,
// with session.record_failed; a later resume finds a conversation it can continue, and
// tells the model which calls may have run and which never started.
func TestTranscriptFailsClosed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		failAt int // the Append that fails: 1 user, 2 assistant, 3 intent of a, 4 result of a, …
		// wantA and wantB say what the resumed model is told of the two calls; "" when
		// the response holding them was not stored at all.
		wantA, wantB string
		ranA         bool
	}{
		{"the prompt", 1, "", "", false},
		{"the response", 2, "", "", false},
		{"the first call's intent", 3, "was not run", "was not run", false},
		{"the second call's intent", 4, "outcome of this call is unknown", "was not run", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := newStores(t)
			root := t.TempDir()
			p := scripted.New(scripted.Script{Turns: []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{writeCall("call_a", "a.txt", "A"), writeCall("call_b", "b.txt", "B")}},
				{Text: "resumed"},
			}})
			dying := &dyingStore{Store: st.sessions, failAt: tc.failAt}
			r := agent.New(agent.Deps{Provider: p, Store: dying, History: st.history})
			res, err := r.Run(t.Context(), agent.TaskSpec{Prompt: "write both", Root: root, PermissionMode: "acceptEdits"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != sema.StatusError || res.Error == nil || res.Error.Code != agent.CodeSessionRecordFailed {
				t.Fatalf("status %s error %v, want error with %s", res.Status, res.Error, agent.CodeSessionRecordFailed)
			}
			_, errA := os.Stat(filepath.Join(root, "a.txt"))
			if (errA == nil) != tc.ranA {
				t.Fatalf("a.txt written: %v, want %v", errA == nil, tc.ranA)
			}
			if _, err := os.Stat(filepath.Join(root, "b.txt")); err == nil {
				t.Fatal("a call ran after the transcript failed")
			}
			if tc.failAt == 1 {
				return // nothing was stored, not even the session's first entry
			}
			// The disk has room again: a plain resume continues the stored conversation.
			res2, err := agent.New(agent.Deps{Provider: p, Store: st.sessions, History: st.history}).Run(t.Context(),
				agent.TaskSpec{Prompt: "go on", Root: root, Resume: &agent.Resume{SessionID: res.SessionID}})
			if err != nil || res2.Status != sema.StatusCompleted {
				t.Fatalf("resume: %v %+v", err, res2)
			}
			got := resultTexts(p)
			if tc.wantA == "" {
				if len(got) != 0 {
					t.Fatalf("the unstored response's calls reached the model: %v", got)
				}
				return
			}
			if !strings.Contains(got["call_a"], tc.wantA) || !strings.Contains(got["call_b"], tc.wantB) {
				t.Fatalf("the model was told\n a: %q\n b: %q\nwant a %q, b %q", got["call_a"], got["call_b"], tc.wantA, tc.wantB)
			}
			if tc.ranA && !strings.Contains(got["call_a"], "a.txt") {
				t.Fatalf("the unknown outcome does not name the file file history saw change: %q", got["call_a"])
			}
		})
	}
}

// A leg that dies after a call's intent is stored and before its result is: the call
// ran, and the resumed model is told its outcome is unknown — never that it did not run.
func TestCrashAfterIntentReportsUnknownOutcome(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	root := t.TempDir()
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{writeCall("call_a", "a.txt", "A")}},
		{Text: "resumed"},
	}})
	dying := &dyingStore{Store: st.sessions, dieAfter: "call_started"}
	res, err := agent.New(agent.Deps{Provider: p, Store: dying, History: st.history}).Run(t.Context(),
		agent.TaskSpec{Prompt: "write", Root: root, PermissionMode: "acceptEdits"})
	if err != nil || res.Status != sema.StatusError {
		t.Fatalf("%v %+v", err, res)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "A" {
		t.Fatalf("the call did not run: a.txt = %q", b)
	}
	res2, err := agent.New(agent.Deps{Provider: p, Store: st.sessions, History: st.history}).Run(t.Context(),
		agent.TaskSpec{Prompt: "go on", Root: root, Resume: &agent.Resume{SessionID: res.SessionID}})
	if err != nil || res2.Status != sema.StatusCompleted {
		t.Fatalf("resume: %v %+v", err, res2)
	}
	text := resultTexts(p)["call_a"]
	if !strings.Contains(text, "outcome of this call is unknown") || !strings.Contains(text, "a.txt") || strings.Contains(text, "not run") {
		t.Fatalf("the model was told %q", text)
	}
}

// `sema approve` killed after its claim ran the command: the plain resume that follows
// says the approved call may have run, not that it waited for an approval.
func TestApprovedCallThatStartedIsNotReportedAsNotRun(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	root := t.TempDir()
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{writeCall("call_a", "a.txt", "approved")}},
		{Text: "after the crash"},
	}})
	res, err := st.runner(p).Run(t.Context(), agent.TaskSpec{OnAsk: agent.OnAskPark, Prompt: "write", Root: root})
	if err != nil || res.Status != sema.StatusAwaitingApproval {
		t.Fatalf("%v %+v", err, res)
	}
	dying := &dyingStore{Store: st.sessions, dieAfter: "call_started"}
	spec := agent.TaskSpec{OnAsk: agent.OnAskPark, Root: root, Resume: &agent.Resume{SessionID: res.SessionID}}
	approved, err := agent.New(agent.Deps{Provider: p, Store: dying, History: st.history}).Resume(t.Context(), spec,
		agent.Answer{CheckpointID: res.Checkpoint.ID, Allow: true})
	if err != nil || approved.Status != sema.StatusError {
		t.Fatalf("approve: %v %+v", err, approved)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "approved" {
		t.Fatalf("the approved call did not run: %q", b)
	}
	spec.Prompt = "go on"
	res2, err := st.runner(p).Run(t.Context(), spec)
	if err != nil || res2.Status != sema.StatusCompleted {
		t.Fatalf("resume: %v %+v", err, res2)
	}
	text := resultTexts(p)["call_a"]
	if !strings.Contains(text, "outcome of this call is unknown") || strings.Contains(text, "not run") || strings.Contains(text, "approval") {
		t.Fatalf("the model was told %q", text)
	}
	// A parked call nobody approved is still reported as not run.
	p2 := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{writeCall("call_b", "b.txt", "b")}},
		{Text: "moved on"},
	}})
	parked, _ := st.runner(p2).Run(t.Context(), agent.TaskSpec{OnAsk: agent.OnAskPark, Prompt: "write b", Root: root})
	if _, err := st.runner(p2).Run(t.Context(), agent.TaskSpec{Prompt: "never mind", Root: root, Resume: &agent.Resume{SessionID: parked.SessionID}}); err != nil {
		t.Fatal(err)
	}
	if text := resultTexts(p2)["call_b"]; !strings.Contains(text, "not run") {
		t.Fatalf("an unapproved parked call was reported as %q", text)
	}
}

// A run the store stops (a full disk: its entries cannot be stored) still frees its
// session's lease as it ends, so the next run does not find the session busy.
func TestRecordFailureReleasesTheLease(t *testing.T) {
	t.Parallel()
	for _, failAt := range []int{1, 2, 3} {
		st := newStores(t)
		root := t.TempDir()
		p := scripted.New(scripted.Script{Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{writeCall("w1", "a.txt", "a\n")}},
			{Text: "done"},
		}})
		dying := &dyingStore{Store: st.sessions, failAt: failAt}
		res, err := agent.New(agent.Deps{Provider: p, Store: dying, History: st.history, SessionLease: time.Hour}).Run(t.Context(),
			agent.TaskSpec{Prompt: "write", Root: root, PermissionMode: "acceptEdits"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Error == nil || res.Error.Code != agent.CodeSessionRecordFailed {
			t.Fatalf("append %d failing: status %s error %v", failAt, res.Status, res.Error)
		}
		if _, err := st.sessions.AcquireLease(t.Context(), res.SessionID, "the next run", time.Minute); err != nil {
			t.Fatalf("append %d failing: the stopped run kept its lease: %v", failAt, err)
		}
	}
}

// A call to one of the engine's tools that only read stores no intent (a commit less
// per turn); a write still does. A run that dies before a read's result is stored
// tells the resumed model the read has no result and changed nothing — not that it
// never started, nor that its outcome is unknown.
func TestReadCallsStoreNoIntent(t *testing.T) {
	// readFixture is a pair of stores, a root holding a.txt and a Read of it.
	readFixture := func(t *testing.T) (stores, string, scripted.ToolCall) {
		root := t.TempDir()
		if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("A\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return newStores(t), root, scripted.ToolCall{ID: "call_r", Name: "Read", Input: []byte(`{"file_path":"a.txt"}`)}
	}
	t.Parallel()
	t.Run("entries", func(t *testing.T) {
		t.Parallel()
		st, root, read := readFixture(t)
		p := scripted.New(scripted.Script{Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{read, writeCall("call_w", "b.txt", "B")}},
			{Text: "done"},
		}})
		res, err := agent.New(agent.Deps{Provider: p, Store: st.sessions, History: st.history}).Run(t.Context(),
			agent.TaskSpec{Prompt: "read and write", Root: root, PermissionMode: "acceptEdits"})
		if err != nil || res.Status != sema.StatusCompleted {
			t.Fatalf("%v %+v", err, res)
		}
		chain, err := st.sessions.(*session.Memory).Transcript(t.Context(), res.SessionID, "")
		if err != nil {
			t.Fatal(err)
		}
		var started []string
		for _, e := range chain {
			if e.Kind == "call_started" {
				started = append(started, string(e.Payload))
			}
		}
		if len(started) != 1 || !strings.Contains(started[0], "call_w") {
			t.Fatalf("intents stored: %v; want the Write's alone", started)
		}
	})
	t.Run("a crash during the read", func(t *testing.T) {
		t.Parallel()
		st, root, read := readFixture(t)
		p := scripted.New(scripted.Script{Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{read}}, {Text: "resumed"}}})
		// 1 the prompt, 2 the response, 3 the read's result: the store dies there.
		dying := &dyingStore{Store: st.sessions, failAt: 3}
		res, err := agent.New(agent.Deps{Provider: p, Store: dying, History: st.history}).Run(t.Context(),
			agent.TaskSpec{Prompt: "read", Root: root})
		if err != nil || res.Status != sema.StatusError || res.Error == nil || res.Error.Code != agent.CodeSessionRecordFailed {
			t.Fatalf("%v %+v", err, res)
		}
		res2, err := agent.New(agent.Deps{Provider: p, Store: st.sessions, History: st.history}).Run(t.Context(),
			agent.TaskSpec{Prompt: "go on", Root: root, Resume: &agent.Resume{SessionID: res.SessionID}})
		if err != nil || res2.Status != sema.StatusCompleted {
			t.Fatalf("resume: %v %+v", err, res2)
		}
		text := resultTexts(p)["call_r"]
		if !strings.Contains(text, "only reads, so it changed nothing") || strings.Contains(text, "not run") || strings.Contains(text, "unknown") {
			t.Fatalf("the model was told %q", text)
		}
	})
}
