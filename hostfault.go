package sema

import (
	"errors"
	"syscall"
)

// Codes of what the machine could not give: disk space, file descriptors, memory. They
// are nobody's mistake in a command line, a configuration or a task — a file that could
// not be read for want of a descriptor is not an invalid file — so they are never folded
// into the code of what was being read or written. The way out is the host's: free
// space, raise the limit (ulimit -n), give the process more memory; then run again.
const (
	// CodeDiskFull: a write found no space (ENOSPC, EDQUOT, EFBIG past RLIMIT_FSIZE,
	// SQLite's SQLITE_FULL). The detail's "path" names the file when it is known.
	CodeDiskFull = "io.disk_full"
	// CodeFDExhausted: the process or the system ran out of file descriptors (EMFILE,
	// ENFILE).
	CodeFDExhausted = "io.fd_exhausted"
	// CodeNoMemory: an allocation outside the Go heap failed (ENOMEM, SQLite's
	// SQLITE_NOMEM). The Go runtime's own out-of-memory abort ends the process before
	// any code could say so.
	CodeNoMemory = "io.no_memory"
)

// HostFault returns err coded as the fault of the host it is (CodeDiskFull,
// CodeFDExhausted, CodeNoMemory), wrapping it, with what — the thing being done, "read
// /etc/x" — in its sentence; nil when err is none of them. A site that reads or writes a
// file calls it before it codes a failure as its own, so the person learns that the
// machine, not the file, is what to fix.
func HostFault(err error, what string) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) && IsHostCode(e.Code) {
		return e
	}
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT), errors.Is(err, syscall.EFBIG):
		return Errorf(CodeDiskFull, "cannot %s: %w; the disk (or the quota, or the file size limit) is full — free space and run again", what, err)
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return Errorf(CodeFDExhausted, "cannot %s: %w; the process ran out of file descriptors — raise the limit (ulimit -n) and run again", what, err)
	case errors.Is(err, syscall.ENOMEM):
		return Errorf(CodeNoMemory, "cannot %s: %w; the machine gave no more memory — free memory or raise the limit, and run again", what, err)
	}
	return nil
}

// IsHostCode reports whether code is one of the host's faults (CodeDiskFull,
// CodeFDExhausted, CodeNoMemory).
func IsHostCode(code string) bool {
	return code == CodeDiskFull || code == CodeFDExhausted || code == CodeNoMemory
}
