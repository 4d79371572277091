package envtest

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/sema-agent/sema/env"
)

// Tree is one ExecutionEnv under test, with an empty directory the suite may fill.
type Tree struct {
	// Env is the implementation under test.
	Env env.ExecutionEnv
	// Dir is an existing, empty, canonical directory of Env.
	Dir string
	// Symlink creates a symbolic link at path pointing to target; ExecutionEnv has no
	// such operation, so each implementation says how its tests make one.
	Symlink func(target, path string) error
}

// RunConformance checks the parts of the ExecutionEnv contract the engine relies on:
// error shapes (an *fs.PathError wrapping a syscall.Errno), the symlink rules of
// ReadFile, WriteFile and Remove, WriteFile keeping an existing file's mode, exclusive
// create, sorted listings and cancellation — and, for an env that is an env.BatchWriter,
// the same rules for WriteFiles. newTree is called once per subtest. An env
// is done when this suite passes.
func RunConformance(t *testing.T, newTree func(t *testing.T) Tree) {
	for _, c := range conformanceChecks {
		t.Run(c.name, func(t *testing.T) {
			tr := newTree(t)
			c.run(t, tr, func(name string) string { return filepath.Join(tr.Dir, name) })
		})
	}
}

// conformanceChecks are RunConformance's subtests, each given a fresh Tree and p, which
// names a path in its directory.
var conformanceChecks = []struct {
	name string
	run  func(t *testing.T, tr Tree, p func(string) string)
}{
	{"write then read", checkWriteThenRead},
	{"overwrite keeps mode", checkOverwriteKeepsMode},
	{"write refuses final symlink", checkWriteRefusesFinalSymlink},
	{"write on directory", checkWriteOnDirectory},
	{"write with missing parent", checkWriteWithMissingParent},
	{"read refuses final symlink", checkReadRefusesFinalSymlink},
	{"read missing", checkReadMissing},
	{"open streams", checkOpenStreams},
	{"exclusive create", checkExclusiveCreate},
	{"links", checkLinks},
	{"mkdir and remove", checkMkdirAndRemove},
	{"listing sorted with types", checkListingSortedWithTypes},
	{"cancelled context", checkCancelledContext},
	{"batch write", checkBatchWrite},
}

func checkWriteThenRead(t *testing.T, tr Tree, p func(string) string) {
	ctx := context.Background()
	must(t, tr.Env.WriteFile(ctx, p("a"), []byte("hello"), 0o640))
	got, err := tr.Env.ReadFile(ctx, p("a"))
	must(t, err)
	if string(got) != "hello" {
		t.Fatalf("ReadFile = %q, want %q", got, "hello")
	}
	fi, err := tr.Env.Stat(ctx, p("a"))
	must(t, err)
	if fi.Size != 5 || !fi.IsRegular() || fi.Mode.Perm() != 0o640 || fi.Name != "a" {
		t.Fatalf("Stat = %+v, want a regular 5-byte file named a with mode 0640", fi)
	}
}

func checkOverwriteKeepsMode(t *testing.T, tr Tree, p func(string) string) {
	ctx := context.Background()
	must(t, tr.Env.WriteFile(ctx, p("a"), []byte("one"), 0o644))
	must(t, tr.Env.Chmod(ctx, p("a"), 0o600))
	must(t, tr.Env.WriteFile(ctx, p("a"), []byte("two"), 0o644))
	fi, err := tr.Env.Stat(ctx, p("a"))
	must(t, err)
	if fi.Mode.Perm() != 0o600 {
		t.Fatalf("mode after overwrite = %v, want 0600", fi.Mode.Perm())
	}
}

func checkWriteRefusesFinalSymlink(t *testing.T, tr Tree, p func(string) string) {
	ctx := context.Background()
	must(t, tr.Env.WriteFile(ctx, p("target"), []byte("keep"), 0o644))
	must(t, tr.Symlink(p("target"), p("link")))
	wantErrno(t, tr.Env.WriteFile(ctx, p("link"), []byte("x"), 0o644), syscall.ELOOP)
	got, err := tr.Env.ReadFile(ctx, p("target"))
	must(t, err)
	if string(got) != "keep" {
		t.Fatalf("target changed to %q through a link", got)
	}
}

func checkWriteOnDirectory(t *testing.T, tr Tree, p func(string) string) {
	ctx := context.Background()
	must(t, tr.Env.Mkdir(ctx, p("d"), 0o755))
	wantErrno(t, tr.Env.WriteFile(ctx, p("d"), []byte("x"), 0o644), syscall.EISDIR)
}

func checkWriteWithMissingParent(t *testing.T, tr Tree, p func(string) string) {
	ctx := context.Background()
	wantErrno(t, tr.Env.WriteFile(ctx, p("no/such"), []byte("x"), 0o644), syscall.ENOENT)
}

func checkReadRefusesFinalSymlink(t *testing.T, tr Tree, p func(string) string) {
	ctx := context.Background()
	must(t, tr.Env.WriteFile(ctx, p("target"), []byte("x"), 0o644))
	must(t, tr.Symlink(p("target"), p("link")))
	_, err := tr.Env.ReadFile(ctx, p("link"))
	wantErrno(t, err, syscall.ELOOP)
	_, err = tr.Env.Open(ctx, p("link"))
	wantErrno(t, err, syscall.ELOOP)
}

func checkReadMissing(t *testing.T, tr Tree, p func(string) string) {
	ctx := context.Background()
	_, err := tr.Env.ReadFile(ctx, p("missing"))
	wantErrno(t, err, syscall.ENOENT)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadFile of a missing file: %v does not match fs.ErrNotExist", err)
	}
}

func checkOpenStreams(t *testing.T, tr Tree, p func(string) string) {
	ctx := context.Background()
	must(t, tr.Env.WriteFile(ctx, p("a"), []byte("stream"), 0o644))
	rc, err := tr.Env.Open(ctx, p("a"))
	must(t, err)
	defer rc.Close()
	got, err := io.ReadAll(rc)
	must(t, err)
	if string(got) != "stream" {
		t.Fatalf("Open read %q", got)
	}
}

func checkExclusiveCreate(t *testing.T, tr Tree, p func(string) string) {
	ctx := context.Background()
	must(t, tr.Env.CreateExclusive(ctx, p("x"), []byte("1"), 0o644))
	err := tr.Env.CreateExclusive(ctx, p("x"), []byte("2"), 0o644)
	wantErrno(t, err, syscall.EEXIST)
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second create: %v does not match fs.ErrExist", err)
	}
	must(t, tr.Symlink(p("nowhere"), p("dangling")))
	wantErrno(t, tr.Env.CreateExclusive(ctx, p("dangling"), []byte("2"), 0o644), syscall.EEXIST)
	if _, err := tr.Env.Lstat(ctx, p("nowhere")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("exclusive create wrote through a dangling link: %v", err)
	}
}

func checkLinks(t *testing.T, tr Tree, p func(string) string) {
	ctx := context.Background()
	must(t, tr.Env.WriteFile(ctx, p("target"), []byte("abc"), 0o644))
	must(t, tr.Symlink(p("target"), p("link")))
	li, err := tr.Env.Lstat(ctx, p("link"))
	must(t, err)
	if !li.IsSymlink() {
		t.Fatalf("Lstat(link).Mode = %v, want a symlink", li.Mode)
	}
	si, err := tr.Env.Stat(ctx, p("link"))
	must(t, err)
	if !si.IsRegular() || si.Size != 3 {
		t.Fatalf("Stat(link) = %+v, want the 3-byte target", si)
	}
	target, err := tr.Env.Readlink(ctx, p("link"))
	must(t, err)
	if target != p("target") {
		t.Fatalf("Readlink = %q, want %q", target, p("target"))
	}
	must(t, tr.Env.Remove(ctx, p("link")))
	if _, err := tr.Env.Stat(ctx, p("target")); err != nil {
		t.Fatalf("Remove(link) removed the target: %v", err)
	}
}

func checkMkdirAndRemove(t *testing.T, tr Tree, p func(string) string) {
	ctx := context.Background()
	must(t, tr.Env.Mkdir(ctx, p("d"), 0o755))
	wantErrno(t, tr.Env.Mkdir(ctx, p("d"), 0o755), syscall.EEXIST)
	must(t, tr.Env.WriteFile(ctx, p("d/f"), []byte("x"), 0o644))
	if err := tr.Env.Remove(ctx, p("d")); err == nil {
		t.Fatal("Remove of a non-empty directory succeeded")
	}
	must(t, tr.Env.Remove(ctx, p("d/f")))
	must(t, tr.Env.Remove(ctx, p("d")))
	if _, err := tr.Env.Lstat(ctx, p("d")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("directory still there after Remove: %v", err)
	}
}

func checkListingSortedWithTypes(t *testing.T, tr Tree, p func(string) string) {
	ctx := context.Background()
	must(t, tr.Env.WriteFile(ctx, p("b"), nil, 0o644))
	must(t, tr.Env.Mkdir(ctx, p("a"), 0o755))
	must(t, tr.Symlink("b", p("c")))
	got, err := tr.Env.ReadDir(ctx, tr.Dir)
	must(t, err)
	want := []env.DirEntry{{Name: "a", Type: fs.ModeDir}, {Name: "b"}, {Name: "c", Type: fs.ModeSymlink}}
	if len(got) != len(want) {
		t.Fatalf("ReadDir = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ReadDir = %+v, want %+v", got, want)
		}
	}
}

func checkCancelledContext(t *testing.T, tr Tree, p func(string) string) {
	ctx := context.Background()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := tr.Env.WriteFile(cctx, p("a"), []byte("x"), 0o644); !errors.Is(err, context.Canceled) {
		t.Fatalf("WriteFile with a cancelled ctx = %v, want context.Canceled", err)
	}
	if _, err := tr.Env.Lstat(ctx, p("a")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a cancelled WriteFile created the file: %v", err)
	}
	if _, err := tr.Env.Stat(cctx, tr.Dir); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stat with a cancelled ctx = %v, want context.Canceled", err)
	}
}

func checkBatchWrite(t *testing.T, tr Tree, p func(string) string) {
	ctx := context.Background()
	bw, ok := tr.Env.(env.BatchWriter)
	if !ok {
		t.Skip("not a BatchWriter")
	}
	must(t, tr.Env.WriteFile(ctx, p("kept"), []byte("old"), 0o644))
	must(t, tr.Env.Chmod(ctx, p("kept"), 0o600))
	must(t, tr.Env.WriteFile(ctx, p("target"), []byte("keep"), 0o644))
	must(t, tr.Symlink(p("target"), p("link")))
	must(t, tr.Env.Mkdir(ctx, p("d"), 0o755))
	errs := bw.WriteFiles(ctx, []env.FileWrite{
		{Path: p("a"), Data: []byte("a"), Perm: 0o640},
		{Path: p("link"), Data: []byte("x"), Perm: 0o644},
		{Path: p("kept"), Data: []byte("new"), Perm: 0o644},
		{Path: p("d"), Data: []byte("x"), Perm: 0o644},
		{Path: p("no/such"), Data: []byte("x"), Perm: 0o644},
		{Path: p("d/b"), Data: []byte("b"), Perm: 0o644},
	})
	if len(errs) != 6 {
		t.Fatalf("WriteFiles = %v, want one answer per file", errs)
	}
	for i, errno := range map[int]syscall.Errno{1: syscall.ELOOP, 3: syscall.EISDIR, 4: syscall.ENOENT} {
		wantErrno(t, errs[i], errno)
	}
	for i, name := range map[int]string{1: "link", 3: "d", 4: "no/such"} {
		if pe := errs[i].(*fs.PathError); pe.Path != p(name) {
			t.Fatalf("the error of %s names %q", name, pe.Path)
		}
	}
	for name, want := range map[string]string{"a": "a", "kept": "new", "d/b": "b", "target": "keep"} {
		got, err := tr.Env.ReadFile(ctx, p(name))
		must(t, err)
		if string(got) != want {
			t.Fatalf("%s = %q after the batch, want %q", name, got, want)
		}
	}
	for name, want := range map[string]fs.FileMode{"a": 0o640, "kept": 0o600} {
		fi, err := tr.Env.Stat(ctx, p(name))
		must(t, err)
		if fi.Mode.Perm() != want {
			t.Fatalf("%s has mode %v after the batch, want %v", name, fi.Mode.Perm(), want)
		}
	}
	if errs := bw.WriteFiles(ctx, []env.FileWrite{{Path: p("a"), Data: []byte("a2"), Perm: 0o644}, {Path: p("a"), Data: []byte("a3"), Perm: 0o644}}); errs != nil {
		t.Fatalf("a batch that wrote every file answered %v, want nil", errs)
	}
	if got, _ := tr.Env.ReadFile(ctx, p("a")); string(got) != "a3" {
		t.Fatalf("a path given twice holds %q, want the last entry's bytes", got)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	errs = bw.WriteFiles(cctx, []env.FileWrite{{Path: p("c"), Data: []byte("c"), Perm: 0o644}})
	if len(errs) != 1 || !errors.Is(errs[0], context.Canceled) {
		t.Fatalf("WriteFiles with a cancelled ctx = %v, want context.Canceled", errs)
	}
	if _, err := tr.Env.Lstat(ctx, p("c")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a cancelled WriteFiles created the file: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantErrno fails t unless err is an *fs.PathError wrapping errno.
func wantErrno(t *testing.T, err error, errno syscall.Errno) {
	t.Helper()
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not an *fs.PathError", err, err)
	}
	if got, ok := pe.Err.(syscall.Errno); !ok || got != errno {
		t.Fatalf("error %v wraps %v, want %v", err, pe.Err, errno)
	}
}
