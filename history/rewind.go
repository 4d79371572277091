package history

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
)

// RewindOptions tunes Rewind. The zero value restores for real and refuses anything
// short of a full restore.
type RewindOptions struct {
	// DryRun computes the ledger — what would be restored, deleted, left alone or is in
	// conflict, with line counts — and changes nothing. A dry run is never refused.
	DryRun bool
	// AcceptPartialRestore restores what can be restored when some files are in conflict
	// or fail, instead of refusing with CodePartialRestore; the ledger says which.
	AcceptPartialRestore bool
	// SessionID, when set, is the session asking; a scope that is not its own (a
	// delegated child recording into its root's scope) is refused with
	// CodeChildCannotRewind.
	SessionID string
}

// Status is what a rewind did, or would do, to one file.
type Status string

const (
	// StatusRestored: the file got its pre-image's bytes and mode back (or, in a dry
	// run, would).
	StatusRestored Status = "restored"
	// StatusDeleted: the file did not exist at the boundary and was removed.
	StatusDeleted Status = "deleted"
	// StatusUnchanged: the file already matches its pre-image.
	StatusUnchanged Status = "unchanged"
	// StatusConflict: the file cannot be put back without destroying something history
	// does not hold — a directory, a link or a special file is there now, or it cannot be
	// read — so it is left alone.
	StatusConflict Status = "conflict"
	// StatusFailed: restoring was attempted (or the pre-image was unreadable) and failed.
	StatusFailed Status = "failed"
)

// LedgerEntry is one file of a rewind.
type LedgerEntry struct {
	// Path is the file's canonical path, the key its records are stored under.
	Path string `json:"path"`
	// Status is what the rewind did, or would do in a dry run, to the file.
	Status Status `json:"status"`
	// Lines counts the lines of the file as the rewind leaves it (its pre-image; 0 when
	// deleted).
	Lines int `json:"lines"`
	// CurrentLines counts the lines of the file before the rewind (0 when absent).
	CurrentLines int `json:"current_lines"`
	// Reason says why a file is in conflict or failed.
	Reason string `json:"reason,omitempty"`
}

// Ledger is the per-file account of a rewind, sorted by path.
type Ledger struct {
	// Scope is the history scope that was rewound.
	Scope string `json:"scope"`
	// Turn is the turn rewound to (0: the scope's beginning).
	Turn int `json:"turn"`
	// Applied reports whether files were changed: false for a dry run and for a rewind
	// refused before it touched anything.
	Applied bool `json:"applied"`
	// Entries holds one entry per file recorded since the boundary, sorted by Path.
	Entries []LedgerEntry `json:"entries"`
}

// Complete reports whether every file is restored, deleted or unchanged.
func (l Ledger) Complete() bool { return l.Count(StatusConflict)+l.Count(StatusFailed) == 0 }

// Count returns how many entries have status s.
func (l Ledger) Count(s Status) int {
	n := 0
	for _, e := range l.Entries {
		if e.Status == s {
			n++
		}
	}
	return n
}

// Changed returns the paths the rewind restored or deleted (would, in a dry run): the
// files whose read state a runner must forget.
func (l Ledger) Changed() []string {
	var out []string
	for _, e := range l.Entries {
		if e.Status == StatusRestored || e.Status == StatusDeleted {
			out = append(out, e.Path)
		}
	}
	return out
}

// RefuseChildRewind returns CodeChildCannotRewind when the run of sessionID records into
// another session's scope (a delegated child on its root's tree): only the root session
// owns that history, so only it may rewind it. It returns nil for a run's own scope.
func RefuseChildRewind(scope, sessionID string) error {
	if scope == sessionID {
		return nil
	}
	return sema.Errorf(CodeChildCannotRewind,
		"session %q records file history into its parent's scope %q and cannot rewind it; rewind from the root session", sessionID, scope).
		With("scope", scope).With("session_id", sessionID)
}

// rewindWorkers bounds the files checked or restored at once: enough to overlap the
// env's per-file latency (an fsync on the host), few enough not to flood it.
const rewindWorkers = 16

type action int

// absentMode is no mode a file can have: it marks a file that is not there.
const absentMode = ^fs.FileMode(0)

const (
	actNone action = iota
	actWrite
	actChmod
	actRemove
)

type step struct {
	rec   Record
	act   action
	data  []byte
	mode  fs.FileMode // the mode bits the file has now; absentMode when it has none
	entry LedgerEntry
}

// Rewind returns every file touched at or after the boundary of turn (the newest
// boundary minted for that turn; 0 means the scope's beginning) to its pre-image there:
// the earliest record of the file at or after that boundary. An existed pre-image gets
// its bytes and mode back (atomically, through env.WriteFile, creating missing parent
// directories), an existed-not one is removed.
//
// Every file is checked before any is changed. A file is in conflict when what is there
// now cannot be replaced without losing something history does not hold, or not at the
// recorded place: a directory, a symbolic link or a special file where the pre-image is
// a file or is absent, a directory above it that became a symbolic link or a file, or a
// file that cannot be read. History
// records pre-images only (never what a write left), so a regular file whose bytes differ
// from the pre-image is restored whoever changed it last; a dry run shows it first.
//
// Anything short of a full restore is refused with CodePartialRestore — before anything
// is changed when the check found conflicts — unless opts.AcceptPartialRestore; the
// ledger is returned with the refusal too. A dry run returns the ledger and changes
// nothing.
func (f *Files) Rewind(ctx context.Context, scope string, turn int, opts RewindOptions) (Ledger, error) {
	led := Ledger{Scope: scope, Turn: turn}
	if err := checkScope(scope); err != nil {
		return led, err
	}
	if opts.SessionID != "" {
		if err := RefuseChildRewind(scope, opts.SessionID); err != nil {
			return led, err
		}
	}
	from, err := f.boundaryOf(ctx, scope, turn)
	if err != nil {
		return led, err
	}
	recs, err := f.store.Records(ctx, scope, from)
	if err != nil {
		return led, err
	}
	// The earliest record of each file at or after the boundary is its state there.
	var steps []*step
	seen := map[string]bool{}
	for _, r := range recs {
		if !seen[r.Key] {
			seen[r.Key] = true
			steps = append(steps, &step{rec: r, entry: LedgerEntry{Path: r.Key}})
		}
	}
	slices.SortFunc(steps, func(a, b *step) int { return strings.Compare(a.rec.Key, b.rec.Key) })

	ds := &dirs{m: map[string]error{}}
	parallel(len(steps), func(i int) { f.check(ctx, ds, steps[i]) })
	if err := ctx.Err(); err != nil {
		return led, err
	}
	led.Entries = entries(steps)
	if opts.DryRun {
		return led, nil
	}
	if !led.Complete() && !opts.AcceptPartialRestore {
		return led, partial(led)
	}

	led.Applied = true
	parallel(len(steps), func(i int) { f.apply(ctx, steps[i]) })
	led.Entries = entries(steps)
	if !led.Complete() && !opts.AcceptPartialRestore {
		return led, partial(led)
	}
	return led, nil
}

func (f *Files) boundaryOf(ctx context.Context, scope string, turn int) (int64, error) {
	if turn == 0 {
		return 0, nil
	}
	bs, err := f.store.Boundaries(ctx, scope)
	if err != nil {
		return 0, err
	}
	var turns []int
	for _, b := range slices.Backward(bs) {
		if b.Turn == turn {
			return b.ID, nil
		}
		turns = append(turns, b.Turn)
	}
	slices.Sort(turns)
	turns = slices.Compact(turns)
	return 0, sema.Errorf(CodeBoundaryNotFound, "scope %q has no boundary for turn %d; rewind to one of the recorded turns %v", scope, turn, turns).
		With("scope", scope).With("turn", turn).With("turns", turns)
}

// check decides what restoring s.rec means for the file as it is now; it changes nothing.
func (f *Files) check(ctx context.Context, ds *dirs, s *step) {
	if ctx.Err() != nil {
		return
	}
	e, rec := &s.entry, s.rec
	conflict := func(format string, args ...any) {
		e.Status, e.Reason = StatusConflict, fmt.Sprintf(format, args...)
	}
	if err := ds.intact(ctx, f.env, filepath.Dir(rec.Key)); err != nil {
		conflict("%v", err)
		return
	}
	fi, err := f.env.Lstat(ctx, rec.Key)
	var cur []byte
	exists := false
	s.mode = absentMode
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case absent(err): // ENOTDIR: a file now stands where a parent directory was
		if rec.Existed {
			conflict("a parent of the path is no longer a directory")
			return
		}
	case err != nil:
		conflict("cannot inspect the file: %v", err)
		return
	case !fi.IsRegular():
		conflict("a %s is there now", kindOf(fi))
		return
	default:
		if cur, err = f.env.ReadFile(ctx, rec.Key); err != nil {
			conflict("cannot read the file: %v", err)
			return
		}
		exists, s.mode = true, fi.Mode&modeBits
		e.CurrentLines = lineCount(cur)
	}

	if !rec.Existed {
		if exists {
			s.act, e.Status = actRemove, StatusDeleted
		} else {
			e.Status = StatusUnchanged
		}
		return
	}
	if exists && sum(cur) == rec.Sum {
		e.Lines = e.CurrentLines
		if s.mode == rec.Mode {
			e.Status = StatusUnchanged
		} else {
			s.act, e.Status = actChmod, StatusRestored
		}
		return
	}
	data, err := f.store.Blob(ctx, rec.Sum)
	if err != nil {
		e.Status, e.Reason = StatusFailed, fmt.Sprintf("cannot read the recorded pre-image: %v", err)
		return
	}
	s.act, s.data, e.Status, e.Lines = actWrite, data, StatusRestored, lineCount(data)
}

// apply carries out what check decided.
func (f *Files) apply(ctx context.Context, s *step) {
	if s.act == actNone {
		return
	}
	fail := func(err error) { s.entry.Status, s.entry.Reason = StatusFailed, err.Error() }
	if err := ctx.Err(); err != nil {
		fail(fmt.Errorf("not restored: %w", err))
		return
	}
	key, mode := s.rec.Key, s.rec.Mode
	switch s.act {
	case actRemove:
		if err := f.env.Remove(ctx, key); err != nil && !errors.Is(err, fs.ErrNotExist) {
			fail(err)
		}
	case actChmod:
		if err := f.env.Chmod(ctx, key, mode); err != nil {
			fail(err)
		}
	case actWrite:
		err := f.env.WriteFile(ctx, key, s.data, mode.Perm())
		if errors.Is(err, fs.ErrNotExist) {
			// The directory went away after the edit (a Bash rm -r): recreate it.
			if err = mkdirAll(ctx, f.env, filepath.Dir(key)); err == nil {
				err = f.env.WriteFile(ctx, key, s.data, mode.Perm())
			}
		}
		// WriteFile keeps an existing file's mode; the pre-image's mode wins unless the
		// file already had it.
		if err == nil && s.mode != mode {
			err = f.env.Chmod(ctx, key, mode)
		}
		if err != nil {
			fail(err)
		}
	}
}

// dirs remembers, for one rewind, which directories above the keys are intact.
type dirs struct {
	mu sync.Mutex
	m  map[string]error
}

// intact returns an error when dir, or a directory above it, is now a symbolic link or
// not a directory. Keys are canonical — no link on their path when recorded — so a link
// there now would send the restore somewhere else (out of the workspace, even). A
// missing directory is intact: the restore creates it.
func (d *dirs) intact(ctx context.Context, e env.ExecutionEnv, dir string) error {
	parent := filepath.Dir(dir)
	if parent == dir {
		return nil
	}
	d.mu.Lock()
	err, ok := d.m[dir]
	d.mu.Unlock()
	if ok {
		return err
	}
	if err = d.intact(ctx, e, parent); err == nil {
		fi, lerr := e.Lstat(ctx, dir)
		switch {
		case absent(lerr):
		case lerr != nil:
			err = fmt.Errorf("cannot inspect %s: %w", dir, lerr)
		case fi.IsSymlink():
			err = fmt.Errorf("%s is now a symbolic link", dir)
		case !fi.IsDir():
			err = fmt.Errorf("%s is no longer a directory", dir)
		}
	}
	d.mu.Lock()
	d.m[dir] = err
	d.mu.Unlock()
	return err
}

func mkdirAll(ctx context.Context, e env.ExecutionEnv, dir string) error {
	if fi, err := e.Lstat(ctx, dir); err == nil {
		if fi.IsDir() {
			return nil
		}
		return &fs.PathError{Op: "mkdir", Path: dir, Err: fs.ErrExist}
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := mkdirAll(ctx, e, parent); err != nil {
			return err
		}
	}
	if err := e.Mkdir(ctx, dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

func parallel(n int, fn func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(n, rewindWorkers) {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

func entries(steps []*step) []LedgerEntry {
	out := make([]LedgerEntry, len(steps))
	for i, s := range steps {
		out[i] = s.entry
	}
	return out
}

func partial(l Ledger) error {
	var conflicts, failed []string
	for _, e := range l.Entries {
		switch e.Status {
		case StatusConflict:
			conflicts = append(conflicts, e.Path)
		case StatusFailed:
			failed = append(failed, e.Path)
		}
	}
	what := "nothing was changed"
	if l.Applied {
		what = "the other files were restored"
	}
	return sema.Errorf(CodePartialRestore,
		"%d of %d files could not be restored (%d in conflict, %d failed; %s); resolve them and rewind again, or accept a partial restore",
		len(conflicts)+len(failed), len(l.Entries), len(conflicts), len(failed), what).
		With("conflicts", conflicts).With("failed", failed).With("applied", l.Applied)
}

// lineCount counts lines as a person would: a last line without a newline counts.
func lineCount(b []byte) int {
	n := bytes.Count(b, []byte{'\n'})
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}
