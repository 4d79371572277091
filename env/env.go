// Package env is the only door between the engine and a machine: every file the tools
// read or write, every directory they list, goes through an ExecutionEnv. The host
// implementation talks to the local operating system; tests use implementations that
// inject faults.
//
// Answers are result-shaped: an operation that fails returns an error that keeps the
// operating system's code (an *fs.PathError wrapping a syscall.Errno on the host), so a
// caller can tell a proven failure (EACCES: nothing was written) from an ambiguous one.
// An env never hides an error and never guesses.
package env

import (
	"context"
	"io"
	"io/fs"
	"time"
)

// ExecutionEnv is a view of one filesystem. All paths are absolute and cleaned; callers
// pass canonical paths (see package fence) and the env does not resolve them again.
type ExecutionEnv interface {
	// Identity names the filesystem tree this env is a view of. Two envs with equal
	// identities see the same files ("host" for the host env).
	Identity() string
	// CaseInsensitive reports whether names on this filesystem compare without case.
	CaseInsensitive() bool

	// Stat describes the file at path, following a final symlink.
	Stat(ctx context.Context, path string) (FileInfo, error)
	// Lstat is Stat without following a final symlink.
	Lstat(ctx context.Context, path string) (FileInfo, error)
	// Readlink returns the target of the symlink at path as stored, not resolved; it
	// fails (EINVAL on the host) when path is not a symlink.
	Readlink(ctx context.Context, path string) (string, error)
	// ReadDir lists a directory, sorted by name.
	ReadDir(ctx context.Context, path string) ([]DirEntry, error)
	// ReadFile reads a whole regular file. It refuses to follow a symlink in the final
	// component (so a link swapped in after the path was checked is not followed); the
	// host env on Linux refuses a symlink in any component, since callers pass
	// canonical paths.
	ReadFile(ctx context.Context, path string) ([]byte, error)
	// Open opens a regular file for streaming reads, with ReadFile's symlink rule.
	Open(ctx context.Context, path string) (io.ReadCloser, error)

	// WriteFile replaces path atomically: the bytes go to a temporary file in the same
	// directory, are synced, and the temporary file is renamed over path, so a reader (or
	// a crash) sees the old bytes or the new ones, never a mix. An existing file keeps its
	// mode; a new one gets perm. It does not follow a symlink in the final component.
	WriteFile(ctx context.Context, path string, data []byte, perm fs.FileMode) error
	// CreateExclusive creates path with data, failing with fs.ErrExist (EEXIST) when
	// anything — a file, a directory, a dangling link — is already there.
	CreateExclusive(ctx context.Context, path string, data []byte, perm fs.FileMode) error
	// Mkdir creates one directory (EEXIST when present).
	Mkdir(ctx context.Context, path string, perm fs.FileMode) error
	// Remove removes a file or an empty directory; it never follows a symlink.
	Remove(ctx context.Context, path string) error
	// Chmod sets the mode bits of path.
	Chmod(ctx context.Context, path string, mode fs.FileMode) error
}

// FileInfo describes a file. Dev and Ino identify it on its filesystem where the
// platform provides them (zero otherwise).
type FileInfo struct {
	// Name is the final element of the path, as fs.FileInfo.Name gives it.
	Name string
	// Size is the length in bytes for a regular file; for other kinds it is what the
	// platform reports.
	Size int64
	// Mode holds the type and permission bits.
	Mode fs.FileMode
	// ModTime is the last modification time.
	ModTime time.Time
	// Dev is the device the file lives on; with Ino it names the file, whatever path
	// reached it. Zero where the platform does not report it.
	Dev uint64
	// Ino is the inode number on Dev; zero where the platform does not report it.
	Ino uint64
	// Nlink is the number of hard links to the file where the platform reports it, 0
	// where it does not. A regular file with more than one link has another name that
	// may lie outside the roots, so the read tools treat it as an unknown place.
	Nlink uint64
}

// IsDir reports whether the file is a directory.
func (fi FileInfo) IsDir() bool { return fi.Mode.IsDir() }

// IsSymlink reports whether the file is a symbolic link (only from Lstat).
func (fi FileInfo) IsSymlink() bool { return fi.Mode&fs.ModeSymlink != 0 }

// IsRegular reports whether the file is a regular file.
func (fi FileInfo) IsRegular() bool { return fi.Mode.IsRegular() }

// DirEntry is one entry of a directory listing. Type holds only the type bits
// (fs.ModeDir, fs.ModeSymlink, …), as fs.DirEntry.Type does.
type DirEntry struct {
	// Name is the entry's name within the directory, not a path.
	Name string
	// Type is the entry's type bits; zero for a regular file.
	Type fs.FileMode
}
