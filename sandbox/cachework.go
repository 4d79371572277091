package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
)

// NewCacheWork is a fresh Policy.CacheWork: a name no other command of the process uses.
func NewCacheWork() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// validCacheWork reports whether s is a name NewCacheWork could have made: it becomes a
// path component.
func validCacheWork(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// RemoveCacheWork removes the work directories a command with Policy.CacheWork work
// left in the cache layer, once it has ended (its mounts went with it). overlayfs leaves
// its own work directory inside without any permission bits, so each is opened up first.
func RemoveCacheWork(layer, work string) error {
	if layer == "" || !validCacheWork(work) {
		return nil
	}
	dirs, _ := filepath.Glob(filepath.Join(layer, "*", "work-"+work))
	var first error
	for _, d := range dirs {
		// WalkDir visits a directory before it reads it, so each is opened up in time.
		filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if e != nil && e.IsDir() {
				os.Chmod(p, 0o700)
			}
			return nil
		})
		if err := os.RemoveAll(d); err != nil && first == nil {
			first = err
		}
	}
	return first
}
