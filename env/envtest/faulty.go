// Package envtest holds ExecutionEnv implementations for tests: Faulty, which wraps any
// env and injects faults on demand per operation and path, and Mem, an in-memory tree.
//
// Faults are shaped like the host's own failures (an *fs.PathError wrapping a
// syscall.Errno), so code under test cannot tell an injected EACCES from a real one.
// A partial-write fault really changes the file before it fails: it is the ambiguous
// case (ENOSPC in the middle of a non-atomic write) that a caller must not mistake for
// "nothing was written".
package envtest

import (
	"context"
	"io"
	"io/fs"
	"sync"
	"syscall"
	"time"

	"github.com/sema-agent/sema/env"
)

// Op names one ExecutionEnv operation.
type Op string

// The operations a Fault can target, one per ExecutionEnv method. An injected error
// comes back in an *fs.PathError whose Op is the one the host env would use, given
// after each constant.
const (
	OpStat            Op = "Stat"            // Stat; PathError.Op "stat"
	OpLstat           Op = "Lstat"           // Lstat; PathError.Op "lstat"
	OpReadlink        Op = "Readlink"        // Readlink; PathError.Op "readlink"
	OpReadDir         Op = "ReadDir"         // ReadDir; PathError.Op "open"
	OpReadFile        Op = "ReadFile"        // ReadFile; PathError.Op "open"
	OpOpen            Op = "Open"            // Open; PathError.Op "open"
	OpWriteFile       Op = "WriteFile"       // WriteFile; PathError.Op "write"
	OpCreateExclusive Op = "CreateExclusive" // CreateExclusive; PathError.Op "open"
	OpMkdir           Op = "Mkdir"           // Mkdir; PathError.Op "mkdir"
	OpRemove          Op = "Remove"          // Remove; PathError.Op "remove"
	OpChmod           Op = "Chmod"           // Chmod; PathError.Op "chmod"
)

// pathOp is the Op field the host's *fs.PathError carries for each operation.
var pathOp = map[Op]string{
	OpStat: "stat", OpLstat: "lstat", OpReadlink: "readlink", OpReadDir: "open",
	OpReadFile: "open", OpOpen: "open", OpWriteFile: "write", OpCreateExclusive: "open",
	OpMkdir: "mkdir", OpRemove: "remove", OpChmod: "chmod",
}

// Fault is one injected misbehaviour. When a call matches (same Op, and same Path unless
// Path is empty), the fault acts in this order: it waits (Hold, then Delay — both give up
// with ctx's error, doing nothing, when ctx ends first); it panics with Panic when that
// is set; for WriteFile and CreateExclusive with Partial set it really writes the first
// PartialBytes bytes of the data through the wrapped env; it returns Err wrapped in an
// *fs.PathError when Err is set; otherwise the call proceeds to the wrapped env.
type Fault struct {
	// Op is the operation the fault targets; a Fault without one matches nothing.
	Op Op
	// Path is the exact path the call must name; empty matches every path.
	Path string
	// Err is the error to return, normally a syscall.Errno.
	Err error
	// Partial makes a WriteFile or CreateExclusive leave the file holding the first
	// PartialBytes bytes of the new data (the old content gone) before failing with Err:
	// the state a non-atomic write leaves when the disk fills halfway.
	Partial bool
	// PartialBytes is how many bytes of the new data a Partial fault writes; it is
	// clamped to the data's length, and 0 leaves an empty file.
	PartialBytes int
	// Panic, when non-nil, is the value the call panics with.
	Panic any
	// Hold, when non-nil, blocks the call until the channel is closed or ctx ends.
	Hold <-chan struct{}
	// Delay slows the call down (ctx still ends the wait early).
	Delay time.Duration
	// Times limits the fault to the first Times matching calls; 0 means every call.
	Times int
}

// Errno returns a fault that fails op on path with errno.
func Errno(op Op, path string, errno syscall.Errno) Fault {
	return Fault{Op: op, Path: path, Err: errno}
}

// PartialWrite returns a fault that makes a WriteFile of path keep only the first n
// bytes of the new data and then fail with errno.
func PartialWrite(path string, n int, errno syscall.Errno) Fault {
	return Fault{Op: OpWriteFile, Path: path, Err: errno, Partial: true, PartialBytes: n}
}

// PanicOn returns a fault that makes op on path panic with v.
func PanicOn(op Op, path string, v any) Fault {
	return Fault{Op: op, Path: path, Panic: v}
}

// Slow returns a fault that delays op on path by d and then lets it proceed; a ctx that
// ends during the delay ends the call with ctx's error and nothing done.
func Slow(op Op, path string, d time.Duration) Fault {
	return Fault{Op: op, Path: path, Delay: d}
}

// Faulty is an ExecutionEnv that passes every call to the env it wraps unless an
// injected Fault matches. It counts calls per operation. It is safe for concurrent use;
// faults may be injected and removed while calls run.
type Faulty struct {
	inner env.ExecutionEnv

	mu     sync.Mutex
	faults []*armed
	calls  map[Op]int
}

type armed struct {
	Fault
	hits int
}

// NewFaulty wraps inner.
func NewFaulty(inner env.ExecutionEnv) *Faulty {
	return &Faulty{inner: inner, calls: map[Op]int{}}
}

// Inner is the wrapped env.
func (f *Faulty) Inner() env.ExecutionEnv { return f.inner }

// Inject arms flt and returns a function that disarms it. Faults are tried in the order
// they were injected; the first match acts.
func (f *Faulty) Inject(flt Fault) (remove func()) {
	a := &armed{Fault: flt}
	f.mu.Lock()
	f.faults = append(f.faults, a)
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for i, x := range f.faults {
			if x == a {
				f.faults = append(f.faults[:i:i], f.faults[i+1:]...)
				return
			}
		}
	}
}

// Reset disarms every fault and zeroes the call counts.
func (f *Faulty) Reset() {
	f.mu.Lock()
	f.faults = nil
	f.calls = map[Op]int{}
	f.mu.Unlock()
}

// Calls reports how many calls of op were made, faulted or not.
func (f *Faulty) Calls(op Op) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// match counts the call and returns the fault that applies to it, if any.
func (f *Faulty) match(op Op, path string) *Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[op]++
	for _, a := range f.faults {
		if a.Op != op || (a.Path != "" && a.Path != path) {
			continue
		}
		if a.Times > 0 && a.hits >= a.Times {
			continue
		}
		a.hits++
		flt := a.Fault
		return &flt
	}
	return nil
}

// act runs the fault's wait and panic, and its partial write when write is non-nil. It
// returns done=true with the error the call must return, or done=false when the call
// should go on to the wrapped env.
func (flt *Fault) act(ctx context.Context, op Op, path string, write func(prefix int) error) (done bool, err error) {
	if flt.Hold != nil {
		select {
		case <-flt.Hold:
		case <-ctx.Done():
			return true, ctx.Err()
		}
	}
	if flt.Delay > 0 {
		t := time.NewTimer(flt.Delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return true, ctx.Err()
		}
	}
	if flt.Panic != nil {
		panic(flt.Panic)
	}
	if flt.Partial && write != nil {
		if err := write(flt.PartialBytes); err != nil {
			return true, err
		}
	}
	if flt.Err != nil {
		return true, &fs.PathError{Op: pathOp[op], Path: path, Err: flt.Err}
	}
	return false, nil
}

// before is the common entry of every operation without a partial arm.
func (f *Faulty) before(ctx context.Context, op Op, path string) (bool, error) {
	flt := f.match(op, path)
	if flt == nil {
		return false, nil
	}
	return flt.act(ctx, op, path, nil)
}

// Identity is the wrapped env's: faults do not make another tree.
func (f *Faulty) Identity() string { return f.inner.Identity() }

// CaseInsensitive is the wrapped env's.
func (f *Faulty) CaseInsensitive() bool { return f.inner.CaseInsensitive() }

// Stat applies the first matching fault, if any, and otherwise calls the wrapped
// env's Stat.
func (f *Faulty) Stat(ctx context.Context, path string) (env.FileInfo, error) {
	if done, err := f.before(ctx, OpStat, path); done {
		return env.FileInfo{}, err
	}
	return f.inner.Stat(ctx, path)
}

// Lstat applies the first matching fault, if any, and otherwise calls the wrapped
// env's Lstat.
func (f *Faulty) Lstat(ctx context.Context, path string) (env.FileInfo, error) {
	if done, err := f.before(ctx, OpLstat, path); done {
		return env.FileInfo{}, err
	}
	return f.inner.Lstat(ctx, path)
}

// Readlink applies the first matching fault, if any, and otherwise calls the wrapped
// env's Readlink.
func (f *Faulty) Readlink(ctx context.Context, path string) (string, error) {
	if done, err := f.before(ctx, OpReadlink, path); done {
		return "", err
	}
	return f.inner.Readlink(ctx, path)
}

// ReadDir applies the first matching fault, if any, and otherwise calls the wrapped
// env's ReadDir.
func (f *Faulty) ReadDir(ctx context.Context, path string) ([]env.DirEntry, error) {
	if done, err := f.before(ctx, OpReadDir, path); done {
		return nil, err
	}
	return f.inner.ReadDir(ctx, path)
}

// ReadFile applies the first matching fault, if any, and otherwise calls the wrapped
// env's ReadFile.
func (f *Faulty) ReadFile(ctx context.Context, path string) ([]byte, error) {
	if done, err := f.before(ctx, OpReadFile, path); done {
		return nil, err
	}
	return f.inner.ReadFile(ctx, path)
}

// Open applies the first matching fault, if any, and otherwise calls the wrapped
// env's Open.
func (f *Faulty) Open(ctx context.Context, path string) (io.ReadCloser, error) {
	if done, err := f.before(ctx, OpOpen, path); done {
		return nil, err
	}
	return f.inner.Open(ctx, path)
}

// WriteFile honours a Partial fault by replacing the file with the prefix through the
// wrapped env's WriteFile, which keeps an existing file's mode; the old bytes are gone
// and the new ones are not all there, exactly as after a truncating write that failed.
func (f *Faulty) WriteFile(ctx context.Context, path string, data []byte, perm fs.FileMode) error {
	if flt := f.match(OpWriteFile, path); flt != nil {
		done, err := flt.act(ctx, OpWriteFile, path, func(n int) error {
			return f.inner.WriteFile(ctx, path, data[:clamp(n, len(data))], perm)
		})
		if done {
			return err
		}
	}
	return f.inner.WriteFile(ctx, path, data, perm)
}

// CreateExclusive honours a Partial fault by creating the file with the prefix only.
func (f *Faulty) CreateExclusive(ctx context.Context, path string, data []byte, perm fs.FileMode) error {
	if flt := f.match(OpCreateExclusive, path); flt != nil {
		done, err := flt.act(ctx, OpCreateExclusive, path, func(n int) error {
			return f.inner.CreateExclusive(ctx, path, data[:clamp(n, len(data))], perm)
		})
		if done {
			return err
		}
	}
	return f.inner.CreateExclusive(ctx, path, data, perm)
}

// Mkdir applies the first matching fault, if any, and otherwise calls the wrapped
// env's Mkdir.
func (f *Faulty) Mkdir(ctx context.Context, path string, perm fs.FileMode) error {
	if done, err := f.before(ctx, OpMkdir, path); done {
		return err
	}
	return f.inner.Mkdir(ctx, path, perm)
}

// Remove applies the first matching fault, if any, and otherwise calls the wrapped
// env's Remove.
func (f *Faulty) Remove(ctx context.Context, path string) error {
	if done, err := f.before(ctx, OpRemove, path); done {
		return err
	}
	return f.inner.Remove(ctx, path)
}

// Chmod applies the first matching fault, if any, and otherwise calls the wrapped
// env's Chmod.
func (f *Faulty) Chmod(ctx context.Context, path string, mode fs.FileMode) error {
	if done, err := f.before(ctx, OpChmod, path); done {
		return err
	}
	return f.inner.Chmod(ctx, path, mode)
}

func clamp(n, limit int) int {
	return min(max(n, 0), limit)
}

var (
	_ env.ExecutionEnv = (*Faulty)(nil)
	_ env.ExecutionEnv = (*Mem)(nil)
)
