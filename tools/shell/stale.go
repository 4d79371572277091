package shell

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// A set marks what it leaves in its scratch directory, so that the next run can clean
// up after a process that died without shutting its sets down (SIGKILL, a crash, a
// power cut):
//
//   - ownerFile holds "<pid> <token> <pid namespace>": the process that made the set, a
//     random token, and the pid namespace the pid is counted in;
//   - every running command has a file "pg-<pgid>" while its group may have processes,
//     and every process it starts inherits SEMA_SHELL_SET=<token> in its environment.
//
// CleanStale then acts only on a directory whose owner is provably dead (same pid
// namespace, no such process), and signals only groups in which a live process still
// carries the owner's token, so neither a recycled process id nor a recycled group id
// can point it at a stranger's process.

const (
	scratchPrefix = "sema-shell-"
	ownerFile     = "owner"
	groupPrefix   = "pg-"
	tokenEnv      = "SEMA_SHELL_SET"
)

// newToken is a fresh random token naming one set.
func newToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// writeOwner records this process as the owner of the scratch directory dir.
func writeOwner(dir, token string) error {
	return os.WriteFile(filepath.Join(dir, ownerFile), fmt.Appendf(nil, "%d %s %s\n", os.Getpid(), token, pidNamespace()), 0o600)
}

// groupFile is the file that records a running group in the scratch directory.
func (s *Set) groupFile(pgid int) string {
	return filepath.Join(s.scratch, groupPrefix+strconv.Itoa(pgid))
}

var cleaned sync.Map // directory → struct{}: CleanStale ran over it in this process

// cleanStaleOnce runs CleanStale over dir the first time a set is made there in this
// process: what a dead process left cannot grow while this one runs.
func cleanStaleOnce(dir string) {
	if _, done := cleaned.LoadOrStore(dir, struct{}{}); !done {
		CleanStale(dir)
	}
}

// CleanStale cleans up after shell sets whose process died without shutting them down.
// In dir (empty: os.TempDir(), as Config.ScratchDir) it looks at every directory named
// sema-shell-* owned by this user whose owner file names a process that no longer
// exists: the process groups its commands left running are killed (SIGKILL), but only
// where a live member still carries that set's token, and the directory is removed.
// A directory without a readable owner file, owned by someone else, or whose owner is
// alive or cannot be judged (another pid namespace) is left alone, as is every other
// name. It returns how many directories it removed. New calls it once per process and
// directory; a runner may call it at the start of a run.
//
// Killing needs /proc (Linux); elsewhere the groups are left alone and the directory is
// kept, since without proof of membership no group may be signalled.
func CleanStale(dir string) int {
	if dir == "" {
		dir = os.TempDir()
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	removed := 0
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), scratchPrefix) || !e.IsDir() {
			continue
		}
		d := filepath.Join(dir, e.Name())
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() || !ownedByMe(fi) {
			continue
		}
		token, dead := deadOwner(d)
		if !dead {
			continue
		}
		if !reapGroups(d, token) {
			continue
		}
		if os.RemoveAll(d) == nil {
			removed++
		}
	}
	return removed
}

// deadOwner reads the owner file of a scratch directory and reports its token and
// whether the owner is provably dead.
func deadOwner(dir string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil {
		return "", false
	}
	f := strings.Fields(string(b))
	if len(f) != 3 {
		return "", false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 || f[1] == "" || f[2] != pidNamespace() {
		return "", false
	}
	if pid == os.Getpid() {
		return "", false
	}
	// ESRCH is proof; EPERM means a process of another user holds the id now, which
	// proves nothing either way.
	return f[1], errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// reapGroups kills the groups recorded in dir that still hold a process carrying token.
// It reports whether the directory may go: every recorded group was judged.
func reapGroups(dir, token string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	var groups []int
	for _, e := range ents {
		n, ok := strings.CutPrefix(e.Name(), groupPrefix)
		if !ok {
			continue
		}
		if pgid, err := strconv.Atoi(n); err == nil && pgid > 1 {
			groups = append(groups, pgid)
		}
	}
	if len(groups) == 0 {
		return true
	}
	return killMarkedGroups(groups, tokenEnv+"="+token)
}

func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
