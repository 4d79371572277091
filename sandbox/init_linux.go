//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// runAsInit starts the command. It returns only on failure.
//
// Without a PID namespace the helper simply becomes the command (exec). In one — the
// helper is then its init, process 1 — the helper stays: it forks the command and waits.
// When the command ends, the helper ends with the same status, and the kernel kills every
// process still in the namespace: whatever the command left behind (a setsid, a double
// fork, nohup, disown, a daemon) dies with it, and nothing it started can outlive it.
//
// The command is forked from this same locked thread, so it inherits exactly what was
// put on the thread: the Landlock domain, the syscall filter, no_new_privs and the
// dropped capabilities (all per thread; the Go runtime's other threads have none of
// them and never run anything). Its parent-death signal (SIGKILL) is tied to this thread,
// which lives until the helper exits.
//
// Until then the helper is the namespace's init, not dumpable (see below): it reaps every
// orphan the kernel hands it, and it survives the signals that would otherwise end a Go
// program. They are handled, not ignored, because an ignored disposition would be
// inherited by the command across exec, a handled one is reset to the default.
func runAsInit(prog string, argv, envv []string) error {
	if os.Getpid() != 1 {
		return unix.Exec(prog, argv, envv)
	}
	// Only this thread was confined; the runtime's other threads keep what the helper
	// had (as root: every capability) and no Landlock domain. A command in this thread's
	// domain could reach them through the helper's memory (/proc/1/mem, ptrace), which
	// Landlock allows within one domain; a process that is not dumpable can be reached so
	// only with CAP_SYS_PTRACE, which the command does not have.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE): %w", err)
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwarded...)
	pid, err := syscall.ForkExec(prog, argv, &syscall.ProcAttr{
		Env:   envv,
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		return err
	}
	go relay(sigs, pid)
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			// The command is gone without being reaped here: nothing is left to wait for.
			return fmt.Errorf("waiting for the command: %w", err)
		}
		if got == pid && (ws.Exited() || ws.Signaled()) {
			exitAs(ws)
		}
	}
}

// forwarded are the signals that would end the helper: the Go runtime exits on SIGHUP,
// SIGINT and SIGTERM and crashes on SIGQUIT and SIGABRT when nothing asked for them; every
// other signal it catches it drops. They are also the ones a person or a tool sends to end
// a command. (Asking for more costs: each signal asked for is a round trip with the
// runtime's signal thread, some 30 µs to 200 µs on a busy machine, paid by every command.)
var forwarded = []os.Signal{unix.SIGHUP, unix.SIGINT, unix.SIGQUIT, unix.SIGTERM, unix.SIGABRT}

// relay hands a signal on to the command when the command left the helper's process
// group. Whoever ends a command signals its group (Process.Signal, the guardian, the
// stale-group killers), which reaches the command itself as long as it stays in it; once
// it moved (an `exec setsid …`), only the helper hears, and passes it on.
func relay(sigs <-chan os.Signal, pid int) {
	self := unix.Getpgrp()
	for s := range sigs {
		if g, err := unix.Getpgid(pid); err == nil && g != self {
			unix.Kill(pid, s.(syscall.Signal))
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
