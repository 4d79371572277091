//go:build linux

package sandbox

// The mount primitives the view is built with: every mount is made from a descriptor
// (open_tree, fsopen/fsmount, mount_setattr), never by a path the kernel resolves again.

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// cloneAt is a detached copy of the mount tree at path (relative to dirfd, "" for dirfd
// itself), recursive for a directory, read-only (all of it) when ro.
func cloneAt(dirfd int, path string, recursive, ro bool) (int, error) {
	flags := uint(unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC)
	if path == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	if recursive {
		flags |= unix.AT_RECURSIVE
	}
	fd, err := unix.OpenTree(dirfd, path, flags)
	if err != nil {
		return -1, fmt.Errorf("open_tree: %w", err)
	}
	if ro {
		if err := setReadOnly(fd, recursive); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	return fd, nil
}

// setReadOnly makes the mount at fd read-only, and every mount beneath it when recursive.
func setReadOnly(fd int, recursive bool) error {
	flags := uint(unix.AT_EMPTY_PATH)
	if recursive {
		flags |= unix.AT_RECURSIVE
	}
	if err := unix.MountSetattr(fd, "", flags, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("mount_setattr: %w", err)
	}
	return nil
}

// newTmpfs is a detached tmpfs with the given options ("mode=0755,size=4k").
func newTmpfs(opts string, attrs int) (int, error) {
	var kv [][2]string
	for _, o := range strings.Split(opts, ",") {
		k, val, _ := strings.Cut(o, "=")
		kv = append(kv, [2]string{k, val})
	}
	return newFS("tmpfs", kv, attrs)
}

// newFS makes a filesystem of type fstype with the options (a flag where the value is
// empty) and returns it as a detached mount.
func newFS(fstype string, opts [][2]string, attrs int) (int, error) {
	fs, err := unix.Fsopen(fstype, unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("fsopen %s: %w", fstype, err)
	}
	defer unix.Close(fs)
	for _, o := range opts {
		if o[1] == "" {
			err = unix.FsconfigSetFlag(fs, o[0])
		} else {
			err = unix.FsconfigSetString(fs, o[0], o[1])
		}
		if err != nil {
			return -1, fmt.Errorf("%s option %s: %w", fstype, o[0], err)
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return -1, fmt.Errorf("making a %s: %w", fstype, err)
	}
	fd, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, attrs)
	if err != nil {
		return -1, fmt.Errorf("fsmount %s: %w", fstype, err)
	}
	return fd, nil
}

// openFollow opens the machine's path (O_PATH), following symbolic links: the policy's
// paths are canonical, and the view places each at the path the policy names.
func openFollow(path string) (int, error) {
	return unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
}

func isDirFD(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
}

func isDir(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.IsDir()
}
