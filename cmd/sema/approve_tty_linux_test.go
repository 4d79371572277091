package main

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sema-agent/sema/permission"
)

// openTerminal opens a pseudo-terminal pair; the slave is what the approver reads.
func openTerminal(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// pending is how many bytes the terminal holds typed and not yet read.
func pending(t *testing.T, f *os.File) int {
	n, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCINQ)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// syncWriter is what the person sees, written by the approver and read by the test.
type syncWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// At a terminal, an answer is to a question the person has seen: a "y" typed before the
// first question (still in the terminal), or typed while no question was open (read
// ahead by the approver), does not answer the question printed after it. Calibrated:
// without the flush and the drop, each "y" allowed the call.
func TestApproverAtATerminalIgnoresTypeAhead(t *testing.T) {
	master, slave := openTerminal(t)
	out := &syncWriter{}
	a := newTermApprover(slave, out, "/work")
	until := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s never happened; the person saw:\n%s", what, out.String())
			}
		}
	}
	ask := func() chan permission.ApprovalDecision {
		got := make(chan permission.ApprovalDecision, 1)
		go func() {
			d, _ := a.Approve(context.Background(), askReq("Write", writeInput, false))
			got <- d
		}()
		return got
	}
	questions := func() int { return strings.Count(out.String(), "Allow?") }

	master.WriteString("y\n") // typed before any question
	until("the typed line reaching the terminal", func() bool { return pending(t, slave) > 0 })
	got := ask()
	until("the first question", func() bool { return questions() == 1 })
	time.Sleep(50 * time.Millisecond) // room for a wrong answer to arrive
	master.WriteString("n\n")
	if d := <-got; d.Behavior != permission.Deny {
		t.Fatalf("first question: %+v; the y typed before it answered it", d)
	}

	master.WriteString("y\n") // typed while no question is open: read ahead
	// The approver's reader takes it from the terminal at once; were it late, the flush
	// before the question would drop it instead, and the question still not take it.
	time.Sleep(50 * time.Millisecond)
	until("the line read ahead", func() bool { return pending(t, slave) == 0 })
	got = ask()
	until("the second question", func() bool { return questions() == 2 })
	time.Sleep(50 * time.Millisecond)
	master.WriteString("n\n")
	if d := <-got; d.Behavior != permission.Deny {
		t.Fatalf("second question: %+v; the y typed before it answered it", d)
	}
	if !strings.Contains(out.String(), `"y" was typed before this question was shown`) {
		t.Errorf("the person is not told the early line was not the answer:\n%s", out.String())
	}
}
