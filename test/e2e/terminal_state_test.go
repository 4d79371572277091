package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The state directory opens beside the session's first frame; one that cannot be opened
// (its database is not a database) still ends the session with the store's error and
// exit 1, as when it refused the session before any frame.
func TestTerminalStateDirectoryThatCannotOpen(t *testing.T) {
	home := t.TempDir()
	state := filepath.Join(home, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "sema.db"), bytes.Repeat([]byte("not a database\n"), 400), 0o600); err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, `{"turns":[{"text":"hello"}]}`)
	s := startInPty(t, t.TempDir(), []string{"HOME=" + home, "SEMA_HOME=" + state}, "--sandbox", "off", "--model", "scripted/"+script)
	exited := make(chan error, 1)
	go func() { exited <- s.cmd.Wait() }()
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("sema with a damaged database: %v, want exit 1", err)
		}
	case <-time.After(20 * time.Second):
		s.stop()
		t.Fatal("sema did not end with a damaged database")
	}
	s.waitFor("sema.db", 5*time.Second) // the error names the file
	s.pty.Close()
	<-s.done
}
