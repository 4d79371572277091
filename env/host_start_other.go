//go:build !linux

package env

import (
	"os/exec"
	"syscall"
	"time"
)

// setDeathSignal does nothing: only Linux has a parent-death signal. The guardian
// (guard.go) still stops the program's group when this process dies.
func setDeathSignal(*syscall.SysProcAttr) {}

// StartCmd starts cmd. Elsewhere than on Linux there is no parent-death signal, and any
// thread will do.
func StartCmd(cmd *exec.Cmd) error { return startCmd(cmd) }

// startCmd starts cmd; any thread will do where there is no parent-death signal.
func startCmd(cmd *exec.Cmd) error { return cmd.Start() }

// startWarm starts cmd: there are no spares elsewhere than on Linux.
func startWarm(cmd *exec.Cmd, _ string) (*exec.Cmd, func(bool) ExitStatus, error) {
	return cmd, nil, cmd.Start()
}

// EndPrimed does nothing: there are no spares elsewhere than on Linux.
func EndPrimed(key string) {}

// StartCmdReaped is StartCmd: there is no reaper elsewhere than on Linux.
func StartCmdReaped(cmd *exec.Cmd) (pgid int, reaped bool, err error) {
	if err := startCmd(cmd); err != nil {
		return 0, false, err
	}
	return cmd.Process.Pid, false, nil
}

// PrimedStarts reports how many starts a primed spare took: none, elsewhere than on
// Linux.
func PrimedStarts() int64 { return 0 }

// PrimedReady reports false: there are no spares elsewhere than on Linux.
func PrimedReady(key string, wait time.Duration) bool { return false }
