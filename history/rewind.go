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
	// Force restores files in conflict too — files whose bytes are no longer what the
	// agent last left there. Their current bytes are saved with everything else the
	// rewind changes, so an undo brings them back.
	Force bool
	// Diff fills LedgerEntry.Diff: a unified diff, from the file as it is now to what the
	// rewind leaves, for every file the rewind changes or that is in conflict.
	Diff bool
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
	// StatusConflict: the file cannot be put back without destroying something the agent
	// did not make — its bytes are not what the agent last left there, or a directory,
	// a link or a special file is there now, or it cannot be read — so it is left alone.
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
	// Added counts the lines the rewind adds to the file as it is now (would, for a file
	// in conflict).
	Added int `json:"added"`
	// Removed counts the lines the rewind removes from the file as it is now.
	Removed int `json:"removed"`
	// Reason says why a file is in conflict or failed, or why a forced one was
	// overwritten.
	Reason string `json:"reason,omitempty"`
	// Forced is set on a file that was in conflict and was restored because of Force.
	Forced bool `json:"forced,omitempty"`
	// Diff is the unified diff from the file as it is now to what the rewind leaves,
	// when RewindOptions.Diff asked for it and the file changes or is in conflict.
	Diff string `json:"diff,omitempty"`
}

// Ledger is the per-file account of a rewind, sorted by path.
type Ledger struct {
	// Scope is the history scope that was rewound.
	Scope string `json:"scope"`
	// Turn is the turn rewound to (0: the scope's beginning, or an undo).
	Turn int `json:"turn"`
	// Undo is set when this was an undo of the scope's most recent rewind.
	Undo bool `json:"undo,omitempty"`
	// Applied reports whether files were changed: false for a dry run and for a rewind
	// refused before it touched anything.
	Applied bool `json:"applied"`
	// Saved is the ID of the rewind boundary under which the files' state before this
	// rewind was saved (the point an undo returns to); 0 when nothing was changed.
	Saved int64 `json:"saved,omitempty"`
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
	rec      Record   // the file's earliest record at or after the boundary: its state there
	chain    []Record // every record of the file in the scope, oldest first
	act      action
	data     []byte      // the bytes the restore writes
	cur      []byte      // the file's bytes now
	curSum   string      // their sha256 (hex); "" when the file is not there
	needBlob bool        // restoring needs the pre-image's bytes (see preImages)
	mode     fs.FileMode // the mode bits the file has now; absentMode when it has none
	saved    Record      // the record the rewind saved the file's state under
	entry    LedgerEntry
}

// Rewind returns every file touched at or after the boundary of turn (the newest turn
// boundary minted for that turn; 0 means the scope's beginning) to its pre-image there:
// the earliest record of the file at or after that boundary. An existed pre-image gets
// its bytes and mode back (atomically, through env.WriteFile, creating missing parent
// directories), an existed-not one is removed.
//
// Every file is checked before any is changed. A file is in conflict when restoring it
// would destroy something the agent did not make: its bytes are not what the agent last
// left there (Record.After, or the Pending of a write whose outcome was never confirmed;
// someone changed it since, or a rewind put back what a forced rewind had taken from
// someone), or what is there now is a directory, a symbolic link or a special file, a
// directory above it became a link or a file, or it cannot be read. A file that is gone
// is not in conflict: putting it back destroys nothing. opts.Force restores a file whose
// bytes are in conflict all the same; the others stay conflicts.
//
// Before it changes anything, a rewind saves the state of every file it will change
// under a new rewind boundary (Store.MintRewind), in one transaction; when that fails
// it changes nothing (CodeSaveFailed). Undo returns to that saved state. A cancelled
// ctx stops a rewind before the save with ctx's error, nothing changed; once the save
// has begun, it completes, and the cancellation stops the restore instead: the files
// not restored yet are StatusFailed, as a rewind stopped halfway (CodePartialRestore),
// whose saved state an undo returns to.
//
// Anything short of a full restore is refused with CodePartialRestore — before anything
// is changed when the check found conflicts — unless opts.AcceptPartialRestore; the
// ledger is returned with the refusal too. A dry run returns the ledger and changes
// nothing.
func (f *Files) Rewind(ctx context.Context, scope string, turn int, opts RewindOptions) (Ledger, error) {
	led := Ledger{Scope: scope, Turn: turn}
	if err := f.refuse(scope, opts); err != nil {
		return led, err
	}
	bs, err := f.store.Boundaries(ctx, scope)
	if err != nil {
		return led, err
	}
	from, err := boundaryOf(bs, scope, turn)
	if err != nil {
		return led, err
	}
	return f.rewind(ctx, led, bs, from, opts)
}

// Undo returns the files of scope to where they were just before its most recent
// rewind (or undo: an undo is a rewind too, so a second Undo redoes): every file
// touched since that rewind began gets the state the rewind saved, or, for one first
// touched after it, its pre-image then. It checks, saves and refuses as Rewind does. A
// scope never rewound is refused with CodeNothingToUndo.
func (f *Files) Undo(ctx context.Context, scope string, opts RewindOptions) (Ledger, error) {
	led := Ledger{Scope: scope, Undo: true}
	if err := f.refuse(scope, opts); err != nil {
		return led, err
	}
	bs, err := f.store.Boundaries(ctx, scope)
	if err != nil {
		return led, err
	}
	for _, b := range slices.Backward(bs) {
		if b.Kind == KindRewind {
			return f.rewind(ctx, led, bs, b.ID, opts)
		}
	}
	return led, sema.Errorf(CodeNothingToUndo, "scope %q has no rewind to undo", scope).With("scope", scope)
}

func (f *Files) refuse(scope string, opts RewindOptions) error {
	if err := CheckScope(scope); err != nil {
		return err
	}
	if opts.SessionID != "" {
		return RefuseChildRewind(scope, opts.SessionID)
	}
	return nil
}

func (f *Files) rewind(ctx context.Context, led Ledger, bs []Boundary, from int64, opts RewindOptions) (Ledger, error) {
	scope := led.Scope
	recs, err := f.store.Records(ctx, scope, 0)
	if err != nil {
		return led, err
	}
	// The earliest record of each file at or after the boundary is its state there; all
	// of its records say who changed it last.
	var steps []*step
	byKey := map[string]*step{}
	chains := map[string][]Record{}
	for _, r := range recs {
		chains[r.Key] = append(chains[r.Key], r)
		if r.Boundary >= from && byKey[r.Key] == nil {
			s := &step{rec: r, entry: LedgerEntry{Path: r.Key}}
			byKey[r.Key] = s
			steps = append(steps, s)
		}
	}
	for _, s := range steps {
		s.chain = chains[s.rec.Key]
	}
	slices.SortFunc(steps, func(a, b *step) int { return strings.Compare(a.rec.Key, b.rec.Key) })
	kinds := map[int64]BoundaryKind{}
	for _, b := range bs {
		kinds[b.ID] = b.Kind
	}

	ds := &dirs{m: map[string]error{}}
	parallel(len(steps), func(i int) { f.check(ctx, ds, steps[i], kinds, opts) })
	if err := ctx.Err(); err != nil {
		return led, err
	}
	f.preImages(ctx, steps, kinds, opts)
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

	// Save what is there now, before anything changes: the undo's way back, and the
	// forced files' bytes. A rewind that cannot save changes nothing.
	var saves []Saved
	var changing []*step
	for _, s := range steps {
		if s.act == actNone {
			continue
		}
		after := s.rec.Sum
		switch {
		case s.act == actRemove:
			after = AfterAbsent
		case !s.leavesOwn(kinds):
			// The bytes put back were someone else's when a forced rewind saved them: they
			// stay theirs, so a rewind over them is a conflict again, as before the force.
			after = ""
		}
		saves = append(saves, Saved{Record: Record{Key: s.rec.Key, Existed: s.mode != absentMode, Mode: s.mode, After: after}, Content: s.cur})
		changing = append(changing, s)
	}
	led.Applied = true
	if len(saves) > 0 {
		// A cancellation from here on is observed by the restore loop, which then
		// changes nothing more. The save itself runs to its end: it is one short
		// transaction, and cut off midway it would be rolled back and reported as a
		// failure of the store, not as the cancellation it was.
		if err := ctx.Err(); err != nil {
			led.Applied = false
			return led, err
		}
		b, saved, err := f.store.MintRewind(context.WithoutCancel(ctx), scope, led.Turn, saves)
		if err != nil {
			led.Applied = false
			return led, sema.Errorf(CodeSaveFailed, "the files' current state could not be saved before the rewind, so nothing was changed: %w", err).With("scope", scope)
		}
		led.Saved = b.ID
		for i, s := range changing {
			s.saved = saved[i]
		}
	}
	f.applyAll(ctx, steps)
	led.Entries = entries(steps)
	if !led.Complete() && !opts.AcceptPartialRestore {
		return led, partial(led)
	}
	return led, nil
}

func boundaryOf(bs []Boundary, scope string, turn int) (int64, error) {
	if turn == 0 {
		return 0, nil
	}
	var turns []int
	for _, b := range slices.Backward(bs) {
		if b.Kind == KindRewind {
			continue // a rewind is no turn's start
		}
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
func (f *Files) check(ctx context.Context, ds *dirs, s *step, kinds map[int64]BoundaryKind, opts RewindOptions) {
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
		if s.cur, err = f.env.ReadFile(ctx, rec.Key); err != nil {
			conflict("cannot read the file: %v", err)
			return
		}
		exists, s.mode, s.curSum = true, fi.Mode&ModeBits, SumOf(s.cur)
		e.CurrentLines = lineCount(s.cur)
	}

	switch {
	case rec.Lost:
		// Nothing here is changed: what the file held at the boundary is not known, and
		// a rewind that cannot restore a file says so rather than call it restored.
		e.Status, e.Reason = StatusFailed, fmt.Sprintf("its contents before turn %d were not kept (over the snapshot's size cap, a symbolic link a command replaced with a file, or lost with a command that was killed), so it cannot be restored", rec.Turn)
		return
	case !rec.Existed && !exists:
		e.Status = StatusUnchanged
		return
	case !rec.Existed:
		s.act, e.Status = actRemove, StatusDeleted
	case exists && s.curSum == rec.Sum:
		e.Lines = e.CurrentLines
		if s.mode == rec.Mode {
			e.Status = StatusUnchanged
		} else {
			// Only the mode differs: no bytes are lost, whoever changed it.
			s.act, e.Status = actChmod, StatusRestored
		}
		return
	default:
		// The pre-image's bytes are needed: preImages reads them for every file at
		// once, then finishes the check (restore).
		s.needBlob = true
		return
	}
	s.finish(kinds, opts)
}

// preImages reads the pre-image of every step whose check needs it — in one read of
// the store when it can (blobsReader), one per file otherwise — and finishes those
// checks.
func (f *Files) preImages(ctx context.Context, steps []*step, kinds map[int64]BoundaryKind, opts RewindOptions) {
	var need []*step
	for _, s := range steps {
		if s.needBlob {
			need = append(need, s)
		}
	}
	if len(need) == 0 {
		return
	}
	br, ok := f.store.(blobsReader)
	if !ok {
		parallel(len(need), func(i int) {
			data, err := f.store.Blob(ctx, need[i].rec.Sum)
			need[i].restore(data, err, kinds, opts)
		})
		return
	}
	sums := make([]string, len(need))
	for i, s := range need {
		sums[i] = s.rec.Sum
	}
	got, err := br.blobsOf(ctx, sums)
	parallel(len(need), func(i int) {
		s := need[i]
		data, ok := got[s.rec.Sum]
		switch {
		case err != nil:
			s.restore(nil, err, kinds, opts)
		case !ok:
			s.restore(nil, BlobMissing(s.rec.Sum), kinds, opts)
		default:
			s.restore(data, nil, kinds, opts)
		}
	})
}

// restore finishes the check of a file to be restored from its pre-image, data (or
// err when the pre-image could not be read).
func (s *step) restore(data []byte, err error, kinds map[int64]BoundaryKind, opts RewindOptions) {
	e := &s.entry
	if err != nil {
		e.Status, e.Reason = StatusFailed, fmt.Sprintf("cannot read the recorded pre-image: %v", err)
		return
	}
	s.act, s.data, e.Status, e.Lines = actWrite, data, StatusRestored, lineCount(data)
	s.finish(kinds, opts)
}

// finish completes the check of a file the rewind changes: line counts, the diff, and
// whether its bytes now are someone else's.
func (s *step) finish(kinds map[int64]BoundaryKind, opts RewindOptions) {
	e, rec := &s.entry, s.rec
	exists := s.mode != absentMode
	e.Added, e.Removed = diffStat(string(s.cur), string(s.data))
	if opts.Diff {
		e.Diff = fileDiff(rec.Key, exists, s.cur, rec.Existed, s.data)
	}
	if !exists {
		return // nothing is there to destroy
	}
	if why := foreign(s.chain, s.curSum, kinds); why != "" {
		if !opts.Force {
			s.act = actNone
			e.Status, e.Reason = StatusConflict, why
			return
		}
		e.Forced, e.Reason = true, why+"; overwritten by force, its bytes saved for undo"
	}
}

// foreign says why bytes whose sha256 is now, in the file whose records are chain
// (oldest first), are not the agent's to overwrite, or "" when they are what the agent
// (or a rewind) last left there. It walks the records from the newest: a record whose
// After — or Pending, a write killed before its outcome was confirmed — matches was the
// last to leave these bytes; a record whose pre-image matches changed nothing that is
// still there (its writes failed or were undone), so the answer lies with the record
// before it; anything else was changed by someone else, or by a write with no confirmed
// outcome, or was put back by a rewind as someone else's (see leavesOwn). Bytes equal to
// the file's state before the agent first touched it are history's own, never foreign.
func foreign(chain []Record, now string, kinds map[int64]BoundaryKind) string {
	for i := len(chain) - 1; i >= 0; i-- {
		r := chain[i]
		if r.After == now || r.Pending == now {
			return ""
		}
		if r.Existed && r.Sum == now {
			continue
		}
		rewound := kinds[r.Boundary] == KindRewind
		by := fmt.Sprintf("its last write at turn %d", r.Turn)
		if rewound {
			by = "the rewind that last restored it"
		}
		switch {
		case rewound && r.After == "":
			return "not the agent's: " + by + " put back bytes that someone else had written (a forced rewind had saved them), or it was changed since"
		case r.After == "":
			return fmt.Sprintf("changed outside the agent: %s has no confirmed outcome, and the file no longer holds what was there before", by)
		}
		return "changed outside the agent since " + by
	}
	return ""
}

// leavesOwn reports whether the bytes the rewind leaves in the file — s.rec's pre-image
// — are the agent's (or history's) once there, so that a later rewind may overwrite them
// without force. A turn's pre-image is: history holds it as that turn's start, and
// moving between turns is what a rewind is for. A rewind record's pre-image is what a
// rewind saved before changing the file, and it is the agent's exactly when it was then
// — when the walk over the records before it finds it so. Thus an undo that brings back
// what a forced rewind overwrote brings back someone else's bytes, in conflict as they
// were before the force, and never makes them the agent's.
func (s *step) leavesOwn(kinds map[int64]BoundaryKind) bool {
	if kinds[s.rec.Boundary] != KindRewind || !s.rec.Existed {
		return true
	}
	i := slices.IndexFunc(s.chain, func(r Record) bool { return r.ID == s.rec.ID })
	return i >= 0 && foreign(s.chain[:i], s.rec.Sum, kinds) == ""
}

// fileDiff is the unified diff from the file now to what the rewind leaves; a side that
// is absent is /dev/null, and binary content is named, not printed.
func fileDiff(key string, curExists bool, cur []byte, wantExists bool, want []byte) string {
	from, to := key+"\t(now)", key+"\t(restored)"
	if !curExists {
		from = "/dev/null"
	}
	if !wantExists {
		to = "/dev/null"
	}
	if bytes.IndexByte(cur, 0) >= 0 || bytes.IndexByte(want, 0) >= 0 {
		if bytes.Equal(cur, want) {
			return ""
		}
		return fmt.Sprintf("Binary files %s and %s differ\n", from, to)
	}
	return unifiedDiff(from, to, string(cur), string(want))
}

// apply carries out what check decided.
func (f *Files) apply(ctx context.Context, s *step) {
	if s.act == actNone {
		return
	}
	fail := func(err error) {
		s.entry.Status, s.entry.Reason = StatusFailed, err.Error()
	}
	if err := ctx.Err(); err != nil {
		fail(fmt.Errorf("not restored: %w", err))
		return
	}
	if !f.asChecked(ctx, s) {
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
		f.wrote(ctx, s, err)
	}
}

// asChecked reports whether s's file is still as the check found it — there or not, its
// bytes and mode — just before it is changed. Between the check and the change the
// rewind saves every file's state, a transaction that can wait seconds behind another
// process's; a file a person saved meanwhile is not the agent's to overwrite, and its
// bytes were never saved for an undo. Such a file is left as it is, a conflict.
func (f *Files) asChecked(ctx context.Context, s *step) bool {
	mode, sum := absentMode, ""
	fi, err := f.env.Lstat(ctx, s.rec.Key)
	switch {
	case err == nil && fi.IsRegular():
		data, rerr := f.env.ReadFile(ctx, s.rec.Key)
		if rerr != nil {
			err = rerr
			break
		}
		mode, sum = fi.Mode&ModeBits, SumOf(data)
	case err == nil:
		mode = fs.ModeIrregular // a directory, a link: not what the check found
	case errors.Is(err, fs.ErrNotExist) || absent(err):
		err = nil
	}
	if err == nil && mode == s.mode && sum == s.curSum {
		return true
	}
	s.act = actNone
	s.entry.Status, s.entry.Reason = StatusConflict, "it changed while the rewind ran, after the rewind had checked it; it is left as it is"
	return false
}

// applyAll carries out what check decided for every step. When the env can write a
// batch (env.BatchWriter) the restores go to it as one: a durable atomic write pays
// for its syncs per call, and a batch pays for them once. Removals and mode changes, and
// every step of an env that cannot batch, go through apply, rewindWorkers at a time.
func (f *Files) applyAll(ctx context.Context, steps []*step) {
	bw, ok := f.env.(env.BatchWriter)
	if !ok {
		parallel(len(steps), func(i int) { f.apply(ctx, steps[i]) })
		return
	}
	var writes, others []*step
	for _, s := range steps {
		switch s.act {
		case actWrite:
			writes = append(writes, s)
		case actRemove, actChmod:
			others = append(others, s)
		}
	}
	parallel(len(others), func(i int) { f.apply(ctx, others[i]) })
	if len(writes) == 0 {
		return
	}
	if err := ctx.Err(); err != nil {
		for _, s := range writes {
			s.entry.Status, s.entry.Reason = StatusFailed, fmt.Errorf("not restored: %w", err).Error()
		}
		return
	}
	writes = slices.DeleteFunc(writes, func(s *step) bool { return !f.asChecked(ctx, s) })
	if len(writes) == 0 {
		return
	}
	errs := writeBatch(ctx, bw, writes)
	// A directory that went away after the edit (a Bash rm -r) is recreated, and its
	// files written in a second batch.
	var again []*step
	var againAt []int
	made := map[string]error{}
	for i, err := range errs {
		if !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		dir := filepath.Dir(writes[i].rec.Key)
		merr, ok := made[dir]
		if !ok {
			merr = mkdirAll(ctx, f.env, dir)
			made[dir] = merr
		}
		if merr != nil {
			errs[i] = merr
			continue
		}
		again, againAt = append(again, writes[i]), append(againAt, i)
	}
	if len(again) > 0 {
		for j, err := range writeBatch(ctx, bw, again) {
			errs[againAt[j]] = err
		}
	}
	parallel(len(writes), func(i int) {
		err := errs[i]
		if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			// The batch stopped before it replaced this file: nothing to repair.
			writes[i].entry.Status, writes[i].entry.Reason = StatusFailed, fmt.Errorf("not restored: %w", err).Error()
			return
		}
		f.wrote(ctx, writes[i], err)
	})
}

// writeBatch writes the pre-images of steps in one batch and returns one error per
// step.
func writeBatch(ctx context.Context, bw env.BatchWriter, steps []*step) []error {
	batch := make([]env.FileWrite, len(steps))
	for i, s := range steps {
		batch[i] = env.FileWrite{Path: s.rec.Key, Data: s.data, Perm: s.rec.Mode.Perm()}
	}
	errs := bw.WriteFiles(ctx, batch)
	if errs == nil {
		errs = make([]error, len(steps))
	}
	return errs
}

// wrote finishes a restore write that returned err: a failed one is repaired, a
// successful one gets the pre-image's mode.
func (f *Files) wrote(ctx context.Context, s *step, err error) {
	fail := func(err error) {
		s.entry.Status, s.entry.Reason = StatusFailed, err.Error()
	}
	if err != nil {
		fail(f.repair(ctx, s, err))
		return
	}
	// WriteFile keeps an existing file's mode; the pre-image's mode wins unless the
	// file already had it.
	if mode := s.rec.Mode; s.mode != mode {
		if err := f.env.Chmod(ctx, s.rec.Key, mode); err != nil {
			fail(err)
		}
	}
}

// repair handles a restore write that failed. The env's WriteFile is atomic, but one
// that is not (or a fault) may leave the file holding neither its old bytes nor the
// restored ones: then the old bytes, which the rewind holds, are written back, so no
// file is left half-written when it can be helped. It returns the error to report.
func (f *Files) repair(ctx context.Context, s *step, err error) error {
	if s.mode == absentMode {
		// Nothing was there: a partly written new file is removed.
		if _, lerr := f.env.Lstat(context.WithoutCancel(ctx), s.rec.Key); lerr == nil {
			if rerr := f.env.Remove(context.WithoutCancel(ctx), s.rec.Key); rerr != nil {
				return fmt.Errorf("%w; a partly written file may be left (removing it failed: %v)", err, rerr)
			}
		}
		return err
	}
	now, rerr := f.env.ReadFile(context.WithoutCancel(ctx), s.rec.Key)
	if rerr == nil && (bytes.Equal(now, s.cur) || bytes.Equal(now, s.data)) {
		return err
	}
	if werr := f.env.WriteFile(context.WithoutCancel(ctx), s.rec.Key, s.cur, s.mode.Perm()); werr != nil {
		return fmt.Errorf("%w; the file may be partly written, and putting its previous bytes back failed too (%v): undo the rewind to restore them", err, werr)
	}
	return fmt.Errorf("%w; its previous bytes were put back", err)
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
	switch {
	case l.Applied && len(l.Changed()) > 0:
		what = "the other files were restored"
	case l.Applied:
		what = "no file was changed"
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
