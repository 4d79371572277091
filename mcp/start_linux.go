//go:build linux

package mcp

import (
	"errors"
	"os/exec"

	"golang.org/x/sys/unix"
)

// A stdio server is started by env.StartCmd, as the host starts commands: it gets SIGKILL
// as its parent-death signal, so it does not outlive this process even when this process
// is killed with SIGKILL and cannot stop it. The signal reaches the server only (a fork
// clears it); what the server starts is reached through its process group, which Close
// and the server's own exit kill, and the guardian kills should this process die first.

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
