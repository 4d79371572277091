package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/internal/pgtest"
	"github.com/sema-agent/sema/model/anthropic/anthropictest"
)

// serveProc is one `sema serve` process of a test.
type serveProc struct {
	cmd  *exec.Cmd
	url  string
	logs *logBuffer
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// logBuffer collects a process's log lines, written by the goroutine that reads them
// and read by the test while the process runs.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) WriteString(s string) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.WriteString(s)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startServe starts `sema serve` with env and waits until it is ready.
func startServe(t *testing.T, env []string, args ...string) *serveProc {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(semaBin, append([]string{"serve", "--listen", addr}, args...)...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	logs := &logBuffer{}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.WriteString(sc.Text() + "\n")
		}
	}()
	p := &serveProc{cmd: cmd, url: "http://" + addr, logs: logs}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-done
			}
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(p.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("sema serve did not become ready:\n%s", logs.String())
	return nil
}

// kill9 kills the process without letting it say anything.
func (p *serveProc) kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
}

func serveToken(t *testing.T, env []string, tenant, base string) string {
	t.Helper()
	r := sema(t, t.TempDir(), env, "", "serve", "token", "create", "--tenant", tenant, "--base", base)
	if r.code != 0 {
		t.Fatalf("token create: exit %d\n%s", r.code, r.stderr)
	}
	return strings.TrimSpace(r.stdout)
}

func waitTask(t *testing.T, c *client.Client, id string, want string, within time.Duration) *client.Task {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		task, err := c.Task(context.Background(), id)
		if err == nil && task.Status == want {
			return task
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s: %+v (%v), want %s", id, task, err, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// eventTypes reads a task's whole stream and checks its ids run 1, 2, 3, … without a
// gap or a repeat.
func eventTypes(t *testing.T, c *client.Client, id string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var types []string
	n := int64(0)
	for ev, err := range c.Events(ctx, id, 0) {
		if err != nil {
			t.Fatalf("events: %v", err)
		}
		if n++; ev.ID != n {
			t.Fatalf("event %d has id %d: a gap or a repeat", n, ev.ID)
		}
		var obj struct{ Type, Status string }
		json.Unmarshal(ev.Data, &obj)
		types = append(types, strings.TrimSuffix(obj.Type+"/"+obj.Status, "/"))
	}
	return types
}

// TestServeParkApproveOverHTTP drives the built binary as a service: a task that asks
// for an approval parks, its question is answered over the API once, the approved call
// runs once, and the stream tells the whole story.
func TestServeParkApproveOverHTTP(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	target := filepath.Join(base, "approved.txt")
	srv := anthropictest.NewServer(t,
		anthropictest.Turn{ToolCalls: []anthropictest.ToolCall{{Name: "Write", Input: fmt.Sprintf(`{"file_path":%q,"content":"yes\n"}`, target)}}},
		anthropictest.Turn{Text: "written"},
	)
	env := append(anthropicEnv(srv), "SEMA_HOME="+t.TempDir())
	tok := serveToken(t, env, "acme", base)
	p := startServe(t, env, "--model", "anthropic/claude-sonnet-4-5")
	c := client.New(p.url, tok)
	ctx := context.Background()
	task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "write it", Cwd: base})
	if err != nil {
		t.Fatal(err)
	}
	parked := waitTask(t, c, task.TaskID, client.StatusAwaitingApproval, 30*time.Second)
	if _, err := os.Stat(target); err == nil {
		t.Fatal("the file was written before the approval")
	}
	if _, err := c.Decide(ctx, parked.CheckpointID, client.Decision{Decision: "allow"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Decide(ctx, parked.CheckpointID, client.Decision{Decision: "allow"}); err == nil || !strings.Contains(err.Error(), "checkpoint.already_claimed") {
		t.Fatalf("a second decision: %v", err)
	}
	waitTask(t, c, task.TaskID, "completed", 30*time.Second)
	if b, err := os.ReadFile(target); err != nil || string(b) != "yes\n" {
		t.Fatalf("the approved write: %q %v", b, err)
	}
	if n := srv.RequestCount(); n != 2 {
		t.Fatalf("%d model requests, want 2", n)
	}
	types := strings.Join(eventTypes(t, c, task.TaskID), " ")
	if !strings.HasPrefix(types, "system") || !strings.Contains(types, "result/awaiting_approval") || !strings.HasSuffix(types, "result/completed") {
		t.Fatalf("events: %s", types)
	}
}

// TestServeKill9ResumesTheTask kills the serving process with SIGKILL while a task's
// tool runs; a new process on the same state directory takes the task over (River
// rescues its job once the session's lease has lapsed), answers the interrupted call as
// not run, and finishes it; the stream continues with no event lost or repeated.
func TestServeKill9ResumesTheTask(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	srv := anthropictest.NewServer(t,
		anthropictest.Turn{ToolCalls: []anthropictest.ToolCall{{Name: "Bash", Input: `{"command":"sleep 20"}`}}},
		anthropictest.Turn{Text: "finished after the restart"},
	)
	env := append(anthropicEnv(srv), "SEMA_HOME="+t.TempDir())
	tok := serveToken(t, env, "acme", base)
	flags := []string{"--model", "anthropic/claude-sonnet-4-5", "--rescue-after", "2s", "--session-lease", "2s"}
	a := startServe(t, env, flags...)
	c := client.New(a.url, tok)
	ctx := context.Background()
	task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "wait a bit", Cwd: base, AllowedTools: []string{"Bash(sleep:*)"}})
	if err != nil {
		t.Fatal(err)
	}
	// Wait until the tool runs (its tool_use event is in the store), then kill -9.
	waitToolStarted(t, c, task.TaskID, a)
	a.kill9(t)
	b := startServe(t, env, flags...)
	cb := client.New(b.url, tok)
	done := waitTask(t, cb, task.TaskID, "completed", 90*time.Second)
	var res map[string]any
	json.Unmarshal(done.Result, &res)
	if res["result"] != "finished after the restart" {
		t.Fatalf("result: %s", done.Result)
	}
	types := eventTypes(t, cb, task.TaskID)
	joined := strings.Join(types, " ")
	if strings.Count(joined, "tool_use") != 1 || !strings.HasSuffix(joined, "result/completed") || strings.Count(joined, "result/") != 1 {
		t.Fatalf("events after the restart: %s", joined)
	}
	// The interrupted call was answered as not run, and the model heard it.
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	second, _ := json.Marshal(reqs[1].Body["messages"])
	if !strings.Contains(string(second), "tool_result") {
		t.Fatalf("the continued request does not answer the interrupted call: %s", second)
	}
}

// streamSoFar reads the events stored so far (the stream is cut after a moment).
func streamSoFar(t *testing.T, c *client.Client, id string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var types []string
	for ev, err := range c.Events(ctx, id, 0) {
		if err != nil {
			break
		}
		var obj struct{ Type string }
		json.Unmarshal(ev.Data, &obj)
		types = append(types, obj.Type)
	}
	return types
}

// TestServeTwoProcessesOnePostgres is the service across processes: two `sema serve`
// processes share one Postgres database. A task submitted through A asks for an
// approval; its stream is followed through B; B answers it; the task completes and the
// approved command ran once. In a second run, A runs a task, is killed with SIGKILL in
// the middle of its tool, and B finishes the task.
func TestServeTwoProcessesOnePostgres(t *testing.T) {
	dsn := pgtest.Schema(t)
	base, _ := filepath.EvalSymlinks(t.TempDir())
	log := filepath.Join(base, "ran.log")
	srv := anthropictest.NewServer(t,
		anthropictest.Turn{ToolCalls: []anthropictest.ToolCall{{Name: "Bash", Input: fmt.Sprintf(`{"command":"echo ran >> %s"}`, log)}}},
		anthropictest.Turn{Text: "appended"},
		anthropictest.Turn{ToolCalls: []anthropictest.ToolCall{{Name: "Bash", Input: `{"command":"sleep 20"}`}}},
		anthropictest.Turn{Text: "finished by the other process"},
	)
	env := append(anthropicEnv(srv), "SEMA_STORE="+dsn)
	tok := serveToken(t, append(env, "SEMA_HOME="+t.TempDir()), "acme", base)
	flags := []string{"--model", "anthropic/claude-sonnet-4-5", "--rescue-after", "2s", "--session-lease", "2s"}
	a := startServe(t, append(env, "SEMA_HOME="+t.TempDir()), flags...)
	b := startServe(t, append(env, "SEMA_HOME="+t.TempDir()), flags...)
	ca, cb := client.New(a.url, tok), client.New(b.url, tok)
	ctx := context.Background()

	task, err := ca.SubmitTask(ctx, client.TaskSpec{Prompt: "log a line", Cwd: base})
	if err != nil {
		t.Fatal(err)
	}
	streamed := make(chan []string, 1)
	go func() {
		var types []string
		n := int64(0)
		for ev, err := range cb.Events(ctx, task.TaskID, 0) {
			if err != nil {
				types = append(types, "error: "+err.Error())
				break
			}
			if n++; ev.ID != n {
				types = append(types, fmt.Sprintf("gap: event %d has id %d", n, ev.ID))
			}
			var obj struct{ Type, Status string }
			json.Unmarshal(ev.Data, &obj)
			types = append(types, strings.TrimSuffix(obj.Type+"/"+obj.Status, "/"))
		}
		streamed <- types
	}()
	parked := waitTask(t, cb, task.TaskID, client.StatusAwaitingApproval, 30*time.Second)
	if _, err := os.Stat(log); err == nil {
		t.Fatal("the command ran before the approval")
	}
	if _, err := cb.Decide(ctx, parked.CheckpointID, client.Decision{Decision: "allow"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ca.Decide(ctx, parked.CheckpointID, client.Decision{Decision: "allow"}); err == nil || !strings.Contains(err.Error(), "checkpoint.already_claimed") {
		t.Fatalf("a second decision through the other process: %v", err)
	}
	waitTask(t, ca, task.TaskID, "completed", 30*time.Second)
	if got, err := os.ReadFile(log); err != nil || string(got) != "ran\n" {
		t.Fatalf("the approved command's log: %q %v (it must run exactly once)", got, err)
	}
	select {
	case types := <-streamed:
		joined := strings.Join(types, " ")
		if strings.Contains(joined, "gap") || strings.Contains(joined, "error") || !strings.Contains(joined, "result/awaiting_approval") || !strings.HasSuffix(joined, "result/completed") {
			t.Fatalf("the stream through B: %s", joined)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the stream through B did not end with the task")
	}

	// The second run: only A works when the task is taken, then A dies mid-tool.
	b.stop(t)
	task2, err := ca.SubmitTask(ctx, client.TaskSpec{Prompt: "wait", Cwd: base, AllowedTools: []string{"Bash(sleep:*)"}})
	if err != nil {
		t.Fatal(err)
	}
	waitToolStarted(t, ca, task2.TaskID, a)
	b = startServe(t, append(env, "SEMA_HOME="+t.TempDir()), flags...)
	cb = client.New(b.url, tok)
	a.kill9(t)
	done := waitTask(t, cb, task2.TaskID, "completed", 120*time.Second)
	var res map[string]any
	json.Unmarshal(done.Result, &res)
	if res["result"] != "finished by the other process" {
		t.Fatalf("result: %s", done.Result)
	}
	joined := strings.Join(eventTypes(t, cb, task2.TaskID), " ")
	if strings.Count(joined, "tool_use") != 1 || strings.Count(joined, "result/") != 1 || !strings.HasSuffix(joined, "result/completed") {
		t.Fatalf("the second task's stream: %s", joined)
	}
}

// stop ends the process with SIGTERM and waits for it.
func (p *serveProc) stop(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.cmd.Wait()
}

// TestServeWithoutTheServiceBinary: `sema serve` with no sema-serve beside it or on PATH
// is refused by name, saying how to build it.
func TestServeWithoutTheServiceBinary(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(semaBin)
	if err != nil {
		t.Fatal(err)
	}
	lone := filepath.Join(dir, "sema")
	if err := os.WriteFile(lone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(lone, "serve", "--listen", "127.0.0.1:0")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "serve.binary_missing") || !strings.Contains(string(out), "go build -o sema-serve ./cmd/sema-serve") {
		t.Fatalf("exit %v: %s", err, out)
	}
}

// TestServeExportsTraces: with OTEL_EXPORTER_OTLP_ENDPOINT set, the service sends its
// spans to that collector over OTLP/HTTP (protobuf), at the latest when it shuts down.
func TestServeExportsTraces(t *testing.T) {
	var got atomic.Int64
	var body atomic.Value
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/traces" && r.Header.Get("Content-Type") == "application/x-protobuf" {
			got.Add(1)
			body.Store(b)
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	base, _ := filepath.EvalSymlinks(t.TempDir())
	srv := anthropictest.NewServer(t, anthropictest.Turn{Text: "traced"})
	env := append(anthropicEnv(srv), "SEMA_HOME="+t.TempDir(), "OTEL_EXPORTER_OTLP_ENDPOINT="+collector.URL)
	tok := serveToken(t, env, "acme", base)
	p := startServe(t, env, "--model", "anthropic/claude-sonnet-4-5")
	c := client.New(p.url, tok)
	task, err := c.SubmitTask(context.Background(), client.TaskSpec{Prompt: "hi", Cwd: base})
	if err != nil {
		t.Fatal(err)
	}
	waitTask(t, c, task.TaskID, "completed", 30*time.Second)
	p.stop(t)
	if got.Load() == 0 {
		t.Fatalf("no spans reached the collector:\n%s", p.logs.String())
	}
	b, _ := body.Load().([]byte)
	for _, want := range []string{"sema.task", "sema.turn", "sema-serve", task.TaskID} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("the exported spans lack %q", want)
		}
	}
}

// TestServeShutdownHandsRunningLegsBack: SIGTERM lets a running leg finish for
// --shutdown-grace, then ends it and leaves its task queued; the next process continues it
// at once (no rescue wait), and the stream has no result from the interrupted leg.
func TestServeShutdownHandsRunningLegsBack(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	srv := anthropictest.NewServer(t,
		anthropictest.Turn{ToolCalls: []anthropictest.ToolCall{{Name: "Bash", Input: `{"command":"sleep 30"}`}}},
		anthropictest.Turn{Text: "continued by the next process"},
	)
	env := append(anthropicEnv(srv), "SEMA_HOME="+t.TempDir())
	tok := serveToken(t, env, "acme", base)
	flags := []string{"--model", "anthropic/claude-sonnet-4-5", "--shutdown-grace", "1s"}
	a := startServe(t, env, flags...)
	c := client.New(a.url, tok)
	task, err := c.SubmitTask(context.Background(), client.TaskSpec{Prompt: "wait", Cwd: base, AllowedTools: []string{"Bash(sleep:*)"}})
	if err != nil {
		t.Fatal(err)
	}
	waitToolStarted(t, c, task.TaskID, a)
	stopped := time.Now()
	a.stop(t)
	if took := time.Since(stopped); took > 20*time.Second {
		t.Fatalf("SIGTERM took %s with a 1s grace", took)
	}
	// A process that runs no tasks sees the task handed back to the queue.
	look := startServe(t, env, append(flags, "--no-worker")...)
	if got, err := client.New(look.url, tok).Task(context.Background(), task.TaskID); err != nil || got.Status != client.StatusQueued {
		t.Fatalf("after the shutdown the task is %+v (%v), want queued\n%s", got, err, a.logs.String())
	}
	look.stop(t)
	// The next worker takes it at once: well before River would rescue a lost job
	// (--rescue-after, a minute by default).
	b := startServe(t, env, flags...)
	cb := client.New(b.url, tok)
	done := waitTask(t, cb, task.TaskID, "completed", 30*time.Second)
	var res map[string]any
	json.Unmarshal(done.Result, &res)
	if res["result"] != "continued by the next process" {
		t.Fatalf("result: %s", done.Result)
	}
	joined := strings.Join(eventTypes(t, cb, task.TaskID), " ")
	if strings.Count(joined, "result/") != 1 || !strings.HasSuffix(joined, "result/completed") {
		t.Fatalf("stream: %s", joined)
	}
}

// waitToolStarted waits until the task's stream shows a tool call: the leg runs its tool.
func waitToolStarted(t *testing.T, c *client.Client, id string, p *serveProc) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(strings.Join(streamSoFar(t, c, id), " "), "tool_use") {
		if time.Now().After(deadline) {
			t.Fatalf("the tool never started:\n%s", p.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestServeRefusesFlagsOutOfRange: a count or duration out of its range stops sema serve
// with exit code 2 and a sentence naming the flag, before it opens anything; it is never
// read as the default.
func TestServeRefusesFlagsOutOfRange(t *testing.T) {
	for _, tc := range []struct{ flag, value string }{
		{"--workers", "0"}, {"--workers", "-1"}, {"--rescue-after", "0s"},
		{"--shutdown-grace", "-5s"}, {"--session-lease", "-1m"},
		{"--model-wait", "0s"}, {"--model-backoff", "-1s"}, {"--heartbeat", "0s"}, {"--dead-after", "1s"},
	} {
		home := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a service that starts is a failure, not a hang
		defer cancel()
		cmd := exec.CommandContext(ctx, semaBin, "serve", "--listen", "127.0.0.1:0", tc.flag, tc.value)
		cmd.Env = append(os.Environ(), "SEMA_HOME="+home)
		out, err := cmd.CombinedOutput()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), tc.flag) {
			t.Errorf("sema serve %s %s: exit %v: %s", tc.flag, tc.value, err, out)
		}
		if entries, _ := os.ReadDir(home); len(entries) != 0 {
			t.Errorf("sema serve %s %s created %d entries in the state directory before refusing", tc.flag, tc.value, len(entries))
		}
	}
}

// TestServeTenantPolicyAndModels: the operator lists the models tasks may name
// (--models) and sets a tenant's policy from a file (sema serve tenant set); the
// tenant's task naming the scripted provider (which would read a server file), a model
// the operator did not list, or a mode outside its policy is refused by name, and a
// task within it runs.
func TestServeTenantPolicyAndModels(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	srv := anthropictest.NewServer(t, anthropictest.Turn{Text: "ok"})
	env := append(anthropicEnv(srv), "SEMA_HOME="+t.TempDir())
	tok := serveToken(t, env, "acme", base)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"permission_modes":["root"]}`), 0o644)
	if r := sema(t, dir, env, "", "serve", "tenant", "set", "--tenant", "acme", "--policy", bad); r.code != 2 || !strings.Contains(r.stderr, "tenant.policy_invalid") {
		t.Fatalf("a bad policy file: exit %d\n%s", r.code, r.stderr)
	}
	good := filepath.Join(dir, "policy.json")
	os.WriteFile(good, []byte(`{"permission_modes":["default","plan"],"max_turns":5}`), 0o644)
	if r := sema(t, dir, env, "", "serve", "tenant", "set", "--tenant", "acme", "--policy", good, "--max-concurrent", "1"); r.code != 0 {
		t.Fatalf("tenant set: exit %d\n%s", r.code, r.stderr)
	}
	if r := sema(t, dir, env, "", "serve", "tenant", "show", "--tenant", "acme"); r.code != 0 || !strings.Contains(r.stdout, `"max_turns": 5`) || !strings.Contains(r.stdout, `"plan"`) {
		t.Fatalf("tenant show: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	script := filepath.Join(dir, "script.json")
	os.WriteFile(script, []byte(`{"turns":[{"text":"from the server's disk"}]}`), 0o644)

	p := startServe(t, env, "--model", "anthropic/claude-sonnet-4-5", "--models", "openai/gpt-4.1")
	c := client.New(p.url, tok)
	ctx := context.Background()
	for _, tc := range []struct {
		spec client.TaskSpec
		code string
	}{
		{client.TaskSpec{Model: "scripted/" + script}, "tenant.policy_model"},
		{client.TaskSpec{Model: "anthropic/claude-opus-4-1"}, "tenant.policy_model"},
		{client.TaskSpec{PermissionMode: "bypassPermissions"}, "tenant.policy_mode"},
		{client.TaskSpec{PermissionMode: "acceptEdits"}, "tenant.policy_mode"},
		{client.TaskSpec{MaxTurns: 6}, "tenant.policy_max_turns"},
	} {
		tc.spec.Prompt, tc.spec.Cwd = "p", base
		if task, err := c.SubmitTask(ctx, tc.spec); err == nil || !strings.Contains(err.Error(), tc.code) {
			t.Errorf("%+v: %+v, %v; want %s", tc.spec, task, err, tc.code)
		}
	}
	task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "p", Cwd: base, PermissionMode: "plan"})
	if err != nil {
		t.Fatal(err)
	}
	// The limit tenant set gave: one task at a time (unless the first already ended).
	if second, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "p", Cwd: base}); err == nil {
		if first, _ := c.Task(ctx, task.TaskID); first == nil || !first.Terminal() {
			t.Fatalf("a second task %+v was accepted while the first runs, under --max-concurrent 1", second)
		}
	} else if !strings.Contains(err.Error(), "tenant.concurrency_limit") {
		t.Fatalf("a second task: %v", err)
	}
	waitTask(t, c, task.TaskID, "completed", 30*time.Second)
	if n := srv.RequestCount(); n < 1 || n > 2 {
		t.Fatalf("%d model requests, want 1 or 2: only the tasks within the policy ran", n)
	}
}

// TestServeRefusesAManagedPolicyItCannotApply: a --managed-settings file that is missing
// or does not parse stops the service before it starts: its tasks would otherwise run
// without the policy the operator wrote.
func TestServeRefusesAManagedPolicyItCannotApply(t *testing.T) {
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.json")
	os.WriteFile(broken, []byte(`{"permissions":{"deny":"Write"}}`), 0o644)
	for _, path := range []string{filepath.Join(dir, "missing.json"), broken} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, semaBin, "serve", "--listen", "127.0.0.1:0", "--managed-settings", path)
		cmd.Env = append(os.Environ(), "SEMA_HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), path) {
			t.Errorf("sema serve --managed-settings %s: exit %v: %s", path, err, out)
		}
	}
}

// TestServeTenantManagedSettings: sema serve tenant set --managed-settings attaches a
// managed settings file to one tenant; a file that does not parse, or does not exist,
// is refused (exit 2) and the tenant keeps the one it had. The tenant's task then runs
// without the command its file denies.
func TestServeTenantManagedSettings(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	srv := anthropictest.NewServer(t,
		anthropictest.Turn{ToolCalls: []anthropictest.ToolCall{{Name: "Bash", Input: `{"command":"touch ran"}`}}},
		anthropictest.Turn{Text: "done"},
	)
	env := append(anthropicEnv(srv), "SEMA_HOME="+t.TempDir())
	tok := serveToken(t, env, "acme", base)
	dir := t.TempDir()
	deny := filepath.Join(dir, "acme.json")
	os.WriteFile(deny, []byte(`{"permissions":{"deny":["Bash"]}}`), 0o644)
	if r := sema(t, dir, env, "", "serve", "tenant", "set", "--tenant", "acme", "--managed-settings", deny); r.code != 0 {
		t.Fatalf("tenant set --managed-settings: exit %d\n%s", r.code, r.stderr)
	}
	broken := filepath.Join(dir, "broken.json")
	os.WriteFile(broken, []byte(`{"permissions":{"deny":"Bash"}}`), 0o644)
	for _, path := range []string{broken, filepath.Join(dir, "missing.json")} {
		if r := sema(t, dir, env, "", "serve", "tenant", "set", "--tenant", "acme", "--managed-settings", path); r.code != 2 || !strings.Contains(r.stderr, "config.settings_invalid") {
			t.Fatalf("tenant set --managed-settings %s: exit %d\n%s", path, r.code, r.stderr)
		}
	}
	p := startServe(t, env, "--model", "anthropic/claude-sonnet-4-5")
	c := client.New(p.url, tok)
	task, err := c.SubmitTask(context.Background(), client.TaskSpec{Prompt: "p", Cwd: base, AllowedTools: []string{"Bash(touch:*)"}})
	if err != nil {
		t.Fatal(err)
	}
	waitTask(t, c, task.TaskID, "completed", 30*time.Second)
	if _, err := os.Stat(filepath.Join(base, "ran")); !os.IsNotExist(err) {
		t.Fatalf("the tenant's managed settings deny Bash, yet its command ran (%v)", err)
	}
}
