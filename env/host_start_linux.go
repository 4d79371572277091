//go:build linux

package env

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
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

// setDeathSignal asks the kernel to kill the program when this process dies.
func setDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }

type startReq struct {
	cmd  *exec.Cmd
	done chan error
}

var starter struct {
	once sync.Once
	reqs chan startReq
}

// startCmd starts cmd on the starter thread.
func startCmd(cmd *exec.Cmd) error {
	starter.once.Do(func() {
		starter.reqs = make(chan startReq)
		go startLoop(starter.reqs)
	})
	done := make(chan error, 1)
	starter.reqs <- startReq{cmd: cmd, done: done}
	return <-done
}

// startLoop serves starts forever on a locked thread; it must never return (see above).
func startLoop(reqs <-chan startReq) {
	runtime.LockOSThread()
	for r := range reqs {
		r.done <- r.cmd.Start()
	}
	select {}
}
