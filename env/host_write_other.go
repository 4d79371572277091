//go:build !linux

package env

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// WriteFile replaces path atomically through a hidden temporary file in the same
// directory. An existing file keeps its mode; a symlink (ELOOP) or directory (EISDIR)
// at path is refused. Only the final component is checked for a symlink here.
func (*Host) WriteFile(ctx context.Context, path string, data []byte, perm fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSymlink != 0 {
			return &fs.PathError{Op: "write", Path: path, Err: syscall.ELOOP}
		}
		if fi.IsDir() {
			return &fs.PathError{Op: "write", Path: path, Err: syscall.EISDIR}
		}
		perm = fi.Mode().Perm()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	dir, base := filepath.Split(path)
	tmp := filepath.Join(dir, tempName(base))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, perm)
	if err != nil {
		return &fs.PathError{Op: "write", Path: path, Err: errors.Unwrap(err)}
	}
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	// The umask may have narrowed perm at create; set the mode the file must keep.
	if err := f.Chmod(perm); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	syncDir(dir)
	return nil
}

// syncDir makes a rename durable. Failure is ignored: the rename itself succeeded and
// some filesystems do not support syncing a directory.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// CreateExclusive creates path with O_EXCL|O_NOFOLLOW, writes data and syncs it;
// fs.ErrExist when anything is there.
func (*Host) CreateExclusive(ctx context.Context, path string, data []byte, perm fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, perm)
	if err != nil {
		return err
	}
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

// Mkdir is os.Mkdir with the context checked first.
func (*Host) Mkdir(ctx context.Context, path string, perm fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return os.Mkdir(path, perm)
}

// Remove is os.Remove with the context checked first.
func (*Host) Remove(ctx context.Context, path string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return os.Remove(path)
}

// Chmod is os.Chmod with the context checked first. Unlike on Linux, a symlink at
// path is followed.
func (*Host) Chmod(ctx context.Context, path string, mode fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return os.Chmod(path, mode)
}
