package env

import (
	"context"
	"errors"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Host is the ExecutionEnv of the local machine. Its zero value is ready to use.
type Host struct{}

// NewHost returns the host env.
func NewHost() *Host { return &Host{} }

// HostIdentity is the Identity of every host env: one machine, one tree.
const HostIdentity = "host"

// Identity returns HostIdentity.
func (*Host) Identity() string { return HostIdentity }

// CaseInsensitive reports the platform default: macOS and Windows volumes are usually
// case-insensitive, Linux filesystems are not.
func (*Host) CaseInsensitive() bool {
	return runtime.GOOS == "darwin" || runtime.GOOS == "windows"
}

// Stat is os.Stat with the context checked first: a cancelled ctx fails before the
// filesystem is touched.
func (*Host) Stat(ctx context.Context, path string) (FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return FileInfo{}, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return FileInfo{}, err
	}
	return infoOf(fi), nil
}

// Lstat is os.Lstat with the context checked first.
func (*Host) Lstat(ctx context.Context, path string) (FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return FileInfo{}, err
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return FileInfo{}, err
	}
	return infoOf(fi), nil
}

// Readlink is os.Readlink with the context checked first.
func (*Host) Readlink(ctx context.Context, path string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	return os.Readlink(path)
}

// ReadDir lists path sorted by name, as os.ReadDir does; each entry carries only its
// name and type bits.
func (*Host) ReadDir(ctx context.Context, path string) ([]DirEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	out := make([]DirEntry, len(ents))
	for i, e := range ents {
		out[i] = DirEntry{Name: e.Name(), Type: e.Type()}
	}
	slices.SortFunc(out, func(a, b DirEntry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// ReadDirUpTo is ReadDir of a directory of at most n entries. Of a larger one it reads
// no more than n+1 entries and reports more, with none: a caller that lists a directory
// only to spare itself other calls stops paying once listing costs more than they would.
func (*Host) ReadDirUpTo(ctx context.Context, path string, n int) (_ []DirEntry, more bool, _ error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	ents, err := f.ReadDir(n + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, false, err
	}
	if len(ents) > n {
		return nil, true, nil
	}
	out := make([]DirEntry, len(ents))
	for i, e := range ents {
		out[i] = DirEntry{Name: e.Name(), Type: e.Type()}
	}
	slices.SortFunc(out, func(a, b DirEntry) int { return strings.Compare(a.Name, b.Name) })
	return out, false, nil
}

// ReadFile reads the whole file. On Linux it refuses a symlink in any component of
// path (ELOOP); elsewhere only in the final one.
func (h *Host) ReadFile(ctx context.Context, path string) ([]byte, error) {
	f, err := h.openNoFollow(ctx, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// Open opens path for reading with ReadFile's symlink rule; OpenedInfo can describe the
// reader. On Linux it is a bare descriptor (not an *os.File): close it, and do not use it
// from two goroutines at once.
func (h *Host) Open(ctx context.Context, path string) (io.ReadCloser, error) {
	return h.openNoFollow(ctx, path)
}

func (*Host) openNoFollow(ctx context.Context, path string) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := openRead(path)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return f, nil
}

var tmpSeq atomic.Uint64

// tempName is the name of the temporary file an atomic write of base goes through: hidden,
// unique in this process and over time, recognizably sema's, and naming the writing
// process (writerTag) so that CleanStaleTemps can tell a dead writer's file from a live
// one's. A name that would pass the 255 bytes a file name may have goes without the
// writer, as names did before: it is then removable by age only.
func tempName(base string) string {
	name := "." + base + ".sema-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.FormatUint(tmpSeq.Add(1), 36)
	if tag := writerTag(); tag != "" && len(name)+len(tag)+len("-.tmp") <= 255 {
		return name + "-" + tag + ".tmp"
	}
	return name + ".tmp"
}

func infoOf(fi os.FileInfo) FileInfo {
	out := FileInfo{Name: fi.Name(), Size: fi.Size(), Mode: fi.Mode(), ModTime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		out.Dev = uint64(st.Dev)
		out.Ino = uint64(st.Ino)
		out.Nlink = uint64(st.Nlink)
	}
	return out
}

// OpenedInfo describes a file Open returned, when the env handed back one it can describe
// (the host env does, and any *os.File): the facts are those of the file that was opened,
// whatever has happened to its name since, so a check made on them cannot be raced by a
// rename. ok is false for a reader the platform cannot describe.
func OpenedInfo(rc io.ReadCloser) (FileInfo, bool) {
	switch f := rc.(type) {
	case describer:
		fi, err := f.describe()
		return fi, err == nil
	case *os.File:
		fi, err := f.Stat()
		if err != nil {
			return FileInfo{}, false
		}
		return infoOf(fi), true
	}
	return FileInfo{}, false
}

// describer is a reader of the host env that describes its file itself.
type describer interface {
	describe() (FileInfo, error)
}
