//go:build !linux

package mcp

import "os/exec"

// waitNoReap waits for the program and reaps it, as there is no portable way to wait
// without reaping. Its group is killed just after, so on these systems a group id
// given to another process in that instant could be signalled; Linux has no such gap.
func waitNoReap(cmd *exec.Cmd) (reaped bool, err error) {
	return true, cmd.Wait()
}
