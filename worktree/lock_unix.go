//go:build unix

package worktree

import (
	"os"
	"path/filepath"
	"syscall"

	"github.com/sema-agent/sema"
)

// lockFile is the file in a repository's git directory whose lock makes worktrees one
// process at a time.
const lockFile = "sema-worktree.lock"

// lockRepo takes r's worktree lock, waiting for another process's, and returns its
// release. The lock file is never followed through a link: the git directory may be
// someone else's (OpenUntrusted).
func lockRepo(r repo) (func(), error) {
	path := filepath.Join(r.gitDir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, sema.Errorf(CodeGitFailed, "opening %s: %v", path, err).With("path", path)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, sema.Errorf(CodeGitFailed, "locking %s: %v", path, err).With("path", path)
	}
	return func() { f.Close() }, nil
}
