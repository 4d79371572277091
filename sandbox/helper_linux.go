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

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/internal/proctraits"
)

// The helper is this same program, started again with the policy in its environment. It
// takes over in this package's init — before main, before any other work — so every
// binary that links the shell tools (the sema command, an embedding program, a test
// binary) can confine its own commands without a separate executable.
//
// In the helper, on one locked thread: build the command's view of the filesystem in
// its mount namespace (view_linux.go: a new root holding only what the policy grants,
// hidden and read-only places inside it, a private /dev, /proc and /tmp) and pivot into
// it, find the program there, bring loopback up in a fresh network namespace, drop the
// capabilities a user namespace lent, restrict the thread with Landlock, then start the
// command from the same thread. A failure at any step ends the helper with exit status
// HelperFailed and a line on stderr: the command never runs unconfined. A helper
// started ahead for a leg (confinePrimed) does all of that before its command is known,
// and, as the init of a PID namespace, runs the leg's commands one after another.

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
	// A spare started ahead for a confined command is primed with these: it builds the
	// confinement from them before the command's job comes (env.PrimeOn).
	env.PrimeOn(helperEnv, helperNSEnv, helperMachineEnv)
	spec, ok := os.LookupEnv(helperEnv)
	if !ok {
		return
	}
	runtime.LockOSThread()
	ns, machine := os.Getenv(helperNSEnv), os.Getenv(helperMachineEnv)
	unsetHelperEnv()
	if env.Primed() {
		confinePrimed(spec, ns, machine)
	}
	c, err := confine(spec, ns, machine, false)
	if err == nil {
		err = c.exec(os.Args[1:])
	}
	helperFailed(err)
}

// unsetHelperEnv removes what carried the policy: the command never sees it.
func unsetHelperEnv() {
	for _, k := range []string{helperEnv, helperNSEnv, helperMachineEnv} {
		os.Unsetenv(k)
	}
}

// helperFailed ends a helper that could not confine the command, which did not run.
func helperFailed(err error) {
	fmt.Fprintf(os.Stderr, "sema sandbox: the command was not run: %v\n", err)
	os.Exit(HelperFailed)
}

// confinePrimed is the helper in a primed spare: the confinement is built from the
// prelude while no command waits, then the job comes (its program, arguments,
// environment, directory and streams) and the command starts at once. A spare whose
// preparation fails says so and exits: the host then starts that command cold, which
// meets the failure with the command's streams to report it on.
//
// As the init of a PID namespace the helper then stays: once the command has ended,
// with everything it started (endNamespace), and its end is reported, it gives back the
// command's streams and waits for the next job of its leg, in the same confinement — the
// view, the namespaces and the ruleset are built once per helper, not once per command.
// Without a PID namespace it becomes the command. It never returns.
func confinePrimed(spec, ns, machine string) {
	c, err := confine(spec, ns, machine, true)
	if err != nil {
		env.PrimeFailed()
	}
	again := os.Getpid() == 1
	if again {
		if c.null, err = unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0); err != nil {
			env.PrimeFailed()
		}
	}
	// What a command could change of this process from outside (its limits, nice value
	// and affinity, as any process of the same user may), the next would inherit: a
	// helper that finds them changed after a command does not stay.
	traits := proctraits.Now()
	for {
		dir := env.AwaitPrimedJob(c.watch, c.relied, again)
		unsetHelperEnv() // the job's environment carries the prelude again
		if !again {
			if err := unix.Chdir(dir); err != nil {
				helperFailed(fmt.Errorf("the working directory %s is not in the sandbox's view of the filesystem: %w", dir, err))
			}
			helperFailed(c.exec(os.Args[1:]))
		}
		c.serve(dir, os.Args[1:])
		if !traits.Same() {
			os.Exit(0)
		}
		// A spare holds nothing of a command's while it waits: not its environment.
		os.Clearenv()
	}
}

// serve runs one job of a helper that stays: the command in dir, reported on the job's
// report descriptor, whose end it returns after. A command that cannot be started is
// reported as a helper that could not confine it ends: a line on its stderr, HelperFailed.
func (c *confined) serve(dir string, argv []string) {
	forgetPending()
	report := exitReportFD()
	release := func() {
		for fd := range 3 {
			unix.Dup3(c.null, fd, 0)
		}
	}
	fail := func(err error) {
		fmt.Fprintf(os.Stderr, "sema sandbox: the command was not run: %v\n", err)
		release()
		if report >= 0 {
			unix.Write(report, []byte("e"+strconv.Itoa(HelperFailed)))
			unix.Close(report)
		}
	}
	if report < 0 {
		fail(errors.New("no descriptor to report the end on"))
		os.Exit(HelperFailed)
	}
	if err := unix.Chdir(dir); err != nil {
		fail(fmt.Errorf("the working directory %s is not in the sandbox's view of the filesystem: %w", dir, err))
		return
	}
	if len(argv) == 0 {
		fail(errors.New("no command"))
		return
	}
	prog, err := exec.LookPath(argv[0])
	if err != nil {
		fail(err)
		return
	}
	if _, err := initRun(prog, argv, os.Environ(), report, c.sigs, release); err != nil {
		fail(err)
		return
	}
	unix.Close(report)
	unix.Chdir("/")
}

// confined is a helper whose thread is confined, ready to start a command.
type confined struct {
	sigs <-chan (<-chan os.Signal)
	// watch is the helper's mountinfo, opened once its view was made (-1: not asked):
	// a primed spare's host polls it, and a change since (a mount of the view detached
	// by a removal on the machine) ends the spare unused.
	watch int
	// relied is what was at each of the policy's paths before the view was made from
	// them (asked with watch): a path renamed on the machine takes its mount along, so
	// the host checks each path still holds what the view holds.
	relied []env.Relied
	// null is /dev/null, opened before the ruleset: what a helper that stays puts in
	// place of a command's standard streams once it has ended.
	null int
}

// confine applies the policy spec to this thread: the view (in the mount namespace),
// loopback (in the network namespace), capabilities dropped, the syscall filter and
// Landlock. watch asks for the view's mountinfo to be kept open (confined.watch).
func confine(spec, ns, machine string, watch bool) (*confined, error) {
	c := &confined{watch: -1}
	var p Policy
	if err := json.Unmarshal([]byte(spec), &p); err != nil {
		return nil, fmt.Errorf("reading the policy: %w", err)
	}
	// As a namespace's init the helper must survive the signals that would end a Go
	// program once its command runs, and hand on those meant for it: they are asked of
	// the runtime while the view and the ruleset are built, so the command starts with
	// them already on their channel (startSignals).
	if os.Getpid() == 1 {
		c.sigs = startSignals()
	}
	// The environment says which namespaces the helper was started in, and which its
	// starter was in; the kernel must agree that they differ, or the mounts below would
	// change the machine's own.
	starter := parseNS(ns)
	mountNS, netNS := starter["mnt"] != 0, starter["net"] != 0
	for kind, ino := range starter {
		if nsInode(kind) == ino {
			return nil, fmt.Errorf("not in a %s namespace of its own", kind)
		}
	}
	if watch {
		c.relied = env.RelyOn(p.paths())
	}
	var view viewResult
	if mountNS {
		var err error
		if view, err = buildView(&p, os.Getpid() == 1, machine); err != nil {
			return nil, err
		}
	} else if len(p.Hidden) > 0 || len(p.ReadOnly) > 0 || len(p.Caches) > 0 {
		return nil, errors.New("hidden and read-only paths and cache layers need a mount namespace")
	}
	if watch {
		fd, err := unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("watching the view: %w", err)
		}
		c.watch = fd
	}
	if netNS {
		if err := loopbackUp(); err != nil {
			return nil, err
		}
	}
	// Capabilities a user namespace lent for the steps above go before the command runs.
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return nil, fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	abi := landlockABI()
	if abi < 1 {
		return nil, errors.New("the kernel has no Landlock")
	}
	rs, err := newRuleset(abi, !p.Network && !netNS)
	if err != nil {
		return nil, err
	}
	all := handledFS(abi)
	grant := func(paths []string, rights uint64) error {
		for _, path := range paths {
			fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
			if err != nil {
				continue // gone since the policy was made, or not in the view: nothing to grant
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
	if err := grant(append(p.Read, view.read...), readRights); err != nil {
		return nil, err
	}
	// A cache is written in its private layer, through the overlay at its path.
	if err := grant(append(p.Write, view.write...), all); err != nil {
		return nil, err
	}
	if err := grant(p.Devices, readRights|unix.LANDLOCK_ACCESS_FS_WRITE_FILE|fsTruncate|fsIoctlDev); err != nil {
		return nil, err
	}
	if err := dropCapabilities(); err != nil {
		return nil, err
	}
	if err := installSyscallFilter(); err != nil {
		return nil, err
	}
	if err := rs.enforce(); err != nil {
		return nil, err
	}
	return c, nil
}

// exec starts argv on the confined thread; it returns only on failure. The program is
// found in the view, where it runs.
func (c *confined) exec(argv []string) error {
	if len(argv) == 0 {
		return errors.New("no command")
	}
	report := exitReportFD()
	prog, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	return runAsInit(prog, argv, os.Environ(), report, c.sigs)
}

// exitReportFD is the descriptor the host asked the helper to report the command's end
// on (env.ExitReportEnv), -1 when it asked for none. The command never inherits it.
func exitReportFD() int {
	v, ok := os.LookupEnv(env.ExitReportEnv)
	os.Unsetenv(env.ExitReportEnv)
	fd, err := strconv.Atoi(v)
	if !ok || err != nil || fd < 3 {
		return -1
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
		return -1
	}
	return fd
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

func openNoLinks(path string) (int, error) {
	return unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
}

func fdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

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
