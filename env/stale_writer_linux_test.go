//go:build linux

package env_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sema-agent/sema/env"
)

// tempWriterEnv makes the test binary a writer that makes a temporary file, says its
// name and waits to be killed (see TestCleanStaleTempsRemovesADeadWritersTempAtOnce).
const tempWriterEnv = "SEMA_ENV_TEST_TEMP_WRITER"

// The temporary file of a writer killed with SIGKILL mid-write is removed by the next
// sweep at once, not a minute later: its name names the writer, and the writer is dead.
// A live writer's file is kept however old (it may be stopped and resume), a dead one's
// goes however young, a recycled pid does not pass for the writer, and a writer in
// another pid namespace leaves the file to the age rule. Before names carried the
// writer, the killed writer's young file stayed and the live writer's old one went.
func TestCleanStaleTempsRemovesADeadWritersTempAtOnce(t *testing.T) {
	if dir := os.Getenv(tempWriterEnv); dir != "" {
		p := filepath.Join(dir, env.TempName("killed.go"))
		if err := os.WriteFile(p, []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Stdout.WriteString(p + "\n")
		time.Sleep(time.Minute)
		return
	}
	root := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestCleanStaleTempsRemovesADeadWritersTempAtOnce$")
	cmd.Env = append(os.Environ(), tempWriterEnv+"="+root)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	killed := strings.TrimSpace(line)
	if _, err := os.Lstat(killed); err != nil || !strings.HasPrefix(killed, root+"/") {
		t.Fatalf("the writer left no temporary file (%q): %v", line, err)
	}

	tag := env.WriterTag()
	f := strings.Split(tag, ".")
	if len(f) != 3 {
		t.Fatalf("this process's writer tag %q", tag)
	}
	old := time.Now().Add(-2 * time.Hour)
	stamp := func(at time.Time) string { return strconv.FormatInt(at.UnixNano(), 36) }
	mk := func(name string, at time.Time) string {
		p := filepath.Join(root, name)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		return p
	}
	start, _ := strconv.ParseUint(f[1], 36, 64)
	ns, _ := strconv.ParseUint(f[2], 36, 64)
	recycled := f[0] + "." + strconv.FormatUint(start+1, 36) + "." + f[2]
	elsewhere := f[0] + "." + f[1] + "." + strconv.FormatUint(ns+1, 36)
	gone := []string{
		killed,
		mk(".recycled.go.sema-"+stamp(time.Now())+"-1-"+recycled+".tmp", time.Now()),
		mk(".elsewhere-old.go.sema-"+stamp(old)+"-2-"+elsewhere+".tmp", old),
	}
	kept := []string{
		mk(".live-old.go.sema-"+stamp(old)+"-3-"+tag+".tmp", old),
		mk(filepath.Base(env.TempName("live.go")), time.Now()),
		mk(".elsewhere-young.go.sema-"+stamp(time.Now())+"-4-"+elsewhere+".tmp", time.Now()),
	}
	got := env.CleanStaleTemps(context.Background(), root)
	slices.Sort(got)
	slices.Sort(gone)
	if !slices.Equal(got, gone) {
		t.Fatalf("removed %q, want %q", got, gone)
	}
	for _, p := range kept {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
}
