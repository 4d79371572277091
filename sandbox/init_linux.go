//go:build linux

package sandbox

import "golang.org/x/sys/unix"

// runAsInit starts the command. It returns only on failure.
func runAsInit(prog string, argv, envv []string) error {
	return unix.Exec(prog, argv, envv)
}
