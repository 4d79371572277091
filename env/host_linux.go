//go:build linux

package env

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// On Linux the host env resolves every path it is given with openat2(2) and
// RESOLVE_NO_SYMLINKS: callers pass canonical paths (package fence resolved every
// link), so a symbolic link found in ANY component now means the tree changed after the
// check — a directory swapped for a link to somewhere else — and the operation fails
// with ELOOP instead of following it. Writes, creates and removals act through a
// descriptor of the parent directory opened that way, so the directory checked is the
// directory written. Kernels without openat2 (before 5.6, or a filter that hides it)
// fall back to refusing a link in the final component only.

var noOpenat2 atomic.Bool

// openNoSymlinks opens path with flags, refusing a symlink in any component.
func openNoSymlinks(path string, flags int, mode uint32) (int, error) {
	if !noOpenat2.Load() {
		fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
			Flags:   uint64(flags | unix.O_CLOEXEC),
			Mode:    uint64(mode),
			Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		if !errors.Is(err, unix.ENOSYS) {
			return fd, err
		}
		noOpenat2.Store(true)
	}
	return unix.Open(path, flags|unix.O_CLOEXEC|unix.O_NOFOLLOW, mode)
}

// parentDir opens the directory that holds path; the caller closes it.
func parentDir(op, path string) (dirfd int, base string, err error) {
	dir, base := filepath.Split(path)
	if base == "" || dir == "" {
		return -1, "", &fs.PathError{Op: op, Path: path, Err: unix.EINVAL}
	}
	dirfd, err = openNoSymlinks(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, "", &fs.PathError{Op: op, Path: path, Err: err}
	}
	return dirfd, base, nil
}

// WriteFile replaces path atomically through a hidden temporary file in the same
// directory, opened from a directory descriptor reached without following any symlink;
// where the filesystem allows, that file has no name until its bytes are durable
// (openTemp), so a write killed on the way leaves nothing.
// An existing file keeps its 0o777 permission bits; a symlink (ELOOP) or directory
// (EISDIR) at path is refused.
func (*Host) WriteFile(ctx context.Context, path string, data []byte, perm fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dirfd, base, err := parentDir("write", path)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	pe := func(err error) error { return &fs.PathError{Op: "write", Path: path, Err: err} }
	var st unix.Stat_t
	switch err := unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil:
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			return pe(unix.ELOOP)
		case unix.S_IFDIR:
			return pe(unix.EISDIR)
		}
		perm = fs.FileMode(st.Mode & 0o777)
	case !errors.Is(err, unix.ENOENT):
		return pe(err)
	}
	fd, tmp, err := openTemp(dirfd, base, perm)
	if err != nil {
		return pe(err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(filepath.Dir(path), tmp))
	fail := func(err error) error {
		f.Close()
		if tmp != "" {
			unix.Unlinkat(dirfd, tmp, 0)
		}
		return err
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	// The umask may have narrowed perm at create; set the mode the file must keep.
	if err := f.Chmod(perm.Perm()); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if tmp == "" {
		// Named only now, its bytes durable: the name exists from here to the rename.
		name, err := linkTemp(fd, dirfd, base)
		if err != nil {
			return fail(pe(err))
		}
		tmp = name
	}
	// Renamed before the close, so that nothing but the rename itself stands between
	// the name and its removal.
	if err := unix.Renameat(dirfd, tmp, dirfd, base); err != nil {
		f.Close()
		unix.Unlinkat(dirfd, tmp, 0)
		return pe(err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	// Make the rename durable. Failure is ignored: the rename succeeded, and some
	// filesystems cannot sync a directory.
	unix.Fsync(dirfd)
	return nil
}

// openTemp opens the file an atomic write of base goes through. Where the filesystem
// has them it is an unnamed file (O_TMPFILE) in the directory, named only once its
// bytes are durable (linkTemp), just before the rename: a process killed while writing
// leaves nothing behind, since the kernel frees an unnamed file with its last
// descriptor. Elsewhere it is a file named by tempName from the start; name is that
// name, or "" for an unnamed file.
func openTemp(dirfd int, base string, perm fs.FileMode) (fd int, name string, err error) {
	fd, err = unix.Openat(dirfd, ".", unix.O_WRONLY|unix.O_TMPFILE|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err == nil {
		return fd, "", nil
	}
	// A filesystem (or kernel) without unnamed files answers one of these; any other
	// error (EACCES, ENOSPC, …) is the directory's, and a named file would meet it too.
	if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EINVAL) {
		return -1, "", err
	}
	name = tempName(base)
	fd, err = unix.Openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return -1, "", err
	}
	return fd, name, nil
}

// linkTemp gives the unnamed file fd a temporary name in the directory dirfd, as
// tempName makes for base, and returns it: through /proc's link to the descriptor,
// which any user may follow to a file it opened, or, without /proc, by the descriptor
// itself (AT_EMPTY_PATH, which needs CAP_DAC_READ_SEARCH).
func linkTemp(fd, dirfd int, base string) (string, error) {
	name := tempName(base)
	err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), dirfd, name, unix.AT_SYMLINK_FOLLOW)
	if err != nil {
		if err2 := unix.Linkat(fd, "", dirfd, name, unix.AT_EMPTY_PATH); err2 == nil {
			err = nil
		}
	}
	return name, err
}

// CreateExclusive creates path with O_EXCL|O_NOFOLLOW in a parent reached without
// following any symlink, writes data and syncs it; EEXIST when anything is there.
func (*Host) CreateExclusive(ctx context.Context, path string, data []byte, perm fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dirfd, base, err := parentDir("create", path)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	fd, err := unix.Openat(dirfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return &fs.PathError{Op: "create", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Mkdir creates one directory with mkdirat in a parent reached without following any
// symlink.
func (*Host) Mkdir(ctx context.Context, path string, perm fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dirfd, base, err := parentDir("mkdir", path)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	if err := unix.Mkdirat(dirfd, base, uint32(perm.Perm())); err != nil {
		return &fs.PathError{Op: "mkdir", Path: path, Err: err}
	}
	return nil
}

// Remove unlinks a file, link or empty directory, as os.Remove does, in a parent
// reached without following any symlink; a symlink is removed, not its target.
func (*Host) Remove(ctx context.Context, path string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dirfd, base, err := parentDir("remove", path)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	// As os.Remove: unlink, and rmdir when the name is a directory. Neither follows a
	// symlink: unlinking a link removes the link.
	err = unix.Unlinkat(dirfd, base, 0)
	if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EPERM) {
		if rerr := unix.Unlinkat(dirfd, base, unix.AT_REMOVEDIR); rerr == nil || !errors.Is(rerr, unix.ENOTDIR) {
			err = rerr
		}
	}
	if err != nil {
		return &fs.PathError{Op: "remove", Path: path, Err: err}
	}
	return nil
}

// Chmod sets the permission bits of path. It refuses a symlink at path with ELOOP,
// since chmod would change the link's target instead.
func (*Host) Chmod(ctx context.Context, path string, mode fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dirfd, base, err := parentDir("chmod", path)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &fs.PathError{Op: "chmod", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		// chmod would follow the link; the mode of a link is never what a caller meant.
		return &fs.PathError{Op: "chmod", Path: path, Err: unix.ELOOP}
	}
	if err := unix.Fchmodat(dirfd, base, unixMode(mode), 0); err != nil {
		return &fs.PathError{Op: "chmod", Path: path, Err: err}
	}
	return nil
}
