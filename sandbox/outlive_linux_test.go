//go:build linux

package sandbox_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/sandbox"
)

// livingWith lists the live processes (not zombies) whose command line holds mark.
func livingWith(mark string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
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
		pids = append(pids, pid)
	}
	return pids
}

// runPlain runs script under bash started plainly by os/exec, in a session of its own
// (as the host starts a program) but with no reaper above it, and returns how it ended
// and its output.
func runPlain(t *testing.T, dir, script string, extra ...string) (env.ExitStatus, string) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command("bash", "--noprofile", "--norc", "-c", script)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, append(os.Environ(), extra...), &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.WaitDelay = time.Second // a tree that kept the output open does not hold the test
	err := cmd.Run()
	st := env.ExitStatus{Code: cmd.ProcessState.ExitCode()}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		st.Signal = ws.Signal()
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) && !errors.Is(err, exec.ErrWaitDelay) {
		t.Fatal(err)
	}
	return st, out.String()
}

// Nothing a command starts outlives it: each case leaves a process behind that writes a
// file into the write root a second after the command returned. Started plainly, the
// file appears (the process escaped the command's end: the calibration); unconfined
// through the host, the command's reaper ends every process below it before Wait
// returns; confined, the helper is the init of the command's PID namespace and its end
// takes every process of the namespace with it. Either way no process of the tree is
// alive when the command has returned, and 3.5 s later the file is not there.
func TestNothingOutlivesTheCommand(t *testing.T) {
	k := kernel(t)
	whoami(t)
	// $D is a delay unique to the case (its mark on every command line of the tree); the
	// late writer says it started ($ROOT/started), then writes $ROOT/late. Each script
	// waits (a few seconds at most) until the tree has started, so a confined run in which
	// it never started — nothing to outlive — fails instead of passing.
	const late = `echo > "$ROOT/started"; sleep $D; echo late > "$ROOT/late"`
	const awaitStart = "\n" + `i=0; while [ ! -e "$ROOT/started" ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done`
	cases := []procCase{
		{name: "setsid", needs: []string{"setsid"}, script: `setsid sh -c '` + late + `' >/dev/null 2>&1 &`},
		{name: "setsid --fork", needs: []string{"setsid"}, script: `setsid -f sh -c '` + late + `' >/dev/null 2>&1`},
		{name: "double fork", script: `( (sh -c '` + late + `' &) & ) >/dev/null 2>&1`},
		{name: "nohup", needs: []string{"nohup"}, script: `nohup sh -c '` + late + `' >/dev/null 2>&1 &`},
		{name: "disown", script: `sh -c '` + late + `' >/dev/null 2>&1 & disown`},
		{name: "trap every signal", script: `sh -c 'trap "" HUP INT TERM QUIT; ` + late + `' >/dev/null 2>&1 &`},
		{name: "a daemon through python", needs: []string{"python3"},
			script: `python3 -c '
import os, sys, time
if os.fork(): sys.exit(0)
os.setsid()
if os.fork(): os._exit(0)
for fd in (0, 1, 2): os.close(fd)
open(os.path.join(os.environ["ROOT"], "started"), "w").write("")
time.sleep(float(os.environ["D"]))
open(os.path.join(os.environ["ROOT"], "late"), "w").write("late")
' "$D"`},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for _, n := range c.needs {
				if _, err := exec.LookPath(n); err != nil {
					t.Skipf("%s is not installed: %v", n, err)
				}
			}
			// plain: bash started by os/exec, no reaper (the calibration: the tree
			// escapes); host: unconfined through the host, whose reaper ends the tree
			// before Wait returns; confined: the helper as init of a PID namespace.
			for _, mode := range []string{"plain", "host", "confined"} {
				confined := mode == "confined"
				// The delay is a little over three seconds and unique: it marks the tree.
				// It is long enough that a command slow to return under load has returned
				// before the late write is due.
				mark := fmt.Sprintf("3.%d%05d%d", i, os.Getpid()%100000, time.Now().UnixNano()%1000)
				w := newWorld(t, nil)
				var kp *sandbox.Kernel
				if confined {
					kp = &k
				}
				lateFile := filepath.Join(w.root, "late")
				var st env.ExitStatus
				var out string
				if mode == "plain" {
					st, out = runPlain(t, w.root, c.script+awaitStart, "D="+mark, "ROOT="+w.root)
				} else {
					st, out = runScript(t, kp, policyFor(w), w.root, c.script+awaitStart, "D="+mark, "ROOT="+w.root)
				}
				returned := time.Now()
				alive := livingWith(mark)
				if exists(lateFile) {
					t.Fatalf("the late write happened before the command returned (%+v, %q): the case proves nothing at this load", st, out)
				}
				t.Cleanup(func() {
					for _, pid := range livingWith(mark) {
						syscall.Kill(pid, syscall.SIGKILL)
					}
				})
				if mode == "plain" {
					// Calibration: the tree outlived the command and does write.
					deadline := returned.Add(20 * time.Second)
					for !exists(lateFile) {
						if time.Now().After(deadline) {
							t.Fatalf("calibration: nothing was written after the command returned (%+v, %q; alive then: %v)", st, out, alive)
						}
						time.Sleep(20 * time.Millisecond)
					}
					continue
				}
				if st.Code == sandbox.HelperFailed || strings.Contains(out, "sema sandbox:") {
					t.Fatalf("the helper did not run the command: %q", out)
				}
				if !exists(filepath.Join(w.root, "started")) {
					t.Fatalf("the command's tree never started, so nothing was tried: %+v %q", st, out)
				}
				if len(alive) > 0 {
					t.Errorf("processes of the command's tree are alive after it returned: %v", alive)
				}
				time.Sleep(time.Until(returned.Add(3500 * time.Millisecond)))
				if exists(lateFile) {
					t.Fatalf("a process of the command's tree wrote after the command returned")
				}
				if alive := livingWith(mark); len(alive) > 0 {
					t.Fatalf("processes of the command's tree are alive 3.5 s after it returned: %v", alive)
				}
			}
		})
	}
}

// The helper as init reports the command's end as the command ended: its exit code, a
// SIGKILL as a SIGKILL (the Bash tool says "ended by signal 9 (killed)"), another signal
// as a shell reports it, 128 plus the signal. Unconfined (the calibration) the shell
// itself is what ends.
func TestInitReportsHowTheCommandEnded(t *testing.T) {
	k := kernel(t)
	whoami(t)
	w := newWorld(t, nil)
	p := policyFor(w)
	cases := []struct {
		script     string
		plain, got env.ExitStatus
	}{
		{`exit 0`, env.ExitStatus{Code: 0}, env.ExitStatus{Code: 0}},
		{`exit 7`, env.ExitStatus{Code: 7}, env.ExitStatus{Code: 7}},
		{`exit 137`, env.ExitStatus{Code: 137}, env.ExitStatus{Code: 137}},
		{`kill -KILL $$`, env.ExitStatus{Code: -1, Signal: syscall.SIGKILL}, env.ExitStatus{Code: -1, Signal: syscall.SIGKILL}},
		{`sleep 100 & kill -KILL $!; wait $!; exit $?`, env.ExitStatus{Code: 137}, env.ExitStatus{Code: 137}},
		{`kill -TERM $$`, env.ExitStatus{Code: -1, Signal: syscall.SIGTERM}, env.ExitStatus{Code: 128 + 15}},
		{`kill -USR1 $$`, env.ExitStatus{Code: -1, Signal: syscall.SIGUSR1}, env.ExitStatus{Code: 128 + 10}},
	}
	for _, c := range cases {
		if st, out := runScript(t, nil, p, w.root, c.script); st != c.plain {
			t.Fatalf("calibration %q: %+v, want %+v (%q)", c.script, st, c.plain, out)
		}
		if st, out := runScript(t, &k, p, w.root, c.script); st != c.got {
			t.Errorf("%q: %+v, want %+v (%q)", c.script, st, c.got, out)
		}
	}
}

// The init reaps the orphans the kernel hands it (else each stays a zombie for the
// command's whole run), and survives the signals that end a Go program when they are
// sent to it alone; one sent to the group reaches the command as before, and one the
// command no longer shares a group with is handed on to it.
func TestInitReapsAndSurvivesSignals(t *testing.T) {
	k := kernel(t)
	whoami(t)
	w := newWorld(t, nil)
	p := policyFor(w)
	ready, goOn := filepath.Join(w.root, "ready"), filepath.Join(w.root, "go")

	// Twenty orphans, each ending at once; the command waits for the test.
	pr, out := startScript(t, &k, p, w.root, `for i in $(seq 20); do (true &); done; echo > ready; until [ -e go ]; do sleep 0.02; done; echo finished; exit 5`)
	waitFor := func(f string) {
		deadline := time.Now().Add(20 * time.Second)
		for !exists(f) {
			if time.Now().After(deadline) {
				pr.Signal(syscall.SIGKILL)
				t.Fatalf("%s never appeared: %q", filepath.Base(f), out.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor(ready)
	zombies := func() int {
		n := 0
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
			if err != nil {
				continue
			}
			i := bytes.LastIndexByte(b, ')')
			f := bytes.Fields(b[i+1:])
			if len(f) > 1 && string(f[0]) == "Z" && string(f[1]) == strconv.Itoa(pr.PID()) {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(10 * time.Second)
	for zombies() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d orphans stay unreaped", zombies())
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGPIPE} {
		if err := syscall.Kill(pr.PID(), sig); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(goOn, nil, 0o644)
	st, err := pr.Wait()
	pr.Close()
	if err != nil || st.Code != 5 || !strings.Contains(out.String(), "finished") {
		t.Fatalf("the init did not survive the signals sent to it alone: %+v %v %q", st, err, out.String())
	}

	// A command that left the group: the group's SIGTERM reaches only the init, which
	// hands it on.
	os.Remove(ready)
	pr, out = startScript(t, &k, p, w.root, `exec setsid bash -c 'trap "echo handed-on; exit 6" TERM; echo > ready; while :; do sleep 0.02; done'`)
	waitFor(ready)
	if err := pr.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			pr.Signal(syscall.SIGKILL)
		}
	}()
	st, err = pr.Wait()
	close(done)
	pr.Close()
	if err != nil || st.Code != 6 || !strings.Contains(out.String(), "handed-on") {
		t.Fatalf("the group's SIGTERM did not reach the command that left the group: %+v %v %q", st, err, out.String())
	}
}
