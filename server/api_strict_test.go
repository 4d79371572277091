package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/model/scripted"
)

// post sends body to path with tenant c's token and returns the status and error answer.
func post(t *testing.T, f *fixture, token, path, body string) (int, client.Error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.http.URL+path, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var e client.Error
	decodeJSON(t, resp, &e)
	return resp.StatusCode, e
}

// TestFieldNamesAreExact: a key that names a field in another case, on every endpoint
// that takes a body, is refused by name, and nothing is queued or claimed.
func TestFieldNamesAreExact(t *testing.T) {
	f := newFixture(t, "sqlite", func(base string) []scripted.Turn {
		return []scripted.Turn{{Text: "done"}}
	})
	tok, err := f.srv.CreateToken(context.Background(), "acme", f.base, serverLimits())
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(f.http.URL, tok)
	first, err := c.SubmitTask(context.Background(), client.TaskSpec{Prompt: "first", Cwd: f.base})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, first.TaskID, "completed")
	sess := "/v1/sessions/" + first.SessionID
	for _, tc := range []struct{ path, body, field string }{
		{"/v1/tasks", `{"prompt":"p","Permission_Mode":"plan"}`, "Permission_Mode"},
		{"/v1/tasks", `{"PROMPT":"p"}`, "PROMPT"},
		{"/v1/tasks", `{"prompt":"p","cwd":"` + f.base + `","Max_Turns":1}`, "Max_Turns"},
		{sess + "/messages", `{"prompt":"p","Model":"x"}`, "Model"},
		{sess + "/fork", `{"Prompt":"p"}`, "Prompt"},
		{sess + "/rewind", `{"turn":0,"Files":true}`, "Files"},
		{"/v1/checkpoints/nope/decision", `{"Decision":"allow"}`, "Decision"},
	} {
		status, e := post(t, f, tok, tc.path, tc.body)
		if status != http.StatusBadRequest || e.Code != "request.unknown_field" || !strings.Contains(e.Message, `"`+tc.field+`"`) {
			t.Errorf("POST %s %s: %d %+v, want 400 request.unknown_field naming %s", tc.path, tc.body, status, e, tc.field)
		}
	}
	// The exact names still work, after the refusals.
	status, e := post(t, f, tok, "/v1/tasks", `{"prompt":"p","permission_mode":"plan","cwd":"`+f.base+`"}`)
	if status != http.StatusAccepted {
		t.Fatalf("the exact names: %d %+v", status, e)
	}
	sessions, err := c.Sessions(context.Background())
	if err != nil || len(sessions) > 2 {
		t.Fatalf("sessions after the refusals: %d, %v", len(sessions), err)
	}
}

// TestRootsMustBeDirectoriesAtSubmit: a cwd (or an added directory) that is a file, is
// missing or lies outside the base is refused at submission, by name, not accepted and
// failed in a worker.
func TestRootsMustBeDirectoriesAtSubmit(t *testing.T) {
	f := newFixture(t, "sqlite", func(base string) []scripted.Turn {
		return []scripted.Turn{{Text: "done"}}
	})
	file := filepath.Join(f.base, "notes.txt")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(f.base, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	c := f.client(t, "acme", f.base)
	for _, tc := range []struct {
		name string
		spec client.TaskSpec
		code string
	}{
		{"cwd a file", client.TaskSpec{Cwd: file}, "tenant.root_not_directory"},
		{"cwd a relative file", client.TaskSpec{Cwd: "notes.txt"}, "tenant.root_not_directory"},
		{"cwd missing", client.TaskSpec{Cwd: filepath.Join(f.base, "gone")}, "tenant.root_outside_base"},
		{"cwd outside", client.TaskSpec{Cwd: t.TempDir()}, "tenant.root_outside_base"},
		{"add_dirs a file", client.TaskSpec{Cwd: f.base, AddDirs: []string{sub, file}}, "tenant.root_not_directory"},
		{"add_read_dirs a file", client.TaskSpec{Cwd: f.base, AddReadDirs: []string{file}}, "tenant.root_not_directory"},
	} {
		tc.spec.Prompt = "p"
		task, err := c.SubmitTask(context.Background(), tc.spec)
		var e *client.Error
		if codeOf(err) != tc.code || !asErr(err, &e) || e.Status != http.StatusBadRequest {
			t.Errorf("%s: %+v, %v; want 400 %s", tc.name, task, err, tc.code)
		}
	}
	task, err := c.SubmitTask(context.Background(), client.TaskSpec{Prompt: "p", Cwd: "sub", AddReadDirs: []string{sub}})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, task.TaskID, "completed")
}

func asErr(err error, e **client.Error) bool {
	x, ok := err.(*client.Error)
	*e = x
	return ok
}

// TestForkShowsItsOrigin: a fork's session names the session it was forked from and
// the entry it was cut at, as the documents say.
func TestForkShowsItsOrigin(t *testing.T) {
	f := newFixture(t, "sqlite", func(string) []scripted.Turn {
		return []scripted.Turn{{Text: "first answer"}, {Text: "forked answer"}, {Text: "forked at head"}}
	})
	ctx := context.Background()
	c := f.client(t, "acme", f.base)
	first, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "first prompt", Cwd: f.base})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, first.TaskID, "completed")
	page, err := c.Session(ctx, first.SessionID, 0)
	if err != nil || len(page.Entries) < 2 {
		t.Fatalf("transcript: %v", err)
	}
	if page.Session.ParentID != "" || page.Session.ForkAt != "" {
		t.Fatalf("an original names an origin: %+v", page.Session)
	}
	var firstEntry struct {
		ID string `json:"id"`
	}
	json.Unmarshal(page.Entries[0], &firstEntry)
	var head struct {
		ID string `json:"id"`
	}
	json.Unmarshal(page.Entries[len(page.Entries)-1], &head)
	for _, tc := range []struct{ at, want string }{{firstEntry.ID, firstEntry.ID}, {"", head.ID}} {
		fork, err := c.Fork(ctx, first.SessionID, client.Fork{Prompt: "forked prompt", At: tc.at})
		if err != nil {
			t.Fatal(err)
		}
		done := waitStatus(t, c, fork.TaskID, "completed")
		got, err := c.Session(ctx, done.SessionID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got.Session.ParentID != first.SessionID || got.Session.ForkAt != tc.want {
			t.Errorf("fork at %q: parent %q at %q, want %q at %q", tc.at, got.Session.ParentID, got.Session.ForkAt, first.SessionID, tc.want)
		}
		list, err := c.Sessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range list {
			if s.ID == done.SessionID && s.ParentID != first.SessionID {
				t.Errorf("the list shows the fork's parent as %q", s.ParentID)
			}
		}
	}
}

// TestApprovedCallsAreAnnouncedOnce: through two questions in one turn and their
// approvals, each call's tool_use is in the task's stream once, followed by its
// tool_result once; ids stay gap-free.
func TestApprovedCallsAreAnnouncedOnce(t *testing.T) { eachStore(t, testAnnouncedOnce) }

func testAnnouncedOnce(t *testing.T, st store) {
	f := newFixture(t, st, func(base string) []scripted.Turn {
		return []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{writeCall(filepath.Join(base, "a.txt"), "a\n"), writeCall(filepath.Join(base, "b.txt"), "b\n")}},
			{Text: "wrote both"},
		}
	})
	ctx := context.Background()
	c := f.client(t, "acme", f.base)
	task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "write two files", Cwd: f.base})
	if err != nil {
		t.Fatal(err)
	}
	answered := map[string]bool{}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		now, err := c.Task(ctx, task.TaskID)
		if err != nil {
			t.Fatal(err)
		}
		if now.Status == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("task is %s: %s", now.Status, now.Result)
		}
		if now.Status == client.StatusAwaitingApproval && !answered[now.CheckpointID] {
			answered[now.CheckpointID] = true
			if _, err := c.Decide(ctx, now.CheckpointID, client.Decision{Decision: "allow"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(answered) != 2 {
		t.Fatalf("answered %d questions, want 2", len(answered))
	}
	uses, results := map[string]int{}, map[string]int{}
	for i, ev := range follow(t, c, task.TaskID, 0) {
		if ev.ID != int64(i+1) {
			t.Fatalf("event %d has id %d", i, ev.ID)
		}
		var obj struct {
			Type      string `json:"type"`
			ID        string `json:"id"`
			ToolUseID string `json:"tool_use_id"`
		}
		json.Unmarshal(ev.Data, &obj)
		switch obj.Type {
		case "tool_use":
			uses[obj.ID]++
		case "tool_result":
			results[obj.ToolUseID]++
		}
	}
	if len(uses) != 2 || len(results) != 2 {
		t.Fatalf("calls announced %v, answered %v; want two of each", uses, results)
	}
	for id, n := range uses {
		if n != 1 || results[id] != 1 {
			t.Errorf("call %s: announced %d times, answered %d times; want once each", id, n, results[id])
		}
	}
}

// TestEditedDecisionRefusedIsAnsweredSo: an edit the task's deny rules refuse is
// answered with the refusal's code, not 202; the question is open again, and a second
// decision — an accepted edit — runs the edited call, once.
func TestEditedDecisionRefusedIsAnsweredSo(t *testing.T) { eachStore(t, testEditRefused) }

func testEditRefused(t *testing.T, st store) {
	f := newFixture(t, st, func(string) []scripted.Turn {
		return []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{{Name: "Bash", Input: json.RawMessage(`{"command":"echo asked >> ran.txt"}`)}}},
			{Text: "done"},
		}
	})
	ctx := context.Background()
	c := f.client(t, "acme", f.base)
	task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "run it", Cwd: f.base, DisallowedTools: []string{"Bash(rm:*)"}})
	if err != nil {
		t.Fatal(err)
	}
	parked := waitStatus(t, c, task.TaskID, client.StatusAwaitingApproval)
	start := time.Now()
	_, err = c.Decide(ctx, parked.CheckpointID, client.Decision{Decision: "allow", Input: json.RawMessage(`{"command":"rm -f ran.txt"}`)})
	t.Logf("the refused edit was answered in %v", time.Since(start))
	var e *client.Error
	if codeOf(err) != "checkpoint.edit_denied" || !asErr(err, &e) || e.Status != http.StatusForbidden {
		t.Fatalf("a refused edit: %v, want 403 checkpoint.edit_denied", err)
	}
	again := waitStatus(t, c, task.TaskID, client.StatusAwaitingApproval)
	if again.CheckpointID != parked.CheckpointID {
		t.Fatalf("the task waits at %q, want %q", again.CheckpointID, parked.CheckpointID)
	}
	cps, err := c.Checkpoints(ctx, "open")
	if err != nil || len(cps) != 1 || cps[0].ID != parked.CheckpointID {
		t.Fatalf("open checkpoints after the refusal: %+v, %v", cps, err)
	}
	start = time.Now()
	if _, err := c.Decide(ctx, parked.CheckpointID, client.Decision{Decision: "allow", Input: json.RawMessage(`{"command":"echo edited >> ran.txt"}`)}); err != nil {
		t.Fatalf("an accepted edit after a refused one: %v", err)
	}
	t.Logf("the accepted edit was answered in %v", time.Since(start))
	waitStatus(t, c, task.TaskID, "completed")
	if b, err := os.ReadFile(filepath.Join(f.base, "ran.txt")); err != nil || string(b) != "edited\n" {
		t.Fatalf("ran.txt: %q, %v; want the edited command's line, once", b, err)
	}
	if _, err := c.Decide(ctx, parked.CheckpointID, client.Decision{Decision: "allow"}); codeOf(err) != "checkpoint.already_claimed" {
		t.Fatalf("a third decision: %v", err)
	}
}
