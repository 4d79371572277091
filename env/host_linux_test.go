//go:build linux

package env

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestSwappedMiddleDirectoryIsNotFollowed swaps a directory in the middle of an already
// canonical path for a symlink to another tree (as a command could between a check and
// a use): no operation of the host env follows it.
func TestSwappedMiddleDirectoryIsNotFollowed(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "f.txt"), []byte("outside"), 0o644)
	os.Mkdir(filepath.Join(outside, "d"), 0o755)
	// root/sub was a directory when the path was checked; now it is a link to outside.
	if err := os.Symlink(outside, filepath.Join(root, "sub")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	h := NewHost()
	p := func(name string) string { return filepath.Join(root, "sub", name) }
	ops := map[string]func() error{
		"ReadFile":        func() error { _, err := h.ReadFile(ctx, p("f.txt")); return err },
		"Open":            func() error { _, err := h.Open(ctx, p("f.txt")); return err },
		"WriteFile":       func() error { return h.WriteFile(ctx, p("f.txt"), []byte("evil"), 0o644) },
		"CreateExclusive": func() error { return h.CreateExclusive(ctx, p("new.txt"), []byte("evil"), 0o644) },
		"Mkdir":           func() error { return h.Mkdir(ctx, p("newdir"), 0o755) },
		"Remove":          func() error { return h.Remove(ctx, p("d")) },
		"Chmod":           func() error { return h.Chmod(ctx, p("f.txt"), 0o777) },
	}
	for name, op := range ops {
		if err := op(); !errors.Is(err, syscall.ELOOP) {
			t.Errorf("%s through a swapped directory: %v, want ELOOP", name, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "f.txt")); string(b) != "outside" {
		t.Errorf("the outside file was written: %q", b)
	}
	for _, name := range []string{"new.txt", "newdir"} {
		if _, err := os.Lstat(filepath.Join(outside, name)); !os.IsNotExist(err) {
			t.Errorf("%s was created outside", name)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "d")); err != nil {
		t.Error("the outside directory was removed")
	}
	if fi, _ := os.Stat(filepath.Join(outside, "f.txt")); fi.Mode().Perm() != 0o644 {
		t.Errorf("the outside file's mode changed: %v", fi.Mode())
	}
}

func TestHostWriteRemoveRoundTrip(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	h := NewHost()
	f := filepath.Join(dir, "a.txt")
	if err := h.WriteFile(ctx, f, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(f, 0o640)
	if err := h.WriteFile(ctx, f, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(f); fi.Mode().Perm() != 0o640 {
		t.Fatalf("an overwrite lost the mode: %v", fi.Mode())
	}
	if err := h.CreateExclusive(ctx, f, nil, 0o600); !errors.Is(err, os.ErrExist) {
		t.Fatalf("exclusive create over a file: %v", err)
	}
	if err := h.Mkdir(ctx, filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a.txt", "d"} {
		if err := h.Remove(ctx, filepath.Join(dir, name)); err != nil {
			t.Fatalf("remove %s: %v", name, err)
		}
	}
	if err := h.Remove(ctx, filepath.Join(dir, "gone")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("remove of a missing file: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}
}

// Chmod puts back the setuid, setgid and sticky bits a mode carries, as os.Chmod does: a
// rewind restores a file's recorded mode with it, and fs.FileMode keeps those bits apart
// from the permission bits. Calibrated: with the permission bits alone, each came back
// cleared.
func TestChmodKeepsTheSpecialBits(t *testing.T) {
	h, ctx := &Host{}, context.Background()
	p := filepath.Join(t.TempDir(), "tool.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []fs.FileMode{0o755 | fs.ModeSetuid, 0o755 | fs.ModeSetgid, 0o755 | fs.ModeSticky, 0o700} {
		if err := h.Chmod(ctx, p, mode); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		want := mode & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		if got := fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky); got != want {
			t.Errorf("Chmod %v: the file's mode is %v", mode, got)
		}
	}
}
