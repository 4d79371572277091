package server_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/internal/golden"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/server"
	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts of the event stream")

// The service's event stream, pinned: each archive in testdata/events is one task on a
// service on SQLite with a scripted model. Its sections:
//
//	model       the scripted model's script
//	steps       what the test does, a step a line:
//	              submit {TaskSpec as JSON}: submit the task (its cwd is the tenant's base)
//	              await STATUS: wait until the task's status is STATUS
//	              decide {Decision as JSON}: decide the task's open checkpoint
//	              cancel: cancel the task
//	events      written by -update: the body of GET /v1/tasks/{id}/events, read from
//	            the start once the task has ended, byte for byte but for what
//	            golden.Rewriter names ($BASE, $HOME, $UUIDn, $TIME, "$N")
//
// The stream is read after the end, so it is the stored stream: the one every client
// that reconnects gets, whichever process it reaches.
// `go test ./server -run Golden -update` rewrites the transcripts.
func TestGoldenEventStream(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "events", "*.txtar"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no archives in testdata/events: %v", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			a := golden.Load(t, path)
			golden.Check(t, path, a, "events", runEventScenario(t, a), *update)
		})
	}
}

func runEventScenario(t *testing.T, a *txtar.Archive) string {
	t.Helper()
	raw, _ := golden.Section(a, "model")
	script, err := scripted.Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, "sqlite", func(string) []scripted.Turn { return script.Turns })
	tok, err := f.srv.CreateToken(context.Background(), "acme", f.base, server.TenantConfig{})
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(f.http.URL, tok)
	ctx := context.Background()
	steps, _ := golden.Section(a, "steps")
	var id string
	for _, step := range strings.Split(strings.TrimSpace(steps), "\n") {
		verb, arg, _ := strings.Cut(strings.TrimSpace(step), " ")
		switch verb {
		case "submit":
			var spec client.TaskSpec
			if err := json.Unmarshal([]byte(arg), &spec); err != nil {
				t.Fatalf("submit %s: %v", arg, err)
			}
			spec.Cwd = f.base
			task, err := c.SubmitTask(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			id = task.TaskID
		case "await":
			waitStatus(t, c, id, arg)
		case "decide":
			var d client.Decision
			if err := json.Unmarshal([]byte(arg), &d); err != nil {
				t.Fatalf("decide %s: %v", arg, err)
			}
			task, err := c.Task(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Decide(ctx, task.CheckpointID, d); err != nil {
				t.Fatal(err)
			}
		case "cancel":
			if _, err := c.Cancel(ctx, id); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("unknown step %q", step)
		}
	}
	body := readEvents(t, f.http.URL+"/v1/tasks/"+id+"/events", tok)
	var rw golden.Rewriter
	rw.Path(f.base, "$BASE")
	rw.Path(f.cfg.Home, "$HOME")
	rw.Numbers("duration_ms", "duration_api_ms", "input_tokens", "output_tokens", "inputTokens", "outputTokens", "system_prompt_chars")
	return rw.Rewrite(body)
}

// readEvents reads a stream to its end, raw: the framing is part of what is pinned.
func readEvents(t *testing.T, url, token string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the stream: %v", err)
	}
	return fmt.Sprintf("HTTP %d %s\n\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
}
