package env_test

import (
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/sema-agent/sema/env"
)

// ReadProcStat reads this process's own line, and a child's whose name holds a ')' and
// spaces — the field the kernel does not escape.
func TestReadProcStat(t *testing.T) {
	self, err := env.ReadProcStat(strconv.Itoa(os.Getpid()))
	if err != nil || self.PPID != os.Getppid() || self.StartTime == 0 || self.Gone() {
		t.Fatalf("self: %+v, %v", self, err)
	}
	dir := t.TempDir()
	name := dir + "/a) b (c"
	if err := os.Symlink("/bin/sleep", name); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(name, "5")
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start a program named %q: %v", name, err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	st, err := env.ReadProcStat(strconv.Itoa(cmd.Process.Pid))
	if err != nil || st.PPID != os.Getpid() || st.Gone() || st.StartTime < self.StartTime {
		t.Fatalf("child: %+v, %v", st, err)
	}
	if _, err := env.ReadProcStat("999999999"); err == nil {
		t.Fatal("a pid that does not exist read as a process")
	}
}
