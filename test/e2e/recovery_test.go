package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/internal/pgtest"
	"github.com/sema-agent/sema/model/anthropic/anthropictest"
)

// resumeGoal is how soon after a worker's kill -9 its task goes on, with the service's
// defaults (no --rescue-after or --session-lease below theirs).
const resumeGoal = 10 * time.Second

// killToResume kills p with SIGKILL while its task's tool runs, calls restart (which
// may start a process), and returns how long after the kill the task's next model
// request arrived (the task resumed) and the client to follow it with.
func killToResume(t *testing.T, srv *anthropictest.Server, c *client.Client, taskID string, p *serveProc, restart func() *client.Client) (time.Duration, *client.Client) {
	t.Helper()
	waitToolStarted(t, c, taskID, p)
	before := len(srv.Requests())
	p.kill9(t)
	killed := time.Now()
	c = restart()
	for len(srv.Requests()) == before {
		if time.Since(killed) > 3*resumeGoal {
			t.Fatalf("the task did not resume within %s of the kill", 3*resumeGoal)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(killed), c
}

// checkResumed checks the resumed task completed with the model's last answer and its
// stream holds one tool_use and one result.
func checkResumed(t *testing.T, c *client.Client, taskID, want string) {
	t.Helper()
	done := waitTask(t, c, taskID, "completed", 30*time.Second)
	var res map[string]any
	json.Unmarshal(done.Result, &res)
	if res["result"] != want {
		t.Fatalf("result: %s", done.Result)
	}
	joined := strings.Join(eventTypes(t, c, taskID), " ")
	if strings.Count(joined, "tool_use") != 1 || strings.Count(joined, "result/") != 1 || !strings.HasSuffix(joined, "result/completed") {
		t.Fatalf("the stream: %s", joined)
	}
}

// TestServeRestartReclaimsItsLegsAtOnce: a process killed with SIGKILL mid-tool and
// started again on the same state directory (SQLite) takes its task back at once: its
// predecessor's process is gone, so neither River's rescue delay (a minute by default)
// nor the session's lease (30 s) is waited for.
func TestServeRestartReclaimsItsLegsAtOnce(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	srv := anthropictest.NewServer(t,
		anthropictest.Turn{ToolCalls: []anthropictest.ToolCall{{Name: "Bash", Input: `{"command":"sleep 30"}`}}},
		anthropictest.Turn{Text: "finished after the restart"},
	)
	env := append(anthropicEnv(srv), "SEMA_HOME="+t.TempDir())
	tok := serveToken(t, env, "acme", base)
	flags := []string{"--model", "anthropic/claude-sonnet-4-5"}
	a := startServe(t, env, flags...)
	ca := client.New(a.url, tok)
	task, err := ca.SubmitTask(context.Background(), client.TaskSpec{Prompt: "wait", Cwd: base, AllowedTools: []string{"Bash(sleep:*)"}})
	if err != nil {
		t.Fatal(err)
	}
	took, cb := killToResume(t, srv, ca, task.TaskID, a, func() *client.Client {
		return client.New(startServe(t, env, flags...).url, tok)
	})
	t.Logf("sqlite: kill -9 to resume (restart included): %s", took.Round(time.Millisecond))
	if took > resumeGoal {
		t.Fatalf("the task resumed %s after the kill, want at most %s", took, resumeGoal)
	}
	checkResumed(t, cb, task.TaskID, "finished after the restart")
}

// TestServeOtherProcessRescuesDeadWorker: two processes share one Postgres database; the
// one running a task is killed with SIGKILL mid-tool and the other, seeing its heartbeat
// stop, frees the session's lease on the dead process's behalf and runs the task on
// within the goal — with the defaults, not a shortened rescue or lease.
func TestServeOtherProcessRescuesDeadWorker(t *testing.T) {
	dsn := pgtest.Schema(t)
	base, _ := filepath.EvalSymlinks(t.TempDir())
	srv := anthropictest.NewServer(t,
		anthropictest.Turn{ToolCalls: []anthropictest.ToolCall{{Name: "Bash", Input: `{"command":"sleep 30"}`}}},
		anthropictest.Turn{Text: "finished by the other process"},
	)
	env := append(anthropicEnv(srv), "SEMA_STORE="+dsn)
	tok := serveToken(t, append(env, "SEMA_HOME="+t.TempDir()), "acme", base)
	flags := []string{"--model", "anthropic/claude-sonnet-4-5"}
	a := startServe(t, append(env, "SEMA_HOME="+t.TempDir()), flags...)
	ca := client.New(a.url, tok)
	task, err := ca.SubmitTask(context.Background(), client.TaskSpec{Prompt: "wait", Cwd: base, AllowedTools: []string{"Bash(sleep:*)"}})
	if err != nil {
		t.Fatal(err)
	}
	// B starts once A has the task, so only A can have taken it.
	waitToolStarted(t, ca, task.TaskID, a)
	b := startServe(t, append(env, "SEMA_HOME="+t.TempDir()), flags...)
	cb := client.New(b.url, tok)
	took, _ := killToResume(t, srv, ca, task.TaskID, a, func() *client.Client { return cb })
	t.Logf("postgres: kill -9 to resume on the other process: %s", took.Round(time.Millisecond))
	if took > resumeGoal {
		t.Fatalf("the task resumed %s after the kill, want at most %s\n%s", took, resumeGoal, b.logs.String())
	}
	checkResumed(t, cb, task.TaskID, "finished by the other process")
	if !strings.Contains(b.logs.String(), "rescued from a dead worker") {
		t.Fatalf("B's logs do not say it rescued the leg:\n%s", b.logs.String())
	}
}

// TestServeOtherProcessRescuesHungWorker: the worker running a task hangs (SIGSTOP):
// its process lives, so only its heartbeat tells it is gone, as for a process on
// another machine. The other process takes the task over within the goal, releasing
// the hung process's session lease on its behalf (the lease alone would hold the
// session for 30 s); the hung process is then killed and nothing of it reaches the
// stream.
func TestServeOtherProcessRescuesHungWorker(t *testing.T) {
	dsn := pgtest.Schema(t)
	base, _ := filepath.EvalSymlinks(t.TempDir())
	srv := anthropictest.NewServer(t,
		anthropictest.Turn{ToolCalls: []anthropictest.ToolCall{{Name: "Bash", Input: `{"command":"sleep 30"}`}}},
		anthropictest.Turn{Text: "finished by the other process"},
	)
	env := append(anthropicEnv(srv), "SEMA_STORE="+dsn)
	tok := serveToken(t, append(env, "SEMA_HOME="+t.TempDir()), "acme", base)
	flags := []string{"--model", "anthropic/claude-sonnet-4-5"}
	a := startServe(t, append(env, "SEMA_HOME="+t.TempDir()), flags...)
	ca := client.New(a.url, tok)
	task, err := ca.SubmitTask(context.Background(), client.TaskSpec{Prompt: "wait", Cwd: base, AllowedTools: []string{"Bash(sleep:*)"}})
	if err != nil {
		t.Fatal(err)
	}
	waitToolStarted(t, ca, task.TaskID, a)
	b := startServe(t, append(env, "SEMA_HOME="+t.TempDir()), flags...)
	cb := client.New(b.url, tok)
	before := len(srv.Requests())
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	for len(srv.Requests()) == before {
		if time.Since(stopped) > 3*resumeGoal {
			a.kill9(t)
			t.Fatalf("the task did not resume within %s of the hang\n%s", 3*resumeGoal, b.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(stopped)
	a.kill9(t)
	t.Logf("postgres: hang (SIGSTOP) to resume on the other process: %s", took.Round(time.Millisecond))
	if took > resumeGoal {
		t.Fatalf("the task resumed %s after the hang, want at most %s", took, resumeGoal)
	}
	checkResumed(t, cb, task.TaskID, "finished by the other process")
}

// TestServeHungWorkerComesBack: a worker hangs (SIGSTOP) past the dead-worker threshold,
// its task is taken over and completed by the other process, and then the hung one
// resumes (SIGCONT). Its leg has lost the session and must not end the task a second
// time: the task stays completed with one result, and the model is asked no more.
func TestServeHungWorkerComesBack(t *testing.T) {
	dsn := pgtest.Schema(t)
	base, _ := filepath.EvalSymlinks(t.TempDir())
	srv := anthropictest.NewServer(t,
		anthropictest.Turn{ToolCalls: []anthropictest.ToolCall{{Name: "Bash", Input: `{"command":"sleep 3"}`}}},
		anthropictest.Turn{Text: "finished by the other process"},
	)
	env := append(anthropicEnv(srv), "SEMA_STORE="+dsn)
	tok := serveToken(t, append(env, "SEMA_HOME="+t.TempDir()), "acme", base)
	flags := []string{"--model", "anthropic/claude-sonnet-4-5"}
	a := startServe(t, append(env, "SEMA_HOME="+t.TempDir()), flags...)
	ca := client.New(a.url, tok)
	task, err := ca.SubmitTask(context.Background(), client.TaskSpec{Prompt: "wait", Cwd: base, AllowedTools: []string{"Bash(sleep:*)"}})
	if err != nil {
		t.Fatal(err)
	}
	waitToolStarted(t, ca, task.TaskID, a)
	b := startServe(t, append(env, "SEMA_HOME="+t.TempDir()), flags...)
	cb := client.New(b.url, tok)
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitTask(t, cb, task.TaskID, "completed", 30*time.Second)
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(8 * time.Second) // the sleep ends, the lease renewal fails, the leg ends
	done := waitTask(t, cb, task.TaskID, "completed", time.Second)
	var res map[string]any
	json.Unmarshal(done.Result, &res)
	if res["result"] != "finished by the other process" {
		t.Fatalf("result after the hung worker came back: %s\n%s", done.Result, a.logs.String())
	}
	joined := strings.Join(eventTypes(t, cb, task.TaskID), " ")
	if strings.Count(joined, "result/") != 1 || !strings.HasSuffix(joined, "result/completed") {
		t.Fatalf("the stream after the hung worker came back: %s\n%s", joined, a.logs.String())
	}
	if n := srv.RequestCount(); n != 2 {
		t.Fatalf("%d model requests, want 2", n)
	}
}
