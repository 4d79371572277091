package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// home returns environment variables that give sema a private state directory.
func home(t *testing.T) []string {
	return []string{"SEMA_HOME=" + filepath.Join(t.TempDir(), "state")}
}

func TestParkThenApproveInAnotherProcess(t *testing.T) {
	dir := writeTree(t, map[string]string{"README.md": "hi\n"})
	env := home(t)
	script := writeScript(t, `{"turns":[
		{"text":"writing","tool_calls":[{"name":"Write","input":{"file_path":"out.txt","content":"approved content\n"}}]},
		{"text":"done writing"}]}`)
	r := sema(t, dir, env, "", "run", "--model", "scripted/"+script, "--on-ask", "park", "--output-format", "json", "write out.txt")
	if r.code != 3 {
		t.Fatalf("exit %d, want 3\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	obj := jsonResult(t, r.stdout)
	cp := obj["checkpoint"].(map[string]any)
	if obj["status"] != "awaiting_approval" || cp["tool"] != "Write" || cp["gate"] != "tool_permission" || len(cp["input_sha256"].(string)) != 64 {
		t.Fatalf("parked result %v", obj)
	}
	if _, err := os.Stat(filepath.Join(dir, "out.txt")); !os.IsNotExist(err) {
		t.Fatal("the write ran before approval")
	}
	sid, cid := obj["session_id"].(string), cp["id"].(string)

	// The checkpoint is answered by another process, from another directory. The second
	// turn of the script answers after the approved call ran.
	after := writeScript(t, `{"turns":[{"text":"done writing"}]}`)
	r = sema(t, t.TempDir(), env, "", "approve", sid, "--checkpoint", cid, "--allow", "--model", "scripted/"+after, "--output-format", "json")
	if r.code != 0 {
		t.Fatalf("approve exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "out.txt")); string(b) != "approved content\n" {
		t.Fatalf("out.txt = %q", b)
	}
	if got := jsonResult(t, r.stdout); got["status"] != "completed" || got["result"] != "done writing" {
		t.Fatalf("after approve: %v", got)
	}
	// A second approval is refused and runs nothing.
	os.Remove(filepath.Join(dir, "out.txt"))
	r = sema(t, dir, env, "", "approve", sid, "--checkpoint", cid, "--allow", "--model", "scripted/"+after)
	if r.code == 0 || !strings.Contains(r.stderr, "checkpoint.already_claimed") {
		t.Fatalf("second approve: exit %d %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "out.txt")); !os.IsNotExist(err) {
		t.Fatal("the approved call ran twice")
	}
	// The transcript shows both legs with their turns.
	r = sema(t, dir, env, "", "sessions", "show", sid)
	if r.code != 0 || !strings.Contains(r.stdout, "[turn 1]") || !strings.Contains(r.stdout, "[turn 2]") || !strings.Contains(r.stdout, "waiting for approval") {
		t.Fatalf("show: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

func TestApproveRunsOnlyTheReviewedArguments(t *testing.T) {
	dir := writeTree(t, map[string]string{})
	env := home(t)
	script := writeScript(t, `{"turns":[{"tool_calls":[{"name":"Write","input":{"file_path":"a.txt","content":"reviewed\n"}}]}]}`)
	r := sema(t, dir, env, "", "run", "--model", "scripted/"+script, "--on-ask", "park", "--output-format", "json", "w")
	obj := jsonResult(t, r.stdout)
	sid, cid := obj["session_id"].(string), obj["checkpoint"].(map[string]any)["id"].(string)
	// An edit a deny rule forbids is refused, and the question stays open.
	after := writeScript(t, `{"turns":[{"text":"ok"}]}`)
	r = sema(t, dir, env, "", "approve", sid, "--checkpoint", cid, "--allow", "--edit", `{"file_path":"secret/x","content":"y"}`,
		"--disallowed-tools", "Write(secret/**)", "--model", "scripted/"+after)
	if r.code == 0 || !strings.Contains(r.stderr, "checkpoint.edit_denied") {
		t.Fatalf("denied edit: exit %d %s", r.code, r.stderr)
	}
	// A config the resume would refuse is refused before the claim.
	r = sema(t, dir, env, "", "approve", sid, "--checkpoint", cid, "--allow", "--permission-mode", "yolo", "--model", "scripted/"+after)
	if r.code != 2 || !strings.Contains(r.stderr, "config.permission_mode_invalid") {
		t.Fatalf("refused config: exit %d %s", r.code, r.stderr)
	}
	r = sema(t, dir, env, "", "approve", sid, "--checkpoint", cid, "--allow", "--model", "scripted/"+after)
	if r.code != 0 {
		t.Fatalf("approve: %d %s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "reviewed\n" {
		t.Fatalf("a.txt = %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "secret")); !os.IsNotExist(err) {
		t.Fatal("a refused edit ran")
	}
}

func TestResumeContinueForkAndRewind(t *testing.T) {
	dir := writeTree(t, map[string]string{"notes.txt": "v0\n"})
	env := home(t)
	one := writeScript(t, `{"turns":[
		{"tool_calls":[{"name":"Read","input":{"file_path":"notes.txt"}}]},
		{"tool_calls":[{"name":"Edit","input":{"file_path":"notes.txt","old_string":"v0","new_string":"v1"}}]},
		{"tool_calls":[{"name":"Write","input":{"file_path":"new.txt","content":"made in turn 3\n"}}]},
		{"text":"first leg done"}]}`)
	r := sema(t, dir, env, "", "run", "--model", "scripted/"+one, "--permission-mode", "acceptEdits", "--output-format", "json", "edit notes")
	if r.code != 0 {
		t.Fatalf("exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	sid := jsonResult(t, r.stdout)["session_id"].(string)
	if b, _ := os.ReadFile(filepath.Join(dir, "notes.txt")); string(b) != "v1\n" {
		t.Fatalf("notes.txt = %q", b)
	}

	// --continue picks this root's newest session; the turns go on from 5.
	two := writeScript(t, `{"turns":[{"text":"second leg"}]}`)
	r = sema(t, dir, env, "", "run", "--model", "scripted/"+two, "--continue", "--output-format", "json", "and now?")
	if r.code != 0 || jsonResult(t, r.stdout)["session_id"] != sid {
		t.Fatalf("continue: %d %s %s", r.code, r.stdout, r.stderr)
	}
	r = sema(t, dir, env, "", "sessions", "show", sid)
	if !strings.Contains(r.stdout, "[turn 5]") || !strings.Contains(r.stdout, "and now?") {
		t.Fatalf("show after continue:\n%s", r.stdout)
	}

	// A fork is a new session with the same conversation.
	r = sema(t, dir, env, "", "run", "--model", "scripted/"+two, "--resume", sid, "--fork-session", "--output-format", "json", "forked")
	fork := jsonResult(t, r.stdout)["session_id"].(string)
	if r.code != 0 || fork == sid {
		t.Fatalf("fork: %d %s", r.code, r.stderr)
	}
	r = sema(t, dir, env, "", "sessions", "list")
	if !strings.Contains(r.stdout, sid) || !strings.Contains(r.stdout, fork) {
		t.Fatalf("list:\n%s", r.stdout)
	}

	// Rewind the files to the start of turn 2 (before the edit): a dry run first.
	r = sema(t, dir, env, "", "rewind", sid, "--to", "2", "--files", "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "notes.txt") || !strings.Contains(r.stdout, "new.txt") {
		t.Fatalf("dry run: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "notes.txt")); string(b) != "v1\n" {
		t.Fatal("a dry run changed a file")
	}
	r = sema(t, dir, env, "", "rewind", sid, "--to", "2", "--files")
	if r.code != 0 {
		t.Fatalf("rewind: %d %s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "notes.txt")); string(b) != "v0\n" {
		t.Fatalf("notes.txt after rewind = %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "new.txt")); !os.IsNotExist(err) {
		t.Fatal("new.txt survived the rewind")
	}
}

// TestCrashLeavesWholeFilesAndAResumableSession kills sema with SIGKILL at random
// moments while it writes many files, then checks that every file holds either its old
// or its new bytes, that the transcript is readable, and that a resume continues.
func TestCrashLeavesWholeFilesAndAResumableSession(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes repeatedly")
	}
	dir := t.TempDir()
	// A killed run leaves its session's lease behind; a short one lets the resume at the
	// end (--wait) take the session over within a second.
	env := append(home(t), "SEMA_SESSION_LEASE=1s")
	const files = 30
	oldBody := strings.Repeat("old line\n", 2000)
	newBody := strings.Repeat("new line\n", 2000)
	var calls []string
	for i := range files {
		name := fmt.Sprintf("f%02d.txt", i)
		os.WriteFile(filepath.Join(dir, name), []byte(oldBody), 0o644)
		calls = append(calls, fmt.Sprintf(`{"name":"Read","input":{"file_path":%q}}`, name))
		calls = append(calls, fmt.Sprintf(`{"name":"Write","input":{"file_path":%q,"content":%q}}`, name, newBody))
	}
	var turns []string
	for _, c := range calls {
		turns = append(turns, `{"tool_calls":[`+c+`]}`)
	}
	turns = append(turns, `{"text":"all written"}`)
	script := writeScript(t, `{"turns":[`+strings.Join(turns, ",")+`]}`)
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 5 {
		cmd := exec.Command(semaBin, "run", "--model", "scripted/"+script, "--permission-mode", "bypassPermissions", "--output-format", "json", "rewrite")
		cmd.Dir = dir
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}, env...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			// The first kill comes after the first write landed, so a session exists
			// whatever the machine's speed; the later ones come at random moments.
			waitFor(t, func() bool {
				b, _ := os.ReadFile(filepath.Join(dir, "f00.txt"))
				return string(b) == newBody
			})
		}
		time.Sleep(time.Duration(5+rng.IntN(60)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		for i := range files {
			b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("f%02d.txt", i)))
			if err != nil || (string(b) != oldBody && string(b) != newBody) {
				t.Fatalf("round %d: f%02d.txt is torn (%d bytes, err %v)", round, i, len(b), err)
			}
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".tmp") {
				t.Logf("round %d: a temporary file was left behind: %s", round, e.Name())
			}
		}
	}
	// The newest session is readable and a resume continues it.
	r := sema(t, dir, env, "", "sessions", "list")
	if r.code != 0 {
		t.Fatalf("list after crashes: %d %s", r.code, r.stderr)
	}
	more := writeScript(t, `{"turns":[{"text":"resumed fine"}]}`)
	r = sema(t, dir, env, "", "run", "--model", "scripted/"+more, "--continue", "--wait", "--output-format", "json", "carry on")
	if r.code != 0 {
		t.Fatalf("resume after crash: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var obj map[string]any
	json.Unmarshal([]byte(r.stdout), &obj)
	if obj["result"] != "resumed fine" {
		t.Fatalf("resume result %v", obj)
	}
}

// waitFor polls cond for up to 30 seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestTwoResumesAtOnce: while one `sema run --resume` is continuing a session, a second
// exits 5 (session.busy) without touching it, printing the result object json asked
// for, and a third with --wait runs once the first is done.
func TestTwoResumesAtOnce(t *testing.T) {
	dir := writeTree(t, map[string]string{"README.md": "hi\n"})
	env := home(t)
	first := writeScript(t, `{"turns":[{"text":"hello"}]}`)
	r := sema(t, dir, env, "", "run", "--model", "scripted/"+first, "--output-format", "json", "start")
	if r.code != 0 {
		t.Fatalf("first run: %d %s", r.code, r.stderr)
	}
	var obj map[string]any
	json.Unmarshal([]byte(r.stdout), &obj)
	id, _ := obj["session_id"].(string)

	slow := writeScript(t, `{"turns":[
		{"tool_calls":[{"name":"Bash","input":{"command":"touch started && sleep 2"}}]},
		{"text":"slow done"}]}`)
	cmd := exec.Command(semaBin, "run", "--model", "scripted/"+slow, "--permission-mode", "bypassPermissions",
		"--resume", id, "--output-format", "json", "slow")
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	var slowOut bytes.Buffer
	cmd.Stdout = &slowOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		_, err := os.Stat(filepath.Join(dir, "started"))
		return err == nil
	})

	quick := writeScript(t, `{"turns":[{"text":"quick done"}]}`)
	r = sema(t, dir, env, "", "run", "--model", "scripted/"+quick, "--resume", id, "--output-format", "json", "quick")
	// Under json, the result object with the code: a program never reads an empty stdout.
	if r.code != 5 || !strings.Contains(r.stderr, "session.busy") || resultCode(r.stdout) != "session.busy" || !strings.Contains(r.stdout, `"status":"error"`) {
		t.Fatalf("second resume while the first runs: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	r = sema(t, dir, env, "", "run", "--model", "scripted/"+quick, "--resume", id, "--wait", "--output-format", "json", "quick")
	if r.code != 0 {
		t.Fatalf("resume with --wait: exit %d %s", r.code, r.stderr)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the slow resume: %v\n%s", err, slowOut.String())
	}
	// The waiting resume ran after the slow one: its leg comes last.
	r = sema(t, dir, env, "", "sessions", "show", id)
	if r.code != 0 || strings.Index(r.stdout, "slow done") < 0 || strings.Index(r.stdout, "slow done") > strings.Index(r.stdout, "quick done") {
		t.Fatalf("transcript order:\n%s", r.stdout)
	}
}
