package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// `sema approve` killed with SIGKILL while the approved Bash command runs: no process of
// the command outlives it, and the next run of the session tells the model the call may
// have run — never that it was not run, which would invite running it twice.
func TestKilledApproveLeavesNoProcessAndNoFalseNotRun(t *testing.T) {
	for _, sandboxMode := range []string{"off", "auto"} {
		t.Run("sandbox "+sandboxMode, func(t *testing.T) { killedApprove(t, sandboxMode) })
	}
}

func killedApprove(t *testing.T, sandboxMode string) {
	dir := writeTree(t, map[string]string{"README.md": "hi\n"})
	env := append(home(t), "SEMA_SESSION_LEASE=1s")
	pidFile := filepath.Join(dir, "cmd.pid") // inside the root: the sandbox lets nothing write elsewhere
	// The command says it started, then becomes a sleep with a duration no other process
	// has: the test finds it by that in /proc, since a confined command's own $$ is its pid
	// in a PID namespace of its own, not the machine's.
	marker := "299." + strconv.FormatInt(time.Now().UnixNano()%1_000_000_000, 10)
	cmdText := "sh -c 'echo started > " + pidFile + "; exec sleep " + marker + "'"
	in, _ := json.Marshal(cmdText)
	script := writeScript(t, `{"turns":[{"tool_calls":[{"name":"Bash","input":{"command":`+string(in)+`}}]},{"text":"done"}]}`)
	r := sema(t, dir, env, "", "run", "--model", "scripted/"+script, "--on-ask", "park", "--sandbox", sandboxMode, "--output-format", "json", "sleep")
	if r.code != 3 {
		t.Fatalf("park: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var parked map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &parked); err != nil {
		t.Fatal(err)
	}
	sid := parked["session_id"].(string)
	cid := parked["checkpoint"].(map[string]any)["id"].(string)

	approve := exec.Command(semaBin, "approve", sid, "--checkpoint", cid, "--allow", "--model", "scripted/"+script, "--sandbox", sandboxMode)
	approve.Dir = dir
	approve.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	if err := approve.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	for deadline := time.Now().Add(20 * time.Second); pid == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			approve.Process.Kill()
			t.Fatal("the approved command never started")
		}
		if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
			pid = findProcess(t, "sleep\x00"+marker+"\x00")
		}
	}
	approve.Process.Signal(syscall.SIGKILL)
	approve.Wait()
	gone := false
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err != nil || strings.Contains(string(b), ") Z ") {
			gone = true
			break
		}
	}
	if !gone {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the approved command (pid %d) outlived the killed sema approve", pid)
	}

	// The next run waits out the dead process's lease and tells the truth about the call.
	after := writeScript(t, `{"turns":[{"text":"checked"}]}`)
	r = sema(t, dir, env, "", "run", "--resume", sid, "--wait", "--model", "scripted/"+after, "--sandbox", sandboxMode, "go on")
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	show := sema(t, dir, env, "", "sessions", "show", sid)
	if strings.Contains(show.stdout, "was not run") || !strings.Contains(show.stdout, "may have run") {
		t.Fatalf("the transcript does not say the killed call may have run:\n%s", show.stdout)
	}
}

// findProcess is the machine's pid of the process whose command line is cmdline (NUL
// separated, as /proc shows it), 0 while there is none.
func findProcess(t *testing.T, cmdline string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && string(b) == cmdline {
			return pid
		}
	}
	return 0
}
