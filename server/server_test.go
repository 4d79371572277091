package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/internal/pgtest"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/server"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// fixture is one service on SQLite in a temporary state directory, serving over a local
// HTTP server, with a scripted model shared by every task (so a resumed leg continues
// the script).
type fixture struct {
	cfg   server.Config
	srv   *server.Server
	http  *httptest.Server
	model *scripted.Provider
	base  string
}

// store is where a fixture keeps its state: "sqlite" or "postgres".
type store string

// eachStore runs fn on SQLite and, when a test database is configured, on Postgres.
func eachStore(t *testing.T, fn func(t *testing.T, st store)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, "sqlite") })
	t.Run("postgres", func(t *testing.T) {
		if !pgtest.Available(t) {
			t.Skip(pgtest.How)
		}
		fn(t, "postgres")
	})
}

func newFixture(t *testing.T, st store, script func(base string) []scripted.Turn) *fixture {
	t.Helper()
	return newFixtureWith(t, st, script, nil)
}

// newFixtureWith is newFixture with tune changing the service's config (a tracer, a
// logger) before the service starts.
func newFixtureWith(t *testing.T, st store, script func(base string) []scripted.Turn, tune func(*server.Config)) *fixture {
	t.Helper()
	ctx := context.Background()
	cfg := server.Config{Home: t.TempDir()}
	if st == "postgres" {
		cfg.Postgres = pgtest.Schema(t)
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := scripted.New(scripted.Script{Turns: script(base)})
	cfg.OpenProvider = func(name string) (model.Provider, string, error) { return p, "scripted", nil }
	cfg.Poll = 20 * time.Millisecond
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if tune != nil {
		tune(&cfg)
	}
	srv, err := server.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		srv.Close()
	})
	return &fixture{cfg: cfg, srv: srv, http: hs, model: p, base: base}
}

func (f *fixture) client(t *testing.T, tenant string, base string) *client.Client {
	t.Helper()
	tok, err := f.srv.CreateToken(context.Background(), tenant, base, server.TenantConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return client.New(f.http.URL, tok)
}

func writeCall(path, content string) scripted.ToolCall {
	b, _ := json.Marshal(map[string]string{"file_path": path, "content": content})
	return scripted.ToolCall{Name: "Write", Input: b}
}

func codeOf(err error) string {
	var e *client.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// follow reads a task's events until the stream ends and returns their data.
func follow(t *testing.T, c *client.Client, id string, after int64) []client.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []client.Event
	for ev, err := range c.Events(ctx, id, after) {
		if err != nil {
			t.Fatalf("events: %v", err)
		}
		out = append(out, ev)
	}
	return out
}

func waitStatus(t *testing.T, c *client.Client, id string, want string) *client.Task {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		task, err := c.Task(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if task.Status == want {
			return task
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s is %s, want %s (result %s)", id, task.Status, want, task.Result)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestParkDecideCompleteOverTheAPI(t *testing.T) { eachStore(t, testParkDecideComplete) }

func testParkDecideComplete(t *testing.T, st store) {
	f := newFixture(t, st, func(base string) []scripted.Turn {
		return []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{writeCall(filepath.Join(base, "out.txt"), "approved\n")}},
			{Text: "wrote it"},
		}
	})
	ctx := context.Background()
	target := filepath.Join(f.base, "out.txt")
	c := f.client(t, "acme", f.base)
	task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "write the file", Cwd: f.base})
	if err != nil {
		t.Fatal(err)
	}
	if task.TaskID == "" || task.SessionID == "" || task.Status != client.StatusQueued {
		t.Fatalf("submitted: %+v", task)
	}
	parked := waitStatus(t, c, task.TaskID, client.StatusAwaitingApproval)
	if parked.CheckpointID == "" {
		t.Fatalf("a parked task names no checkpoint: %+v", parked)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the file exists before the approval: %v", err)
	}
	cps, err := c.Checkpoints(ctx, "open")
	if err != nil || len(cps) != 1 || cps[0].ID != parked.CheckpointID || cps[0].Tool != "Write" || cps[0].TaskID != task.TaskID || !strings.Contains(cps[0].Message, "Write") {
		t.Fatalf("open checkpoints: %+v, %v", cps, err)
	}
	if _, err := c.Decide(ctx, cps[0].ID, client.Decision{Decision: "allow"}); err != nil {
		t.Fatal(err)
	}
	// One-shot: a second decision, allow or deny, is refused by name.
	for _, d := range []string{"allow", "deny"} {
		if _, err := c.Decide(ctx, cps[0].ID, client.Decision{Decision: d}); codeOf(err) != "checkpoint.already_claimed" {
			t.Fatalf("second decision (%s): %v", d, err)
		}
	}
	done := waitStatus(t, c, task.TaskID, "completed")
	if b, err := os.ReadFile(target); err != nil || string(b) != "approved\n" {
		t.Fatalf("the approved write: %q, %v", b, err)
	}
	var res map[string]any
	if err := json.Unmarshal(done.Result, &res); err != nil || res["result"] != "wrote it" {
		t.Fatalf("result %s", done.Result)
	}
	// The whole stream, from the start: ids 1..n without gaps, the parked leg's result,
	// then the resumed leg's events and its result last.
	evs := follow(t, c, task.TaskID, 0)
	var types []string
	for i, ev := range evs {
		if ev.ID != int64(i+1) {
			t.Fatalf("event %d has id %d", i, ev.ID)
		}
		var obj struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		}
		json.Unmarshal(ev.Data, &obj)
		types = append(types, obj.Type+"/"+obj.Status)
	}
	joined := strings.Join(types, " ")
	if !strings.Contains(joined, "result/awaiting_approval") || !strings.HasSuffix(joined, "result/completed") {
		t.Fatalf("event types: %s", joined)
	}
	// Resuming after an event gives exactly the events after it.
	rest := follow(t, c, task.TaskID, 3)
	if len(rest) != len(evs)-3 || rest[0].ID != 4 {
		t.Fatalf("resumed after 3: %d events from %d, want %d from 4", len(rest), rest[0].ID, len(evs)-3)
	}
	if cps, _ := c.Checkpoints(ctx, "open"); len(cps) != 0 {
		t.Fatalf("open checkpoints after the decision: %+v", cps)
	}
}

func serverLimits() server.TenantConfig { return server.TenantConfig{} }

func decodeJSON(t *testing.T, resp *http.Response, v any) {
	t.Helper()
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("decoding the answer: %v", err)
	}
}

// TestQueuesRouteTasksToTheirWorkers: a tenant's tasks run only on the processes that
// work its queue (the machines where its base exists); a process that works another
// queue leaves them queued.
func TestQueuesRouteTasksToTheirWorkers(t *testing.T) {
	if !pgtest.Available(t) {
		t.Skip(pgtest.How)
	}
	ctx := context.Background()
	dsn := pgtest.Schema(t)
	base, _ := filepath.EvalSymlinks(t.TempDir())
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "ran on the right machine"}}})
	open := func(queues []string) *server.Server {
		srv, err := server.New(ctx, server.Config{
			Postgres: dsn, Queues: queues, Poll: 20 * time.Millisecond,
			OpenProvider: func(string) (model.Provider, string, error) { return p, "scripted", nil },
			Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			srv.Shutdown(sctx)
			srv.Close()
		})
		return srv
	}
	other := open(nil) // works "default" only
	api := httptest.NewServer(other.Handler())
	defer api.Close()
	tok, err := other.CreateToken(ctx, "gpu", base, server.TenantConfig{Queue: "gpu-box"})
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(api.URL, tok)
	task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "p", Cwd: base})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if got, _ := c.Task(ctx, task.TaskID); got.Status != client.StatusQueued {
		t.Fatalf("a process that does not work the tenant's queue took its task: %s", got.Status)
	}
	open([]string{"gpu-box"})
	waitStatus(t, c, task.TaskID, "completed")
	if _, err := other.CreateToken(ctx, "bad", base, server.TenantConfig{Queue: "no spaces"}); err == nil {
		t.Fatal("a queue name with a space was accepted")
	}
}

// TestTracesOfTasksTurnsAndTools: with a tracer provider, a leg is a sema.task span with
// its turns (sema.turn) and tool calls (sema.tool) as children.
func TestTracesOfTasksTurnsAndTools(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx := context.Background()
	f := newFixtureWith(t, "sqlite", func(base string) []scripted.Turn {
		os.WriteFile(filepath.Join(base, "f.txt"), []byte("x"), 0o644)
		read, _ := json.Marshal(map[string]string{"file_path": filepath.Join(base, "f.txt")})
		return []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{{Name: "Read", Input: read}}},
			{Text: "read it"},
		}
	}, func(cfg *server.Config) { cfg.TracerProvider = tp })
	c := f.client(t, "t", f.base)
	task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "read f.txt", Cwd: f.base, AllowedTools: []string{"Read"}})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, task.TaskID, "completed")
	deadline := time.Now().Add(5 * time.Second)
	var legs, turns, tools int
	for time.Now().Before(deadline) {
		legs, turns, tools = 0, 0, 0
		var legID oteltrace.SpanID
		for _, sp := range rec.Ended() {
			if sp.Name() == "sema.task" {
				legs++
				legID = sp.SpanContext().SpanID()
			}
		}
		for _, sp := range rec.Ended() {
			switch sp.Name() {
			case "sema.turn":
				if sp.Parent().SpanID() == legID {
					turns++
				}
			case "sema.tool":
				if sp.Parent().SpanID() == legID && attrOf(sp.Attributes(), "sema.tool.name") == "Read" {
					tools++
				}
			}
		}
		if legs == 1 && turns == 2 && tools == 1 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("spans: %d legs, %d turns, %d Read calls; want 1, 2, 1", legs, turns, tools)
}

func attrOf(kvs []attribute.KeyValue, key string) string {
	for _, kv := range kvs {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// TestForkAtAnEntry: a fork cut at an earlier entry continues from there — the new
// session's conversation holds what came before the cut and none of what came after —
// and leaves the original as it was; a cut that names no entry of the conversation is
// refused before anything is queued.
func TestForkAtAnEntry(t *testing.T) {
	f := newFixture(t, "sqlite", func(string) []scripted.Turn {
		return []scripted.Turn{{Text: "first answer"}, {Text: "second answer"}, {Text: "forked answer"}}
	})
	ctx := context.Background()
	c := f.client(t, "acme", f.base)
	first, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "first prompt", Cwd: f.base})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, first.TaskID, "completed")
	second, err := c.Message(ctx, first.SessionID, client.Message{Prompt: "second prompt"})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, second.TaskID, "completed")
	page, err := c.Session(ctx, first.SessionID, 0)
	if err != nil {
		t.Fatal(err)
	}
	cut := ""
	for _, e := range page.Entries {
		if strings.Contains(string(e), "first answer") {
			var x struct {
				ID string `json:"id"`
			}
			json.Unmarshal(e, &x)
			cut = x.ID
		}
	}
	if cut == "" {
		t.Fatalf("no entry holds the first answer: %s", page.Entries)
	}
	if _, err := c.Fork(ctx, first.SessionID, client.Fork{Prompt: "p", At: "no-such-entry"}); codeOf(err) != "request.invalid" {
		t.Fatalf("a fork at no entry: %v", err)
	}
	fork, err := c.Fork(ctx, first.SessionID, client.Fork{Prompt: "forked prompt", At: cut})
	if err != nil {
		t.Fatal(err)
	}
	done := waitStatus(t, c, fork.TaskID, "completed")
	if done.SessionID == "" || done.SessionID == first.SessionID {
		t.Fatalf("the fork ran in session %q", done.SessionID)
	}
	forked := transcriptText(t, c, done.SessionID)
	for _, want := range []string{"first prompt", "first answer", "forked prompt", "forked answer"} {
		if !strings.Contains(forked, want) {
			t.Errorf("the fork's conversation lacks %q", want)
		}
	}
	for _, gone := range []string{"second prompt", "second answer"} {
		if strings.Contains(forked, gone) {
			t.Errorf("the fork's conversation holds %q, which came after the cut", gone)
		}
	}
	if orig := transcriptText(t, c, first.SessionID); !strings.Contains(orig, "second answer") || strings.Contains(orig, "forked") {
		t.Errorf("the original changed: %s", orig)
	}
}

func transcriptText(t *testing.T, c *client.Client, id string) string {
	t.Helper()
	page, err := c.Session(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range page.Entries {
		b.Write(e)
		b.WriteByte('\n')
	}
	return b.String()
}

// TestCancelARunningTask: a cancel request ends a running leg at once, whether it
// reaches the process that runs the leg or — on a shared store — another one, which
// only records it (the runner's process sees the flag in the store).
func TestCancelARunningTask(t *testing.T) {
	sleepy := func(string) []scripted.Turn {
		return []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{{Name: "Bash", Input: json.RawMessage(`{"command":"sleep 30"}`)}}},
			{Text: "slept"},
		}
	}
	run := func(t *testing.T, f *fixture, through *client.Client, c *client.Client) {
		ctx := context.Background()
		task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "wait", Cwd: f.base, AllowedTools: []string{"Bash(sleep:*)"}})
		if err != nil {
			t.Fatal(err)
		}
		waitStatus(t, c, task.TaskID, client.StatusRunning)
		time.Sleep(300 * time.Millisecond) // let the leg reach its tool
		start := time.Now()
		if _, err := through.Cancel(ctx, task.TaskID); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, c, task.TaskID, "cancelled")
		if took := time.Since(start); took > 15*time.Second {
			t.Fatalf("the cancel took %v: the sleep ran out instead", took)
		}
		if _, err := through.Cancel(ctx, task.TaskID); codeOf(err) != "task.conflict" {
			t.Fatalf("cancelling an ended task: %v", err)
		}
	}
	t.Run("through the running process", func(t *testing.T) {
		f := newFixture(t, "sqlite", sleepy)
		c := f.client(t, "acme", f.base)
		run(t, f, c, c)
	})
	t.Run("through another process", func(t *testing.T) {
		if !pgtest.Available(t) {
			t.Skip(pgtest.How)
		}
		f := newFixture(t, "postgres", sleepy)
		tok, err := f.srv.CreateToken(context.Background(), "acme", f.base, server.TenantConfig{})
		if err != nil {
			t.Fatal(err)
		}
		run(t, f, client.New(secondProcess(t, f), tok), client.New(f.http.URL, tok))
	})
}

// secondProcess starts another service on f's store that only answers the API (its
// tasks run in f's process), and returns its URL.
func secondProcess(t *testing.T, f *fixture) string {
	t.Helper()
	cfg := f.cfg
	cfg.NoWorker = true
	other, err := server.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(other.Handler())
	t.Cleanup(func() {
		hs.Close()
		other.Shutdown(context.Background())
		other.Close()
	})
	return hs.URL
}

// TestDecisionClaimUnderContention: many decisions on one parked call, sent at the same
// instant through two processes, allow and deny mixed: exactly one is taken, every
// other is 409 checkpoint.already_claimed, and the call runs once.
func TestDecisionClaimUnderContention(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		f := newFixture(t, st, func(string) []scripted.Turn {
			return []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{{Name: "Bash", Input: json.RawMessage(`{"command":"echo ran >> ran.txt"}`)}}},
				{Text: "done"},
			}
		})
		ctx := context.Background()
		tok, err := f.srv.CreateToken(ctx, "acme", f.base, server.TenantConfig{})
		if err != nil {
			t.Fatal(err)
		}
		urls := []string{f.http.URL}
		if st == "postgres" {
			urls = append(urls, secondProcess(t, f)) // SQLite's serve.db belongs to one process
		}
		c := client.New(f.http.URL, tok)
		task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "append a line", Cwd: f.base})
		if err != nil {
			t.Fatal(err)
		}
		parked := waitStatus(t, c, task.TaskID, client.StatusAwaitingApproval)
		const n = 24
		start := make(chan struct{})
		codes := make(chan string, n)
		for i := range n {
			go func() {
				d := client.Decision{Decision: "allow"}
				if i%3 == 2 {
					d = client.Decision{Decision: "deny", Message: "no"}
				}
				<-start
				_, err := client.New(urls[i%len(urls)], tok).Decide(ctx, parked.CheckpointID, d)
				if err == nil {
					codes <- "ok:" + d.Decision
					return
				}
				codes <- codeOf(err)
			}()
		}
		close(start)
		won := ""
		for range n {
			switch code := <-codes; {
			case strings.HasPrefix(code, "ok:"):
				if won != "" {
					t.Fatalf("two decisions were taken: %s and %s", won, code)
				}
				won = code
			case code != "checkpoint.already_claimed":
				t.Fatalf("a losing decision answered %q, want checkpoint.already_claimed", code)
			}
		}
		if won == "" {
			t.Fatal("no decision was taken")
		}
		waitStatus(t, c, task.TaskID, "completed")
		b, err := os.ReadFile(filepath.Join(f.base, "ran.txt"))
		switch won {
		case "ok:allow":
			if err != nil || string(b) != "ran\n" {
				t.Fatalf("the allowed call's effect: %q, %v (want exactly one line)", b, err)
			}
		default:
			if !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the denied call ran: %q, %v", b, err)
			}
		}
	})
}
