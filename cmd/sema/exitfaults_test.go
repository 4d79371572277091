package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/statedir"
)

// A run or an approve that finds its session held by another live process exits 5, and
// under --output-format json prints the result object a program reads — status error,
// code session.busy — never an empty stdout; in text, the refusal is on stderr only.
func TestBusyPrintsAResult(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	d := damagedBase(t)
	home := filepath.Dir(d.db)
	st, err := statedir.Open(t.Context(), home)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	holder := fmt.Sprintf("pid %d on %s, leg busytest", os.Getpid(), host) // a live holder on this machine
	for _, id := range []string{d.session, d.parked} {
		if _, err := st.Sessions().AcquireLease(t.Context(), id, holder, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	run := []string{"--home", home, "--cwd", d.root, "--sandbox", "off", "--model", "scripted/" + d.script, "--permission-mode", "acceptEdits"}
	for _, args := range [][]string{
		append([]string{"run", "--resume", d.session, "go on"}, run...),
		append([]string{"approve", d.parked, "--checkpoint", d.checkpoint, "--allow"}, run...),
	} {
		code, out, errw := cli(t, "", append(args, "--output-format", "json")...)
		if code != exitBusy || jsonError(t, out) != session.CodeBusy || !strings.Contains(out, `"status":"error"`) {
			t.Fatalf("%v --output-format json: exit %d, want %d with a result object\nstdout: %q\nstderr: %s", args[:2], code, exitBusy, out, errw)
		}
		code, out, errw = cli(t, "", args...)
		if code != exitBusy || out != "" || !strings.Contains(errw, "(session.busy)") {
			t.Fatalf("%v: exit %d\nstdout: %q\nstderr: %s", args[:2], code, out, errw)
		}
	}
}

// The host's faults exit 1 from the one table, whatever code the site that met them
// put around them: a full disk under session.record_failed, a descriptor missing while
// a settings file was read.
func TestHostFaultsExitOne(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		&sema.Error{Code: sema.CodeDiskFull},
		&sema.Error{Code: sema.CodeFDExhausted},
		&sema.Error{Code: sema.CodeNoMemory},
		&sema.Error{Code: "session.record_failed", Err: &sema.Error{Code: sema.CodeDiskFull}},
		// An errno a site wrapped under its own code (config.* exits 2 otherwise).
		sema.Errorf("config.settings_unreadable", "cannot read x: %w", &os.PathError{Op: "open", Path: "x", Err: syscall.EMFILE}),
		// No code at all: not a refused command line.
		fmt.Errorf("something nobody foresaw"),
	} {
		if got := exitCode(err, exitUsage); got != exitError {
			t.Errorf("exitCode(%v) = %d, want %d", err, got, exitError)
		}
	}
	wrapped := sema.Errorf("config.settings_unreadable", "cannot read x: %w", &os.PathError{Op: "open", Path: "x", Err: syscall.EMFILE})
	if got := sema.CodeOf(hostCoded(wrapped)); got != sema.CodeFDExhausted {
		t.Errorf("hostCoded(settings unreadable for EMFILE) has code %q, want %s", got, sema.CodeFDExhausted)
	}
	if got := hostCoded(&sema.Error{Code: "config.x"}); sema.CodeOf(got) != "config.x" {
		t.Errorf("hostCoded changed an error that is not the host's: %v", got)
	}
}
