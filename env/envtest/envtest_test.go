package envtest

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sema-agent/sema/env"
)

func hostTree(t *testing.T) Tree {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return Tree{Env: env.NewHost(), Dir: dir, Symlink: os.Symlink}
}

func memTree(t *testing.T) Tree {
	m := NewMem()
	if err := m.MkdirAll("/work/tree", 0o755); err != nil {
		t.Fatal(err)
	}
	return Tree{Env: m, Dir: "/work/tree", Symlink: m.Symlink}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	t.Run("host", func(t *testing.T) { RunConformance(t, hostTree) })
	t.Run("mem", func(t *testing.T) { RunConformance(t, memTree) })
	t.Run("faulty over host", func(t *testing.T) {
		RunConformance(t, func(t *testing.T) Tree {
			tr := hostTree(t)
			tr.Env = NewFaulty(tr.Env)
			return tr
		})
	})
	t.Run("faulty over mem", func(t *testing.T) {
		RunConformance(t, func(t *testing.T) Tree {
			tr := memTree(t)
			tr.Env = NewFaulty(tr.Env)
			return tr
		})
	})
}

// TestFaultErrno checks that every injected errno reaches the caller in the host's
// shape, on the operation and path it was aimed at only, and that nothing was done.
func TestFaultErrno(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	errnos := []syscall.Errno{syscall.EACCES, syscall.EPERM, syscall.EROFS, syscall.ENOSPC, syscall.EIO, syscall.EEXIST, syscall.ENOENT, syscall.EISDIR}
	for _, tree := range []struct {
		name string
		make func(*testing.T) Tree
	}{{"host", hostTree}, {"mem", memTree}} {
		for _, errno := range errnos {
			t.Run(tree.name+"/"+errno.Error(), func(t *testing.T) {
				t.Parallel()
				tr := tree.make(t)
				f := NewFaulty(tr.Env)
				target := filepath.Join(tr.Dir, "target")
				other := filepath.Join(tr.Dir, "other")
				must(t, f.WriteFile(ctx, target, []byte("old"), 0o644))
				f.Inject(Errno(OpWriteFile, target, errno))

				err := f.WriteFile(ctx, target, []byte("new"), 0o644)
				var pe *fs.PathError
				if !errors.As(err, &pe) || pe.Err != errno || pe.Op != "write" || pe.Path != target {
					t.Fatalf("WriteFile = %#v, want *fs.PathError{write %s %v}", err, target, errno)
				}
				if !errors.Is(err, errno) {
					t.Fatalf("errors.Is(%v, %v) = false", err, errno)
				}
				got, _ := tr.Env.ReadFile(ctx, target)
				if string(got) != "old" {
					t.Fatalf("a plain errno fault changed the file to %q", got)
				}
				// Another path and another operation on the same path are untouched.
				must(t, f.WriteFile(ctx, other, []byte("fine"), 0o644))
				if _, err := f.ReadFile(ctx, target); err != nil {
					t.Fatalf("ReadFile of the faulted path: %v", err)
				}
			})
		}
	}
}

func TestFaultPartialWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name    string
		exists  bool
		keep    int
		wantNow string
	}{
		{"existing file truncated then half written", true, 4, "0123"},
		{"new file half written", false, 3, "012"},
		{"nothing of the new data landed", true, 0, ""},
		{"prefix longer than data clamps", true, 99, "0123456789"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tr := hostTree(t)
			f := NewFaulty(tr.Env)
			p := filepath.Join(tr.Dir, "f")
			if c.exists {
				must(t, os.WriteFile(p, []byte("the old content"), 0o600))
			}
			f.Inject(PartialWrite(p, c.keep, syscall.ENOSPC))
			err := f.WriteFile(ctx, p, []byte("0123456789"), 0o644)
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("WriteFile = %v, want ENOSPC", err)
			}
			got, rerr := os.ReadFile(p)
			must(t, rerr)
			if string(got) != c.wantNow {
				t.Fatalf("file holds %q after the partial write, want %q", got, c.wantNow)
			}
			if c.exists {
				fi, _ := os.Stat(p)
				if fi.Mode().Perm() != 0o600 {
					t.Fatalf("partial write changed the mode to %v", fi.Mode().Perm())
				}
			}
		})
	}
}

func TestFaultPartialCreateExclusive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := memTree(t)
	f := NewFaulty(tr.Env)
	p := filepath.Join(tr.Dir, "x")
	f.Inject(Fault{Op: OpCreateExclusive, Path: p, Err: syscall.EIO, Partial: true, PartialBytes: 2})
	if err := f.CreateExclusive(ctx, p, []byte("abcdef"), 0o644); !errors.Is(err, syscall.EIO) {
		t.Fatalf("CreateExclusive = %v, want EIO", err)
	}
	got, err := tr.Env.ReadFile(ctx, p)
	must(t, err)
	if string(got) != "ab" {
		t.Fatalf("file holds %q, want the 2-byte prefix", got)
	}
}

func TestFaultPanic(t *testing.T) {
	t.Parallel()
	tr := memTree(t)
	f := NewFaulty(tr.Env)
	p := filepath.Join(tr.Dir, "f")
	f.Inject(PanicOn(OpWriteFile, p, "disk on fire"))
	defer func() {
		if r := recover(); r != "disk on fire" {
			t.Fatalf("recovered %v, want the injected panic", r)
		}
		if _, err := tr.Env.Lstat(context.Background(), p); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("a panicking write created the file: %v", err)
		}
	}()
	f.WriteFile(context.Background(), p, []byte("x"), 0o644)
	t.Fatal("WriteFile returned instead of panicking")
}

// TestFaultHoldHonoursContext blocks a write on a channel nobody closes and cancels the
// context: the call must return ctx's error and write nothing.
func TestFaultHoldHonoursContext(t *testing.T) {
	t.Parallel()
	tr := memTree(t)
	f := NewFaulty(tr.Env)
	p := filepath.Join(tr.Dir, "f")
	f.Inject(Fault{Op: OpWriteFile, Path: p, Hold: make(chan struct{})})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.WriteFile(ctx, p, []byte("x"), 0o644) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("held WriteFile = %v, want context.Canceled", err)
	}
	if _, err := tr.Env.Lstat(context.Background(), p); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a cancelled held write created the file: %v", err)
	}
}

func TestFaultHoldReleased(t *testing.T) {
	t.Parallel()
	tr := memTree(t)
	f := NewFaulty(tr.Env)
	p := filepath.Join(tr.Dir, "f")
	hold := make(chan struct{})
	f.Inject(Fault{Op: OpWriteFile, Path: p, Hold: hold})
	done := make(chan error, 1)
	go func() { done <- f.WriteFile(context.Background(), p, []byte("x"), 0o644) }()
	close(hold)
	must(t, <-done)
	got, err := tr.Env.ReadFile(context.Background(), p)
	must(t, err)
	if string(got) != "x" {
		t.Fatalf("released write left %q", got)
	}
}

func TestFaultSlow(t *testing.T) {
	t.Parallel()
	tr := memTree(t)
	f := NewFaulty(tr.Env)
	p := filepath.Join(tr.Dir, "f")
	f.Inject(Slow(OpWriteFile, p, time.Hour))
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if err := f.WriteFile(ctx, p, []byte("x"), 0o644); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow WriteFile = %v, want the deadline", err)
	}
	f.Reset()
	f.Inject(Slow(OpWriteFile, p, time.Microsecond))
	must(t, f.WriteFile(context.Background(), p, []byte("y"), 0o644))
	got, _ := tr.Env.ReadFile(context.Background(), p)
	if string(got) != "y" {
		t.Fatalf("a short delay did not let the write through: %q", got)
	}
}

func TestFaultTimesRemoveAndCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := memTree(t)
	f := NewFaulty(tr.Env)
	p := filepath.Join(tr.Dir, "f")
	f.Inject(Fault{Op: OpWriteFile, Err: syscall.EIO, Times: 2}) // any path
	for i := range 2 {
		if err := f.WriteFile(ctx, p, []byte("x"), 0o644); !errors.Is(err, syscall.EIO) {
			t.Fatalf("call %d = %v, want EIO", i, err)
		}
	}
	must(t, f.WriteFile(ctx, p, []byte("x"), 0o644))

	remove := f.Inject(Errno(OpReadFile, p, syscall.EACCES))
	if _, err := f.ReadFile(ctx, p); !errors.Is(err, syscall.EACCES) {
		t.Fatalf("ReadFile = %v, want EACCES", err)
	}
	remove()
	if _, err := f.ReadFile(ctx, p); err != nil {
		t.Fatalf("ReadFile after remove = %v", err)
	}
	if got := f.Calls(OpWriteFile); got != 3 {
		t.Fatalf("Calls(WriteFile) = %d, want 3", got)
	}
	if got := f.Calls(OpReadFile); got != 2 {
		t.Fatalf("Calls(ReadFile) = %d, want 2", got)
	}
}

// TestFaultEveryOp aims a fault at each operation in turn and checks the operation's
// own error shape.
func TestFaultEveryOp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := memTree(t)
	f := NewFaulty(tr.Env)
	p := filepath.Join(tr.Dir, "f")
	must(t, tr.Env.WriteFile(ctx, p, []byte("x"), 0o644))
	calls := map[Op]func() error{
		OpStat:            func() error { _, err := f.Stat(ctx, p); return err },
		OpLstat:           func() error { _, err := f.Lstat(ctx, p); return err },
		OpReadlink:        func() error { _, err := f.Readlink(ctx, p); return err },
		OpReadDir:         func() error { _, err := f.ReadDir(ctx, p); return err },
		OpReadFile:        func() error { _, err := f.ReadFile(ctx, p); return err },
		OpOpen:            func() error { _, err := f.Open(ctx, p); return err },
		OpWriteFile:       func() error { return f.WriteFile(ctx, p, nil, 0o644) },
		OpCreateExclusive: func() error { return f.CreateExclusive(ctx, p, nil, 0o644) },
		OpMkdir:           func() error { return f.Mkdir(ctx, p, 0o755) },
		OpRemove:          func() error { return f.Remove(ctx, p) },
		OpChmod:           func() error { return f.Chmod(ctx, p, 0o600) },
	}
	for op, call := range calls {
		remove := f.Inject(Errno(op, p, syscall.EIO))
		err := call()
		remove()
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Err != syscall.EIO || pe.Op != pathOp[op] {
			t.Errorf("%s: %#v, want *fs.PathError{%s, EIO}", op, err, pathOp[op])
		}
	}
	if got, _ := tr.Env.ReadFile(ctx, p); string(got) != "x" {
		t.Fatalf("faulted calls changed the file: %q", got)
	}
}

func TestMemSymlinkResolution(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := NewMem()
	must(t, m.MkdirAll("/r/real/sub", 0o755))
	must(t, m.WriteFile(ctx, "/r/real/sub/f", []byte("deep"), 0o644))
	must(t, m.Symlink("real", "/r/rel"))        // relative
	must(t, m.Symlink("/r/real/sub", "/r/abs")) // absolute
	must(t, m.Symlink("loop2", "/r/loop1"))
	must(t, m.Symlink("loop1", "/r/loop2"))
	for _, p := range []string{"/r/rel/sub/f", "/r/abs/f", "/r/rel/sub/../sub/f"} {
		got, err := m.ReadFile(ctx, p)
		if err != nil || string(got) != "deep" {
			t.Errorf("ReadFile(%s) = %q, %v", p, got, err)
		}
	}
	if _, err := m.Stat(ctx, "/r/loop1"); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("Stat of a link loop = %v, want ELOOP", err)
	}
	if _, err := m.Stat(ctx, "/r/real/sub/f/x"); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("Stat below a file = %v, want ENOTDIR", err)
	}
	if !strings.HasPrefix(m.Identity(), "mem:") || m.Identity() == NewMem().Identity() {
		t.Errorf("identities are not distinct: %q", m.Identity())
	}
}
