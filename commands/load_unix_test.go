//go:build unix

package commands

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/sema-agent/sema"
)

// A FIFO named like a command is refused, not opened: opening it would block the run.
func TestFIFOIsRefusedNotOpened(t *testing.T) {
	t.Parallel()
	root, home := tree(t, nil)
	cmds := filepath.Join(root, ".sema", "commands")
	os.MkdirAll(cmds, 0o755)
	if err := syscall.Mkfifo(filepath.Join(cmds, "wait.md"), 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	_, err := Load(Options{Root: root, Home: home}).Resolve("/wait")
	if !sema.IsCode(err, CodeInvalid) {
		t.Fatalf("/wait: %v", err)
	}
}
