package lease

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/sema-agent/sema/session"
)

// holderGone decides alone whether a busy session's holder may be taken over at once:
// each row is one answer a look at the holder's pid can give.
func TestHolderGone(t *testing.T) {
	self := process{host: "box", pid: 100, start: 5000, pidns: "4026531836", boot: "9f8e7d6c"}
	holder := func(host string, pid int, start uint64, ns string) string {
		return fmt.Sprintf("pid %d on %s, leg 0a1b2c3d (start %d, pidns %s, boot 9f8e7d6c)", pid, host, start, ns)
	}
	look := func(state procState, start uint64) func(int) (procState, uint64) {
		return func(int) (procState, uint64) { return state, start }
	}
	for _, tc := range []struct {
		name   string
		holder string
		probe  func(int) (procState, uint64)
		want   bool
	}{
		{"its pid names no process", holder("box", 42, 777, "4026531836"), look(procNone, 0), true},
		{"a zombie", holder("box", 42, 777, "4026531836"), look(procZombie, 0), true},
		{"its pid was reused", holder("box", 42, 777, "4026531836"), look(procLive, 778), true},
		{"alive (or stopped)", holder("box", 42, 777, "4026531836"), look(procLive, 777), false},
		{"cannot be looked at", holder("box", 42, 777, "4026531836"), look(procUnknown, 0), false},
		{"another machine", holder("other", 42, 777, "4026531836"), look(procNone, 0), false},
		{"another pid namespace", holder("box", 42, 777, "4026532000"), look(procNone, 0), false},
		{"a holder without its process's start", "pid 42 on box, leg 0a1b2c3d", look(procNone, 0), false},
		{"another boot, or a machine of the same name", "pid 42 on box, leg 0a1b2c3d (start 777, pidns 4026531836, boot 11111111)", look(procNone, 0), false},
		{"a holder of another kind", "another run", look(procNone, 0), false},
		{"a host with a comma", holder("box, leg 1", 42, 777, "4026531836"), look(procNone, 0), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := holderGone(tc.holder, self, tc.probe); got != tc.want {
				t.Fatalf("holderGone(%q) = %v, want %v", tc.holder, got, tc.want)
			}
		})
	}
	if holderGone(holder("box", 42, 777, "4026531836"), process{}, look(procNone, 0)) {
		t.Fatal("a process that does not know its own identity judged a holder dead")
	}
}

// The real look at a process: a live child is alive, then dead once killed and reaped;
// a holder naming this process is alive.
func TestHolderGoneRealProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process identities are read from /proc, which only Linux has")
	}
	self, ok := selfProcess()
	if !ok {
		t.Skip("/proc does not tell this process's identity here")
	}
	if holderGone(Holder(), self, probeProcess) {
		t.Fatalf("this process's own holder %q was judged dead", Holder())
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep to start: %v", err)
	}
	defer cmd.Process.Kill()
	state, start := probeProcess(cmd.Process.Pid)
	if state != procLive {
		t.Fatalf("a live child: state %v", state)
	}
	h := fmt.Sprintf("pid %d on %s, leg 0a1b2c3d (start %d, pidns %s, boot %s)", cmd.Process.Pid, self.host, start, self.pidns, self.boot)
	if holderGone(h, self, probeProcess) {
		t.Fatal("a live holder was judged dead")
	}
	reused := fmt.Sprintf("pid %d on %s, leg 0a1b2c3d (start %d, pidns %s, boot %s)", cmd.Process.Pid, self.host, start+1, self.pidns, self.boot)
	if !holderGone(reused, self, probeProcess) {
		t.Fatal("a holder whose pid another process has now was judged alive")
	}
	cmd.Process.Kill()
	cmd.Wait()
	if !holderGone(h, self, probeProcess) {
		t.Fatal("a killed holder was judged alive")
	}
}

// A session held by a dead process of this machine is taken over at once, without
// waiting and without the holder's ttl running out; a live one stays busy.
func TestDeadHolderTakenOverAtOnce(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process identities are read from /proc, which only Linux has")
	}
	self, ok := selfProcess()
	if !ok {
		t.Skip("/proc does not tell this process's identity here")
	}
	ctx := t.Context()
	st := session.NewMemory()
	s, err := st.Create(ctx, session.Session{Root: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep to start: %v", err)
	}
	defer cmd.Process.Kill()
	_, start := probeProcess(cmd.Process.Pid)
	dead := fmt.Sprintf("pid %d on %s, leg 0a1b2c3d (start %d, pidns %s, boot %s)", cmd.Process.Pid, self.host, start, self.pidns, self.boot)
	if _, err := st.AcquireLease(ctx, s.ID, dead, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := Acquire(ctx, st, s.ID, Holder(), time.Minute, false); err == nil {
		t.Fatal("the lease of a live holder was taken over")
	}
	cmd.Process.Kill()
	cmd.Wait()
	began := time.Now()
	if err := Acquire(ctx, st, s.ID, Holder(), time.Minute, false); err != nil {
		t.Fatalf("the lease of a dead holder: %v", err)
	}
	if took := time.Since(began); took > time.Second {
		t.Fatalf("the takeover took %v", took)
	}
	// A holder of another machine is never judged from here: its lease runs out.
	other := fmt.Sprintf("pid %d on %s, leg 0a1b2c3d (start %d, pidns %s, boot %s)", os.Getpid()+1, "elsewhere", 1, self.pidns, self.boot)
	s2, _ := st.Create(ctx, session.Session{Root: "/w"})
	if _, err := st.AcquireLease(ctx, s2.ID, other, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := Acquire(ctx, st, s2.ID, Holder(), time.Minute, false); err == nil {
		t.Fatal("the lease of another machine's holder was taken over")
	}
}
