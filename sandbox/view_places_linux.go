//go:build linux

// The view's special places: its own /dev and /proc, the read-only and cache
// overlays, and the resolver file.

package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// makeDev makes the private /dev: a tmpfs holding the granted devices (each a bind of
// the machine's), a devpts instance of its own at /dev/pts with /dev/ptmx pointing into
// it, the /proc/self/fd links, and a private writable /dev/shm.
func (v *view) makeDev() error {
	dev, err := newTmpfs("mode=0755", unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return err
	}
	if err := v.attach(dev, "/dev", true); err != nil {
		return err
	}
	v.done = append(v.done, placement{path: "/dev", kind: viewDev})
	pts := false
	for _, d := range v.p.Devices {
		switch {
		case d == "/dev/ptmx" || within("/dev/pts", d):
			pts = true
			continue
		case !within("/dev", d) || d == "/dev":
			continue
		}
		if err := v.device(dev, d); err != nil {
			return fmt.Errorf("%s: %w", d, err)
		}
	}
	links := [][2]string{{"/proc/self/fd", "fd"}, {"/proc/self/fd/0", "stdin"}, {"/proc/self/fd/1", "stdout"}, {"/proc/self/fd/2", "stderr"}}
	if pts {
		// A devpts mount is a new instance (Linux 4.7 on); its ptmx must be usable.
		fs, err := newFS("devpts", [][2]string{{"ptmxmode", "0666"}}, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC)
		if err != nil {
			return fmt.Errorf("devpts: %w", err)
		}
		err = v.attach(fs, "/dev/pts", true)
		unix.Close(fs)
		if err != nil {
			return err
		}
		links = append(links, [2]string{"pts/ptmx", "ptmx"})
	}
	for _, l := range links {
		if err := unix.Symlinkat(l[0], dev, l[1]); err != nil && !errors.Is(err, unix.EEXIST) {
			return err
		}
	}
	// /dev is a tmpfs of the command's own, left writable for /dev/shm: Landlock grants
	// writing nothing else in it.
	if err := unix.Mkdirat(dev, "shm", 0o777); err != nil && !errors.Is(err, unix.EEXIST) {
		return err
	}
	if err := unix.Fchmodat(dev, "shm", 0o1777, 0); err != nil {
		return err
	}
	v.res.write = append(v.res.write, "/dev/shm")
	return nil
}

// device puts the machine's device d in the private /dev (open at dev): a node of its
// own where the helper may make one (root, no user namespace), else a read-only bind of
// the machine's (a device is written through a read-only mount; its mode and owner are
// not changed through one).
func (v *view) device(dev int, d string) error {
	var st unix.Stat_t
	if err := unix.Stat(d, &st); errors.Is(err, unix.ENOENT) {
		return nil
	} else if err != nil {
		return err
	}
	rel := strings.TrimPrefix(d, "/dev/")
	kind := st.Mode & unix.S_IFMT
	if !v.userNS && !strings.Contains(rel, "/") && (kind == unix.S_IFCHR || kind == unix.S_IFBLK) {
		err := unix.Mknodat(dev, rel, st.Mode, int(st.Rdev))
		if err == nil || errors.Is(err, unix.EEXIST) {
			return nil
		}
		if !errors.Is(err, unix.EPERM) {
			return err
		}
	}
	src, err := openFollow(d)
	if err != nil {
		return err
	}
	defer unix.Close(src)
	dir := kind == unix.S_IFDIR
	tree, err := cloneAt(src, "", dir, true)
	if err != nil {
		return err
	}
	defer unix.Close(tree)
	return v.attach(tree, d, dir)
}

// makeProc mounts /proc: a fresh proc of the command's own PID namespace when the helper
// is its first process, else the machine's, read-only (under an open write face the
// machine's as it is).
func (v *view) makeProc(pidOne, writeOpen bool) error {
	var tree int
	var err error
	switch {
	case pidOne:
		tree, err = newFS("proc", nil, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	case writeOpen:
		return nil
	default:
		tree, err = cloneAt(unix.AT_FDCWD, "/proc", true, true)
	}
	if err != nil {
		return fmt.Errorf("mounting proc: %w", err)
	}
	defer unix.Close(tree)
	if err := v.attach(tree, "/proc", true); err != nil {
		return err
	}
	v.done = append(v.done, placement{path: "/proc", kind: viewProc})
	return nil
}

// readOverlay is a read-only overlay of the directory open at fd: the tree's content, on a
// mount of its own inodes. overlayfs wants a second lower layer where there is no upper
// one: a data-only layer (never looked up; the view's own root serves) where the kernel
// has them, else an empty directory.
func (v *view) readOverlay(fd int) (int, error) {
	if !v.mergedLower {
		second := v.empty
		if v.made {
			second = v.root
		}
		if second >= 0 {
			tree, err := v.overlayOf(fdPath(fd) + "::" + fdPath(second))
			if !errors.Is(err, unix.EINVAL) {
				return tree, err
			}
		}
	}
	if v.empty < 0 {
		var err error
		if v.empty, err = newTmpfs("mode=0555,size=4k", unix.MOUNT_ATTR_RDONLY); err != nil {
			return -1, err
		}
		if !v.made {
			// Tried with this as the data-only layer when there was one.
			if tree, err := v.overlayOf(fdPath(fd) + "::" + fdPath(v.empty)); !errors.Is(err, unix.EINVAL) {
				return tree, err
			}
		}
	}
	v.mergedLower = true
	return v.overlayOf(fdPath(fd) + ":" + fdPath(v.empty))
}

func (v *view) overlayOf(lowerdir string) (int, error) {
	// Redirects and metacopy in the tree could only lead into the second layer: empty,
	// or a data-only layer (the view's own root, as its tmpfs holds nothing yet) that is
	// never looked up without metacopy.
	opts := [][2]string{{"lowerdir", lowerdir}}
	if v.userNS {
		opts = append(opts, [2]string{"userxattr", ""})
	}
	return newFS("overlay", opts, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
}

// cacheOverlay is an overlay of the shared cache at path whose upper layer is the
// policy's CacheLayer/<name>: the command reads through to the cache and writes into its
// layer, never into the cache itself.
func (v *view) cacheOverlay(path string) (int, error) {
	if v.p.CacheLayer == "" {
		return -1, errors.New("a cache needs a cache layer")
	}
	lower, err := openFollow(path)
	if err != nil {
		return -1, err
	}
	defer unix.Close(lower)
	if err := os.MkdirAll(v.p.CacheLayer, 0o700); err != nil {
		return -1, err
	}
	layer, err := openNoLinks(v.p.CacheLayer)
	if err != nil {
		return -1, fmt.Errorf("the cache layer %s: %w", v.p.CacheLayer, err)
	}
	defer unix.Close(layer)
	sum := sha256.Sum256([]byte(path))
	name := hex.EncodeToString(sum[:8])
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	dir, err := mkdirAt(layer, name)
	if err != nil {
		return -1, err
	}
	fds = append(fds, dir)
	upper, err := mkdirAt(dir, "upper")
	if err != nil {
		return -1, err
	}
	fds = append(fds, upper)
	work, err := lockedWork(dir)
	if err != nil {
		return -1, err
	}
	fds = append(fds, work)
	opts := [][2]string{
		{"lowerdir", fdPath(lower)}, {"upperdir", fdPath(fds[1])}, {"workdir", fdPath(fds[2])},
		{"index", "off"}, {"metacopy", "off"}, {"redirect_dir", "nofollow"},
	}
	if v.userNS {
		opts = append(opts, [2]string{"userxattr", ""})
	}
	return newFS("overlay", opts, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
}

// mkdirAt makes (if missing) and opens the directory name in dir, following no link.
func mkdirAt(dir int, name string) (int, error) {
	if err := unix.Mkdirat(dir, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, err
	}
	fd, err := unix.Openat2(dir, name, &unix.OpenHow{
		Flags: unix.O_PATH | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_DIRECTORY, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH,
	})
	if err != nil {
		return -1, fmt.Errorf("%s: %w", name, err)
	}
	return fd, nil
}

// resolvConf binds the file /etc/resolv.conf points to when the view does not show it
// (it usually lives in /run, which the view masks), so name resolution keeps working.
func (v *view) resolvConf() error {
	const resolv = "/etc/resolv.conf"
	fi, err := os.Lstat(resolv)
	if err != nil || fi.Mode()&os.ModeSymlink == 0 || !v.visible(resolv) {
		return nil
	}
	target, err := filepath.EvalSymlinks(resolv)
	if err != nil || v.visible(target) {
		return nil
	}
	if fi, err := os.Stat(target); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	if ok, _ := v.creatable(target); !ok {
		return nil
	}
	v.res.read = append(v.res.read, target)
	return v.place(placement{path: target, kind: viewFile, src: target}, false, false)
}
