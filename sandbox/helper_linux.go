//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The helper is this same program, started again with the policy in its environment. It
// takes over in this package's init — before main, before any other work — so every
// binary that links the shell tools (the sema command, an embedding program, a test
// binary) can confine its own commands without a separate executable.
//
// In the helper, on one locked thread: make every mount private (nothing done here can
// reach the machine's mounts), hide the Hidden paths under empty read-only mounts, bind
// the ReadOnly paths read-only, bring loopback up in a fresh network namespace, drop the
// capabilities a user namespace lent, restrict the thread with Landlock, then exec the
// command from the same thread. A failure at any step ends the helper with exit status
// HelperFailed and a line on stderr: the command never runs unconfined.

const (
	// helperEnv carries the policy (JSON) into the helper; it is removed before exec.
	helperEnv = "SEMA_SANDBOX_POLICY"
	// helperNSEnv tells the helper which namespaces it was started in, each as a letter
	// and the namespace its starter was in: "m4026531841,n4026531840" (m mount, n network).
	helperNSEnv = "SEMA_SANDBOX_NS"
)

// HelperFailed is the exit status of a helper that could not confine the command: the
// command did not run.
const HelperFailed = 125

func init() {
	spec, ok := os.LookupEnv(helperEnv)
	if !ok {
		return
	}
	runtime.LockOSThread()
	ns := os.Getenv(helperNSEnv)
	os.Unsetenv(helperEnv)
	os.Unsetenv(helperNSEnv)
	err := confineAndExec(spec, ns, os.Args[1:])
	fmt.Fprintf(os.Stderr, "sema sandbox: the command was not run: %v\n", err)
	os.Exit(HelperFailed)
}

// confineAndExec applies the policy to this thread and execs argv; it returns only on
// failure.
func confineAndExec(spec, ns string, argv []string) error {
	var p Policy
	if err := json.Unmarshal([]byte(spec), &p); err != nil {
		return fmt.Errorf("reading the policy: %w", err)
	}
	if len(argv) == 0 {
		return errors.New("no command")
	}
	prog, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	// The environment says which namespaces the helper was started in, and which its
	// starter was in; the kernel must agree that they differ, or the mounts below would
	// change the machine's own.
	starter := parseNS(ns)
	mountNS, netNS := starter["mnt"] != 0, starter["net"] != 0
	for kind, ino := range starter {
		if nsInode(kind) == ino {
			return fmt.Errorf("not in a %s namespace of its own", kind)
		}
	}
	if mountNS {
		if err := shapeMounts(&p); err != nil {
			return err
		}
	} else if len(p.Hidden) > 0 || len(p.ReadOnly) > 0 {
		return errors.New("hidden and read-only paths need a mount namespace")
	}
	if netNS {
		if err := loopbackUp(); err != nil {
			return err
		}
	}
	// Capabilities a user namespace lent for the steps above go before the command runs.
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	abi := landlockABI()
	if abi < 1 {
		return errors.New("the kernel has no Landlock")
	}
	rs, err := newRuleset(abi, !p.Network && !netNS)
	if err != nil {
		return err
	}
	all := handledFS(abi)
	grant := func(paths []string, rights uint64) error {
		for _, path := range paths {
			fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
			if err != nil {
				continue // gone since the policy was made: nothing to grant
			}
			var st unix.Stat_t
			err = unix.Fstat(fd, &st)
			if err == nil {
				err = rs.allow(fd, rights, st.Mode&unix.S_IFMT == unix.S_IFDIR)
			}
			unix.Close(fd)
			if err != nil {
				return fmt.Errorf("granting %s: %w", path, err)
			}
		}
		return nil
	}
	if err := grant(p.Read, readRights); err != nil {
		return err
	}
	if err := grant(p.Write, all); err != nil {
		return err
	}
	if err := grant(p.Devices, readRights|unix.LANDLOCK_ACCESS_FS_WRITE_FILE|fsTruncate|fsIoctlDev); err != nil {
		return err
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	if err := installSyscallFilter(); err != nil {
		return err
	}
	if err := rs.enforce(); err != nil {
		return err
	}
	return runAsInit(prog, argv, os.Environ())
}

// nsInode is the inode of this process's namespace of the kind ("mnt", "net"), which
// names it; 0 when it cannot be read.
func nsInode(kind string) uint64 {
	var st unix.Stat_t
	if unix.Stat("/proc/self/ns/"+kind, &st) != nil {
		return 0
	}
	return st.Ino
}

// parseNS reads helperNSEnv's value: kind → the starter's namespace inode.
func parseNS(s string) map[string]uint64 {
	out := map[string]uint64{}
	for _, f := range strings.Split(s, ",") {
		if len(f) < 2 {
			continue
		}
		ino, err := strconv.ParseUint(f[1:], 10, 64)
		if err != nil || ino == 0 {
			continue
		}
		switch f[0] {
		case 'm':
			out["mnt"] = ino
		case 'n':
			out["net"] = ino
		}
	}
	return out
}

// shapeMounts makes this namespace's mounts private, then hides and binds read-only what
// the policy says. Each target is opened without following a symbolic link in any
// component and mounted on through its descriptor, so a path swapped for a link after the
// policy was made cannot turn the mount onto another place.
func shapeMounts(p *Policy) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	for _, path := range p.Hidden {
		if err := hideAt(path); err != nil {
			return fmt.Errorf("hiding %s: %w", path, err)
		}
	}
	for _, path := range p.ReadOnly {
		if err := bindReadOnlyAt(path); err != nil {
			return fmt.Errorf("making %s read-only: %w", path, err)
		}
	}
	return nil
}

// onPath opens path (O_PATH, no symbolic link anywhere) and calls do with the
// /proc/self/fd name of the descriptor. A path that no longer exists is skipped.
func onPath(path string, do func(target string, dir bool) error) error {
	fd, err := openNoLinks(path)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return do(fdPath(fd), true)
	case unix.S_IFREG:
		return do(fdPath(fd), false)
	}
	return nil // a socket, a device: not a place content is kept
}

func openNoLinks(path string) (int, error) {
	return unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
}

func fdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// hideAt hides path: an empty read-only tmpfs over a directory, an empty read-only file
// (/dev/null, bound) over a file.
func hideAt(path string) error {
	return onPath(path, func(target string, dir bool) error {
		if dir {
			return unix.Mount("tmpfs", target, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=0555")
		}
		if err := unix.Mount("/dev/null", target, "", unix.MS_BIND, ""); err != nil {
			return err
		}
		return remountReadOnlyAt(path)
	})
}

// bindReadOnlyAt binds path onto itself and makes the new mount read-only.
func bindReadOnlyAt(path string) error {
	return onPath(path, func(target string, _ bool) error {
		if err := unix.Mount(target, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return err
		}
		return remountReadOnlyAt(path)
	})
}

// remountReadOnlyAt opens path again — the descriptor used to mount still names what the
// new mount covers, a fresh lookup reaches the new mount — and makes that mount read-only.
func remountReadOnlyAt(path string) error {
	fd, err := openNoLinks(path)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return remountReadOnly(fdPath(fd))
}

// remountReadOnly makes the bind mount at target read-only, keeping the flags the kernel
// may lock in a user namespace (nosuid, nodev, noexec, the atime flags).
func remountReadOnly(target string) error {
	var sfs unix.Statfs_t
	if err := unix.Statfs(target, &sfs); err != nil {
		return err
	}
	keep := uintptr(sfs.Flags) & (unix.ST_NOSUID | unix.ST_NODEV | unix.ST_NOEXEC | unix.ST_NOATIME | unix.ST_NODIRATIME | unix.ST_RELATIME)
	var flags uintptr
	for _, m := range [][2]uintptr{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if keep&m[0] != 0 {
			flags |= m[1]
		}
	}
	return unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|flags, "")
}

// loopbackUp brings up the loopback interface of a fresh network namespace, so a command
// can still talk to servers it starts itself.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	return nil
}
