//go:build unix

package sqlitedb

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// SQLite reports a descriptor it could not get as SQLITE_CANTOPEN and a disk with no room
// for its shared-memory index or a journal as one of the SQLITE_IOERR codes, keeping the
// errno to itself. These look at the host instead, right after the failure: the person
// must learn that the machine, not the file, is what to fix.

// fdExhausted reports whether this process is at, or within a few descriptors of, its
// limit on open files: SQLite opens up to four files per database (it, its -wal, its
// -shm, a journal), and may have closed what it had opened when it gave up.
func fdExhausted() bool {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return false
	}
	open, err := os.ReadDir("/dev/fd")
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		return true
	}
	return err == nil && uint64(len(open))+8 >= lim.Cur
}

// diskFull reports whether the file system holding path has less than 1 MiB left for
// this process: too little for a -shm index (32 KiB) and a few pages of -wal.
func diskFull(path string) bool {
	var st syscall.Statfs_t
	if err := syscall.Statfs(filepath.Dir(path), &st); err != nil {
		return false
	}
	return uint64(st.Bavail)*uint64(st.Bsize) < 1<<20
}

// processAlive reports whether the process pid exists (another user's included).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
