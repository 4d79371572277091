package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// A cache's private layer (Policy.Caches, Policy.CacheLayer) is one directory per cache
// holding the upper directory every command of the leg writes into, and one overlay
// work directory per mount of it: overlayfs prepares its work directory at every mount,
// and commands of a leg may run at once (a background task and the next command, two
// MCP servers), so two mounts sharing one would break each other.
//
// The helper makes its own work directory, under a fresh name, beside a lock file of
// the same name ("work-<name>.lock") that it holds (flock) for as long as its mounts
// can live: as the init of the command's PID namespace, until the namespace ends;
// without one, the command inherits the lock. The name is the helper's, not the
// policy's, so a leg's commands share one policy — a spare can build a command's view
// before the command is known. SweepCacheWork removes what no live mount holds.

// SweepCacheWork removes the work directories in the cache layer layer whose lock no
// process holds any more (their mounts are gone), with their locks. overlayfs leaves its
// own work directory inside without any permission bits, so each is opened up first.
// It returns the first error met; a work directory in use is not one.
func SweepCacheWork(layer string) error {
	if layer == "" {
		return nil
	}
	var first error
	note := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(layer, "*", "work*"))
	locked := map[string]bool{}
	for _, d := range dirs {
		if !strings.HasSuffix(d, workLockSuffix) {
			continue
		}
		work := strings.TrimSuffix(d, workLockSuffix)
		free, err := lockFree(d)
		if err != nil || !free {
			locked[work] = true
			continue
		}
		note(removeWork(work))
		note(os.Remove(d))
		locked[work] = true // gone, or removed just now
	}
	// A work directory with no lock beside it was left by a helper that never took one
	// (one of an earlier version): no mount of this process holds it.
	for _, d := range dirs {
		if !strings.HasSuffix(d, workLockSuffix) && !locked[d] {
			note(removeWork(d))
		}
	}
	return first
}

// workLockSuffix ends the name of a work directory's lock file.
const workLockSuffix = ".lock"

// removeWork removes the work directory d, opening up what overlayfs closed.
func removeWork(d string) error {
	// WalkDir visits a directory before it reads it, so each is opened up in time.
	filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
		if e != nil && e.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(d)
}

// lockFree reports whether no process holds the lock file path: taken and let go again
// at once.
func lockFree(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return false, nil
	}
	return true, nil
}
