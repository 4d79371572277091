//go:build linux

package treestate

import (
	"io/fs"

	"golang.org/x/sys/unix"
)

// hostSymlink makes the link path → target with symlinkat in path's directory, opened
// with no symbolic link in any component (a directory swapped for a link since the walk
// fails with ELOOP instead of leading the link elsewhere).
func hostSymlink(target, path string) error {
	dir, base := parentOf(path), path[len(parentOf(path)):]
	if len(base) > 0 && base[0] == '/' {
		base = base[1:]
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, dir, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if err != nil {
		return &fs.PathError{Op: "symlink", Path: path, Err: err}
	}
	defer unix.Close(fd)
	if err := unix.Symlinkat(target, fd, base); err != nil {
		return &fs.PathError{Op: "symlink", Path: path, Err: err}
	}
	return nil
}
