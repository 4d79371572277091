package lease

import (
	"fmt"
	"os/exec"
	"runtime"
	"testing"
)

// A holder's process is the process Process names; another process's, or text no
// leg wrote, is not.
func TestHolderProcess(t *testing.T) {
	if got := HolderProcess(Holder()); got != Process() {
		t.Fatalf("HolderProcess(%q) = %q, want %q", Holder(), got, Process())
	}
	if got := HolderProcess("pid 12 on h, leg 0a1b2c3d"); got != "pid 12 on h" {
		t.Fatalf("a holder without the identity: %q", got)
	}
	for _, h := range []string{"", "sema serve rescuer x", "pid 12 on h"} {
		if got := HolderProcess(h); got != "" {
			t.Fatalf("HolderProcess(%q) = %q, want none", h, got)
		}
	}
}

// ProcessGone: this process is alive, a killed child is gone, a name without the
// process's start is never judged.
func TestProcessGone(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process identities are read from /proc, which only Linux has")
	}
	self, ok := selfProcess()
	if !ok {
		t.Skip("/proc does not tell this process's identity here")
	}
	if ProcessGone(Process()) {
		t.Fatal("this process was judged gone")
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep to start: %v", err)
	}
	defer cmd.Process.Kill()
	_, start := probeProcess(cmd.Process.Pid)
	name := fmt.Sprintf("pid %d on %s (start %d, pidns %s, boot %s)", cmd.Process.Pid, self.host, start, self.pidns, self.boot)
	if ProcessGone(name) {
		t.Fatal("a live child was judged gone")
	}
	cmd.Process.Kill()
	cmd.Wait()
	if !ProcessGone(name) {
		t.Fatal("a killed child was judged alive")
	}
	if ProcessGone(fmt.Sprintf("pid %d on %s", cmd.Process.Pid, self.host)) {
		t.Fatal("a name without the process's start was judged")
	}
}
