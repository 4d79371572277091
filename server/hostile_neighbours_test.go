package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/server"
	"github.com/sema-agent/sema/settings"
)

// TestTenantsCannotReachEachOther: tenant B, on the node where tenant A's task is parked
// at a question, names A's task, session and checkpoint in every request that takes
// one — read the task, stream its events, cancel it, decide its question (allow and
// deny), read, continue, fork, rewind and resume the session. Each is answered exactly as
// an id that never existed is (404 request.not_found, the same message), so B learns
// not even that the ids exist; B's lists show nothing of A's. Afterwards A's question is
// still open and A's own decision completes the task.
func TestTenantsCannotReachEachOther(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		ctx := context.Background()
		f := newFixture(t, st, func(base string) []scripted.Turn {
			return []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{writeCall(filepath.Join(base, "a", "out.txt"), "a's work")}},
				{Text: "done"},
			}
		})
		aBase, bBase := filepath.Join(f.base, "a"), filepath.Join(f.base, "b")
		for _, d := range []string{aBase, bBase} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		a, b := f.client(t, "tenant-a", aBase), f.client(t, "tenant-b", bBase)
		task, err := a.SubmitTask(ctx, client.TaskSpec{Prompt: "write", Cwd: aBase})
		if err != nil {
			t.Fatal(err)
		}
		parked := waitStatus(t, a, task.TaskID, client.StatusAwaitingApproval)

		const never = "00000000-0000-4000-8000-000000000000"
		for name, attempt := range map[string]func(task, session, checkpoint string) error{
			"read the task":     func(id, _, _ string) error { _, err := b.Task(ctx, id); return err },
			"stream its events": func(id, _, _ string) error { return firstEventError(ctx, b, id) },
			"cancel the task":   func(id, _, _ string) error { _, err := b.Cancel(ctx, id); return err },
			"allow its call": func(_, _, cp string) error {
				_, err := b.Decide(ctx, cp, client.Decision{Decision: "allow"})
				return err
			},
			"deny its call": func(_, _, cp string) error {
				_, err := b.Decide(ctx, cp, client.Decision{Decision: "deny", Message: "no"})
				return err
			},
			"read the session": func(_, s, _ string) error { _, err := b.Session(ctx, s, 0); return err },
			"continue the session": func(_, s, _ string) error {
				_, err := b.Message(ctx, s, client.Message{Prompt: "p"})
				return err
			},
			"fork the session": func(_, s, _ string) error { _, err := b.Fork(ctx, s, client.Fork{Prompt: "p"}); return err },
			"rewind the session": func(_, s, _ string) error {
				_, err := b.Rewind(ctx, s, client.Rewind{Files: true, Conversation: true})
				return err
			},
			"resume the session": func(_, s, _ string) error {
				_, err := b.SubmitTask(ctx, client.TaskSpec{Prompt: "p", Cwd: bBase, Resume: s})
				return err
			},
		} {
			theirs := attempt(task.TaskID, task.SessionID, parked.CheckpointID)
			nobodys := attempt(never, never, never)
			refusedWith(t, name+" of another tenant", theirs, http.StatusNotFound, server.CodeNotFound)
			if answerOf(theirs) != answerOf(nobodys) {
				t.Errorf("%s: another tenant's id is answered %q, an id that never existed %q: the answer tells that it exists", name, answerOf(theirs), answerOf(nobodys))
			}
		}
		if ss, err := b.Sessions(ctx); err != nil || len(ss) != 0 {
			t.Errorf("tenant b lists sessions %+v (%v)", ss, err)
		}
		if cps, err := b.Checkpoints(ctx, "all"); err != nil || len(cps) != 0 {
			t.Errorf("tenant b lists checkpoints %+v (%v)", cps, err)
		}

		// Nothing of B's reached A's task: it is parked at the same open question, its
		// file unwritten, and A's own decision goes through once.
		if still := waitStatus(t, a, task.TaskID, client.StatusAwaitingApproval); still.CheckpointID != parked.CheckpointID {
			t.Fatalf("a's task moved to checkpoint %s", still.CheckpointID)
		}
		if _, err := os.Stat(filepath.Join(aBase, "out.txt")); !os.IsNotExist(err) {
			t.Fatalf("a's file exists before a decided (%v)", err)
		}
		if _, err := a.Decide(ctx, parked.CheckpointID, client.Decision{Decision: "allow"}); err != nil {
			t.Fatalf("a's own decision after b's attempts: %v", err)
		}
		waitStatus(t, a, task.TaskID, "completed")
		if got, err := os.ReadFile(filepath.Join(aBase, "out.txt")); err != nil || string(got) != "a's work" {
			t.Fatalf("a's approved write: %q, %v", got, err)
		}
	})
}

// firstEventError is the first error of task id's event stream (nil if an event came).
func firstEventError(ctx context.Context, c *client.Client, id string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, err := range c.Events(ctx, id, 0) {
		return err
	}
	return nil
}

// answerOf is what a refusal tells its caller: status, code and message (not the
// request's own id).
func answerOf(err error) string {
	e, ok := err.(*client.Error)
	if !ok {
		return fmt.Sprint(err)
	}
	return fmt.Sprintf("%d %s %s", e.Status, e.Code, e.Message)
}

// TestTenantsCommandsCannotReachEachOther: tenant A's task runs a long `sleep` (a Bash
// call A approved) in A's base, which holds a secret; tenant B, on the same node, as
// the same user, gets a Bash call approved by B itself that reads the secret (directly,
// and through /proc/PID/cwd of A's process), writes into A's base, and kills A's
// process by its pid, which the test hands B. With the tenants' policy requiring the
// sandbox, none of it lands: B's command ran (its own file says so), A's process is
// alive, the secret stayed and A's base is untouched. Calibration: with the sandbox
// off (the machine's managed settings), the same command does all three — the
// separation is the sandbox's, not the command's failing for another reason. Where the
// kernel cannot confine, the test says why and skips.
func TestTenantsCommandsCannotReachEachOther(t *testing.T) {
	if k := sandbox.Probe(); !k.Available() {
		t.Skipf("the kernel sandbox is unavailable here (%s): nothing but the permission fold separates two tenants' approved commands", k.Reason)
	}
	eachStore(t, func(t *testing.T, st store) {
		t.Run("sandboxed", func(t *testing.T) {
			got := neighbourAttack(t, st, true)
			if got.killed || got.read || got.wrote {
				t.Errorf("under the sandbox, B's approved command reached A's work: %+v", got)
			}
		})
		t.Run("calibration, sandbox off", func(t *testing.T) {
			got := neighbourAttack(t, st, false)
			if !got.killed || !got.read || !got.wrote {
				t.Errorf("without the sandbox the same command should reach A's work, else the test proves nothing: %+v", got)
			}
		})
	})
}

// reached is what B's command did to A's work.
type reached struct {
	killed bool   // A's process is gone
	read   bool   // A's secret is in B's file
	wrote  bool   // B's file is in A's base
	output string // what B's command recorded of its own run
}

// neighbourAttack runs A's sleeping task and B's approved attack on one service, the
// tenants' commands confined (policy sandbox: required) or not (managed settings turn
// the sandbox off), and reports what reached A.
func neighbourAttack(t *testing.T, st store, confined bool) reached {
	ctx := context.Background()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	aBase, bBase := filepath.Join(root, "a"), filepath.Join(root, "b")
	for _, d := range []string{aBase, bBase} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := fmt.Sprintf("a's secret %d", time.Now().UnixNano())
	if err := os.WriteFile(filepath.Join(aBase, "secret.txt"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	// A's sleep has an argument no other process on the machine has, so the test finds
	// it (and only it) in /proc.
	sleepArg := fmt.Sprintf("600.%d%d", os.Getpid(), time.Now().UnixNano()%1e6)
	attack := strings.Join([]string{
		`pid=$(cat pid.txt)`,
		`cat "/proc/$pid/cwd/secret.txt" >> stolen.txt`,
		`cat ` + filepath.Join(aBase, "secret.txt") + ` >> stolen.txt`,
		`echo planted > ` + filepath.Join(aBase, "planted.txt"),
		`kill -9 "$pid"; echo "kill exit $?" >> ran.txt`,
	}, "; ")
	bash := func(cmd string) scripted.Turn {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "Bash", Input: in}}}
	}
	p := scripted.New(scripted.Script{Threads: []scripted.Thread{
		{Match: "a sleeps", Turns: []scripted.Turn{bash("sleep " + sleepArg), {Text: "woke"}}},
		{Match: "b attacks", Turns: []scripted.Turn{bash(attack), {Text: "done"}}},
	}})
	f := newFixtureWith(t, st, func(string) []scripted.Turn { return nil }, func(cfg *server.Config) {
		cfg.OpenProvider = func(string) (model.Provider, string, error) { return p, "scripted", nil }
		if !confined {
			off, err := settings.Parse([]byte(`{"sandbox":{"mode":"off"}}`), "managed-settings.json", settings.Managed)
			if err != nil {
				t.Fatal(err)
			}
			cfg.ManagedSettings = &off
		}
	})
	// Every Bash call is a question, which each tenant answers for itself.
	policy := server.Policy{Ask: []string{"Bash"}}
	if confined {
		policy.Sandbox = "required"
	}
	tenant := func(name, base string) *client.Client {
		c := f.client(t, name, base)
		if err := f.srv.SetPolicy(ctx, name, policy); err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, b := tenant("tenant-a", aBase), tenant("tenant-b", bBase)

	sleeper, err := a.SubmitTask(ctx, client.TaskSpec{Prompt: "a sleeps", Cwd: aBase})
	if err != nil {
		t.Fatal(err)
	}
	approveOwn(t, a, sleeper.TaskID)
	pid := findSleep(t, a, sleeper.TaskID, sleepArg)
	t.Cleanup(func() {
		a.Cancel(context.Background(), sleeper.TaskID)
		killIfSleeping(pid, sleepArg)
	})
	if err := os.WriteFile(filepath.Join(bBase, "pid.txt"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	// Through the API B cannot signal A's running task either.
	_, err = b.Cancel(ctx, sleeper.TaskID)
	refusedWith(t, "b cancels a's running task", err, http.StatusNotFound, server.CodeNotFound)

	attacker, err := b.SubmitTask(ctx, client.TaskSpec{Prompt: "b attacks", Cwd: bBase})
	if err != nil {
		t.Fatal(err)
	}
	approveOwn(t, b, attacker.TaskID)
	if done := waitTerminal(t, b, attacker.TaskID); done.Status != "completed" {
		t.Fatalf("b's task ended %s: %s", done.Status, done.Result)
	}
	ran, err := os.ReadFile(filepath.Join(bBase, "ran.txt"))
	if err != nil {
		t.Fatalf("b's approved command never ran (no ran.txt): the attack was not tried: %v", err)
	}
	stolen, _ := os.ReadFile(filepath.Join(bBase, "stolen.txt"))
	_, planted := os.Stat(filepath.Join(aBase, "planted.txt"))
	got := reached{
		killed: waitGone(pid, sleepArg),
		read:   bytes.Contains(stolen, []byte(secret)),
		wrote:  planted == nil,
		output: strings.TrimSpace(string(ran)),
	}
	t.Logf("confined %v: %+v", confined, got)
	if !got.killed {
		if st := taskStatus(t, a, sleeper.TaskID); st != client.StatusRunning {
			t.Errorf("a's task is %s while its sleep is alive", st)
		}
	}
	return got
}

// approveOwn answers the task's questions with allow, as its own tenant, until it runs
// past them (or ends).
func approveOwn(t *testing.T, c *client.Client, id string) {
	t.Helper()
	task := waitStatus(t, c, id, client.StatusAwaitingApproval)
	if _, err := c.Decide(context.Background(), task.CheckpointID, client.Decision{Decision: "allow"}); err != nil {
		t.Fatalf("the tenant's decision on its own question: %v", err)
	}
}

// findSleep waits for the process running `sleep arg` and returns its pid. If the task
// ends first because the sandbox cannot confine here, the test is skipped with the
// reason.
func findSleep(t *testing.T, c *client.Client, id, arg string) int {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if pid := sleepingPid(arg); pid > 0 {
			return pid
		}
		task, err := c.Task(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if task.Terminal() {
			var res struct {
				Error struct{ Code, Message string }
			}
			json.Unmarshal(task.Result, &res)
			if strings.HasPrefix(res.Error.Code, "sandbox.") {
				t.Skipf("the leg cannot be confined here (%s: %s); the separation of two tenants' commands is not tested", res.Error.Code, res.Error.Message)
			}
			t.Fatalf("a's task ended %s before its sleep started: %s", task.Status, task.Result)
		}
	}
	t.Fatalf("no process runs sleep %s", arg)
	return 0
}

// sleepingPid is the pid of the process whose command line is `sleep arg`, or 0.
func sleepingPid(arg string) int {
	entries, _ := os.ReadDir("/proc")
	want := "sleep\x00" + arg + "\x00"
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && string(cmd) == want {
			return pid
		}
	}
	return 0
}

// waitGone reports whether the process pid running `sleep arg` is gone, allowing its
// parent a moment to reap it.
func waitGone(pid int, arg string) bool {
	for range 50 {
		if !isSleeping(pid, arg) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func isSleeping(pid int, arg string) bool {
	cmd, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	return err == nil && string(cmd) == "sleep\x00"+arg+"\x00"
}

// killIfSleeping ends the test's own sleep if the task's cancellation left it.
func killIfSleeping(pid int, arg string) {
	if waitGone(pid, arg) {
		return
	}
	syscall.Kill(pid, syscall.SIGKILL)
}

func taskStatus(t *testing.T, c *client.Client, id string) string {
	t.Helper()
	task, err := c.Task(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return task.Status
}
