package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/statedir"
)

// startSema starts the binary in dir without waiting for it; its stdout is collected.
func startSema(t *testing.T, dir string, env []string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(semaBin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, &out
}

// exitOf waits for cmd and returns its exit code (-1 when a signal killed it).
func exitOf(cmd *exec.Cmd) int {
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -2
	}
	return 0
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	waitFor(t, func() bool { _, err := os.Stat(path); return err == nil })
}

// shownTranscript is `sema sessions show ID --output-format json`'s entries.
func shownTranscript(t *testing.T, dir string, env []string, id string) []map[string]any {
	t.Helper()
	r := sema(t, dir, env, "", "sessions", "show", id, "--output-format", "json")
	if r.code != 0 {
		t.Fatalf("sessions show: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var doc struct {
		Entries []map[string]any `json:"entries"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("sessions show: %v\n%s", err, r.stdout)
	}
	return doc.Entries
}

// checkAnswered fails t unless every tool_use of the transcript has exactly one
// tool_result, as a provider's API demands of a conversation sent to it.
func checkAnswered(t *testing.T, entries []map[string]any) {
	t.Helper()
	results := map[string]int{}
	var uses []string
	for _, e := range entries {
		switch e["type"] {
		case "tool_result":
			results[e["tool_use_id"].(string)]++
		case "assistant":
			msg, _ := e["message"].(map[string]any)
			blocks, _ := msg["content"].([]any)
			for _, b := range blocks {
				if b, _ := b.(map[string]any); b["type"] == "tool_use" {
					uses = append(uses, b["id"].(string))
				}
			}
		}
	}
	for _, id := range uses {
		if results[id] != 1 {
			t.Fatalf("tool_use %s has %d tool_results, want 1\n%v", id, results[id], entries)
		}
	}
	if len(results) != len(uses) {
		t.Fatalf("%d tool_results for %d tool_uses", len(results), len(uses))
	}
}

// A run stopped (SIGSTOP) past its lease while another process took its session over:
// once continued it appends nothing more and runs no further tool, it exits non-zero
// with session.lease_lost, and the session's transcript stays one a provider accepts.
func TestStoppedRunCannotWriteAfterTakeover(t *testing.T) {
	dir := writeTree(t, map[string]string{"README.md": "hi\n"})
	env := append(home(t), "SEMA_SESSION_LEASE=1s")
	script := writeScript(t, `{"turns":[
		{"text":"stalled one","tool_calls":[{"name":"Bash","input":{"command":"echo one >> log.txt"}}]},
		{"text":"stalled two","tool_calls":[{"name":"Bash","input":{"command":"touch stopped-here && sleep 0.3 && echo two >> log.txt"}}]},
		{"text":"stalled three","tool_calls":[{"name":"Bash","input":{"command":"touch after-takeover"}}]},
		{"text":"stalled done"}]}`)
	first, out := startSema(t, dir, env, "run", "--model", "scripted/"+script, "--permission-mode", "bypassPermissions",
		"--sandbox", "off", "--output-format", "json", "work")
	waitFile(t, filepath.Join(dir, "stopped-here"))
	if err := first.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// Another process waits out the stopped run's lease and continues the session.
	next := writeScript(t, `{"turns":[{"text":"taken over"}]}`)
	began := time.Now()
	r := sema(t, dir, env, "", "run", "--continue", "--wait", "--model", "scripted/"+next, "--output-format", "json", "go on")
	if r.code != 0 {
		t.Fatalf("the run that took over: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("the takeover waited %v", time.Since(began).Round(time.Millisecond))
	sid := jsonResult(t, r.stdout)["session_id"].(string)
	before := shownTranscript(t, dir, env, sid)

	if err := first.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	code := exitOf(first)
	if _, err := os.Stat(filepath.Join(dir, "after-takeover")); err == nil {
		t.Fatal("the stopped run ran a tool after another run took its session")
	}
	after := shownTranscript(t, dir, env, sid)
	if len(after) != len(before) {
		t.Fatalf("the stopped run appended %d entries after the takeover:\nbefore %v\nafter %v", len(after)-len(before), before, after)
	}
	checkAnswered(t, after)
	last := after[len(after)-1]
	if msg, _ := json.Marshal(last); !strings.Contains(string(msg), "taken over") {
		t.Fatalf("the transcript does not end with the run that took over: %s", msg)
	}
	if code == 0 {
		t.Fatalf("the stopped run exited 0 after losing its session:\n%s", out)
	}
	res := jsonResult(t, out.String())
	if e, _ := res["error"].(map[string]any); e == nil || e["code"] != session.CodeLeaseLost {
		t.Fatalf("the stopped run's result (exit %d) does not say %s:\n%s", code, session.CodeLeaseLost, out)
	}
	for _, e := range after {
		if b, _ := json.Marshal(e); strings.Contains(string(b), "stalled three") || strings.Contains(string(b), "stalled done") {
			t.Fatalf("an entry of the stopped run's later turns is in the transcript: %s", b)
		}
	}
}

// leaseHeld reports whether any holder holds the session's lease in the state
// directory's store: a probe holder cannot take it.
func leaseHeld(t *testing.T, env []string, id string) bool {
	t.Helper()
	var home string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "SEMA_HOME="); ok {
			home = v
		}
	}
	st, err := session.OpenSQLite(filepath.Join(home, "sema.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = st.AcquireLease(t.Context(), id, "probe", time.Minute)
	if err == nil {
		st.ReleaseLease(t.Context(), id, "probe")
		return false
	}
	if !strings.Contains(err.Error(), session.CodeBusy) {
		t.Fatal(err)
	}
	return true
}

// SIGHUP (the terminal closed, the ssh connection dropped) ends `sema run` and `sema
// approve` as SIGTERM does: a result is printed, the run exits, and the session's lease
// is released, not left to expire.
func TestHangupEndsARunCleanly(t *testing.T) {
	dir := writeTree(t, map[string]string{"README.md": "hi\n"})
	env := home(t) // the default 30 s lease
	script := writeScript(t, `{"turns":[
		{"tool_calls":[{"name":"Bash","input":{"command":"touch started && sleep 30"}}]},
		{"text":"done"}]}`)
	for _, cmdName := range []string{"run", "approve"} {
		t.Run(cmdName, func(t *testing.T) {
			os.Remove(filepath.Join(dir, "started"))
			args := []string{"run", "--model", "scripted/" + script, "--permission-mode", "bypassPermissions", "--sandbox", "off", "--output-format", "json", "sleep"}
			if cmdName == "approve" {
				r := sema(t, dir, env, "", "run", "--model", "scripted/"+script, "--on-ask", "park", "--sandbox", "off", "--output-format", "json", "sleep")
				if r.code != 3 {
					t.Fatalf("park: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
				}
				parked := jsonResult(t, r.stdout)
				args = []string{"approve", parked["session_id"].(string), "--checkpoint", parked["checkpoint"].(map[string]any)["id"].(string), "--allow",
					"--model", "scripted/" + script, "--sandbox", "off", "--output-format", "json"}
			}
			cmd, out := startSema(t, dir, env, args...)
			waitFile(t, filepath.Join(dir, "started"))
			began := time.Now()
			cmd.Process.Signal(syscall.SIGHUP)
			code := exitOf(cmd)
			if took := time.Since(began); took > 20*time.Second {
				t.Fatalf("sema %s took %v to end after SIGHUP", cmdName, took)
			}
			if code <= 0 {
				t.Fatalf("sema %s after SIGHUP: exit %d (a signal's death is -1)\n%s", cmdName, code, out)
			}
			res := jsonResult(t, out.String())
			if res["status"] != "cancelled" {
				t.Fatalf("sema %s after SIGHUP: result %v", cmdName, res)
			}
			if leaseHeld(t, env, res["session_id"].(string)) {
				t.Fatalf("sema %s left its session's lease behind after SIGHUP", cmdName)
			}
		})
	}
}

// A run killed with SIGKILL leaves its lease behind, but its process is gone: the next
// run on the same machine takes the session over at once, without --wait and without
// waiting out the 30 s lease.
func TestKilledHolderIsTakenOverAtOnce(t *testing.T) {
	dir := writeTree(t, map[string]string{"README.md": "hi\n"})
	env := home(t) // the default 30 s lease
	script := writeScript(t, `{"turns":[
		{"tool_calls":[{"name":"Bash","input":{"command":"touch started && sleep 30"}}]},
		{"text":"done"}]}`)
	cmd, _ := startSema(t, dir, env, "run", "--model", "scripted/"+script, "--permission-mode", "bypassPermissions", "--sandbox", "off",
		"--output-format", "json", "sleep")
	waitFile(t, filepath.Join(dir, "started"))
	cmd.Process.Signal(syscall.SIGKILL)
	exitOf(cmd)
	next := writeScript(t, `{"turns":[{"text":"resumed"}]}`)
	began := time.Now()
	r := sema(t, dir, env, "", "run", "--continue", "--model", "scripted/"+next, "--output-format", "json", "go on")
	took := time.Since(began)
	if r.code != 0 || jsonResult(t, r.stdout)["result"] != "resumed" {
		t.Fatalf("resume after kill -9: exit %d after %v\n%s\n%s", r.code, took, r.stdout, r.stderr)
	}
	if took > 10*time.Second {
		t.Fatalf("the resume took %v: it waited for the dead holder's lease", took)
	}
	t.Logf("resumed %v after the kill", took.Round(time.Millisecond))
}

// `sema rewind` honours SEMA_SESSION_LEASE, exits 5 while a run continues the session,
// and with --wait rewinds once that run has ended.
func TestRewindWaitsForTheRun(t *testing.T) {
	dir := writeTree(t, map[string]string{"README.md": "hi\n"})
	env := home(t)
	first := writeScript(t, `{"turns":[
		{"tool_calls":[{"name":"Write","input":{"file_path":"a.txt","content":"agent\n"}}]},
		{"text":"written"}]}`)
	r := sema(t, dir, env, "", "run", "--model", "scripted/"+first, "--permission-mode", "acceptEdits", "--output-format", "json", "write")
	if r.code != 0 {
		t.Fatalf("first run: exit %d\n%s", r.code, r.stderr)
	}
	sid := jsonResult(t, r.stdout)["session_id"].(string)
	if r := sema(t, dir, append(env, "SEMA_SESSION_LEASE=soon"), "", "rewind", sid, "--to", "1"); r.code != 2 || !strings.Contains(r.stderr, "config.session_lease_invalid") {
		t.Fatalf("rewind with SEMA_SESSION_LEASE=soon: exit %d\n%s", r.code, r.stderr)
	}
	slow := writeScript(t, `{"turns":[
		{"tool_calls":[{"name":"Bash","input":{"command":"touch started && sleep 2"}}]},
		{"text":"slow done"}]}`)
	cmd, out := startSema(t, dir, env, "run", "--resume", sid, "--model", "scripted/"+slow, "--permission-mode", "bypassPermissions",
		"--sandbox", "off", "--output-format", "json", "slow")
	waitFile(t, filepath.Join(dir, "started"))
	if r := sema(t, dir, env, "", "rewind", sid, "--to", "1", "--files"); r.code != 5 || !strings.Contains(r.stderr, "session.busy") {
		t.Fatalf("rewind while a run holds the session: exit %d\n%s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "agent\n" {
		t.Fatalf("the refused rewind changed a.txt: %q", b)
	}
	r = sema(t, dir, env, "", "rewind", sid, "--to", "1", "--files", "--wait")
	if r.code != 0 {
		t.Fatalf("rewind --wait: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if code := exitOf(cmd); code != 0 || jsonResult(t, out.String())["result"] != "slow done" {
		t.Fatalf("the run the rewind waited for: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.txt")); !os.IsNotExist(err) {
		t.Fatalf("a.txt after rewind --wait: %v", err)
	}
}

// stoppedRunTrials is how many random moments TestStoppedRunAtRandomMoments stops a run
// at; SEMA_SOAK_TRIALS raises it for a soak.
func stoppedRunTrials() int {
	if n, err := strconv.Atoi(os.Getenv("SEMA_SOAK_TRIALS")); err == nil && n > 0 {
		return n
	}
	return 4
}

// A run of many quick Bash calls stopped at a random moment, past its lease, while
// another process takes the session over: whatever it was doing when stopped, once
// continued it adds nothing to the transcript and starts no further command.
func TestStoppedRunAtRandomMoments(t *testing.T) {
	var turns []string
	for i := range 40 {
		turns = append(turns, fmt.Sprintf(`{"text":"stalled %d","tool_calls":[{"name":"Bash","input":{"command":"echo %d >> log.txt; sleep 0.05"}}]}`, i, i))
	}
	script := writeScript(t, `{"turns":[`+strings.Join(turns, ",")+`,{"text":"stalled done"}]}`)
	next := writeScript(t, `{"turns":[{"text":"taken over"}]}`)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	// A moment that falls inside one of the stopped run's write transactions leaves the
	// database locked by a process that does not run: the takeover is then refused by
	// name (store.locked, after the busy timeout) — the documented limit — and another
	// moment is drawn, a few times at most.
	locked := 0
	for trial := 0; trial < stoppedRunTrials(); trial++ {
		dir := writeTree(t, map[string]string{"README.md": "hi\n"})
		env := append(home(t), "SEMA_SESSION_LEASE=1s")
		first, out := startSema(t, dir, env, "run", "--model", "scripted/"+script, "--permission-mode", "bypassPermissions",
			"--sandbox", "off", "--output-format", "json", "work")
		waitFile(t, filepath.Join(dir, "log.txt"))
		time.Sleep(time.Duration(rng.IntN(150)) * time.Millisecond)
		first.Process.Signal(syscall.SIGSTOP)
		r := sema(t, dir, env, "", "run", "--continue", "--wait", "--model", "scripted/"+next, "--output-format", "json", "go on")
		if r.code != 0 && strings.Contains(r.stdout+r.stderr, statedir.CodeLocked) && locked < 3 {
			locked++
			first.Process.Signal(syscall.SIGCONT)
			exitOf(first)
			t.Logf("trial %d: stopped inside a write transaction; the takeover was refused as %s; drawing another moment", trial, statedir.CodeLocked)
			trial--
			continue
		}
		if r.code != 0 {
			t.Fatalf("trial %d: the run that took over: exit %d\n%s\n%s", trial, r.code, r.stdout, r.stderr)
		}
		sid := jsonResult(t, r.stdout)["session_id"].(string)
		before := shownTranscript(t, dir, env, sid)
		logBefore, _ := os.ReadFile(filepath.Join(dir, "log.txt"))
		if strings.Count(string(logBefore), "\n") >= 40 {
			t.Fatalf("trial %d: the run had ended before it was stopped; the trial tried nothing", trial)
		}
		first.Process.Signal(syscall.SIGCONT)
		code := exitOf(first)
		after := shownTranscript(t, dir, env, sid)
		logAfter, _ := os.ReadFile(filepath.Join(dir, "log.txt"))
		if len(after) != len(before) {
			t.Fatalf("trial %d: the stopped run appended %d entries after the takeover", trial, len(after)-len(before))
		}
		checkAnswered(t, after)
		if len(logAfter) != len(logBefore) {
			t.Fatalf("trial %d: the stopped run ran a command after the takeover: log %q → %q", trial, logBefore, logAfter)
		}
		if code == 0 || !strings.Contains(out.String(), session.CodeLeaseLost) {
			t.Fatalf("trial %d: the stopped run exited %d without %s:\n%s", trial, code, session.CodeLeaseLost, out)
		}
	}
}
