package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/tools"
)

type stores struct {
	sessions session.Store
	history  history.Store
}

func newStores(t *testing.T) stores {
	t.Helper()
	s := session.NewMemory()
	h := history.NewMemory()
	t.Cleanup(func() { s.Close(); h.Close() })
	return stores{s, h}
}

func (s stores) runner(p model.Provider) *agent.Runner {
	return agent.New(agent.Deps{Provider: p, Store: s.sessions, History: s.history})
}

func write(path, content string) scripted.ToolCall {
	b, _ := json.Marshal(map[string]string{"file_path": path, "content": content})
	return scripted.ToolCall{Name: "Write", Input: b}
}

func TestResumeReplaysTheConversationAndNumbersTurnsAcrossLegs(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	root := t.TempDir()
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "first answer"}, {Text: "second answer"}}})
	r := st.runner(p)
	a, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "one", Root: root})
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "two", Root: root, Resume: &agent.Resume{SessionID: a.SessionID}})
	if err != nil {
		t.Fatal(err)
	}
	if b.SessionID != a.SessionID || b.Status != sema.StatusCompleted {
		t.Fatalf("resume: %s %s", b.SessionID, b.Status)
	}
	req := p.Requests()[1]
	var texts []string
	for _, m := range req.Messages {
		texts = append(texts, string(m.Role)+":"+m.Content[0].Text)
	}
	if strings.Join(texts, "|") != "user:one|assistant:first answer|user:two" {
		t.Fatalf("resumed conversation %v", texts)
	}
	legs, _ := st.sessions.Legs(context.Background(), a.SessionID)
	if len(legs) != 2 || legs[1].Status != sema.StatusCompleted {
		t.Fatalf("legs %+v", legs)
	}
	// A resume from another root is refused by name.
	_, err = r.Run(context.Background(), agent.TaskSpec{Prompt: "x", Root: t.TempDir(), Resume: &agent.Resume{SessionID: a.SessionID}})
	if sema.CodeOf(err) != "session.root_mismatch" {
		t.Fatalf("got %v", err)
	}
}

func TestParkAndApproveRunsTheStoredCallExactlyOnce(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	root := t.TempDir()
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{write("a.txt", "approved bytes")}},
		{Text: "wrote it"},
	}})
	r := st.runner(p)
	res, err := r.Run(context.Background(), agent.TaskSpec{OnAsk: agent.OnAskPark, Prompt: "write a.txt", Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sema.StatusAwaitingApproval || res.Checkpoint == nil || res.Checkpoint.Tool != "Write" || res.Checkpoint.Gate != "tool_permission" {
		t.Fatalf("status %s checkpoint %+v", res.Status, res.Checkpoint)
	}
	if _, err := os.Stat(filepath.Join(root, "a.txt")); !os.IsNotExist(err) {
		t.Fatal("the parked write ran before anyone approved it")
	}
	if len(res.PermissionDenials) != 0 {
		t.Fatalf("a parked question is not a denial: %+v", res.PermissionDenials)
	}
	// The approval comes from another runner (another process, as far as the store can
	// tell): the stored call runs.
	r2 := st.runner(p)
	spec := agent.TaskSpec{OnAsk: agent.OnAskPark, Root: root, Resume: &agent.Resume{SessionID: res.SessionID}}
	done, err := r2.Resume(context.Background(), spec, agent.Answer{CheckpointID: res.Checkpoint.ID, Allow: true})
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != sema.StatusCompleted || done.Result != "wrote it" {
		t.Fatalf("after approval: %s %q %v", done.Status, done.Result, done.Error)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "approved bytes" {
		t.Fatalf("file holds %q", b)
	}
	// A second answer is refused; the call does not run again.
	os.Remove(filepath.Join(root, "a.txt"))
	_, err = r2.Resume(context.Background(), spec, agent.Answer{CheckpointID: res.Checkpoint.ID, Allow: true})
	if sema.CodeOf(err) != session.CodeAlreadyClaimed {
		t.Fatalf("second claim: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "a.txt")); !os.IsNotExist(err) {
		t.Fatal("the call ran twice")
	}
}

func TestParkDenyAndUpdatedInput(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	root := t.TempDir()
	turns := []scripted.Turn{{ToolCalls: []scripted.ToolCall{write("a.txt", "model bytes")}}, {Text: "ok"}}
	park := func() *agent.TaskResult {
		res, err := st.runner(scripted.New(scripted.Script{Turns: turns})).Run(context.Background(), agent.TaskSpec{OnAsk: agent.OnAskPark, Prompt: "w", Root: root})
		if err != nil || res.Status != sema.StatusAwaitingApproval {
			t.Fatalf("%v %v", err, res)
		}
		return res
	}

	// Deny: the model is told, nothing is written.
	res := park()
	p := scripted.New(scripted.Script{Turns: turns[1:]})
	done, err := st.runner(p).Resume(context.Background(), agent.TaskSpec{OnAsk: agent.OnAskPark, Root: root, Resume: &agent.Resume{SessionID: res.SessionID}},
		agent.Answer{CheckpointID: res.Checkpoint.ID, Reason: "not now"})
	if err != nil || done.Status != sema.StatusCompleted {
		t.Fatalf("%v %+v", err, done)
	}
	last := p.Requests()[0].Messages
	tr := last[len(last)-1].Content[0]
	if !tr.IsError || !strings.Contains(tr.Content[0].Text, "not now") {
		t.Fatalf("denied result %+v", tr)
	}
	if _, err := os.Stat(filepath.Join(root, "a.txt")); !os.IsNotExist(err) {
		t.Fatal("a denied call wrote")
	}

	// An edit a deny rule forbids is refused before the claim; the question stays open.
	res = park()
	deps := agent.Deps{Provider: scripted.New(scripted.Script{Turns: turns[1:]}), Store: st.sessions, History: st.history,
		Policy: &agent.Policy{Rules: mustRules(t, nil, []string{"Write(secret/**)"})}}
	spec := agent.TaskSpec{OnAsk: agent.OnAskPark, Root: root, Resume: &agent.Resume{SessionID: res.SessionID}}
	edited := agent.Answer{CheckpointID: res.Checkpoint.ID, Allow: true, UpdatedInput: json.RawMessage(`{"file_path":"secret/x","content":"y"}`)}
	if _, err := agent.New(deps).Resume(context.Background(), spec, edited); sema.CodeOf(err) != "checkpoint.edit_denied" {
		t.Fatalf("edited input: %v", err)
	}
	// A re-supplied config that prepare refuses is refused before the claim too.
	bad := spec
	bad.PermissionMode = "yolo"
	_, err = agent.New(deps).Resume(context.Background(), bad, agent.Answer{CheckpointID: res.Checkpoint.ID, Allow: true})
	var se *sema.Error
	if sema.CodeOf(err) != "checkpoint.config_refused" || !asErr(err, &se) || se.Detail["code"] != "config.permission_mode_invalid" {
		t.Fatalf("config refused: %v", err)
	}
	// The refusal names the seat to change and says why.
	if se.Detail["field"] != "TaskSpec.PermissionMode" || !strings.Contains(fmt.Sprint(se.Detail["reason"]), "yolo") {
		t.Fatalf("config refused detail: %+v", se.Detail)
	}
	// The question is still open: an allowed edit runs the approver's arguments.
	edited.UpdatedInput = json.RawMessage(`{"file_path":"b.txt","content":"edited bytes"}`)
	done, err = agent.New(deps).Resume(context.Background(), spec, edited)
	if err != nil || done.Status != sema.StatusCompleted {
		t.Fatalf("%v %+v", err, done)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "b.txt")); string(b) != "edited bytes" {
		t.Fatalf("b.txt holds %q", b)
	}
}

func TestRewindRestoresFilesAcrossTurns(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "keep.txt"), []byte("original\n"), 0o640)
	read := scripted.ToolCall{Name: "Read", Input: json.RawMessage(`{"file_path":"keep.txt"}`)}
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{write("new.txt", "created in turn 1")}},
		{ToolCalls: []scripted.ToolCall{read}},
		{ToolCalls: []scripted.ToolCall{write("keep.txt", "changed in turn 3\n")}},
		{Text: "done"},
	}})
	r := agent.New(agent.Deps{Provider: p, Store: st.sessions, History: st.history})
	res, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "go", Root: root, PermissionMode: permission.ModeBypassPermissions})
	if err != nil || res.Status != sema.StatusCompleted || res.Manifest.FileHistory != "on" {
		t.Fatalf("%v %+v", err, res)
	}
	// Back to the start of turn 3: keep.txt returns, new.txt stays.
	out, err := r.Rewind(context.Background(), agent.RewindSpec{SessionID: res.SessionID, ToTurn: 3, Files: true})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "keep.txt")); string(b) != "original\n" || !out.Ledger.Complete() {
		t.Fatalf("keep.txt %q ledger %+v", b, out.Ledger)
	}
	if fi, _ := os.Stat(filepath.Join(root, "keep.txt")); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if _, err := os.Stat(filepath.Join(root, "new.txt")); err != nil {
		t.Fatal("turn 1's file went away on a rewind to turn 3")
	}
	// Back to turn 1: the created file is deleted.
	if _, err := r.Rewind(context.Background(), agent.RewindSpec{SessionID: res.SessionID, ToTurn: 1, Files: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "new.txt")); !os.IsNotExist(err) {
		t.Fatal("new.txt survived a rewind to before it existed")
	}
}

func TestUnknownSessionIsRefusedByName(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	r := st.runner(scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "never"}}}))
	_, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "x", Root: t.TempDir(), Resume: &agent.Resume{SessionID: "nope"}})
	if sema.CodeOf(err) != session.CodeNotFound {
		t.Errorf("resume of an unknown session: %v, want %s", err, session.CodeNotFound)
	}
	_, err = r.Rewind(context.Background(), agent.RewindSpec{SessionID: "nope", Conversation: true})
	if sema.CodeOf(err) != session.CodeNotFound {
		t.Errorf("rewind of an unknown session: %v, want %s", err, session.CodeNotFound)
	}
}

func mustRules(t *testing.T, allow, deny []string) permission.RuleSet {
	t.Helper()
	rs, err := permission.ParseRules(allow, deny, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func asErr(err error, target **sema.Error) bool {
	se, ok := err.(*sema.Error)
	if ok {
		*target = se
	}
	return ok
}

func TestRewindSpecFieldsAndTheirGates(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	root := t.TempDir()
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{write("made.txt", "x")}},
		{Text: "made"},
		{Text: "after rewind"},
	}})
	r := agent.New(agent.Deps{Provider: p, Store: st.sessions, History: st.history})
	res, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "make", Root: root, PermissionMode: permission.ModeBypassPermissions})
	if err != nil || res.Status != sema.StatusCompleted {
		t.Fatalf("%v %+v", err, res)
	}
	for _, c := range []struct {
		spec agent.TaskSpec
		code string
	}{
		{agent.TaskSpec{Prompt: "x", Root: root, Resume: &agent.Resume{Files: agent.RewindFilesTo(1)}}, "config.resume_invalid"},
		{agent.TaskSpec{Prompt: "x", Root: root, Resume: &agent.Resume{SessionID: res.SessionID, Files: agent.RestoreFilesAt()}}, "config.rewind_invalid"},
		{agent.TaskSpec{Prompt: "x", Root: root, Resume: &agent.Resume{SessionID: res.SessionID, Files: agent.RewindFilesTo(-1)}}, "config.rewind_invalid"},
		{agent.TaskSpec{Prompt: "x", Root: root, Resume: &agent.Resume{SessionID: res.SessionID, AcceptPartialRestore: true}}, "config.rewind_invalid"},
		{agent.TaskSpec{Prompt: "x", Root: root, Resume: &agent.Resume{Fork: true, At: "e"}}, "config.resume_invalid"},
	} {
		if _, err := r.Run(context.Background(), c.spec); sema.CodeOf(err) != c.code {
			t.Errorf("%+v: got %v, want %s", c.spec, err, c.code)
		}
	}
	got, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "again", Root: root, Resume: &agent.Resume{SessionID: res.SessionID, Files: agent.RewindFilesTo(1)}})
	if err != nil || got.Status != sema.StatusCompleted {
		t.Fatalf("%v %+v", err, got)
	}
	if _, err := os.Stat(filepath.Join(root, "made.txt")); !os.IsNotExist(err) || len(got.RewindNotes) != 1 || got.RewindNotes[0].Status != "deleted" {
		t.Fatalf("rewind before the run: %v notes %+v", err, got.RewindNotes)
	}
}

func TestApprovedEditRunsOnlyIfTheFileIsAsItWasRead(t *testing.T) {
	t.Parallel()
	for _, changed := range []bool{false, true} {
		st := newStores(t)
		root := t.TempDir()
		path := filepath.Join(root, "f.txt")
		os.WriteFile(path, []byte("hello world\n"), 0o644)
		edit := scripted.ToolCall{Name: "Edit", Input: json.RawMessage(`{"file_path":"f.txt","old_string":"world","new_string":"there"}`)}
		p := scripted.New(scripted.Script{Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{{Name: "Read", Input: json.RawMessage(`{"file_path":"f.txt"}`)}}},
			{ToolCalls: []scripted.ToolCall{edit}},
			{Text: "edited"},
		}})
		res, err := st.runner(p).Run(context.Background(), agent.TaskSpec{OnAsk: agent.OnAskPark, Prompt: "edit", Root: root})
		if err != nil || res.Status != sema.StatusAwaitingApproval {
			t.Fatalf("%v %+v", err, res)
		}
		if changed {
			os.WriteFile(path, []byte("hello world, changed meanwhile\n"), 0o644)
		}
		done, err := st.runner(p).Resume(context.Background(), agent.TaskSpec{OnAsk: agent.OnAskPark, Root: root, Resume: &agent.Resume{SessionID: res.SessionID}},
			agent.Answer{CheckpointID: res.Checkpoint.ID, Allow: true})
		if err != nil || done.Status != sema.StatusCompleted {
			t.Fatalf("changed=%v: %v %+v", changed, err, done)
		}
		b, _ := os.ReadFile(path)
		tr := done.Messages[len(done.Messages)-2].Content[0]
		if !changed && (string(b) != "hello there\n" || tr.IsError) {
			t.Fatalf("approved edit: file %q result %+v", b, tr)
		}
		if changed && (string(b) != "hello world, changed meanwhile\n" || !tr.IsError || !strings.Contains(tr.Content[0].Text, "changed")) {
			t.Fatalf("edit after a change: file %q result %+v", b, tr)
		}
	}
}

// TestTamperedCheckpointIsRefused changes a parked call's stored arguments behind the
// store's back (as anyone with write access to the database file could): the resume
// refuses it instead of running arguments nobody reviewed.
func TestTamperedCheckpointIsRefused(t *testing.T) {
	t.Parallel()
	ss, err := session.OpenSQLite(filepath.Join(t.TempDir(), "sema.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	root := t.TempDir()
	turns := []scripted.Turn{{ToolCalls: []scripted.ToolCall{write("a.txt", "reviewed")}}, {Text: "ok"}}
	deps := agent.Deps{Provider: scripted.New(scripted.Script{Turns: turns}), Store: ss}
	res, err := agent.New(deps).Run(context.Background(), agent.TaskSpec{OnAsk: agent.OnAskPark, Prompt: "w", Root: root})
	if err != nil || res.Status != sema.StatusAwaitingApproval {
		t.Fatalf("%v %+v", err, res)
	}
	if _, err := ss.DB().Exec(`UPDATE checkpoints SET args = ? WHERE id = ?`, []byte(`{"content":"evil","file_path":"a.txt"}`), res.Checkpoint.ID); err != nil {
		t.Fatal(err)
	}
	_, err = agent.New(deps).Resume(context.Background(), agent.TaskSpec{OnAsk: agent.OnAskPark, Root: root, Resume: &agent.Resume{SessionID: res.SessionID}}, agent.Answer{CheckpointID: res.Checkpoint.ID, Allow: true})
	if sema.CodeOf(err) != "checkpoint.tampered" {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "a.txt")); !os.IsNotExist(err) {
		t.Fatal("tampered arguments ran")
	}
}

// Turns are numbered across a session's legs; a result says which of them its leg ran,
// so the caller can rewind exactly that leg.
func TestResultTurnsContinueAcrossLegs(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	root := t.TempDir()
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{write("a.txt", "first leg")}},
		{Text: "wrote a"},
		{ToolCalls: []scripted.ToolCall{write("b.txt", "second leg")}},
		{Text: "wrote b"},
	}})
	r := st.runner(p)
	ctx := context.Background()
	first, err := r.Run(ctx, agent.TaskSpec{Prompt: "one", Root: root, PermissionMode: permission.ModeBypassPermissions})
	if err != nil || first.Status != sema.StatusCompleted {
		t.Fatalf("%v %+v", err, first)
	}
	if first.FirstTurn != 1 || first.LastTurn != 2 || first.NumTurns != 2 {
		t.Fatalf("first leg: turns %d..%d (%d)", first.FirstTurn, first.LastTurn, first.NumTurns)
	}
	second, err := r.Run(ctx, agent.TaskSpec{Prompt: "two", Root: root, PermissionMode: permission.ModeBypassPermissions, Resume: &agent.Resume{SessionID: first.SessionID}})
	if err != nil || second.Status != sema.StatusCompleted {
		t.Fatalf("%v %+v", err, second)
	}
	if second.FirstTurn != 3 || second.LastTurn != 4 || second.NumTurns != 2 {
		t.Fatalf("resumed leg: turns %d..%d (%d), want 3..4", second.FirstTurn, second.LastTurn, second.NumTurns)
	}
	// Undo the second leg only: back to the start of its first turn.
	if _, err := r.Rewind(ctx, agent.RewindSpec{SessionID: second.SessionID, ToTurn: second.FirstTurn, Files: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "b.txt")); !os.IsNotExist(err) {
		t.Fatalf("the second leg's file survived its rewind: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "a.txt")); err != nil || string(b) != "first leg" {
		t.Fatalf("the first leg's file: %q %v", b, err)
	}
}

// A leg that runs no turn says so with 0, 0: here a resume that finishes the parked
// turn (which belongs to the leg that parked) and is cancelled before its first model
// call.
func TestResultTurnsZeroWhenTheLegRanNone(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	root := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := &fakeTool{name: "Stop", effect: tools.EffectWrite, run: func(context.Context, json.RawMessage) tools.Result {
		cancel()
		return tools.Text("stopped")
	}}
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{call("Stop", `{}`)}}, {Text: "never"}}})
	r := agent.New(agent.Deps{Provider: p, Store: st.sessions, Tools: []tools.Tool{stop}})
	res, err := r.Run(ctx, agent.TaskSpec{Prompt: "stop", Root: root, OnAsk: agent.OnAskPark, AskTools: []string{"Stop"}})
	if err != nil || res.Status != sema.StatusAwaitingApproval || res.FirstTurn != 1 || res.LastTurn != 1 {
		t.Fatalf("%v %+v", err, res)
	}
	done, err := r.Resume(ctx, agent.TaskSpec{Root: root, Resume: &agent.Resume{SessionID: res.SessionID}},
		agent.Answer{CheckpointID: res.Checkpoint.ID, Allow: true})
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != sema.StatusCancelled || done.NumTurns != 0 || done.FirstTurn != 0 || done.LastTurn != 0 {
		t.Fatalf("turns %d..%d (%d), status %s", done.FirstTurn, done.LastTurn, done.NumTurns, done.Status)
	}
}
