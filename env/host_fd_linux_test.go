//go:build linux

package env

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestOpenedInfoMatchesStat: what OpenedInfo says of a file Open returned is what Stat
// says of its path, for the kinds Open can open.
func TestOpenedInfoMatchesStat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	h := NewHost()
	plain := filepath.Join(dir, "plain.txt")
	special := filepath.Join(dir, "special")
	linked := filepath.Join(dir, "linked")
	for _, p := range []string{plain, special, linked} {
		if err := os.WriteFile(p, []byte("some bytes\n"), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(special, 0o755|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(linked, filepath.Join(dir, "second-name")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{plain, special, linked, dir} {
		rc, err := h.Open(ctx, p)
		if err != nil {
			t.Fatalf("Open(%s): %v", p, err)
		}
		got, ok := OpenedInfo(rc)
		rc.Close()
		if !ok {
			t.Fatalf("OpenedInfo(%s): not described", p)
		}
		want, err := h.Stat(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: OpenedInfo %+v, Stat %+v", p, got, want)
		}
	}
}

// TestOpenedFileClosesOnce: after Close, the reader neither reads nor closes again, so
// a second Close cannot release a descriptor number that another file has since been
// given.
func TestOpenedFileClosesOnce(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("content"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rc, err := NewHost().Open(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	if err != nil || string(got) != "content" {
		t.Fatalf("read %q, %v", got, err)
	}
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
	// Another file is likely given the number just released.
	other, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := rc.Close(); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("second Close: %v, want fs.ErrClosed", err)
	}
	if _, err := rc.Read(make([]byte, 4)); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Read after Close: %v, want fs.ErrClosed", err)
	}
	if _, ok := OpenedInfo(rc); ok {
		t.Error("OpenedInfo described a closed file")
	}
	if _, err := other.Stat(); err != nil {
		t.Errorf("the other file's descriptor was closed: %v", err)
	}
}

// TestOpenRefusesFinalSymlinkOut: a link planted where a file was, pointing outside,
// is not opened.
func TestOpenRefusesFinalSymlinkOut(t *testing.T) {
	t.Parallel()
	root, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "f.txt")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	rc, err := NewHost().Open(context.Background(), link)
	if !errors.Is(err, syscall.ELOOP) {
		if rc != nil {
			rc.Close()
		}
		t.Fatalf("Open of a link to outside: %v, want ELOOP", err)
	}
	if rc != nil {
		t.Fatal("Open returned a reader with its error")
	}
}
