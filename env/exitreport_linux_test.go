//go:build linux

package env_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sema-agent/sema/env"
)

// lingerEnv makes this test binary a program that writes its value as its exit report
// (nothing when empty), then lives on a while and exits 9: a helper tearing its
// namespaces down after it reported.
const lingerEnv = "SEMA_ENV_TEST_LINGER"

func linger(report string) {
	if fd, err := strconv.Atoi(os.Getenv(env.ExitReportEnv)); err == nil && report != "" {
		unix.Write(fd, []byte(report))
	}
	time.Sleep(400 * time.Millisecond)
	os.Exit(9)
}

func startLinger(t *testing.T, report string) env.Process {
	t.Helper()
	p, err := env.NewHost().Start(context.Background(), env.ExecRequest{
		Argv:        []string{"/proc/self/exe"},
		Dir:         t.TempDir(),
		Env:         []string{lingerEnv + "=" + report},
		Isolate:     env.Isolation{PID: true},
		ReportsExit: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// A program's report is its end: Wait returns it while the program still lives (its
// teardown is not waited for), the group counts as gone from then on, and the program
// is reaped once it exits.
func TestExitReportEndsTheWait(t *testing.T) {
	if !canIsolate(t) {
		t.Skip("this machine cannot make namespaces for a program")
	}
	p := startLinger(t, "e3")
	st, err := p.Wait()
	if err != nil || st != (env.ExitStatus{Code: 3}) {
		t.Fatalf("Wait: %+v %v, want the reported exit 3", st, err)
	}
	if !env.GroupAlive(p.PID()) {
		t.Fatal("the program was gone when Wait returned: the test cannot tell a report from an exit")
	}
	if err := p.Signal(0); !errors.Is(err, env.ErrProcessDone) {
		t.Errorf("Signal after the report: %v, want ErrProcessDone", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := env.ReadProcStat(strconv.Itoa(p.PID()))
		if err != nil {
			break // reaped: no /proc entry left
		}
		if time.Now().After(deadline) {
			t.Fatal("the program was never reaped after its report")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Without a report — none written, or one that does not read — Wait waits for the
// program's own exit and returns it.
func TestExitWithoutReport(t *testing.T) {
	if !canIsolate(t) {
		t.Skip("this machine cannot make namespaces for a program")
	}
	for _, report := range []string{"", "x", "e", "e-1", "q7"} {
		p := startLinger(t, report)
		st, err := p.Wait()
		if err != nil || st != (env.ExitStatus{Code: 9}) {
			t.Errorf("report %q: Wait %+v %v, want the program's own exit 9", report, st, err)
		}
	}
}

// A signal's report reads as that signal.
func TestExitReportOfASignal(t *testing.T) {
	if !canIsolate(t) {
		t.Skip("this machine cannot make namespaces for a program")
	}
	p := startLinger(t, "s9")
	if st, _ := p.Wait(); st != (env.ExitStatus{Code: -1, Signal: unix.SIGKILL}) {
		t.Errorf("Wait: %+v, want killed", st)
	}
}
