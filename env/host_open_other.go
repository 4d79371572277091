//go:build !linux

package env

import (
	"os"
	"syscall"
)

// openRead opens a file for reading without following a symlink in its final component.
// (On Linux a symlink in any component is refused; see host_linux.go.)
func openRead(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
}
