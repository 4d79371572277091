package scripted

import (
	"errors"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
)

// A script that cannot be read keeps the reason it could not: a missing file reads as
// fs.ErrNotExist under model.config, and a read the host refused (a process out of
// descriptors) can be told apart from a bad script by sema.HostFault, so the person is
// sent to the machine's limit, not to a file with nothing wrong in it.
func TestLoadKeepsWhyTheScriptCouldNotBeRead(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "missing.json"))
	if !sema.IsCode(err, model.CodeConfig) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load of a missing script = %v; want model.config wrapping fs.ErrNotExist", err)
	}
	if sema.HostFault(err, "read") != nil {
		t.Fatalf("a missing script read as a host fault: %v", err)
	}
	// What Load wraps is what os.ReadFile returned; an EMFILE there is the host's.
	wrapped := sema.Errorf(model.CodeConfig, "cannot read the model script %s: %w", "s.json",
		&fs.PathError{Op: "open", Path: "s.json", Err: syscall.EMFILE})
	if hf := sema.HostFault(wrapped, "read"); hf == nil || hf.Code != sema.CodeFDExhausted {
		t.Fatalf("an EMFILE under model.config = %v; want io.fd_exhausted", hf)
	}
}
