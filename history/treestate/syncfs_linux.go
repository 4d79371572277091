package treestate

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncFS flushes the whole file system that holds dir: one call for any number of files.
func syncFS(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}

// dataSync is fdatasync(2): the mark's bytes, without its timestamps.
func dataSync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }
