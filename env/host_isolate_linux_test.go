//go:build linux

package env_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sema-agent/sema/env"
)

// statFields are the fields of /proc/<pid>/stat after the command name: state, ppid,
// pgrp, session, tty_nr, …
func statFields(t *testing.T, line string) []string {
	t.Helper()
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		t.Fatalf("not a stat line: %q", line)
	}
	f := strings.Fields(line[i+1:])
	if len(f) < 5 {
		t.Fatalf("not a stat line: %q", line)
	}
	return f
}

// ttyProbe prints the stat line of a child of the shell (in its group and session), then TTY-OPEN if it can open its controlling
// terminal.
const ttyProbe = `cat /proc/self/stat; (exec 3</dev/tty) 2>/dev/null && echo TTY-OPEN; true`

// A command must have no controlling terminal, or it could push keystrokes into the
// terminal sema runs in (TIOCSTI) or read and write it through /dev/tty. The test binary
// runs itself again under a pseudo-terminal that is its controlling terminal; there, a
// child started plainly has the terminal (the calibration), one the host starts does not.
func TestHostStartsEveryProgramInASessionOfItsOwn(t *testing.T) {
	if os.Getenv("SEMA_ENV_UNDER_PTY") != "" {
		underPty(t)
		return
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skipf("python3 is needed to give the test a controlling terminal: %v", err)
	}
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-c", "import os, pty, sys; sys.exit(os.waitstatus_to_exitcode(pty.spawn(sys.argv[1:])))",
		bin, "-test.run", "^TestHostStartsEveryProgramInASessionOfItsOwn$", "-test.v")
	cmd.Env = append(os.Environ(), "SEMA_ENV_UNDER_PTY=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") || strings.Contains(string(out), "--- SKIP") {
		t.Fatalf("the run under a terminal: %v\n%s", err, out)
	}
}

func underPty(t *testing.T) {
	self, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	if statFields(t, string(self))[4] == "0" {
		t.Fatal("the run under a terminal has no controlling terminal")
	}
	// Calibration: a child that stays in this session has the terminal.
	plain, err := exec.Command("sh", "-c", ttyProbe).Output()
	if err != nil {
		t.Fatal(err)
	}
	if f := statFields(t, string(plain)); f[4] == "0" || !strings.Contains(string(plain), "TTY-OPEN") {
		t.Fatalf("calibration: a plain child has no terminal: %q", plain)
	}
	for _, iso := range []env.Isolation{{}, {PID: true}} {
		var out bytes.Buffer
		p := start(t, env.ExecRequest{Argv: []string{"sh", "-c", ttyProbe}, Stdout: &out, Stderr: &out, Isolate: iso})
		if st := finish(t, p); st.Code != 0 {
			t.Fatalf("%+v: exit %+v: %q", iso, st, out.String())
		}
		f := statFields(t, out.String())
		pid := strconv.Itoa(p.PID())
		if f[2] != pid || f[3] != pid {
			t.Fatalf("%+v: pgrp %s and session %s, want both the pid %s", iso, f[2], f[3], pid)
		}
		if f[4] != "0" || strings.Contains(out.String(), "TTY-OPEN") {
			t.Fatalf("%+v: the program has a controlling terminal: %q", iso, out.String())
		}
	}
}

// alive lists the live processes whose command line holds mark.
func alive(mark string) []string {
	ents, _ := os.ReadDir("/proc")
	var pids []string
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cl, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cl, []byte(mark)) {
			continue
		}
		if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && len(st) > i+2 && (st[i+2] == 'Z' || st[i+2] == 'X') {
				continue
			}
		}
		pids = append(pids, e.Name())
	}
	return pids
}

// In a PID namespace the program is its init; when it ends, the kernel kills every process
// left in the namespace, also those that left its group and session. Without one, its
// reaper ends them before Wait returns. Started plainly (the calibration), they live on.
func TestHostPIDNamespaceEndsWhatTheProgramLeft(t *testing.T) {
	if _, err := exec.LookPath("pgrep"); err != nil {
		t.Skipf("pgrep (procps) is needed to see the program's children start: %v", err)
	}
	if os.Geteuid() != 0 {
		if err := exec.Command("unshare", "--user", "--pid", "--fork", "true").Run(); err != nil {
			t.Skipf("no PID namespace for an unprivileged user here: %v", err)
		}
	}
	script := func(mark string) string {
		// The script's own command line must not match: the mark is put together in it.
		return `m=` + mark + `; setsid sleep $m & (sleep $m &) ; nohup sleep $m >/dev/null 2>&1 & disown
			# All three run before the program ends.
			until [ "$(pgrep -xfc "sleep $m")" -ge 3 ]; do sleep 0.01; done; echo $$`
	}
	// Calibration: started plainly, in a session of its own, and its group killed as the
	// shell tools kill it, the one in a session of its own lives on.
	mark := fmt.Sprintf("31%d.%d", time.Now().UnixNano()%1e6, os.Getpid())
	plain := exec.Command("bash", "-c", script(mark))
	plain.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := plain.Run(); err != nil {
		t.Fatalf("calibration: %v", err)
	}
	syscall.Kill(-plain.Process.Pid, syscall.SIGKILL)
	for env.GroupAlive(plain.Process.Pid) {
		time.Sleep(time.Millisecond)
	}
	escaped := alive("sleep\x00" + mark)
	for _, pid := range escaped {
		if n, err := strconv.Atoi(pid); err == nil {
			syscall.Kill(n, syscall.SIGKILL)
		}
	}
	if len(escaped) != 1 {
		t.Fatalf("calibration: %d escaped sleeps were alive after the group was killed, want 1", len(escaped))
	}
	// Mount and network namespaces without a PID one (a sandbox where the kernel gives no
	// PID namespace) run below the reaper, inside the namespaces, as a plain start does.
	for _, iso := range []env.Isolation{{}, {Mount: true, Network: true}, {PID: true}} {
		pidNS := iso.PID
		mark := fmt.Sprintf("31%d.%d", time.Now().UnixNano()%1e6, os.Getpid())
		script := script(mark)
		var out bytes.Buffer
		p := start(t, env.ExecRequest{Argv: []string{"bash", "-c", script}, Stdout: &out, Stderr: &out, Isolate: iso})
		st, err := p.Wait()
		if err != nil {
			t.Fatal(err)
		}
		// Right after the program's exit, before anyone signals anything.
		left := alive("sleep\x00" + mark)
		// What the shell tools do next: kill the group, wait until it is gone.
		p.Signal(syscall.SIGKILL)
		for env.GroupAlive(p.PID()) {
			time.Sleep(time.Millisecond)
		}
		p.Close()
		escaped := alive("sleep\x00" + mark)
		for _, pid := range escaped {
			if n, err := strconv.Atoi(pid); err == nil {
				syscall.Kill(n, syscall.SIGKILL)
			}
		}
		if st.Code != 0 {
			t.Fatalf("%+v: exit %+v: %q", iso, st, out.String())
		}
		if pidNS && strings.TrimSpace(out.String()) != "1" {
			t.Fatalf("the program is not its namespace's init: $$ is %q", out.String())
		}
		if len(left) != 0 || len(escaped) != 0 {
			t.Fatalf("%+v: processes the program left are alive after it ended: %v, and after its group was killed: %v", iso, left, escaped)
		}
	}
}
