//go:build linux

package env

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

var _ BatchWriter = (*Host)(nil)

// maxBatchDirs bounds the directories one pass of WriteFiles holds open; a batch that
// spans more is written in several passes, each as durable as a whole batch.
const maxBatchDirs = 256

// batchWorkers is how many temporary files WriteFiles writes at once: creating one
// takes the directory's lock, writing and closing it does not, so a few overlap.
const batchWorkers = 4

// WriteFiles writes each file as WriteFile does — its parent directory opened without
// following any symlink, ELOOP for a symlink and EISDIR for a directory at the path, an
// existing file's permission bits kept, the bytes in a hidden temporary file renamed
// over the path — and pays for durability once per batch instead of once per file:
//
//  1. every temporary file is written, each through the descriptor of its parent
//     directory opened once for the batch;
//  2. their bytes are made durable together: one syncfs(2) per filesystem when that
//     is known to report the filesystem's write-back errors (Linux ≥ 5.8 on ext4, xfs,
//     btrfs, f2fs or tmpfs), an fsync of each file otherwise, as WriteFile does;
//  3. each temporary file is renamed over its path, in the order given;
//  4. each directory that got a file is synced once.
//
// No rename happens before the bytes it installs are durable, so a crash at any point
// leaves each file with its old bytes or its new ones (and perhaps a temporary file,
// which CleanStaleTemps removes later). A file that fails at any step has its
// temporary file removed and is reported with WriteFile's error for it; a sync that
// fails fails every file it covered, and none of them is renamed. A ctx that ends
// before a file's temporary file is written, or before the renames begin, fails the
// files not renamed with ctx's error.
//
// syncfs also writes back the other dirty files of the filesystem, so its cost grows
// with what other programs left unwritten; a batch of one file is synced as WriteFile
// syncs it.
func (h *Host) WriteFiles(ctx context.Context, files []FileWrite) []error {
	errs := make([]error, len(files))
	for start := 0; start < len(files); {
		// A pass holds at most maxBatchDirs directories open.
		seen := map[string]bool{}
		end := start
		for ; end < len(files); end++ {
			dir, _ := filepath.Split(files[end].Path)
			if !seen[dir] && len(seen) == maxBatchDirs {
				break
			}
			seen[dir] = true
		}
		writeBatch(ctx, files[start:end], errs[start:end])
		start = end
	}
	for _, err := range errs {
		if err != nil {
			return errs
		}
	}
	return nil
}

// beforeRenames, when set (by tests), runs between the syncs and the renames: the
// window in which the tree can change under a batch.
var beforeRenames func()

// batchDir is a parent directory of a batch, opened once.
type batchDir struct {
	fd      int
	err     error // opening it failed: every file in it fails with this errno
	dev     uint64
	syncfs  bool // its filesystem's bytes may be synced with one syncfs
	renamed bool
}

// batchFile is one file of a batch on its way.
type batchFile struct {
	dir       *batchDir
	base, tmp string
	written   bool        // the temporary file holds the bytes (synced, unless dir.syncfs)
	held      int         // an O_PATH descriptor of the file the rename replaces, or -1
	perm      fs.FileMode // the mode a new file gets
}

func writeBatch(ctx context.Context, files []FileWrite, errs []error) {
	if err := ctx.Err(); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return
	}
	dirs := map[string]*batchDir{}
	defer func() {
		for _, d := range dirs {
			if d.err == nil {
				unix.Close(d.fd)
			}
		}
	}()
	state := planBatch(files, errs, dirs)
	// 1 (and 2 where a file is synced alone): the temporary files.
	writeTemps(ctx, files, state, errs)
	// 2: one syncfs per filesystem for the files not synced one by one.
	syncBatch(files, state, errs)
	// 3: the renames, in order.
	if beforeRenames != nil {
		beforeRenames()
	}
	renameBatch(ctx, files, state, errs)
	// 4: make the renames durable. As in WriteFile, a failure is ignored: the renames
	// succeeded, and some filesystems cannot sync a directory.
	for _, d := range dirs {
		if d.renamed {
			unix.Fsync(d.fd)
		}
	}
	releaseHeld(state)
}

// planBatch opens each parent directory once (into dirs) and gives each file its state:
// its directory, its name and the mode a new file gets. A filesystem that holds one file
// alone is not synced with syncfs: that file is synced as WriteFile does.
func planBatch(files []FileWrite, errs []error, dirs map[string]*batchDir) []batchFile {
	state := make([]batchFile, len(files))
	for i := range state {
		state[i].held = -1
	}
	perDev := map[uint64]int{} // files per filesystem
	first := map[string]int{}  // a path's first entry, whose perm a new file keeps
	for i, f := range files {
		perm := f.Perm
		if j, ok := first[f.Path]; ok {
			// One WriteFile after another would create the file with the first entry's
			// perm and then keep it.
			perm = files[j].Perm
		} else {
			first[f.Path] = i
		}
		dir, base := filepath.Split(f.Path)
		if base == "" || dir == "" {
			errs[i] = &fs.PathError{Op: "write", Path: f.Path, Err: unix.EINVAL}
			continue
		}
		d := dirs[dir]
		if d == nil {
			d = openBatchDir(dir)
			dirs[dir] = d
		}
		if d.err != nil {
			errs[i] = &fs.PathError{Op: "write", Path: f.Path, Err: d.err}
			continue
		}
		state[i] = batchFile{dir: d, base: base, perm: perm, held: -1}
		perDev[d.dev]++
	}
	for _, d := range dirs {
		if d.err == nil && perDev[d.dev] < 2 {
			d.syncfs = false
		}
	}
	return state
}

// writeTemps writes every file's temporary file, batchWorkers at a time.
func writeTemps(ctx context.Context, files []FileWrite, state []batchFile, errs []error) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(batchWorkers, len(files)) {
		wg.Go(func() {
			for i := range next {
				if errs[i] != nil {
					continue
				}
				if err := ctx.Err(); err != nil {
					errs[i] = err
					continue
				}
				errs[i] = writeTemp(&state[i], files[i])
			}
		})
	}
	for i := range files {
		next <- i
	}
	close(next)
	wg.Wait()
}

// syncBatch syncs, with one syncfs per filesystem, the files not synced one by one.
func syncBatch(files []FileWrite, state []batchFile, errs []error) {
	synced := map[uint64]error{}
	for i := range state {
		s := &state[i]
		if !s.written || !s.dir.syncfs {
			continue
		}
		err, done := synced[s.dir.dev]
		if !done {
			err = unix.Syncfs(s.dir.fd)
			synced[s.dir.dev] = err
		}
		if err != nil {
			s.fail(&errs[i], &fs.PathError{Op: "write", Path: files[i].Path, Err: err})
		}
	}
}

// renameBatch renames the written files into place, in order; once ctx has ended none is.
func renameBatch(ctx context.Context, files []FileWrite, state []batchFile, errs []error) {
	stop := ctx.Err()
	for i := range state {
		s := &state[i]
		if !s.written {
			continue
		}
		if stop != nil {
			s.fail(&errs[i], stop)
			continue
		}
		if err := unix.Renameat(s.dir.fd, s.tmp, s.dir.fd, s.base); err != nil {
			s.fail(&errs[i], &fs.PathError{Op: "write", Path: files[i].Path, Err: err})
			continue
		}
		s.dir.renamed = true
	}
}

// fail removes the temporary file and records err as the file's answer.
func (s *batchFile) fail(slot *error, err error) {
	unix.Unlinkat(s.dir.fd, s.tmp, 0)
	s.written = false
	*slot = err
}

// openBatchDir opens dir as parentDir does for WriteFile: no symlink followed anywhere.
func openBatchDir(dir string) *batchDir {
	fd, err := openNoSymlinks(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return &batchDir{fd: -1, err: err}
	}
	d := &batchDir{fd: fd}
	var st unix.Stat_t
	var sfs unix.Statfs_t
	if unix.Fstat(fd, &st) == nil && unix.Fstatfs(fd, &sfs) == nil {
		d.dev = st.Dev
		d.syncfs = syncfsReportsErrors() && syncfsKnown(sfs.Type)
	}
	return d
}

// writeTemp is WriteFile up to the rename: the checks of the path, then the temporary
// file written, its mode set, and — unless its filesystem is synced at once — synced.
// On failure it leaves no temporary file.
func writeTemp(s *batchFile, w FileWrite) error {
	pe := func(err error) error { return &fs.PathError{Op: "write", Path: w.Path, Err: err} }
	perm := s.perm
	var st unix.Stat_t
	switch err := unix.Fstatat(s.dir.fd, s.base, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil:
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			return pe(unix.ELOOP)
		case unix.S_IFDIR:
			return pe(unix.EISDIR)
		}
		perm = fs.FileMode(st.Mode & 0o777)
	case !errors.Is(err, unix.ENOENT):
		return pe(err)
	}
	tmp := tempName(s.base)
	fd, err := unix.Openat(s.dir.fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return pe(err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(filepath.Dir(w.Path), tmp))
	fail := func(err error) error {
		f.Close()
		unix.Unlinkat(s.dir.fd, tmp, 0)
		return err
	}
	if _, err := f.Write(w.Data); err != nil {
		return fail(err)
	}
	// The umask may have narrowed perm at create; set the mode the file must keep. A
	// chmod is a metadata write of its own, so it is skipped when the mode is right.
	var fst unix.Stat_t
	if err := unix.Fstat(fd, &fst); err != nil || fs.FileMode(fst.Mode&0o7777) != perm.Perm() {
		if err := f.Chmod(perm.Perm()); err != nil {
			return fail(err)
		}
	}
	if !s.dir.syncfs {
		if err := f.Sync(); err != nil {
			return fail(err)
		}
	}
	if err := f.Close(); err != nil {
		unix.Unlinkat(s.dir.fd, tmp, 0)
		return err
	}
	s.tmp, s.written = tmp, true
	return nil
}

// syncfsKnown reports whether a filesystem of type magic makes a file's bytes durable
// on syncfs as fsync would: the local filesystems whose sync_fs commits and flushes.
// Others (network filesystems, FUSE) may not, and get an fsync per file.
func syncfsKnown(magic int64) bool {
	switch uint32(magic) {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.F2FS_SUPER_MAGIC, unix.TMPFS_MAGIC:
		return true
	}
	return false
}

var syncfsErrors = sync.OnceValue(func() bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	return kernelAtLeast(unix.ByteSliceToString(u.Release[:]), 5, 8)
})

// syncfsReportsErrors reports whether syncfs(2) returns the write-back errors of the
// filesystem since the descriptor was opened, as it does from Linux 5.8: before, it
// returned success after a failed write-back, and a rename after it could install
// bytes that never reached the disk.
func syncfsReportsErrors() bool { return syncfsErrors() }

// kernelAtLeast reports whether a kernel release string ("6.18.44-generic") is at
// least major.minor; an unreadable one is not.
func kernelAtLeast(release string, major, minor int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	digits := func(s string) string { // "8-rc1" → "8"
		if i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
			return s[:i]
		}
		return s
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(digits(parts[1]))
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// heldBudget is how many replaced files a process may hold at once (see hold): a
// quarter of its descriptor limit, so holding them never starves the rest of it.
var heldBudget = sync.OnceValue(func() *atomic.Int64 {
	var n atomic.Int64
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil {
		n.Store(int64(min(lim.Cur/4, 1<<16)))
	}
	return &n
})

// hold opens the file about to be replaced with O_PATH, so the rename does not drop
// its last reference. On ext4 the last reference's drop frees the file's blocks and
// inode in the caller's thread — a journal handle, ~0.15 ms or more per file — which
// would make each rename that slow; held, the old files are let go after the batch
// (releaseHeld), off the caller's path. Holding is an optimization only: with no
// descriptor to spare, the rename frees the file itself.
func (s *batchFile) hold() {
	budget := heldBudget()
	if budget.Add(-1) < 0 {
		budget.Add(1)
		return
	}
	fd, err := unix.Openat(s.dir.fd, s.base, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		budget.Add(1)
		return
	}
	s.held = fd
}

// releaseHeld lets go of the replaced files on a goroutine of their own: the kernel
// frees them as their last descriptor closes.
func releaseHeld(state []batchFile) {
	var fds []int
	for i := range state {
		if state[i].held >= 0 {
			fds = append(fds, state[i].held)
			state[i].held = -1
		}
	}
	if len(fds) == 0 {
		return
	}
	go func() {
		for _, fd := range fds {
			unix.Close(fd)
			heldBudget().Add(1)
		}
	}()
}
