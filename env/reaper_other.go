//go:build !linux

package env

import (
	"errors"
	"os"
	"os/exec"
)

// viaReaper starts no reaper where there is no child subreaper: a program is reached
// through its process group only.
func viaReaper(*exec.Cmd) (report, child *os.File, err error) { return nil, nil, nil }

// reapedPID is never called without a reaper.
func reapedPID(*os.File, string) (int, []byte, error) {
	return 0, nil, errors.New("env: no process reaper")
}
