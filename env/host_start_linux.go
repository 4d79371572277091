//go:build linux

package env

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// On Linux every program the host starts gets SIGKILL as its parent-death signal, so a
// shell does not outlive this process even when it is killed with SIGKILL and has no
// chance to stop anything itself.
//
// The kernel ties the parent-death signal to the THREAD that forked the child, not to
// the process: the signal fires when that thread exits. The Go runtime ends a thread
// when a goroutine that locked it (runtime.LockOSThread) returns without unlocking, and
// any pool thread may become such a thread later. So every start happens on one
// goroutine that locks its thread and never returns: that thread lives exactly as long
// as the process, and the signal fires only when the process dies.
//
// The signal reaches the started program only (a fork clears it); what the program
// starts is reached through its process group by the guardian (guard.go).

// StartCmd starts cmd as the host starts every program: the kernel kills it when this
// process dies (its parent-death signal, set on cmd.SysProcAttr), and it is forked from
// the one thread that lives as long as the process, so that the signal fires only then.
// It is for a package that starts a program itself because it needs the program's
// standard streams as a protocol (an MCP server); use env.ProcAttr for its attributes.
func StartCmd(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	setDeathSignal(cmd.SysProcAttr)
	return startCmd(cmd)
}

// StartCmdReaped is StartCmd with the program below a reaper, as the host starts a
// program that has no PID namespace of its own (reaper_linux.go): whatever the program
// leaves running — in its group or out of it (setsid) — is ended once it exits, or
// when this process dies, however it dies. It returns the program's pid, which is its
// process group id; when reaped is true, cmd.Process is the reaper, and its exit
// (cmd.Wait) comes after the program and everything it started are gone, the program
// itself having been reaped already, so its group id must not be signalled then. Without
// a reaper (a PID namespace in cmd.SysProcAttr, or no /proc), it is StartCmd.
func StartCmdReaped(cmd *exec.Cmd) (pgid int, reaped bool, err error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	setDeathSignal(cmd.SysProcAttr)
	path := cmd.Path
	report, w, err := viaReaper(cmd)
	if err != nil {
		return 0, false, err
	}
	err = startCmd(cmd)
	if w != nil {
		w.Close()
	}
	if err != nil {
		if report != nil {
			report.Close()
		}
		return 0, false, err
	}
	if report == nil {
		return cmd.Process.Pid, false, nil
	}
	pid, _, err := reapedPID(report, path)
	// The end is waited for with cmd.Wait, not read from the report.
	report.Close()
	if err != nil {
		cmd.Wait()
		return 0, false, err
	}
	return pid, true, nil
}

// setDeathSignal asks the kernel to kill the program when this process dies.
func setDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }

type startReq struct {
	cmd  *exec.Cmd
	warm bool
	// key is the start's ExecRequest.PrimeKey; with no cmd, the series whose primed
	// spare is to end (EndPrimed), or, with ready set, to be waited for (PrimedReady).
	key   string
	ready time.Duration
	// back is a spare that ran a job and came back for another (comeBack).
	back *spare
	done chan startResult
}

type startResult struct {
	run   *exec.Cmd
	ended func(reported bool) ExitStatus
	err   error
	ready bool
}

var starter struct {
	once sync.Once
	reqs chan startReq
}

// startCmd starts cmd on the starter thread.
func startCmd(cmd *exec.Cmd) error {
	_, err := start(cmd, false, "")
	return err
}

// startWarm starts cmd on the starter thread, through a spare when one fits
// (warm_linux.go, prime_linux.go). It returns the command that runs: the spare's, when
// one took the job, and cmd otherwise. key is the start's ExecRequest.PrimeKey.
//
// ended is nil, or, when the command was handed to a spare that stays for its series'
// next job (a sandbox helper, as the init of a PID namespace), what the caller calls once
// the command has ended: with true when its end was reported (the spare is ready for
// another job, and its process must not be waited for), false when it was not (the
// spare is gone: it is waited for, and its end returned).
func startWarm(cmd *exec.Cmd, key string) (run *exec.Cmd, ended func(reported bool) ExitStatus, err error) {
	r := onStarter(startReq{cmd: cmd, warm: true, key: key})
	return r.run, r.ended, r.err
}

// EndPrimed ends the spare primed for the series key (ExecRequest.PrimeKey), if one
// waits: its owner is done with it, and with what the spare prepared from (a policy's
// directories, which the owner is about to remove). It returns once the spare is gone.
func EndPrimed(key string) {
	if key != "" {
		start(nil, false, key)
	}
}

// PrimedReady reports whether the series key has primed spares and all of them are
// ready for its next starts, waiting at most wait for that (for tests and diagnostics).
func PrimedReady(key string, wait time.Duration) bool {
	return onStarter(startReq{key: key, ready: max(wait, time.Millisecond)}).ready
}

func start(cmd *exec.Cmd, warm bool, key string) (*exec.Cmd, error) {
	r := onStarter(startReq{cmd: cmd, warm: warm, key: key})
	return r.run, r.err
}

// onStarter serves r on the starter thread.
func onStarter(r startReq) startResult {
	starter.once.Do(func() {
		starter.reqs = make(chan startReq)
		go startLoop(starter.reqs)
	})
	r.done = make(chan startResult, 1)
	starter.reqs <- r
	return <-r.done
}

// startLoop serves starts forever on a locked thread; it must never return (see above).
// A spare is started for the next start of a shape once this one has its answer.
func startLoop(reqs <-chan startReq) {
	runtime.LockOSThread()
	for r := range reqs {
		if r.back != nil {
			comeBack(r.back)
			r.done <- startResult{}
			continue
		}
		if r.cmd == nil && r.ready > 0 {
			r.done <- startResult{ready: primedReadyOnThread(r.key, r.ready)}
			continue
		}
		if r.cmd == nil {
			endPrimedOnThread(r.key, true)
			r.done <- startResult{}
			continue
		}
		if !r.warm {
			r.done <- startResult{run: r.cmd, err: r.cmd.Start()}
			continue
		}
		run, ended, refill, err := startWarmOnThread(r.cmd, r.key)
		r.done <- startResult{run: run, ended: ended, err: err}
		if refill != nil {
			refill()
		}
	}
	select {}
}
