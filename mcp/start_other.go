//go:build !linux

package mcp

import (
	"os/exec"
	"syscall"
)

// setDeathSignal does nothing: only Linux has a parent-death signal. A stdio server
// outlives this process only when this process is killed without running Close.
func setDeathSignal(*syscall.SysProcAttr) {}

// startCmd starts cmd; any thread will do where there is no parent-death signal.
func startCmd(cmd *exec.Cmd) error { return cmd.Start() }

// waitNoReap waits for the program and reaps it, as there is no portable way to wait
// without reaping. Its group is killed just after, so on these systems a group id
// given to another process in that instant could be signalled; Linux has no such gap.
func waitNoReap(cmd *exec.Cmd) (reaped bool, err error) {
	return true, cmd.Wait()
}

// groupAlive reports whether the group pgid has a member, by signal 0. Members that
// ended but were not reaped count here, so the caller may wait out its bound.
func groupAlive(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }
