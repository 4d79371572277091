//go:build !linux

package env

import (
	"os/exec"
	"syscall"
)

// setDeathSignal does nothing: only Linux has a parent-death signal. The guardian
// (guard.go) still stops the program's group when this process dies.
func setDeathSignal(*syscall.SysProcAttr) {}

// startCmd starts cmd; any thread will do where there is no parent-death signal.
func startCmd(cmd *exec.Cmd) error { return cmd.Start() }
