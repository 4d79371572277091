package env_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sema-agent/sema/env"
)

// The host starts programs from one goroutine that never returns (env/host_start_linux.go).
func TestMain(m *testing.M) {
	if os.Getenv(reportEnv) != "" {
		report() // this binary started again as a program (warm_linux_test.go)
	}
	if v, ok := os.LookupEnv(lingerEnv); ok {
		linger(v) // (exitreport_linux_test.go)
	}
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/sema-agent/sema/env.startLoop"))
}

// lockedBuffer is a goroutine-safe writer.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("sink broke") }

func start(t *testing.T, req env.ExecRequest) env.Process {
	t.Helper()
	if req.Dir == "" {
		req.Dir = t.TempDir()
	}
	p, err := env.NewHost().Start(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// finish waits for p and releases it.
func finish(t *testing.T, p env.Process) env.ExitStatus {
	t.Helper()
	st, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	p.Signal(syscall.SIGKILL)
	p.Close()
	return st
}

func TestHostIsAnExecutor(t *testing.T) {
	var e env.ExecutionEnv = env.NewHost()
	if _, ok := e.(env.Executor); !ok {
		t.Fatal("the host env does not run programs")
	}
}

func TestHostStartStatusAndStreams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		script   string
		same     bool
		wantOut  string
		wantErr  string
		wantCode int
		wantSig  syscall.Signal
	}{
		{"exit code", "echo out; exit 7", true, "out\n", "", 7, 0},
		{"one stream interleaved", "echo 1; echo 2 >&2; echo 3; echo 4 >&2", true, "1\n2\n3\n4\n", "", 0, 0},
		{"two streams", "echo 1; echo 2 >&2", false, "1\n", "2\n", 0, 0},
		{"signal", "kill -TERM $$", true, "", "", -1, syscall.SIGTERM},
		{"stdin is empty", "cat; echo end", true, "end\n", "", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, errb := &lockedBuffer{}, &lockedBuffer{}
			req := env.ExecRequest{Argv: []string{"sh", "-c", tc.script}, Stdout: out, Stderr: errb}
			if tc.same {
				req.Stderr = out
			}
			p := start(t, req)
			st := finish(t, p)
			if st.Code != tc.wantCode || st.Signal != tc.wantSig {
				t.Fatalf("status %+v", st)
			}
			if out.String() != tc.wantOut || errb.String() != tc.wantErr {
				t.Fatalf("stdout %q stderr %q", out.String(), errb.String())
			}
		})
	}
}

func TestHostStartEnvAndDir(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out := &lockedBuffer{}
	p := start(t, env.ExecRequest{
		Argv: []string{"sh", "-c", `echo "$SEMA_A $SEMA_B $PWD"; pwd -P`}, Dir: dir,
		Env: []string{"SEMA_A=1", "SEMA_B=first", "SEMA_B=second"}, Stdout: out,
	})
	finish(t, p)
	if want := "1 second " + dir + "\n" + dir + "\n"; out.String() != want {
		t.Fatalf("got %q want %q", out.String(), want)
	}
}

func TestHostStartRefuses(t *testing.T) {
	t.Parallel()
	h := env.NewHost()
	tests := []struct {
		name string
		req  env.ExecRequest
	}{
		{"no program", env.ExecRequest{Dir: "/"}},
		{"relative dir", env.ExecRequest{Argv: []string{"true"}, Dir: "rel"}},
		{"missing program", env.ExecRequest{Argv: []string{"sema-no-such-program"}, Dir: "/"}},
		{"missing dir", env.ExecRequest{Argv: []string{"true"}, Dir: filepath.Join(t.TempDir(), "gone"), Stdout: &lockedBuffer{}}},
	}
	for _, tc := range tests {
		if p, err := h.Start(context.Background(), tc.req); err == nil {
			finish(t, p)
			t.Errorf("%s: started", tc.name)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Start(ctx, env.ExecRequest{Argv: []string{"true"}, Dir: "/"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: %v", err)
	}
}

func TestHostSignalReachesTheGroup(t *testing.T) {
	t.Parallel()
	d := t.TempDir()
	p := start(t, env.ExecRequest{Argv: []string{"sh", "-c", "sleep 300 & echo $! > " + d + "/child; wait"}})
	if p.PID() <= 0 {
		t.Fatalf("pid %d", p.PID())
	}
	child := readPid(t, filepath.Join(d, "child"))
	if err := p.Signal(0); err != nil {
		t.Fatalf("Signal(0) on a running group: %v", err)
	}
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	st, _ := p.Wait()
	if st.Signal != syscall.SIGKILL {
		t.Fatalf("status %+v", st)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !errors.Is(p.Signal(0), env.ErrProcessDone) {
		if time.Now().After(deadline) {
			t.Fatalf("the group's child %d is still alive", child)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !errors.Is(p.Signal(syscall.SIGTERM), env.ErrProcessDone) && !errors.Is(p.Signal(0), env.ErrProcessDone) {
		t.Fatal("signalling an empty group did not answer ErrProcessDone")
	}
	p.Close()
}

// A process that still holds the pipe does not keep Close from delivering what was
// written and returning; and one that left the group (setsid) is gone when Wait returns,
// ended by the program's reaper, as is the pipe it held.
func TestHostCloseDrainsAndStops(t *testing.T) {
	t.Parallel()
	d := t.TempDir()
	out := &lockedBuffer{}
	p := start(t, env.ExecRequest{Argv: []string{"sh", "-c", "echo written; exec sleep 300"}, Stdout: out, Stderr: out})
	for deadline := time.Now().Add(20 * time.Second); out.String() == ""; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("nothing was written")
		}
	}
	p.Close()
	if out.String() != "written\n" {
		t.Fatalf("output %q", out.String())
	}
	p.Signal(syscall.SIGKILL)
	p.Wait()

	out = &lockedBuffer{}
	p = start(t, env.ExecRequest{
		Argv:   []string{"sh", "-c", "setsid sh -c 'echo $$ > " + d + "/escapee; exec sleep 300' & while [ ! -s " + d + "/escapee ]; do sleep 0.01; done; echo written"},
		Stdout: out, Stderr: out,
	})
	escapee := readPid(t, filepath.Join(d, "escapee"))
	defer syscall.Kill(escapee, syscall.SIGKILL)
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(escapee, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the process that left the group outlived the program: kill 0: %v", err)
	}
	p.Close()
	if out.String() != "written\n" {
		t.Fatalf("output %q", out.String())
	}
	// Nothing is delivered after Close.
	p.Close()
}

func TestHostFailingWriterDoesNotBlock(t *testing.T) {
	t.Parallel()
	p := start(t, env.ExecRequest{Argv: []string{"sh", "-c", "head -c 1000000 /dev/zero; echo done >&2"}, Stdout: failingWriter{}, Stderr: failingWriter{}})
	if st := finish(t, p); st.Code != 0 {
		t.Fatalf("status %+v", st)
	}
}

func readPid(t *testing.T, p string) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := os.ReadFile(p)
		if err == nil && bytes.HasSuffix(b, []byte("\n")) {
			n, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", p)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestHostStartStdin(t *testing.T) {
	var out lockedBuffer
	p := start(t, env.ExecRequest{Argv: []string{"sh", "-c", "cat; echo done"}, Stdin: strings.NewReader(`{"a":1}`), Stdout: &out})
	if st := finish(t, p); st.Code != 0 {
		t.Fatalf("status %+v", st)
	}
	if got := out.String(); got != "{\"a\":1}done\n" {
		t.Fatalf("stdout %q", got)
	}
}

// A program that never reads a large input exits, and its exit is reported, although
// the input was not consumed.
func TestHostStartStdinNotRead(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 4<<20)
	p := start(t, env.ExecRequest{Argv: []string{"true"}, Stdin: bytes.NewReader(big)})
	done := make(chan env.ExitStatus, 1)
	go func() { done <- finish(t, p) }()
	select {
	case st := <-done:
		if st.Code != 0 {
			t.Fatalf("status %+v", st)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the exit of a program that did not read its input was not reported")
	}
}

// A program that leaves a child holding its input open, unread, is still released by
// Close: the feeding stops.
func TestHostStartStdinHeldByChild(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 4<<20)
	p := start(t, env.ExecRequest{Argv: []string{"sh", "-c", "sleep 30 <&0 & exit 0"}, Stdin: bytes.NewReader(big)})
	defer p.Signal(syscall.SIGKILL)
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return while a child held the unread input")
	}
}
