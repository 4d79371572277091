package shell

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
)

// orphanParentEnv makes the test binary act as a process running Bash through a set: it
// runs a long sleep in dir and blocks until killed.
const orphanParentEnv = "SEMA_SHELL_TEST_ORPHAN_PARENT"

func orphanParent(dir string) {
	h := env.NewHost()
	fc, err := fence.New(context.Background(), fence.Config{Env: h, Root: dir})
	if err != nil {
		os.Exit(3)
	}
	s, err := New(Config{Env: h, Fence: fc, ScratchDir: dir})
	if err != nil {
		os.Exit(4)
	}
	bash := s.Tools()[0]
	// The sleep is a child of the shell, not the shell itself: the parent-death signal
	// alone would not reach it.
	in := `{"command":"sleep 300 & echo $! > sleep.pid.tmp && mv sleep.pid.tmp sleep.pid; wait"}`
	bash.Run(context.Background(), []byte(in))
	os.Exit(5)
}

func waitGone(t *testing.T, pid int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d still runs %s after its owner died", pid, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCommandsDieWithTheProcessEvenOnSIGKILL(t *testing.T) {
	dir := tempDir(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	parent := exec.Command(self, "-test.run=^$")
	parent.Env = append(os.Environ(), orphanParentEnv+"="+dir)
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { parent.Wait(); close(exited) }()
	defer func() { parent.Process.Kill(); <-exited }()

	pidFile := filepath.Join(dir, "sleep.pid")
	var sleepPID int
	for deadline := time.Now().Add(20 * time.Second); ; {
		if b, err := os.ReadFile(pidFile); err == nil {
			if sleepPID, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
				t.Fatal(err)
			}
			break
		}
		select {
		case <-exited:
			t.Fatalf("the parent ended before starting the command: %v", parent.ProcessState)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !alive(sleepPID) {
		t.Fatal("the sleep is not running")
	}
	if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	waitGone(t, sleepPID, 5*time.Second)
}

// staleDir makes a scratch directory whose owner is dead, as a killed process leaves it.
func staleDir(t *testing.T, in, token string) string {
	t.Helper()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	d, err := os.MkdirTemp(in, scratchPrefix)
	if err != nil {
		t.Fatal(err)
	}
	owner := strconv.Itoa(dead.Process.Pid) + " " + token + " " + pidNamespace() + "\n"
	if err := os.WriteFile(filepath.Join(d, ownerFile), []byte(owner), 0o600); err != nil {
		t.Fatal(err)
	}
	return d
}

// group starts a sleep leading a process group of its own with extra in its environment,
// recorded in the scratch directory d.
func group(t *testing.T, d string, extra ...string) *exec.Cmd {
	t.Helper()
	c := exec.Command("sleep", "300")
	c.Env = append(os.Environ(), extra...)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	if err := os.WriteFile(filepath.Join(d, groupPrefix+strconv.Itoa(c.Process.Pid)), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCleanStaleKillsOnlyProvenGroupsOfDeadOwners(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("group membership is proved through /proc")
	}
	in := tempDir(t)
	stale := staleDir(t, in, "tok1")
	mine := group(t, stale, tokenEnv+"=tok1")
	// A group recorded in the stale directory whose process does not carry the token:
	// its id may have been reused by a stranger, who is never signalled.
	stranger := group(t, stale, tokenEnv+"=other")

	// A live owner's directory, a directory without an owner file and other names stay.
	live, err := os.MkdirTemp(in, scratchPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeOwner(live, "tok2"); err != nil {
		t.Fatal(err)
	}
	liveGroup := group(t, live, tokenEnv+"=tok2")
	anon, _ := os.MkdirTemp(in, scratchPrefix)
	other := filepath.Join(in, "sema-shellfish")
	os.Mkdir(other, 0o700)

	mineDone := make(chan struct{})
	go func() { mine.Wait(); close(mineDone) }()
	if n := CleanStale(in); n != 1 {
		t.Fatalf("CleanStale removed %d directories, want 1", n)
	}
	select {
	case <-mineDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the dead owner's group was not killed")
	}
	for _, c := range []*exec.Cmd{stranger, liveGroup} {
		if !alive(c.Process.Pid) {
			t.Fatalf("process %d was killed without proof it belonged to a dead set", c.Process.Pid)
		}
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the stale directory is still there: %v", err)
	}
	for _, d := range []string{live, anon, other} {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("%s was removed: %v", d, err)
		}
	}
}

func TestSetRecordsItsOwnerAndRunningGroups(t *testing.T) {
	f := newFix(t)
	// The scratch directory is made before the first command, not before.
	if _, err := os.Stat(f.set.ScratchDir()); !os.IsNotExist(err) {
		t.Fatalf("a set that ran nothing made its scratch directory: %v", err)
	}
	if r := f.call(context.Background(), NameBash, map[string]any{"command": "true"}); r.IsError {
		t.Fatal(r.TextOf())
	}
	b, err := os.ReadFile(filepath.Join(f.set.ScratchDir(), ownerFile))
	if err != nil {
		t.Fatal(err)
	}
	if fs := strings.Fields(string(b)); len(fs) != 3 || fs[0] != strconv.Itoa(os.Getpid()) || fs[1] != f.set.token {
		t.Fatalf("owner file %q", b)
	}
	res := f.call(context.Background(), NameBash, map[string]any{"command": `echo "$SEMA_SHELL_SET"; sleep 0.3; ls "` + f.set.ScratchDir() + `" | grep -c '^pg-'`})
	if got := res.TextOf(); !strings.Contains(got, f.set.token+"\n1") {
		t.Fatalf("while running, the command should carry the token and its group be recorded: %q", got)
	}
	ents, _ := os.ReadDir(f.set.ScratchDir())
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), groupPrefix) {
			t.Fatalf("%s left behind after the command ended", e.Name())
		}
	}
}
