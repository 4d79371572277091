//go:build linux

package env

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sema-agent/sema/internal/proctraits"
)

// A process group is not a handle on everything a program starts: `setsid`, a daemon's
// double fork or `setpgid` leave it, and neither Process.Signal nor the guardian reach
// what left. Parentage is such a handle, once an ancestor is a child subreaper
// (PR_SET_CHILD_SUBREAPER): a process whose parent dies is handed to its nearest
// subreaper ancestor instead of to init, and nothing — setsid included — takes a process
// out from under an ancestor. So the host starts a program that has no PID namespace of
// its own through a reaper: this same executable, started again (the reaperEnv variable
// makes this package's init take over before main), a subreaper that starts the program
// and, once the program has exited, ends every process still below it — SIGTERM (and
// SIGCONT), reaperGrace, then SIGKILL until none is left — and only then reports the
// program's end (Wait returns on the report) and exits, as the program did. Wait
// therefore returns when the program and everything it started are gone. A reaper that
// came from a spare does not exit: it stays, with nothing below it, for the next program
// the host hands it (nextReaperJob), unless the program changed what the next would
// inherit from it (package proctraits).
//
// The reaper sits outside the program's process group (the program gets a session and a
// group of its own, whose id the host signals and the guardian lists), so a signal meant for the
// program's group, SIGKILL included, never ends the reaper before it has swept. Its
// parent-death signal is SIGTERM, which it catches: when this process dies, however it
// dies, the reaper kills everything below it at once and exits. It is the handle that
// survives SIGKILL of this process.
//
// The sandbox needs none of this where it gives a command a PID namespace: the command's
// init ends every process of the namespace when it ends. A cgroup would be a handle as
// well, but one that is writable for an unprivileged user only under a delegating
// service manager, and not at all in most containers; a subreaper needs no privilege.
//
// What the reaper cannot stop: a process of the program that kills the reaper itself
// with SIGKILL (same user) before it has swept — the sandbox's PID namespace, whose
// init cannot be killed from inside, has no such gap.

const (
	// reaperEnv starts the reaper instead of the program's own main; its value is the
	// descriptor the reaper reports the program's pid on.
	reaperEnv = "SEMA_ENV_REAPER"
	// reaperGrace is how long processes left below the reaper have between SIGTERM and
	// SIGKILL, as long as the shell tools give a command's group.
	reaperGrace = 2 * time.Second
	// reaperGiveUp bounds the SIGKILL rounds: a process stuck in the kernel (an
	// uninterruptible wait) is left to die when it wakes, rather than hold the exit.
	reaperGiveUp = 10 * time.Second
)

func init() {
	// A spare waits here for what it is to run, and goes on as if started with it.
	awaitWarmJob()
	v, ok := os.LookupEnv(reaperEnv)
	if !ok {
		return
	}
	os.Unsetenv(reaperEnv)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 || len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "sema: the process reaper was started without its arguments")
		exit(127)
	}
	runReaper(fd, os.Args[1], os.Args[2:])
}

// reaperExe is the executable the reaper runs from, "" when the host cannot start it
// (no /proc): programs then start directly, and only their group is a handle.
var reaperExe = func() string {
	if _, err := os.Stat("/proc/self/exe"); err != nil {
		return ""
	}
	return "/proc/self/exe"
}()

// viaReaper rewrites cmd, whose SysProcAttr is set, to run through the reaper unless it
// gets a PID namespace of its own. It returns the read end of the pipe the reaper
// reports on (nil: no reaper) and the write end the caller closes once the reaper has
// started.
func viaReaper(cmd *exec.Cmd) (report, child *os.File, err error) {
	if cmd.SysProcAttr.Cloneflags&syscall.CLONE_NEWPID != 0 || reaperExe == "" {
		return nil, nil, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	// The reaper's argv: its own name, the program's path as found, then the program's
	// argv as given.
	cmd.Args = append([]string{"sema-reaper", cmd.Path}, cmd.Args...)
	cmd.Path = reaperExe
	cmd.ExtraFiles = []*os.File{w}
	cmd.Env = append(cmd.Env, reaperEnv+"=3")
	// Caught, not fatal: the reaper sweeps before it exits (see above).
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
	return r, w, nil
}

// reapedPID reads what the reaper reports once it has started the program: the
// program's pid on a line, or the errno of a start that failed (then the reaper exits,
// and the caller reaps it). The report stays open: the reaper reports the program's end
// on it too, once nothing is left below it; rest is what of that was read already.
func reapedPID(report *os.File, path string) (pid int, rest []byte, err error) {
	buf := make([]byte, 64)
	var got []byte
	for !bytes.Contains(got, []byte("\n")) && len(got) < len(buf) {
		n, err := report.Read(buf[len(got):])
		got = buf[:len(got)+n]
		if err != nil {
			break
		}
	}
	if e, ok := bytes.CutPrefix(got, []byte("!")); ok {
		n, err := strconv.Atoi(string(e))
		if err != nil {
			return 0, nil, fmt.Errorf("env: the process reaper failed to start %s: %q", path, got)
		}
		return 0, nil, &fs.PathError{Op: "fork/exec", Path: path, Err: syscall.Errno(n)}
	}
	line, rest, ok := bytes.Cut(got, []byte("\n"))
	pid, err = strconv.Atoi(string(line))
	if !ok || err != nil || pid <= 0 {
		return 0, nil, fmt.Errorf("env: the process reaper ended before it started %s", path)
	}
	return pid, rest, nil
}

// runReaper is the reaper's whole life: it starts path with argv, reports its pid on
// descriptor fd, and sweeps and exits as described above. A reaper that came from a
// spare (reaperSock) does not exit: once the program's end is reported it says so on
// the spare's socket and runs the next program the host hands it, as a subreaper with
// nothing below it again. It never returns.
func runReaper(fd int, path string, argv []string) {
	runtime.LockOSThread()
	// Inside a user namespace the reaper holds the capabilities the host lent for the
	// namespaces; the program must not reach them through its memory.
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	subreaper := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT)
	// Should this process have died before the signal was caught, its default action
	// ended the reaper before it started anything; from here on it is caught, and the
	// sweep runs even when it arrives before the program is started.
	self := os.Getpid()
	go func() {
		// This process's parent died, or someone asked the reaper to stop: everything
		// below it goes at once.
		for range sigs {
			sweep(self, 0)
		}
	}()
	null, _ := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
	// What a program could change of this process from outside (its limits, nice
	// value and affinity), the next would inherit: a reaper that finds them changed
	// does not stay.
	traits := proctraits.Now()
	for {
		status, started := reapOne(fd, path, argv, subreaper, self)
		if reaperSock >= 0 && !traits.Same() {
			reaperSock = -1
		}
		if reaperSock < 0 {
			if !started {
				exit(127)
			}
			exitAs(status)
		}
		// The program's streams and environment go back, as a spare holds none of a
		// program's while it waits; the spare is ready for the next.
		for std := range 3 {
			unix.Dup3(null, std, 0)
		}
		os.Clearenv()
		os.Args = os.Args[:1]
		fd, path, argv = nextReaperJob()
	}
}

// reapOne starts one program below the reaper, reports its pid on fd, waits for it and
// sweeps what it left, then reports its end on fd and closes fd. It returns the
// program's end, and false when it could not be started (its errno was reported).
func reapOne(fd int, path string, argv []string, subreaper error, self int) (unix.WaitStatus, bool) {
	// The descriptor itself, not an *os.File: a pipe made an *os.File starts the
	// runtime's poller, a tenth of a millisecond the program's start would wait for.
	syscall.CloseOnExec(fd)
	defer unix.Close(fd)
	fail := func(err error) (unix.WaitStatus, bool) {
		errno := syscall.EINVAL
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		errors.As(err, &errno)
		unix.Write(fd, fmt.Appendf(nil, "!%d", int(errno)))
		return 0, false
	}
	if subreaper != nil {
		return fail(subreaper)
	}
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
		// A session, and so a group, of its own for the program, as the host gives
		// every program (procAttr); it dies with the reaper (its parent-death signal
		// is tied to this locked thread, which lives as long).
		Sys: &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		return fail(err)
	}
	// The pid on a line; the descriptor stays open for the report of the end.
	unix.Write(fd, append(strconv.AppendInt(nil, int64(pid), 10), '\n'))
	var status unix.WaitStatus
	var swept chan struct{}
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			break // no child left: nothing is below the reaper
		}
		if got == pid && (ws.Exited() || ws.Signaled()) {
			status = ws
			// Most programs leave nothing: then there is nothing to sweep, and the end
			// is reported at once.
			if _, err := unix.Wait4(-1, nil, unix.WNOHANG, nil); errors.Is(err, unix.ECHILD) {
				break
			}
			swept = make(chan struct{})
			go func() {
				defer close(swept)
				sweep(self, reaperGrace)
			}()
		}
	}
	if swept != nil {
		// Done before the end is reported: a sweep still looking when the next program
		// starts would take it for one this program left.
		<-swept
	}
	// Everything below is gone: the host may return the program's end now, without
	// waiting for this process's own exit (see ExecRequest.ReportsExit).
	unix.Write(fd, reportOf(status))
	return status, true
}

// reaperSock is, in a reaper that came from a spare, the spare's socket, on which it
// says it is free again (againMsg) and takes the next program (-1: none, the reaper
// exits as its program did).
var reaperSock = -1

// nextReaperJob says on the spare's socket that the reaper is free again, waits for the
// next job and takes it as the spare took its first: it returns the report descriptor,
// the program's path and argv. A job that cannot be entered (its directory went) is
// reported as a program that could not be started, and the reaper waits again. It exits
// when the host ends the spare.
func nextReaperJob() (int, string, []string) {
	for {
		if _, err := unix.Write(reaperSock, []byte{againMsg}); err != nil {
			exit(0)
		}
		msg, job, fds, err := readWarmJob(reaperSock)
		if err != nil || msg != jobMsg {
			exit(0) // the host ended the spare, or is gone
		}
		takeJob(job, fds, -1)
		v, _ := os.LookupEnv(reaperEnv)
		os.Unsetenv(reaperEnv)
		fd, err := strconv.Atoi(v)
		if err != nil || fd < 3 || len(os.Args) < 3 {
			exit(127) // not a reaper's job: nothing this process can run
		}
		if err := unix.Chdir(job.Dir); err != nil {
			unix.Write(2, fmt.Appendf(nil, "sema: cannot start in %s: %v\n", job.Dir, err))
			unix.Write(fd, fmt.Appendf(nil, "!%d", int(err.(syscall.Errno))))
			unix.Close(fd)
			continue
		}
		return fd, os.Args[1], os.Args[2:]
	}
}

// reportOf is the report of the reaper's own exit as exitAs will end it: "e" and the
// exit code, or "s" and the signal (ExitReportEnv's form).
func reportOf(ws unix.WaitStatus) []byte {
	if ws.Signaled() {
		return strconv.AppendInt([]byte("s"), int64(ws.Signal()), 10)
	}
	return strconv.AppendInt([]byte("e"), int64(ws.ExitStatus()), 10)
}

// sweep ends every process below the reaper self: SIGTERM and SIGCONT, then up to grace
// for them to end, then SIGKILL until none is left or reaperGiveUp passed. The wait loop
// reaps them; once it finds no child, the reaper exits.
func sweep(self int, grace time.Duration) {
	if grace > 0 {
		below := descendants(self)
		for _, p := range below {
			unix.Kill(p, unix.SIGTERM)
			unix.Kill(p, unix.SIGCONT)
		}
		for deadline := time.Now().Add(grace); len(below) > 0 && time.Now().Before(deadline); below = descendants(self) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	// Again each round: a process may have forked before it died, and its orphans
	// come to the reaper.
	for deadline := time.Now().Add(reaperGiveUp); time.Now().Before(deadline); {
		below := descendants(self)
		if len(below) == 0 {
			return
		}
		for _, p := range below {
			unix.Kill(p, unix.SIGKILL)
		}
		time.Sleep(5 * time.Millisecond)
	}
	exit(125) // what is left is stuck in the kernel; SIGKILL is pending on it
}

// descendants lists the live processes below pid, found by their parent links in /proc.
func descendants(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range ents {
		name := e.Name()
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		st, err := ReadProcStat(name)
		if err != nil || st.Gone() {
			continue
		}
		if p, err := strconv.Atoi(name); err == nil {
			children[st.PPID] = append(children[st.PPID], p)
		}
	}
	var out []int
	for queue := children[pid]; len(queue) > 0; queue = queue[1:] {
		out = append(out, queue[0])
		queue = append(queue, children[queue[0]]...)
	}
	return out
}

// exit ends the reaper at once: it has nothing to flush, and os.Exit would first run
// what the runtime runs at exit (a race-detector build sleeps a second there).
func exit(code int) { syscall.Exit(code) }

// exitAs ends the reaper as the program ended: with its exit code, or killed by the same
// signal (its default action restored behind the runtime's back, and no core dump).
func exitAs(ws unix.WaitStatus) {
	if !ws.Signaled() {
		exit(ws.ExitStatus())
	}
	sig := ws.Signal()
	unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
	// A zeroed struct sigaction is SIG_DFL with no flags on every architecture.
	var dfl [64]byte
	unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0)
	unix.Kill(os.Getpid(), sig)
	time.Sleep(time.Second)
	exit(128 + int(sig)) // a signal whose default is to be ignored or to stop
}
