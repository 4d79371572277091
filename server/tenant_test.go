package server_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/server"
)

// TestTenantIsolation tries to reach outside a tenant: roots outside its base (directly,
// through .., through a symlink, by a prefix that only looks inside), another tenant's
// task, session and checkpoint ids, a replayed decision, a deleted tenant's token. Every
// attempt is refused, and no answer names what it found.
func TestTenantIsolation(t *testing.T) { eachStore(t, testTenantIsolation) }

func testTenantIsolation(t *testing.T, st store) {
	f := newFixture(t, st, func(base string) []scripted.Turn {
		return []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{writeCall(filepath.Join(base, "a", "x.txt"), "x")}},
			{Text: "done"},
		}
	})
	ctx := context.Background()
	aBase := filepath.Join(f.base, "a")
	bBase := filepath.Join(f.base, "b")
	secret := filepath.Join(f.base, "a-secret") // shares a's prefix, outside it
	for _, d := range []string{aBase, bBase, secret} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(bBase, filepath.Join(aBase, "to-b")); err != nil {
		t.Fatal(err)
	}
	a := f.client(t, "tenant-a", aBase)
	b := f.client(t, "tenant-b", bBase)

	outside := map[string]client.TaskSpec{
		"absolute":       {Prompt: "p", Cwd: bBase},
		"dotdot":         {Prompt: "p", Cwd: filepath.Join(aBase, "..", "b")},
		"relative up":    {Prompt: "p", Cwd: "../b"},
		"symlink":        {Prompt: "p", Cwd: filepath.Join(aBase, "to-b")},
		"prefix":         {Prompt: "p", Cwd: secret},
		"missing":        {Prompt: "p", Cwd: filepath.Join(aBase, "nope")},
		"root":           {Prompt: "p", Cwd: "/"},
		"add_dir":        {Prompt: "p", Cwd: aBase, AddDirs: []string{bBase}},
		"add_read_dir":   {Prompt: "p", Cwd: aBase, AddReadDirs: []string{filepath.Join(aBase, "to-b")}},
		"add_dir dotdot": {Prompt: "p", Cwd: aBase, AddDirs: []string{aBase + "/../a-secret"}},
	}
	for name, spec := range outside {
		_, err := a.SubmitTask(ctx, spec)
		if codeOf(err) != "tenant.root_outside_base" {
			t.Errorf("%s: got %v, want tenant.root_outside_base", name, err)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, bBase) || strings.Contains(msg, secret) {
			t.Errorf("%s: the refusal names a path outside the tenant: %s", name, msg)
		}
	}

	task, err := a.SubmitTask(ctx, client.TaskSpec{Prompt: "write", Cwd: aBase})
	if err != nil {
		t.Fatal(err)
	}
	parked := waitStatus(t, a, task.TaskID, client.StatusAwaitingApproval)

	// Another tenant's ids are not found — the same answer as an id that never existed.
	notFound := map[string]error{}
	_, notFound["task"] = b.Task(ctx, task.TaskID)
	_, notFound["cancel"] = b.Cancel(ctx, task.TaskID)
	_, notFound["session"] = b.Session(ctx, task.SessionID, 0)
	_, notFound["message"] = b.Message(ctx, task.SessionID, client.Message{Prompt: "p"})
	_, notFound["fork"] = b.Fork(ctx, task.SessionID, client.Fork{Prompt: "p"})
	_, notFound["rewind"] = b.Rewind(ctx, task.SessionID, client.Rewind{Files: true})
	_, notFound["decision"] = b.Decide(ctx, parked.CheckpointID, client.Decision{Decision: "allow"})
	_, notFound["resume"] = b.SubmitTask(ctx, client.TaskSpec{Prompt: "p", Cwd: bBase, Resume: task.SessionID})
	_, notFound["unknown task"] = b.Task(ctx, "00000000-0000-4000-8000-000000000000")
	for name, err := range notFound {
		if codeOf(err) != "request.not_found" {
			t.Errorf("%s with another tenant's id: %v, want request.not_found", name, err)
		}
	}
	for ev, err := range b.Events(ctx, task.TaskID, 0) {
		if codeOf(err) != "request.not_found" {
			t.Errorf("events of another tenant's task: %v %s", err, ev.Data)
		}
	}
	if cps, err := b.Checkpoints(ctx, "all"); err != nil || len(cps) != 0 {
		t.Errorf("tenant b sees checkpoints %+v (%v)", cps, err)
	}
	if ss, err := b.Sessions(ctx); err != nil || len(ss) != 0 {
		t.Errorf("tenant b sees sessions %+v (%v)", ss, err)
	}
	// b's refused decision claimed nothing: a's decision goes through, once.
	if _, err := a.Decide(ctx, parked.CheckpointID, client.Decision{Decision: "allow"}); err != nil {
		t.Fatalf("a's decision after b's attempt: %v", err)
	}
	if _, err := a.Decide(ctx, parked.CheckpointID, client.Decision{Decision: "deny"}); codeOf(err) != "checkpoint.already_claimed" {
		t.Fatalf("a replayed decision: %v", err)
	}
	waitStatus(t, a, task.TaskID, "completed")

	// A deleted tenant's token stops working at once.
	if err := f.srv.DeleteTenant(ctx, "tenant-b"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Sessions(ctx); codeOf(err) != "auth.unauthorized" {
		t.Fatalf("a deleted tenant's token: %v", err)
	}
	// No token, a malformed one, a forged one: the same answer.
	for _, h := range []string{"", "Bearer", "Bearer sema_forged", "Basic x", "bearer " + "sema_x"} {
		req, _ := http.NewRequest(http.MethodGet, f.http.URL+"/v1/sessions", nil)
		if h != "" {
			req.Header.Set("Authorization", h)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("Authorization %q: %d", h, resp.StatusCode)
		}
	}
}

// TestStrictBodies refuses what is not the endpoint's JSON, naming the field.
func TestStrictBodies(t *testing.T) {
	f := newFixture(t, "sqlite", func(string) []scripted.Turn { return nil })
	tok, err := f.srv.CreateToken(context.Background(), "t", f.base, serverLimits())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ body, code, mention string }{
		{`{"prompt":"p","promt":"typo"}`, "request.unknown_field", "promt"},
		{`{"prompt":"p","cwd":7}`, "request.invalid", "cwd"},
		{`{"prompt":"p"} {"prompt":"q"}`, "request.invalid", "more than one"},
		{`not json`, "request.invalid", ""},
		{`{"cwd":"."}`, "config.prompt_missing", ""},
		{`{"prompt":"p","permission_mode":"yolo"}`, "config.permission_mode_invalid", "yolo"},
		{`{"prompt":"p","on_ask":"prompt"}`, "config.on_ask_invalid", "park"},
		{`{"prompt":"p","max_turns":-1}`, "config.max_turns_invalid", ""},
		{`{"prompt":"p","fork_session":true}`, "config.resume_invalid", ""},
	} {
		req, _ := http.NewRequest(http.MethodPost, f.http.URL+"/v1/tasks", bytes.NewBufferString(tc.body))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e client.Error
		decodeJSON(t, resp, &e)
		if resp.StatusCode != http.StatusBadRequest || e.Code != tc.code || !strings.Contains(e.Message, tc.mention) {
			t.Errorf("%s: %d %s %q, want 400 %s mentioning %q", tc.body, resp.StatusCode, e.Code, e.Message, tc.code, tc.mention)
		}
	}
}

// TestQueryParametersAreRefusedByName: a paging or filter parameter that is not a number
// in its range is a 400 naming it, never read as its default.
func TestQueryParametersAreRefusedByName(t *testing.T) {
	f := newFixture(t, "sqlite", func(string) []scripted.Turn { return []scripted.Turn{{Text: "one"}} })
	ctx := context.Background()
	tok, err := f.srv.CreateToken(ctx, "t", f.base, serverLimits())
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(f.http.URL, tok)
	task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "p", Cwd: f.base})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, task.TaskID, "completed")
	get := func(path string) (int, client.Error) {
		req, _ := http.NewRequest(http.MethodGet, f.http.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e client.Error
		decodeJSON(t, resp, &e)
		return resp.StatusCode, e
	}
	for _, tc := range []struct{ path, param string }{
		{"/v1/sessions?limit=abc", "limit"},
		{"/v1/sessions?limit=0", "limit"},
		{"/v1/sessions?limit=5000", "limit"},
		{"/v1/sessions/" + task.SessionID + "?offset=-1", "offset"},
		{"/v1/sessions/" + task.SessionID + "?offset=x", "offset"},
		{"/v1/sessions/" + task.SessionID + "?limit=-3", "limit"},
		{"/v1/checkpoints?limit=1e3", "limit"},
		{"/v1/checkpoints?status=closed", "status"},
	} {
		status, e := get(tc.path)
		if status != http.StatusBadRequest || e.Code != "request.invalid" || !strings.Contains(e.Message, tc.param) {
			t.Errorf("GET %s: %d %s %q, want 400 request.invalid naming %s", tc.path, status, e.Code, e.Message, tc.param)
		}
	}
	// In range, the parameters page: one entry from the transcript's second.
	page, err := c.Session(ctx, task.SessionID, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) == 0 {
		t.Fatalf("offset 1: no entries")
	}
	if status, _ := get("/v1/sessions/" + task.SessionID + "?offset=1000000"); status != http.StatusOK {
		t.Errorf("an offset past the end: %d, want 200 with an empty page", status)
	}
}

// TestConfigOutOfRange: a negative count or duration in Config is refused by name, not
// read as the default.
func TestConfigOutOfRange(t *testing.T) {
	open := func(string) (model.Provider, string, error) { return nil, "", errors.New("unused") }
	for name, cfg := range map[string]server.Config{
		"Workers":      {Workers: -1},
		"RescueAfter":  {RescueAfter: -time.Second},
		"SessionLease": {SessionLease: -time.Second},
		"Poll":         {Poll: -time.Millisecond},
	} {
		cfg.Home, cfg.OpenProvider = t.TempDir(), open
		s, err := server.New(context.Background(), cfg)
		if err == nil {
			s.Close()
		}
		if sema.CodeOf(err) != server.CodeConfigInvalid || !strings.Contains(err.Error(), name) {
			t.Errorf("Config.%s negative: %v", name, err)
		}
	}
}

// A root swapped for a link between two legs does not move the next leg. The task's
// added directory was checked inside the tenant's base at submission; while the task
// waits at a question, a command of the tenant's (here the test) replaces it with a
// link to a directory outside the base. The leg the decision starts is refused
// (tenant.root_moved), and nothing is written where the link points. Calibrated: when
// the stored roots were used as they resolved at the leg's start, the approved Write
// landed outside the base.
func TestRootSwappedForALinkDoesNotMoveTheNextLeg(t *testing.T) { eachStore(t, testRootSwapped) }

func testRootSwapped(t *testing.T, st store) {
	f := newFixture(t, st, func(base string) []scripted.Turn {
		return []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{writeCall(filepath.Join(base, "sub", "x.txt"), "placed\n")}},
			{Text: "done"},
		}
	})
	ctx := context.Background()
	work, sub := filepath.Join(f.base, "work"), filepath.Join(f.base, "sub")
	for _, d := range []string{work, sub} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := f.client(t, "acme", f.base)
	task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "write", Cwd: work, AddDirs: []string{sub}})
	if err != nil {
		t.Fatal(err)
	}
	parked := waitStatus(t, c, task.TaskID, client.StatusAwaitingApproval)
	if err := os.RemoveAll(sub); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, sub); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Decide(ctx, parked.CheckpointID, client.Decision{Decision: "allow"}); err != nil {
		t.Fatal(err)
	}
	done := waitStatus(t, c, task.TaskID, "error")
	if !strings.Contains(string(done.Result), "tenant.root_moved") {
		t.Errorf("the leg after the swap: %s, want tenant.root_moved", done.Result)
	}
	if _, err := os.Stat(filepath.Join(outside, "x.txt")); !os.IsNotExist(err) {
		t.Errorf("the leg wrote where the link points, outside the base: %v", err)
	}
}
