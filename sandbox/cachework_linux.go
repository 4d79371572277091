//go:build linux

package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// cacheLocks are the locks of the work directories this helper made (cachework.go):
// held until the helper exits, or handed to the command when the helper becomes it.
var cacheLocks []int

// lockedWork makes, in the cache's layer directory dir, a work directory under a fresh
// name and takes the lock beside it, and opens the directory (O_PATH).
func lockedWork(dir int) (int, error) {
	for range 8 {
		var b [8]byte
		rand.Read(b[:])
		name := "work-" + hex.EncodeToString(b[:])
		lock, err := unix.Openat2(dir, name+workLockSuffix, &unix.OpenHow{
			Flags: unix.O_RDWR | unix.O_CREAT | unix.O_EXCL | unix.O_CLOEXEC | unix.O_NOFOLLOW, Mode: 0o600,
			Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH,
		})
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return -1, fmt.Errorf("the work directory's lock: %w", err)
		}
		// A sweep that took the lock first removes the file: the lock is then on a file
		// no one else can find, and the name is given up.
		var st unix.Stat_t
		if unix.Flock(lock, unix.LOCK_EX|unix.LOCK_NB) != nil || unix.Fstat(lock, &st) != nil || st.Nlink == 0 {
			unix.Close(lock)
			continue
		}
		work, err := mkdirAt(dir, name)
		if err != nil {
			unix.Close(lock)
			return -1, err
		}
		cacheLocks = append(cacheLocks, lock)
		return work, nil
	}
	return -1, errors.New("no work directory could be made in the cache layer")
}

// handCacheLocksOn lets the command inherit the work directories' locks, when the
// helper becomes the command instead of staying its init.
func handCacheLocksOn() {
	for _, fd := range cacheLocks {
		unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0)
	}
}

// SweepCacheWorkWhenFree sweeps the layer (SweepCacheWork) once no process holds a
// work directory's lock any more, waiting at most max for the helpers that hold them to
// exit (a helper reports its command's end before it exits); what is still held then
// stays. For the end of a leg, once its helpers were ended.
func SweepCacheWorkWhenFree(layer string, max time.Duration) error {
	deadline := time.Now().Add(max)
	for {
		err := SweepCacheWork(layer)
		left, _ := filepath.Glob(filepath.Join(layer, "*", "work-*"+workLockSuffix))
		if len(left) == 0 || time.Now().After(deadline) {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
}
