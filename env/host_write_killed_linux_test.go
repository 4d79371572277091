//go:build linux

package env_test

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sema-agent/sema/env"
)

// killedWriterEnv makes the test binary a writer that replaces one file over and over
// (see TestKilledWriterLeavesNoTempFile).
const killedWriterEnv = "SEMA_ENV_TEST_KILLED_WRITER"

// A process killed with SIGKILL at a random moment of an atomic write leaves no partial
// temporary file in the directory: the bytes go to an unnamed file, named only once
// durable, just before the rename. Before, a write killed while writing or syncing left
// its named temporary file (most trials). A kill between the naming and the rename (two
// system calls; a loaded machine can stop the writer there) leaves the whole, durable
// file under its temporary name: CleanStaleTemps, which a run calls at its start, removes
// it, its writer being dead. SEMA_SOAK=N runs N trials.
func TestKilledWriterLeavesNoTempFile(t *testing.T) {
	if target := os.Getenv(killedWriterEnv); target != "" {
		data := make([]byte, 16<<20)
		for i := 0; ; i++ {
			data[0] = byte(i)
			if err := env.NewHost().WriteFile(t.Context(), target, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	dir := t.TempDir()
	if fd, err := unix.Open(dir, unix.O_WRONLY|unix.O_TMPFILE, 0o600); err != nil {
		t.Skipf("the test's directory has no unnamed files (O_TMPFILE): %v", err)
	} else {
		unix.Close(fd)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	trials := 10
	if n, err := strconv.Atoi(os.Getenv("SEMA_SOAK")); err == nil && n > 0 {
		trials = n
	}
	target := filepath.Join(dir, "big.bin")
	left := 0
	for range trials {
		cmd := exec.Command(exe, "-test.run=^TestKilledWriterLeavesNoTempFile$")
		cmd.Env = append(os.Environ(), killedWriterEnv+"="+target)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(50+rand.IntN(250)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		ents, _ := os.ReadDir(dir)
		var named []string
		for _, e := range ents {
			if !strings.Contains(e.Name(), ".sema-") {
				continue
			}
			left++
			p := filepath.Join(dir, e.Name())
			if fi, err := os.Stat(p); err != nil || fi.Size() != 16<<20 {
				t.Errorf("a killed write left %s, not a whole write (%v): it was named before it was durable", e.Name(), err)
				os.Remove(p)
				continue
			}
			named = append(named, p)
		}
		if len(named) > 0 {
			removed := env.CleanStaleTemps(t.Context(), dir)
			for _, p := range named {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("CleanStaleTemps left %s, whose writer is dead (it removed %v)", p, removed)
					os.Remove(p)
				}
			}
		}
	}
	t.Logf("%d of %d killed writes were killed between the naming and the rename", left, trials)
}
