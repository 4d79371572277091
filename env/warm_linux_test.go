//go:build linux

package env_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sema-agent/sema/env"
)

// reportEnv makes this test binary, started again by a test, a program that reports
// what it was started with (report) and exits.
const reportEnv = "SEMA_ENV_TEST_REPORT"

// started is what a program reports of how it was started.
type started struct {
	Args     []string `json:"args"`
	Env      []string `json:"env"`
	Dir      string   `json:"dir"`
	Stdin    string   `json:"stdin"`
	Marker   string   `json:"marker"`
	Init     bool     `json:"init"`
	Dumpable int      `json:"dumpable"`
	Sockets  int      `json:"sockets"`
}

// report writes, as JSON on stdout, what this process was started with, a line on
// stderr, and exits 7.
func report() {
	var s started
	s.Args = os.Args[1:]
	s.Env = os.Environ()
	slices.Sort(s.Env)
	s.Dir, _ = os.Getwd()
	in, _ := io.ReadAll(os.Stdin)
	s.Stdin = string(in)
	if path := os.Getenv("SEMA_ENV_TEST_MARKER"); path != "" {
		b, _ := os.ReadFile(path)
		s.Marker = string(b)
	}
	s.Init = os.Getpid() == 1
	s.Dumpable, _ = unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	fds, _ := os.ReadDir("/proc/self/fd")
	for _, fd := range fds {
		if to, _ := os.Readlink("/proc/self/fd/" + fd.Name()); strings.HasPrefix(to, "socket:") {
			s.Sockets++
		}
	}
	json.NewEncoder(os.Stdout).Encode(s)
	fmt.Fprint(os.Stderr, "to stderr")
	os.Exit(7)
}

// runReport starts this binary as the reporting program with isolation iso and returns
// its report, its stderr and its exit code.
func runReport(t *testing.T, iso env.Isolation, dir string, extra ...string) (started, string, int) {
	t.Helper()
	var out, errb lockedBuffer
	p, err := env.NewHost().Start(context.Background(), env.ExecRequest{
		Argv:    []string{"/proc/self/exe", "an argument", "-x"},
		Dir:     dir,
		Env:     append([]string{reportEnv + "=1", "SEMA_ENV_TEST_VAR=a value"}, extra...),
		Stdin:   strings.NewReader("the input"),
		Stdout:  &out,
		Stderr:  &errb,
		Isolate: iso,
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.Wait()
	p.Close()
	if err != nil {
		t.Fatal(err)
	}
	var s started
	if err := json.Unmarshal([]byte(out.String()), &s); err != nil {
		t.Fatalf("report %q (stderr %q): %v", out.String(), errb.String(), err)
	}
	return s, errb.String(), st.Code
}

// shapes are the isolations a spare is kept for in these tests: none (the program runs
// below the reaper) and a mount and PID namespace (as the sandbox's helper runs).
var shapes = []struct {
	name string
	iso  env.Isolation
}{
	{"reaper", env.Isolation{}},
	{"namespaces", env.Isolation{Mount: true, PID: true}},
}

// A program a spare runs is started exactly as a cold start starts it: the same
// arguments, environment (nothing of the spare's), directory, standard streams and
// exit code, and dumpable again. Calibrated by the counter: the warm run did go
// through a spare, the cold one did not.
func TestWarmStartIsAColdStart(t *testing.T) {
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			if sh.iso.Mount && !canIsolate(t) {
				t.Skip("this machine cannot make namespaces for a program")
			}
			dir := t.TempDir()
			env.WarmStart(false)
			n := env.WarmUsed()
			cold, coldErr, coldCode := runReport(t, sh.iso, dir)
			env.WarmStart(true)
			if env.WarmUsed() != n {
				t.Fatal("a spare ran a start with spares off")
			}
			runReport(t, sh.iso, dir) // leaves a spare of this shape
			n = env.WarmUsed()
			warm, warmErr, warmCode := runReport(t, sh.iso, dir)
			if env.WarmUsed() != n+1 {
				t.Fatalf("the start did not go through a spare (%d → %d)", n, env.WarmUsed())
			}
			if !slices.Equal(warm.Args, []string{"an argument", "-x"}) || warm.Dir != dir || warm.Stdin != "the input" || warmErr != "to stderr" || warmCode != 7 {
				t.Errorf("warm start: %+v stderr %q code %d", warm, warmErr, warmCode)
			}
			for _, kv := range warm.Env {
				if strings.HasPrefix(kv, "SEMA_ENV_SPARE") {
					t.Errorf("the program inherited the spare's marker: %s", kv)
				}
			}
			if warm.Dumpable != 1 || warm.Sockets != 0 {
				t.Errorf("warm start: dumpable %d, %d sockets open (the spare's must be closed)", warm.Dumpable, warm.Sockets)
			}
			if fmt.Sprint(cold) != fmt.Sprint(warm) || coldErr != warmErr || coldCode != warmCode {
				t.Errorf("cold and warm starts differ:\ncold %+v %q %d\nwarm %+v %q %d", cold, coldErr, coldCode, warm, warmErr, warmCode)
			}
		})
	}
}

// A spare refuses a directory that is not there as a cold start does, and the next
// start still works.
func TestWarmStartRefusesAMissingDirectory(t *testing.T) {
	dir := t.TempDir()
	for _, sh := range shapes {
		if sh.iso.Mount && !canIsolate(t) {
			continue
		}
		runReport(t, sh.iso, dir)
		n := env.WarmUsed()
		file := filepath.Join(dir, "file")
		os.WriteFile(file, nil, 0o644)
		for bad, want := range map[string]error{filepath.Join(dir, "gone"): syscall.ENOENT, file: syscall.ENOTDIR} {
			_, err := env.NewHost().Start(context.Background(), env.ExecRequest{Argv: []string{"/proc/self/exe"}, Dir: bad, Env: []string{reportEnv + "=1"}, Isolate: sh.iso})
			if err == nil || !strings.Contains(err.Error(), "chdir") || !errors.Is(err, want) {
				t.Errorf("%s: start in %s: %v, want chdir %v", sh.name, bad, err, want)
			}
		}
		if env.WarmUsed() != n {
			t.Errorf("%s: a refused start counted as served", sh.name)
		}
		if _, _, code := runReport(t, sh.iso, dir); code != 7 {
			t.Errorf("%s: the start after a refusal: exit %d", sh.name, code)
		}
	}
}

// A spare's mount namespace is a copy made when it started: used after a mount, it
// would not see it. So a spare older than a change of the mount table is not used.
// Calibrated: told to trust a stale spare, the program does not see the new mount.
func TestWarmStartSeesMountsMadeSince(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting in this process's namespace needs root")
	}
	if !canIsolate(t) {
		t.Skip("this machine cannot make namespaces for a program")
	}
	iso := env.Isolation{Mount: true, PID: true}
	dir := t.TempDir()
	mnt := filepath.Join(dir, "mnt")
	os.Mkdir(mnt, 0o755)
	marker := "SEMA_ENV_TEST_MARKER=" + filepath.Join(mnt, "marker")
	mountMarker := func() {
		if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=64k"); err != nil {
			t.Skipf("cannot mount a tmpfs here: %v", err)
		}
		os.WriteFile(filepath.Join(mnt, "marker"), []byte("mounted"), 0o644)
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })

	// Calibration: a spare started before the mount, trusted anyway.
	runReport(t, iso, dir) // leaves a spare
	mountMarker()
	env.WarmTrustStale(true)
	n := env.WarmUsed()
	stale, _, _ := runReport(t, iso, dir, marker)
	env.WarmTrustStale(false)
	if env.WarmUsed() != n+1 {
		t.Fatal("the calibrating start did not go through the stale spare")
	}
	if stale.Marker == "mounted" {
		t.Skip("mounts propagate into a spare's namespace here (a shared mount): a stale spare sees them, nothing to prove")
	}
	// The same with the check: the spare started before the next mount is not used.
	if err := unix.Unmount(mnt, 0); err != nil {
		t.Fatal(err)
	}
	runReport(t, iso, dir) // leaves a spare that has not seen the mount below
	mountMarker()
	n = env.WarmUsed()
	s, _, _ := runReport(t, iso, dir, marker)
	if s.Marker != "mounted" {
		t.Errorf("a program started after a mount does not see it (marker %q)", s.Marker)
	}
	if env.WarmUsed() != n {
		t.Error("a spare older than the mount served the start")
	}
	// And the spare started after the change serves the next one, and sees it.
	n = env.WarmUsed()
	if s, _, _ := runReport(t, iso, dir, marker); s.Marker != "mounted" || env.WarmUsed() != n+1 {
		t.Errorf("the fresh spare: marker %q, used %d → %d", s.Marker, n, env.WarmUsed())
	}
}

// Starts at once from many goroutines — some through the spare, most cold — each get
// their own program, streams and status.
func TestWarmStartsAtOnce(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			s, _, code := runReport(t, env.Isolation{}, dir, "SEMA_ENV_TEST_N="+strconv.Itoa(i))
			if code != 7 || !slices.Contains(s.Env, "SEMA_ENV_TEST_N="+strconv.Itoa(i)) {
				t.Errorf("start %d: exit %d, env %v", i, code, s.Env)
			}
		})
	}
	wg.Wait()
}

// A waiting spare holds nothing of this process's environment, is not dumpable, and
// dies with this process however it dies (its parent-death signal). The process is a
// child test binary killed with SIGKILL.
func TestSpareHoldsNothingAndDiesWithItsParent(t *testing.T) {
	if os.Getenv("SEMA_ENV_TEST_SPARE_PARENT") != "" {
		runReport(t, env.Isolation{}, t.TempDir()) // leaves a spare
		fmt.Println("ready")
		time.Sleep(time.Minute)
		return
	}
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "-test.run=^TestSpareHoldsNothingAndDiesWithItsParent$")
	cmd.Env = append(os.Environ(), "SEMA_ENV_TEST_SPARE_PARENT=1", "SEMA_ENV_TEST_SECRET=hunter2")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(out, buf); err != nil || string(buf) != "ready" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the parent did not get ready: %q %v", buf, err)
	}
	spare := 0
	for deadline := time.Now().Add(5 * time.Second); spare == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		spare = childNamed(cmd.Process.Pid, "sema-spare")
	}
	if spare == 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the parent has no spare")
	}
	environ, err := os.ReadFile("/proc/" + strconv.Itoa(spare) + "/environ")
	if err == nil && !bytes.Equal(bytes.TrimRight(environ, "\x00"), []byte("SEMA_ENV_SPARE=3")) {
		t.Errorf("the spare's environment: %q", environ)
	}
	if os.Getuid() != 0 && err == nil {
		t.Error("the waiting spare's environment is readable: it is dumpable")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		st, err := env.ReadProcStat(strconv.Itoa(spare))
		if err != nil || st.Gone() {
			break
		}
		if time.Now().After(deadline) {
			syscall.Kill(spare, syscall.SIGKILL)
			t.Fatal("the spare outlived its parent")
		}
	}
}

// childNamed is the pid of a child of parent whose command line starts with name; 0
// when there is none.
func childNamed(parent int, name string) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		st, err := env.ReadProcStat(e.Name())
		if err != nil || st.PPID != parent {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if bytes.HasPrefix(cmdline, []byte(name+"\x00")) {
			pid, _ := strconv.Atoi(e.Name())
			return pid
		}
	}
	return 0
}

// canIsolate reports whether a program can be started in a mount and PID namespace of
// its own here.
func canIsolate(t *testing.T) bool {
	t.Helper()
	p, err := env.NewHost().Start(context.Background(), env.ExecRequest{Argv: []string{"true"}, Dir: "/", Isolate: env.Isolation{Mount: true, PID: true}})
	if err != nil {
		t.Logf("no namespaces for a program: %v", err)
		return false
	}
	st, err := p.Wait()
	p.Close()
	return err == nil && st.Code == 0
}
