package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/tools/files"
)

var (
	readF = scripted.ToolCall{Name: "Read", Input: json.RawMessage(`{"file_path":"f.txt"}`)}
	editF = scripted.ToolCall{Name: "Edit", Input: json.RawMessage(`{"file_path":"f.txt","old_string":"world","new_string":"there"}`)}
)

// lastToolResult returns the last tool_result block of a finished leg's conversation.
func lastToolResult(t *testing.T, res *agent.TaskResult) model.Block {
	t.Helper()
	for i := len(res.Messages) - 1; i >= 0; i-- {
		for _, b := range res.Messages[i].Content {
			if b.Kind == model.KindToolResult {
				return b
			}
		}
	}
	t.Fatalf("no tool result in %+v", res.Messages)
	return model.Block{}
}

// TestReadStateSurvivesLegs reads a file in one leg and edits it in the next: the edit
// runs when the file is as it was read, and is refused as changed when a person edited
// it between the legs.
func TestReadStateSurvivesLegs(t *testing.T) {
	t.Parallel()
	for _, changed := range []bool{false, true} {
		st := newStores(t)
		root := t.TempDir()
		path := filepath.Join(root, "f.txt")
		os.WriteFile(path, []byte("hello world\n"), 0o644)
		p := scripted.New(scripted.Script{Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{readF}}, {Text: "read it"},
			{ToolCalls: []scripted.ToolCall{editF}}, {Text: "edited"},
		}})
		spec := agent.TaskSpec{Prompt: "read", Root: root, PermissionMode: permission.ModeAcceptEdits}
		first, err := st.runner(p).Run(context.Background(), spec)
		if err != nil || first.Status != sema.StatusCompleted {
			t.Fatalf("%v %+v", err, first)
		}
		if changed {
			os.WriteFile(path, []byte("hello world, a person was here\n"), 0o644)
		}
		spec.Prompt, spec.Resume = "edit", &agent.Resume{SessionID: first.SessionID}
		second, err := st.runner(p).Run(context.Background(), spec)
		if err != nil || second.Status != sema.StatusCompleted {
			t.Fatalf("%v %+v", err, second)
		}
		tr := lastToolResult(t, second)
		b, _ := os.ReadFile(path)
		if !changed && (tr.IsError || string(b) != "hello there\n") {
			t.Fatalf("edit of an unchanged file after resume: %q %+v", b, tr)
		}
		if changed && (!tr.IsError || !strings.Contains(tr.Content[0].Text, "changed since it was last read") || string(b) != "hello world, a person was here\n") {
			t.Fatalf("edit of a changed file after resume: %q %+v", b, tr)
		}
	}
}

// TestRewoundFilesMustBeReadAgain reads a file, changes it, and rewinds files and
// conversation to before the change. The file is byte for byte what the kept
// conversation read, but a rewind put it there, so the next edit needs a new Read:
// through Runner.Rewind and through a resume that restores files at its branch point.
func TestRewoundFilesMustBeReadAgain(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"Rewind", "RestoreFilesAt"} {
		st := newStores(t)
		root := t.TempDir()
		path := filepath.Join(root, "f.txt")
		os.WriteFile(path, []byte("hello world\n"), 0o644)
		p := scripted.New(scripted.Script{Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{readF}},
			{ToolCalls: []scripted.ToolCall{write("f.txt", "hello world, rewritten\n")}},
			{Text: "done"},
			{ToolCalls: []scripted.ToolCall{editF}}, {Text: "tried"},
		}})
		r := st.runner(p)
		first, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "go", Root: root, PermissionMode: permission.ModeAcceptEdits})
		if err != nil || first.Status != sema.StatusCompleted {
			t.Fatalf("%v %+v", err, first)
		}
		resume := &agent.Resume{SessionID: first.SessionID}
		switch how {
		case "Rewind":
			if _, err := r.Rewind(context.Background(), agent.RewindSpec{SessionID: first.SessionID, ToTurn: 2, Files: true, Conversation: true}); err != nil {
				t.Fatal(err)
			}
		case "RestoreFilesAt":
			resume.At, resume.Files = entryBeforeTurn(t, st.sessions, first.SessionID, 2), agent.RestoreFilesAt()
		}
		if b, _ := os.ReadFile(path); how == "Rewind" && string(b) != "hello world\n" {
			t.Fatalf("%s: not restored: %q", how, b)
		}
		second, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "edit", Root: root, PermissionMode: permission.ModeAcceptEdits, Resume: resume})
		if err != nil || second.Status != sema.StatusCompleted {
			t.Fatalf("%s: %v %+v", how, err, second)
		}
		tr := lastToolResult(t, second)
		if !tr.IsError || !strings.Contains(tr.Content[0].Text, "has not been read") {
			t.Fatalf("%s: an edit of a restored file without a new read: %+v", how, tr)
		}
		if b, _ := os.ReadFile(path); string(b) != "hello world\n" {
			t.Fatalf("%s: file %q", how, b)
		}
	}
}

// entryBeforeTurn is the id of the transcript entry a branch at the start of turn
// starts after.
func entryBeforeTurn(t *testing.T, s session.Store, id string, turn int) string {
	t.Helper()
	chain, err := s.Transcript(context.Background(), id, "")
	if err != nil {
		t.Fatal(err)
	}
	prev := ""
	for _, e := range chain {
		if e.Kind == "assistant" {
			var a struct {
				Turn int `json:"turn"`
			}
			json.Unmarshal(e.Payload, &a)
			if a.Turn == turn {
				return prev
			}
		}
		prev = e.ID
	}
	t.Fatalf("no turn %d", turn)
	return ""
}

// TestApprovedCallThenModelFailure answers a parked edit; the model request after it
// fails. The result says the call ran and what it returned, and a plain resume
// continues with the call's result in the conversation. A second answer says how the
// first one's leg ended.
func TestApprovedCallThenModelFailure(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	root := t.TempDir()
	path := filepath.Join(root, "f.txt")
	os.WriteFile(path, []byte("hello world\n"), 0o644)
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{readF}},
		{ToolCalls: []scripted.ToolCall{editF}},
		{Error: &sema.Error{Code: model.CodeOverloaded, Message: "overloaded"}},
		{Text: "finished"},
	}})
	r := st.runner(p)
	parked, err := r.Run(context.Background(), agent.TaskSpec{OnAsk: agent.OnAskPark, Prompt: "edit", Root: root})
	if err != nil || parked.Status != sema.StatusAwaitingApproval {
		t.Fatalf("%v %+v", err, parked)
	}
	spec := agent.TaskSpec{OnAsk: agent.OnAskPark, Root: root, Resume: &agent.Resume{SessionID: parked.SessionID}}
	answer := agent.Answer{CheckpointID: parked.Checkpoint.ID, Allow: true}
	failed, err := r.Resume(context.Background(), spec, answer)
	if err != nil {
		t.Fatal(err)
	}
	a := failed.Answered
	if failed.Status != sema.StatusError || failed.Error.Code != model.CodeOverloaded || a == nil || !a.Allowed || a.IsError ||
		a.Tool != "Edit" || a.CheckpointID != parked.Checkpoint.ID || !strings.Contains(a.Text, "updated") {
		t.Fatalf("failed resume: %s %v answered %+v", failed.Status, failed.Error, a)
	}
	if b, _ := os.ReadFile(path); string(b) != "hello there\n" {
		t.Fatalf("file %q", b)
	}

	// A second answer is refused and says how the first one's leg ended.
	_, err = r.Resume(context.Background(), spec, answer)
	var se *sema.Error
	if !asErr(err, &se) || se.Code != session.CodeAlreadyClaimed || se.Detail["answered_leg_status"] != string(sema.StatusError) ||
		!strings.Contains(se.Message, "status error") || !strings.Contains(se.Message, "continue it") {
		t.Fatalf("second answer: %v", err)
	}

	// A plain resume continues, the edit's result in the conversation, and the edited
	// file still counts as read.
	spec.Prompt = "go on"
	done, err := r.Run(context.Background(), spec)
	if err != nil || done.Status != sema.StatusCompleted || done.Result != "finished" {
		t.Fatalf("%v %+v", err, done)
	}
	if tr := lastToolResult(t, done); tr.IsError || !strings.Contains(tr.Content[0].Text, "updated") {
		t.Fatalf("the approved call's result is not in the conversation: %+v", tr)
	}
}

// TestSecondAnswerNamesTheOpenQuestion: the leg that ran the answered call parked again;
// answering the old checkpoint names the new one.
func TestSecondAnswerNamesTheOpenQuestion(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	root := t.TempDir()
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{write("a.txt", "a")}},
		{ToolCalls: []scripted.ToolCall{write("b.txt", "b")}},
	}})
	r := st.runner(p)
	first, err := r.Run(context.Background(), agent.TaskSpec{OnAsk: agent.OnAskPark, Prompt: "w", Root: root})
	if err != nil || first.Status != sema.StatusAwaitingApproval {
		t.Fatalf("%v %+v", err, first)
	}
	spec := agent.TaskSpec{OnAsk: agent.OnAskPark, Root: root, Resume: &agent.Resume{SessionID: first.SessionID}}
	second, err := r.Resume(context.Background(), spec, agent.Answer{CheckpointID: first.Checkpoint.ID, Allow: true})
	if err != nil || second.Status != sema.StatusAwaitingApproval {
		t.Fatalf("%v %+v", err, second)
	}
	_, err = r.Resume(context.Background(), spec, agent.Answer{CheckpointID: first.Checkpoint.ID, Allow: true})
	var se *sema.Error
	if !asErr(err, &se) || se.Detail["open_checkpoint"] != second.Checkpoint.ID || se.Detail["answered_leg_status"] != string(sema.StatusAwaitingApproval) ||
		!strings.Contains(se.Message, second.Checkpoint.ID) {
		t.Fatalf("second answer: %v %+v", err, se)
	}
}

// TestReadRangesAreKept: a partial read records the lines shown, and the session keeps
// them with the rest of the record.
func TestReadRangesAreKept(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "f.txt"), []byte("1\n2\n3\n4\n5\n"), 0o644)
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "Read", Input: json.RawMessage(`{"file_path":"f.txt","offset":2,"limit":2}`)}}},
		{Text: "ok"},
	}})
	res, err := st.runner(p).Run(context.Background(), agent.TaskSpec{Prompt: "r", Root: root})
	if err != nil || res.Status != sema.StatusCompleted {
		t.Fatalf("%v %+v", err, res)
	}
	chain, _ := st.sessions.Transcript(context.Background(), res.SessionID, "")
	var found []files.LineRange
	for _, e := range chain {
		if e.Kind == "read_state" {
			var rs struct {
				Records map[string]files.ReadRecord `json:"records"`
			}
			json.Unmarshal(e.Payload, &rs)
			for _, rec := range rs.Records {
				found = rec.Ranges
				if rec.Size != 10 || len(rec.Hash) != 64 {
					t.Fatalf("record %+v", rec)
				}
			}
		}
	}
	if len(found) != 1 || found[0] != (files.LineRange{From: 2, To: 3}) {
		t.Fatalf("ranges %+v in %d entries", found, len(chain))
	}
}
