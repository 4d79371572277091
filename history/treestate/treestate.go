// Package treestate snapshots the regular files under a set of roots cheaply, with a stat
// cache in the manner of git's index, so that what a program the runner cannot see into
// (a Bash command) changed can be recorded in file history like a write tool's edits.
//
// A [Tree] keeps, for every file it walked, the file's stat (size, mtime, device, inode,
// mode) and the sha256 of its bytes, and it holds a copy of those bytes (the stage), so a
// file's pre-image is in hand before any command can change it. [Tree.Sync] walks again:
// a file whose stat is unchanged is not read; one whose stat changed is read and hashed,
// and compared with what the cache says it was. Every file created, changed (bytes or
// permission bits) or deleted since the previous Sync is handed to the caller with its
// pre-image, and the cache moves on.
//
// What a walk leaves out: .git directories, paths the caller's Skip refuses (the deny set,
// the shell's own scratch directory), what .gitignore and .git/info/exclude ignore,
// symbolic links (never followed, so a link cannot lead the walk out of the roots),
// directories themselves and special files. What a walk cannot cover is reported, never
// dropped silently: files over the size cap (their bytes are not staged) and files past
// the file-count cap.
//
// Protected entries (Config.Protected: .git, .vscode, .envrc, … at any depth) are kept
// whole, whatever .gitignore says and past the file-count cap: every entry in them,
// directories and links too, and the bytes of their files. [Tree.SyncGuarded] puts back
// what changed in them since the previous walk — removes what was created, restores what
// was changed or removed — instead of handing it over (see protect.go). A walk also
// reports the regular files with more than one hard link it saw (Diff.Linked).
package treestate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/gitignore"
)

// Defaults of the caps.
const (
	// DefaultMaxFileSize is the largest file whose bytes a snapshot keeps: 5 MiB.
	DefaultMaxFileSize = 5 << 20
	// DefaultMaxFiles is how many files one walk covers: 20,000.
	DefaultMaxFiles = 20000
)

// racyWindow is how close to a walk a file's mtime may be for its stat not to be trusted
// at the next walk: a write in the same clock tick as the walk (the kernel stamps mtime
// from a coarse clock) leaves size, mtime and inode unchanged, which is git's "racily
// clean" problem; such files are read again next time.
const racyWindow = 2 * time.Second

// Config says what a Tree walks and where it keeps its stage.
type Config struct {
	// Env reads the files. Required.
	Env env.ExecutionEnv
	// Roots are the canonical directories walked (the write roots). A root inside another
	// is walked once.
	Roots []string
	// Skip, when set, reports a canonical path never to be walked or entered (the fence's
	// deny set, the shell's scratch directory).
	Skip func(path string) bool
	// StageDir, when set, is a directory of this process's machine where staged bytes are
	// kept, one file per sha256; it is made when missing. Empty: the stage is in memory.
	StageDir string
	// MaxFileSize is the size cap in bytes: a larger file is watched by its stat but its
	// bytes are not kept, so a change to it cannot be undone. Zero: DefaultMaxFileSize.
	MaxFileSize int64
	// MaxFiles caps the files one walk covers; the rest are reported. Zero:
	// DefaultMaxFiles.
	MaxFiles int
	// Protected, when set, reports whether the canonical path of an entry the walk meets
	// in an unprotected directory is protected (the outermost protected entry of its
	// path). It is asked of every entry, so it should filter cheaply first
	// (fence.ProtectedCandidate). Nil: nothing is protected.
	Protected func(path string) bool
	// Spots are paths relative to each root (".config/systemd") where a protected entry
	// is looked for even when the walk does not list the directory that holds it (an
	// ignored one, one past the cap).
	Spots []string
	// ProtectedOnly keeps the bytes of protected files only: every other file is watched
	// by its stat (for Diff.Linked) and its changes are never reported. For a walk that
	// serves the protection alone, without file history.
	ProtectedOnly bool
	// Durable makes the stage in StageDir outlive the process: Arm fsyncs it with the
	// index before a command, and a later process can Recover what the command changed
	// (see journal.go). Pre-images the index on disk still names are kept until the next
	// Arm or Disarm. Close leaves a stage that is armed.
	Durable bool
}

// Change is a file created, changed or deleted between two walks, with its pre-image.
type Change struct {
	// Path is the file's canonical path.
	Path string
	// Existed is false for a file the earlier walk did not see (created since).
	Existed bool
	// Sum is the sha256 (hex) of the pre-image; empty when !Existed or when the file was
	// over the size cap, so its bytes were not kept (see Unrecoverable).
	Sum string
	// Mode is the pre-image's permission bits (with setuid, setgid, sticky).
	Mode fs.FileMode
	// Size is the pre-image's length in bytes.
	Size int64
	// Unrecoverable reports a file that existed whose pre-image's bytes are not in hand:
	// it was over the size cap, so they were never kept, or (Lost) the stage lost them.
	Unrecoverable bool
	// Lost reports an Unrecoverable change whose pre-image the stage had kept and no
	// longer has (Diff.RecordErr says why).
	Lost bool
	// After is the sha256 (hex) of what the file holds now, the post-image a rewind
	// checks the file against before restoring it; empty when the file is gone or was not
	// hashed (over the size cap).
	After string
	// Gone reports that the file no longer exists.
	Gone bool
}

// Diff is what one Sync saw.
type Diff struct {
	// Changes are the files created, changed or deleted since the previous Sync, sorted by
	// path; empty on a Tree's first Sync, which only primes the cache.
	Changes []Change
	// Oversize lists the files over the size cap that the walk found, sorted.
	Oversize []string
	// Beyond lists, sorted, the files and directories past the file-count cap that the walk
	// did not cover: a change under them is not seen.
	Beyond []string
	// Unreadable lists, sorted, the files the walk found but may not read: watched by
	// their stat only, like those over the size cap.
	Unreadable []string
	// Files is how many files the walk covered.
	Files int
	// RecordErr joins the errors of the RecordFunc (and of pre-images the stage lost).
	RecordErr error
	// Protected are the outermost protected entries there are now (after a revert),
	// sorted by path.
	Protected []Entry
	// Linked lists, sorted, the regular files the walk saw with more than one hard link.
	Linked []string
	// Reverted lists, sorted, what SyncGuarded put back: protected entries created,
	// changed or removed since the previous Sync. Their changes are not in Changes.
	Reverted []string
	// Unreverted lists, sorted, the protected changes SyncGuarded could not put back (a
	// pre-image over the size cap, a removed .git directory whose contents no walk
	// keeps, an error: RevertErr). They are in Changes like any other.
	Unreverted []string
	// RevertErr joins the errors of putting back.
	RevertErr error
}

// entry is the cache's word on one file.
type entry struct {
	size  int64
	mtime int64
	dev   uint64
	ino   uint64
	mode  fs.FileMode
	sum   string // "" when over the size cap
	racy  bool   // mtime too close to the walk that saw it: read again next time
	prot  bool   // in a protected entry
	nlink uint64
}

func (e entry) sameStat(o entry) bool {
	return e.size == o.size && e.mtime == o.mtime && e.ino == o.ino && e.dev == o.dev && e.mode == o.mode
}

// Tree is the snapshot of a set of roots. Its methods are safe for concurrent use; Syncs
// run one at a time.
type Tree struct {
	cfg   Config
	roots []string

	mu     sync.Mutex
	index  map[string]entry
	links  map[string]bool // the symbolic links the latest walk met
	prot   map[string]pent // protected entries but regular files beneath a protected directory
	primed bool
	refs   map[string]int    // staged sum → index entries using it
	mem    map[string][]byte // the stage, when it is in memory
	// skipped are the paths Skip refused in the latest walk (for the journal).
	skipped []string

	// The journal of a durable stage (journal.go).
	gen       uint64              // moves on with every walk
	savedGen  uint64              // the generation of the index on disk
	saved     bool                // an index is on disk
	unsynced  []string            // pre-images staged since the last Arm, not fsynced yet
	doomed    map[string]struct{} // pre-images no entry uses, removed at the next Arm or Disarm
	keepStage bool                // Recover's Tree: the stage is another's record, left whole
	mark      *os.File            // the in-flight mark, open once written
	armed     bool                // the mark says a command is in flight
}

// New returns a Tree that has not walked yet.
func New(cfg Config) *Tree {
	if cfg.MaxFileSize <= 0 {
		cfg.MaxFileSize = DefaultMaxFileSize
	}
	if cfg.MaxFiles <= 0 {
		cfg.MaxFiles = DefaultMaxFiles
	}
	t := &Tree{cfg: cfg, index: map[string]entry{}, prot: map[string]pent{}, refs: map[string]int{}, doomed: map[string]struct{}{}}
	if cfg.StageDir == "" {
		t.mem = map[string][]byte{}
	}
	roots := slices.Clone(cfg.Roots)
	slices.Sort(roots)
	for _, r := range roots {
		if !slices.ContainsFunc(t.roots, func(o string) bool { return under(o, r) }) {
			t.roots = append(t.roots, r)
		}
	}
	return t
}

// Primed reports whether the Tree has walked once, so a Sync will report changes.
func (t *Tree) Primed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.primed
}

// RecordFunc receives one change with its pre-image's bytes (nil for a file that did not
// exist or was over the size cap). An error is collected in Diff.RecordErr and Sync goes
// on: the other changes are still handed over.
type RecordFunc func(ctx context.Context, c Change, preImage []byte) error

// Sync walks the roots, hands every change since the previous Sync to record (nil:
// absorb the changes without recording them — what changed was someone else's), and
// keeps the bytes of every new or changed file under the size cap, so the next change of
// any of them has its pre-image. The first Sync of a Tree reads every file and reports no
// change. An error means the walk or the stage failed: the snapshot did not move on and
// nothing was recorded. Errors of record are in Diff.RecordErr.
func (t *Tree) Sync(ctx context.Context, record RecordFunc) (Diff, error) {
	return t.sync(ctx, record, nil)
}

// SyncGuarded is Sync, except that what changed in protected entries since the previous
// Sync is put back instead of handed to record: a protected entry created since is
// removed with everything in it, one changed or removed is restored from the stage (see
// Diff.Reverted, Diff.Unreverted). keep, when set, names protected paths whose changes
// stand (a write a person approved): a path for which it reports true is handed to
// record like any other. The first Sync of a Tree puts nothing back.
func (t *Tree) SyncGuarded(ctx context.Context, record RecordFunc, keep func(path string) bool) (Diff, error) {
	if keep == nil {
		keep = func(string) bool { return false }
	}
	return t.sync(ctx, record, keep)
}

// sync walks; keep, when set, guards: see SyncGuarded. It runs in steps: walk the roots,
// compare what the walk saw with the index (staging new bytes), find what is gone, put
// back protected changes, hand the changes to record, and move the index on.
func (t *Tree) sync(ctx context.Context, record RecordFunc, keep func(string) bool) (Diff, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	start := time.Now()
	w, err := t.walk(ctx)
	if err != nil {
		return Diff{}, err
	}
	d := Diff{Oversize: w.oversize, Beyond: w.beyond, Files: w.count, Linked: w.linked}
	next := make(map[string]entry, len(w.seen))
	staged, err := t.compare(ctx, w, start, next, &d)
	if err != nil {
		for _, s := range staged { // sums staged by this Sync are dropped again
			if t.refs[s] == 0 {
				t.unstage(s)
			}
		}
		return Diff{}, err
	}
	t.findGone(ctx, w, next, &d)
	slices.Sort(d.Linked)
	slices.Sort(d.Unreadable)
	slices.Sort(d.Oversize)
	slices.Sort(d.Beyond)
	slices.SortFunc(d.Changes, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	if !t.primed {
		d.Changes = nil
	}
	prot := w.prot
	if keep != nil && t.primed {
		prot = t.revert(ctx, w, next, &d, keep)
	}
	d.Protected = tops(prot)
	// A repository's config and hooks are watched for the guard, never recorded: file
	// history keeps no part of a .git directory, whose rest it does not see.
	d.Changes = slices.DeleteFunc(d.Changes, func(c Change) bool { return strings.Contains(c.Path, "/.git/") })
	if record != nil {
		d.RecordErr = t.hand(ctx, record, d.Changes)
	}
	t.moveOn(w, next, prot, staged)
	return d, nil
}

// walk lists the roots and stats what it listed.
func (t *Tree) walk(ctx context.Context) (*walker, error) {
	w := &walker{t: t, ctx: ctx, seen: map[string]entry{}, links: map[string]bool{}, prot: map[string]pent{}}
	for _, r := range t.roots {
		prot := t.cfg.Protected != nil && t.cfg.Protected(r)
		if prot {
			w.note(r, fs.ModeDir, true)
		}
		if err := w.dir(r, gitignore.Matcher{}, prot); err != nil {
			return nil, err
		}
	}
	if err := w.spots(); err != nil {
		return nil, err
	}
	if err := w.stat(); err != nil {
		return nil, err
	}
	return w, nil
}

// compare fills next with what the walk saw and d.Changes with what is new or changed
// since the index, reading and staging the bytes of every file whose stat moved. It
// returns the sums it staged, also on error, so a failed Sync can drop them again.
func (t *Tree) compare(ctx context.Context, w *walker, start time.Time, next map[string]entry, d *Diff) (staged []string, err error) {
	for p, cur := range w.seen {
		old, had := t.index[p]
		if t.cfg.ProtectedOnly && !cur.prot {
			next[p] = cur // watched by its stat only
			continue
		}
		if had && !old.racy && old.sameStat(cur) {
			cur.sum = old.sum
		} else if cur.size <= t.cfg.MaxFileSize {
			data, err := t.cfg.Env.ReadFile(ctx, p)
			if isGone(err) {
				continue // deleted between the listing and the read: absent now
			}
			if errors.Is(err, fs.ErrPermission) {
				// A file we may not read is watched by its stat, like one over the size cap.
				d.Unreadable = append(d.Unreadable, p)
				next[p] = cur
				if had && (old.sum != "" || !old.sameStat(cur)) {
					d.Changes = append(d.Changes, preImage(p, old))
				}
				continue
			}
			if err != nil {
				return staged, fmt.Errorf("treestate: reading %s: %w", p, err)
			}
			cur.size = int64(len(data))
			cur.sum = sumOf(data)
			if t.refs[cur.sum] == 0 && !slices.Contains(staged, cur.sum) {
				if err := t.stage(cur.sum, data); err != nil {
					return staged, err
				}
				staged = append(staged, cur.sum)
			}
		}
		cur.racy = cur.mtime >= start.Add(-racyWindow).UnixNano()
		next[p] = cur
		switch {
		case !had && t.links[p]:
			// A symbolic link stood here at the last walk: what was here is not a file
			// history can put back, and deleting the file would be no restore of it.
			d.Changes = append(d.Changes, Change{Path: p, Existed: true, Unrecoverable: true, After: cur.sum})
		case !had:
			d.Changes = append(d.Changes, Change{Path: p, After: cur.sum})
		case old.sum != cur.sum || old.sum == "" && !old.sameStat(cur) || old.mode&modeBits != cur.mode&modeBits:
			ch := preImage(p, old)
			ch.After = cur.sum
			d.Changes = append(d.Changes, ch)
		}
	}
	return staged, nil
}

// findGone adds to d.Changes the indexed files the walk did not meet and that are gone
// from the disk; one past the walk's file-count cap is kept in next as it was.
func (t *Tree) findGone(ctx context.Context, w *walker, next map[string]entry, d *Diff) {
	for p, old := range t.index {
		if _, ok := next[p]; ok || t.cfg.ProtectedOnly && !old.prot {
			continue
		}
		if w.uncovered(p) {
			next[p] = old // not walked this time: nothing is known of it
			continue
		}
		// Gone from the walk is not gone from the disk: a path newly ignored or denied is
		// still there, and forgetting it is all there is to do. A protected file is never
		// ignored, so one the walk did not meet is gone as the file it was, even when a
		// path through a link now names something there.
		if old.prot {
			if t.cfg.Skip != nil && t.cfg.Skip(p) {
				continue
			}
		} else if _, err := t.cfg.Env.Lstat(ctx, p); err == nil || !isGone(err) {
			continue
		}
		ch := preImage(p, old)
		ch.Gone = true
		d.Changes = append(d.Changes, ch)
	}
}

// hand gives each change to record with its pre-image's bytes and joins what failed.
func (t *Tree) hand(ctx context.Context, record RecordFunc, changes []Change) error {
	var errs []error
	for _, c := range changes {
		var data []byte
		if c.Existed && c.Sum != "" {
			b, err := t.staged(c.Sum)
			if err != nil {
				// The pre-image is gone: the change is handed over all the same, as one
				// that cannot be undone, so the record says so instead of nothing.
				errs = append(errs, fmt.Errorf("%s: %w", c.Path, err))
				c.Unrecoverable, c.Lost = true, true
			}
			data = b
		}
		if err := record(ctx, c, data); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// moveOn makes next the index: bytes no entry uses any more leave the stage.
func (t *Tree) moveOn(w *walker, next map[string]entry, prot map[string]pent, staged []string) {
	newRefs := make(map[string]int, len(t.refs))
	for _, e := range next {
		if e.sum != "" {
			newRefs[e.sum]++
		}
	}
	for s := range t.refs {
		if newRefs[s] == 0 {
			t.unstage(s)
		}
	}
	for _, s := range staged {
		if newRefs[s] == 0 {
			t.unstage(s)
		}
	}
	if t.cfg.Durable && (!maps.Equal(next, t.index) || !slices.Equal(w.skipped, t.skipped)) {
		t.gen++ // the index on disk is stale: the next Arm writes it
	}
	t.index, t.prot, t.refs, t.primed = next, prot, newRefs, true
	t.links = w.links
	t.skipped = w.skipped
}

// modeBits are the mode bits a change of which is a change of the file, as file history
// keeps them.
const modeBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

func preImage(p string, old entry) Change {
	return Change{Path: p, Existed: true, Sum: old.sum, Mode: old.mode & modeBits, Size: old.size, Unrecoverable: old.sum == ""}
}

func sumOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func (t *Tree) stage(s string, data []byte) error {
	if t.mem != nil {
		t.mem[s] = slices.Clone(data)
		return nil
	}
	if err := os.MkdirAll(t.cfg.StageDir, 0o700); err != nil {
		return fmt.Errorf("treestate: making the stage: %w", err)
	}
	// Not fsynced here: a stage that is a cache of this process is rebuilt by a new Tree,
	// and a durable one is fsynced by Arm, in one go, before a command may change files.
	if err := os.WriteFile(filepath.Join(t.cfg.StageDir, s), data, 0o600); err != nil {
		return fmt.Errorf("treestate: staging a pre-image: %w", err)
	}
	delete(t.doomed, s)
	if t.cfg.Durable {
		t.unsynced = append(t.unsynced, s)
	}
	return nil
}

func (t *Tree) unstage(s string) {
	if t.mem != nil {
		delete(t.mem, s)
		return
	}
	if t.keepStage {
		return
	}
	if t.cfg.Durable && t.saved {
		// The index on disk may still name it: it goes once a newer index is written.
		t.doomed[s] = struct{}{}
		return
	}
	_ = os.Remove(filepath.Join(t.cfg.StageDir, s))
}

func (t *Tree) staged(s string) ([]byte, error) {
	if t.mem != nil {
		if b, ok := t.mem[s]; ok {
			return b, nil
		}
		return nil, fmt.Errorf("treestate: the stage lost pre-image %s", s)
	}
	b, err := os.ReadFile(filepath.Join(t.cfg.StageDir, s))
	if err != nil {
		return nil, fmt.Errorf("treestate: the stage lost pre-image %s: %w", s, err)
	}
	if sumOf(b) != s {
		return nil, fmt.Errorf("treestate: staged pre-image %s was changed", s)
	}
	return b, nil
}

// Close drops the stage.
func (t *Tree) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.index, t.prot, t.refs, t.primed = map[string]entry{}, map[string]pent{}, map[string]int{}, false
	if t.mem != nil {
		t.mem = map[string][]byte{}
		return nil
	}
	if t.mark != nil {
		t.mark.Close()
		t.mark = nil
	}
	if t.armed {
		return nil // a command's record is incomplete: the stage is kept for Recover
	}
	return os.RemoveAll(t.cfg.StageDir)
}

func isGone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotDir)
}

// under reports whether p is dir or lies beneath it.
func under(dir, p string) bool {
	if p == dir || dir == "/" {
		return true
	}
	return len(p) > len(dir) && p[len(dir)] == '/' && p[:len(dir)] == dir
}

func join(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// walker is one walk of the roots.
type walker struct {
	t        *Tree
	ctx      context.Context
	seen     map[string]entry
	count    int
	files    []string // listed, in walk order; statted by stat
	fprot    []bool   // files[i] is in a protected entry
	oversize []string
	beyond   []string
	linked   []string
	links    map[string]bool // the symbolic links met (their paths)
	prot     map[string]pent // protected entries met, but regular files beneath a protected directory
	skipped  []string        // what Skip refused
}

// dir walks directory d; inProt says d is in a protected entry.
func (w *walker) dir(d string, ign gitignore.Matcher, inProt bool) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	ents, err := w.t.cfg.Env.ReadDir(w.ctx, d)
	if err != nil {
		if isGone(err) || errors.Is(err, fs.ErrPermission) {
			return nil // a directory that vanished or that we may not list holds nothing we can keep
		}
		return fmt.Errorf("treestate: listing %s: %w", d, err)
	}
	ign = w.ignores(d, ents, ign)
	type sub struct {
		path string
		prot bool
	}
	var subdirs []sub
	for _, e := range ents {
		p := join(d, e.Name)
		if w.t.cfg.Skip != nil && w.t.cfg.Skip(p) {
			w.skipped = append(w.skipped, p)
			if !inProt && w.t.cfg.Protected != nil && w.t.cfg.Protected(p) {
				w.noteSkipped(p, e.Type)
			}
			continue
		}
		// A protected entry is kept whatever .gitignore says: ignoring a name first must
		// not be a way to create it unseen.
		prot := inProt
		switch {
		case !inProt && w.t.cfg.Protected != nil && w.t.cfg.Protected(p):
			prot = true
			w.note(p, e.Type, true)
		case inProt && e.Type != 0:
			w.note(p, e.Type, false)
		}
		if e.Name == ".git" && e.Type != 0 {
			// A repository's store is not walked (a .git file, a worktree's link, is), but
			// for the parts that make git run code, when it is protected.
			if prot && e.Type.IsDir() {
				w.gitParts(p)
			}
			continue
		}
		switch {
		case e.Type.IsDir():
			if prot || !ign.Ignored(p, true) {
				subdirs = append(subdirs, sub{p, prot})
			}
		case e.Type == 0:
			if !prot && ign.Ignored(p, false) {
				continue
			}
			if w.count >= w.t.cfg.MaxFiles && !prot {
				w.beyond = append(w.beyond, p)
				continue
			}
			w.count++
			w.files = append(w.files, p)
			w.fprot = append(w.fprot, prot)
		case e.Type&fs.ModeSymlink != 0:
			// Not followed, and its target not recorded; but a file that replaces it (sed
			// -i on a link writes a file in its place) is not a file created from nothing.
			if prot || !ign.Ignored(p, false) {
				w.links[p] = true
			}
		}
		// Special files are not recorded.
	}
	for _, s := range subdirs {
		if w.count >= w.t.cfg.MaxFiles && !s.prot {
			w.beyond = append(w.beyond, s.path+"/")
			continue
		}
		if err := w.dir(s.path, ign, s.prot); err != nil {
			return err
		}
	}
	return nil
}

// statWorkers is how many goroutines stat the listed files: a walk of a settled tree is
// almost all lstat calls, and they overlap well across cores.
const statWorkers = 4

// stat lstats the listed files in parallel and fills seen.
func (w *walker) stat() error {
	infos := make([]entry, len(w.files))
	ok := make([]bool, len(w.files))
	var wg sync.WaitGroup
	chunk := (len(w.files) + statWorkers - 1) / statWorkers
	for lo := 0; lo < len(w.files); lo += chunk {
		hi := min(lo+chunk, len(w.files))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				fi, err := w.t.cfg.Env.Lstat(w.ctx, w.files[i])
				if err != nil || !fi.IsRegular() {
					continue // gone, or replaced by something else since the listing
				}
				infos[i] = entry{size: fi.Size, mtime: fi.ModTime.UnixNano(), dev: fi.Dev, ino: fi.Ino, mode: fi.Mode, prot: w.fprot[i], nlink: fi.Nlink}
				ok[i] = true
			}
		}()
	}
	wg.Wait()
	if err := w.ctx.Err(); err != nil {
		return err
	}
	for i, p := range w.files {
		if !ok[i] {
			continue
		}
		if infos[i].size > w.t.cfg.MaxFileSize && (infos[i].prot || !w.t.cfg.ProtectedOnly) {
			w.oversize = append(w.oversize, p)
		}
		if infos[i].nlink > 1 {
			w.linked = append(w.linked, p)
		}
		w.seen[p] = infos[i]
	}
	return nil
}

// ignores extends ign with the .gitignore of d, and with .git/info/exclude where d holds
// a repository.
func (w *walker) ignores(d string, ents []env.DirEntry, ign gitignore.Matcher) gitignore.Matcher {
	var content []byte
	for _, e := range ents {
		switch {
		case e.Name == ".git" && e.Type.IsDir():
			if b, err := w.t.cfg.Env.ReadFile(w.ctx, path.Join(d, ".git", "info", "exclude")); err == nil {
				content = append(append(b, '\n'), content...)
			}
		case e.Name == ".gitignore" && e.Type == 0:
			if b, err := w.t.cfg.Env.ReadFile(w.ctx, join(d, ".gitignore")); err == nil {
				content = append(content, append([]byte{'\n'}, b...)...)
			}
		}
	}
	if content == nil {
		return ign
	}
	return ign.With(d, content)
}

// uncovered reports whether p lies past the file-count cap of this walk.
func (w *walker) uncovered(p string) bool {
	for _, b := range w.beyond {
		if b == p || strings.HasSuffix(b, "/") && strings.HasPrefix(p, b) {
			return true
		}
	}
	return false
}
