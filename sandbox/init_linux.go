//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// runAsInit starts the command. It returns only on failure. report is the descriptor
// the helper reports the command's end on (-1: none).
//
// Without a PID namespace the helper simply becomes the command (exec). In one — the
// helper is then its init, process 1 — the helper stays: it forks the command and waits.
// When the command ends, the helper kills every process still in the namespace and
// reaps it (endNamespace): whatever the command left behind (a setsid, a double fork,
// nohup, disown, a daemon) dies with it, and nothing it started can outlive it. Then it
// ends with the same status — or, started ahead for a leg, waits for the leg's next
// command (confinePrimed).
//
// The command is forked from this same locked thread, so it inherits exactly what was
// put on the thread: the Landlock domain, the syscall filter, no_new_privs and the
// dropped capabilities (all per thread; the Go runtime's other threads have none of
// them and never run anything). Its parent-death signal (SIGKILL) is tied to this thread,
// which lives until the helper exits.
//
// Until then the helper is the namespace's init, not dumpable (see below): it reaps every
// orphan the kernel hands it, and it survives the signals that would otherwise end a Go
// program (startSignals).
func runAsInit(prog string, argv, envv []string, report int, notified <-chan (<-chan os.Signal)) error {
	if os.Getpid() != 1 {
		handCacheLocksOn()
		return unix.Exec(prog, argv, envv)
	}
	ws, err := initRun(prog, argv, envv, report, notified, nil)
	if err != nil {
		return err
	}
	exitAs(ws)
	return nil
}

// initRun is the init's part of one command: it forks the command, waits for it, and
// once it has ended ends what it left (when it reports: report >= 0), lets released
// run (it gives back the command's streams), reports the end, and returns it.
func initRun(prog string, argv, envv []string, report int, notified <-chan (<-chan os.Signal), released func()) (unix.WaitStatus, error) {
	// Only this thread was confined; the runtime's other threads keep what the helper
	// had (as root: every capability) and no Landlock domain. A command in this thread's
	// domain could reach them through the helper's memory (/proc/1/mem, ptrace), which
	// Landlock allows within one domain; a process that is not dumpable can be reached so
	// only with CAP_SYS_PTRACE, which the command does not have.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return 0, fmt.Errorf("prctl(PR_SET_DUMPABLE): %w", err)
	}
	// The runtime has the forwarded signals by now (asked while the view was built):
	// from here none is lost, and one that comes before the command exists is handed to
	// it once it does.
	relaying.once.Do(func() {
		sigs := <-notified
		go relay(sigs)
	})
	relaying.mu.Lock()
	pid, err := syscall.ForkExec(prog, argv, &syscall.ProcAttr{
		Env:   envv,
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err == nil {
		relaying.pid = pid
		for _, sig := range relaying.pending {
			unix.Kill(pid, sig)
		}
		relaying.pending = nil
	}
	relaying.mu.Unlock()
	if err != nil {
		return 0, err
	}
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			// The command is gone without being reaped here: nothing is left to wait for.
			return 0, fmt.Errorf("waiting for the command: %w", err)
		}
		if got == pid && (ws.Exited() || ws.Signaled()) {
			relaying.mu.Lock()
			relaying.pid = 0
			relaying.mu.Unlock()
			if report >= 0 {
				endNamespace()
				if released != nil {
					released()
				}
				unix.Write(report, []byte(reportOf(ws)))
			}
			return ws, nil
		}
	}
}

// endNamespace kills every process left in the namespace and reaps it, as the kernel
// does when the init exits — here before the exit, so that the command's end can be
// reported while the namespaces are still being torn down: once it returns, nothing the
// command started exists. A process forked while the first SIGKILL went out is caught
// by the next: the kill is repeated after each reap until no child is left (orphans
// come to the init, so every process of the namespace is below it).
func endNamespace() {
	for {
		unix.Kill(-1, unix.SIGKILL)
		if _, err := unix.Wait4(-1, nil, 0, nil); errors.Is(err, unix.ECHILD) {
			return
		} else if err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// reportOf is the report of the helper's own exit as exitAs will end it (see
// env.ExitReportEnv): a command ended by SIGKILL reads as killed, one ended by another
// signal as a shell reports it, 128 plus the signal.
func reportOf(ws unix.WaitStatus) string {
	switch {
	case ws.Exited():
		return "e" + strconv.Itoa(ws.ExitStatus())
	case ws.Signal() == unix.SIGKILL:
		return "s" + strconv.Itoa(int(unix.SIGKILL))
	}
	return "e" + strconv.Itoa(128+int(ws.Signal()))
}

// forwarded are the signals that would end the helper: the Go runtime exits on SIGHUP,
// SIGINT and SIGTERM and crashes on SIGQUIT and SIGABRT when nothing asked for them; every
// other signal it catches it drops. They are also the ones a person or a tool sends to end
// a command — and the ones a command's `kill 0` sends its whole group, the helper included.
var forwarded = [...]unix.Signal{unix.SIGHUP, unix.SIGINT, unix.SIGQUIT, unix.SIGTERM, unix.SIGABRT}

// startSignals asks the runtime for the forwarded signals off this thread; the channel
// it returns gives their channel once the runtime has them. Asking costs a round trip
// with the runtime's signal thread per signal, half a millisecond for five, which
// overlaps the building of the command's view instead of delaying the command; the
// init waits for it before the fork. Until then a forwarded signal ends the helper as
// it ends any Go program — before the command exists, which then never runs; from then
// on none is lost: one that comes before the command exists is handed to it once it
// does (relay).
func startSignals() <-chan (<-chan os.Signal) {
	done := make(chan (<-chan os.Signal), 1)
	go func() {
		sigs := make(chan os.Signal, 16)
		list := make([]os.Signal, len(forwarded))
		for i, sig := range forwarded {
			list[i] = sig
		}
		signal.Notify(sigs, list...)
		done <- sigs
	}()
	return done
}

// relaying is what relay hands signals to: the command now running (0: none), and
// what came for one before it existed.
var relaying struct {
	once    sync.Once
	mu      sync.Mutex
	pid     int
	pending []syscall.Signal
}

// relay hands a signal on to the command when the command left the helper's process
// group. Whoever ends a command signals its group (Process.Signal, the guardian, the
// stale-group killers), which reaches the command itself as long as it stays in it; once
// it moved (an `exec setsid …`), only the helper hears, and passes it on. A signal that
// comes while no command runs was meant for the one being started, and is handed to it
// once it exists — or, in a helper that runs its leg's commands one after another, for
// the one that just ended, and goes with it: the next job starts with none pending.
func relay(sigs <-chan os.Signal) {
	self := unix.Getpgrp()
	for s := range sigs {
		sig := s.(syscall.Signal)
		relaying.mu.Lock()
		pid := relaying.pid
		if pid == 0 {
			relaying.pending = append(relaying.pending, sig)
		}
		relaying.mu.Unlock()
		if g, err := unix.Getpgid(pid); pid != 0 && err == nil && g != self {
			unix.Kill(pid, sig)
		}
	}
}

// exitAs ends the helper as the command ended. A namespace's init cannot die by a signal
// it sends itself (the kernel drops it), so a command ended by a signal is reported as a
// shell reports it, 128 plus the signal — except SIGKILL, which the kernel itself can be
// made to send: a CPU-time limit of zero seconds is exceeded at the next clock tick, and
// the kernel's SIGKILL reaches even an init. The helper then reads as killed, as the
// command was.
func exitAs(ws unix.WaitStatus) {
	if ws.Exited() {
		os.Exit(ws.ExitStatus())
	}
	sig := ws.Signal()
	if sig == unix.SIGKILL {
		if unix.Setrlimit(unix.RLIMIT_CPU, &unix.Rlimit{Cur: 0, Max: 0}) == nil {
			// Burn CPU until the tick; bounded, should the kernel not count.
			for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
			}
		}
	}
	os.Exit(128 + int(sig))
}

// forgetPending drops the signals that came while no command ran: a helper that runs a
// leg's commands one after another calls it as a job arrives.
func forgetPending() {
	relaying.mu.Lock()
	relaying.pending = nil
	relaying.mu.Unlock()
}
