package sqlitedb

import (
	"database/sql"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// StartChild starts this test binary again, running no test, with env (KEY=VALUE) set:
// the loop of the tests' init function that looks for KEY runs until it is killed. It
// returns the child and its standard output, where the loop reports its progress.
// Exported for the external test package's kill test.
func StartChild(t testing.TB, env string) (*exec.Cmd, io.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), env)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out
}

// WaitKilled waits for a child that was sent SIGKILL and fails the test when the child
// ended on its own instead: then the kill proved nothing.
func WaitKilled(t testing.TB, cmd *exec.Cmd, what string) {
	t.Helper()
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("%s ended on its own: %v", what, err)
	}
}

// checkSound fails the test when db's file does not pass integrity_check.
func checkSound(t testing.TB, db *sql.DB, when string) {
	t.Helper()
	var ok string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check %s: %q, %v", when, ok, err)
	}
}
