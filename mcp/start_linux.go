//go:build linux

package mcp

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// On Linux a stdio server gets SIGKILL as its parent-death signal, so it does not
// outlive this process even when this process is killed with SIGKILL and cannot stop
// it. The kernel sends that signal when the THREAD that started the program exits, and
// the Go runtime may end any thread a goroutine locked; so, as package env does for the
// shell, every server is started from one goroutine that locks its thread and never
// returns, and the signal fires only when the process dies. It reaches the server only
// (a fork clears it); what the server starts is reached through its process group,
// which Close kills.

// setDeathSignal asks the kernel to kill the program when this process dies.
func setDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }

// starter serves startCmd on its locked thread.
var starter struct {
	once sync.Once
	reqs chan startRequest
}

// startRequest is one program for the starter thread to start.
type startRequest struct {
	cmd  *exec.Cmd
	done chan error
}

// startCmd starts cmd on the starter thread.
func startCmd(cmd *exec.Cmd) error {
	starter.once.Do(func() {
		starter.reqs = make(chan startRequest)
		go serveStarts(starter.reqs)
	})
	done := make(chan error, 1)
	starter.reqs <- startRequest{cmd: cmd, done: done}
	return <-done
}

// serveStarts starts programs forever on a locked thread. It must never return: the
// thread's end would fire the parent-death signal of every program it started.
func serveStarts(reqs <-chan startRequest) {
	runtime.LockOSThread()
	for r := range reqs {
		r.done <- r.cmd.Start()
	}
	select {}
}

// waitNoReap waits for the program to exit without reaping it (waitid with WNOWAIT):
// until it is reaped its pid, which is its group's id, stays taken, so the group may
// still be signalled without the risk of reaching a process that was given the number
// since. It reports false: the caller still has to reap it with cmd.Wait.
func waitNoReap(cmd *exec.Cmd) (reaped bool, err error) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return false, nil
		}
	}
}

// groupAlive reports whether a process of the group pgid still runs: a member in any
// state but zombie (ended, not reaped) or dead. Zombies do not count, because their
// reaping is up to their parent, which for an orphan is init, and some inits of
// containers never reap. Without /proc it cannot tell, and answers true, so the caller
// waits out its bound.
func groupAlive(pgid int) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range entries {
		if c := e.Name()[0]; c < '0' || c > '9' {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone while the directory was read
		}
		// "pid (comm) state ppid pgrp …": comm may hold spaces and parentheses, so the
		// fields are counted from its last ')'.
		end := bytes.LastIndexByte(stat, ')')
		if end < 0 {
			return true
		}
		fields := strings.Fields(string(stat[end+1:]))
		if len(fields) < 3 {
			return true
		}
		if group, err := strconv.Atoi(fields[2]); err == nil && group == pgid && fields[0] != "Z" && fields[0] != "X" {
			return true
		}
	}
	return false
}
