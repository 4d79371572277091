package history_test

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/env/envtest"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/session/sqlitedb"
)

// agentWrite is what the write lane does: record the first touch, write, and record
// what the write left.
func agentWrite(t *testing.T, f *history.Files, e env.ExecutionEnv, scope, path, content string, perm fs.FileMode) {
	t.Helper()
	rec := track(t, f, scope, path)
	mkdirAll(t, e, filepath.Dir(path))
	write(t, e, path, content, perm)
	check(t, f.Wrote(t.Context(), rec, []byte(content)))
}

func entryOf(t *testing.T, l history.Ledger, path string) history.LedgerEntry {
	t.Helper()
	for _, e := range l.Entries {
		if e.Path == path {
			return e
		}
	}
	t.Fatalf("the ledger has no entry for %s: %+v", path, l.Entries)
	return history.LedgerEntry{}
}

// A person's edit after the agent's is a conflict: a rewind refuses to overwrite it and
// shows it as a diff; a forced rewind overwrites it after saving it, and an undo brings
// the person's bytes, a file the rewind deleted, and a mode back, byte for byte.
func TestRewindConflictForceUndo(t *testing.T) {
	forEachStore(t, func(t *testing.T, _ storeCase, s history.Store) {
		ctx := t.Context()
		e, root := workspace(t)
		f := history.NewFiles(s, e)
		fp, made, script := filepath.Join(root, "f.txt"), filepath.Join(root, "src/made.go"), filepath.Join(root, "run.sh")
		write(t, e, fp, "one\ntwo\n", 0o644)
		write(t, e, script, "#!/bin/sh\n", 0o755)
		start := snapshot(t, e, root)

		must(s.MintBoundary(ctx, "S", 1))(t)
		agentWrite(t, f, e, "S", fp, "one\nTWO\n", 0o644)
		agentWrite(t, f, e, "S", made, "package made\n", 0o644)
		agentWrite(t, f, e, "S", script, "#!/bin/sh\necho hi\n", 0o755)
		// The person appends a line, and changes a mode (not a conflict: no bytes lost).
		write(t, e, fp, "one\nTWO\nthe person's line\n", 0o644)
		check(t, e.Chmod(ctx, script, 0o700))
		before := snapshot(t, e, root)

		dry, err := f.Rewind(ctx, "S", 1, history.RewindOptions{DryRun: true, Diff: true})
		check(t, err)
		fe := entryOf(t, dry, fp)
		if fe.Status != history.StatusConflict || !strings.Contains(fe.Reason, "changed outside the agent since its last write at turn 1") {
			t.Fatalf("f.txt in the dry run: %+v", fe)
		}
		for _, want := range []string{"-the person's line\n", "-TWO\n", "+two\n", "--- " + fp} {
			if !strings.Contains(fe.Diff, want) {
				t.Fatalf("the conflict's diff lacks %q:\n%s", want, fe.Diff)
			}
		}
		if fe.Added != 1 || fe.Removed != 2 {
			t.Fatalf("f.txt counts +%d -%d, want +1 -2", fe.Added, fe.Removed)
		}
		if me := entryOf(t, dry, made); me.Status != history.StatusDeleted || !strings.Contains(me.Diff, "+++ /dev/null") {
			t.Fatalf("made.go in the dry run: %+v", me)
		}

		led, err := f.Rewind(ctx, "S", 1, history.RewindOptions{})
		wantCode(t, err, history.CodePartialRestore)
		if led.Applied || led.Saved != 0 {
			t.Fatalf("a refused rewind says it applied: %+v", led)
		}
		if d := cmp.Diff(before, snapshot(t, e, root)); d != "" {
			t.Fatalf("a refused rewind changed the tree:\n%s", d)
		}
		_, err = f.Undo(ctx, "S", history.RewindOptions{})
		wantCode(t, err, history.CodeNothingToUndo)

		led, err = f.Rewind(ctx, "S", 1, history.RewindOptions{Force: true})
		check(t, err)
		if fe := entryOf(t, led, fp); fe.Status != history.StatusRestored || !fe.Forced {
			t.Fatalf("f.txt in the forced rewind: %+v", fe)
		}
		if d := cmp.Diff(start, snapshot(t, e, root)); d != "" {
			t.Fatalf("the tree after the forced rewind (-start +got):\n%s", d)
		}
		if led.Saved == 0 {
			t.Fatal("the rewind saved nothing")
		}

		// The rewind left these bytes: rewinding again is no conflict and no change.
		again, err := f.Rewind(ctx, "S", 1, history.RewindOptions{})
		check(t, err)
		if n := again.Count(history.StatusUnchanged); n != len(again.Entries) {
			t.Fatalf("a second rewind: %+v", again.Entries)
		}

		undo, err := f.Undo(ctx, "S", history.RewindOptions{})
		check(t, err)
		if !undo.Undo || !undo.Complete() {
			t.Fatalf("undo ledger %+v", undo)
		}
		if d := cmp.Diff(before, snapshot(t, e, root)); d != "" {
			t.Fatalf("the tree after undo (-before the rewind +got):\n%s", d)
		}
		// An undo is a rewind too: undoing it again redoes the rewind. The undo put the
		// person's bytes back as the person's, so the redo, like the rewind it repeats,
		// is a conflict there until forced.
		led, err = f.Undo(ctx, "S", history.RewindOptions{})
		wantCode(t, err, history.CodePartialRestore)
		if fe := entryOf(t, led, fp); fe.Status != history.StatusConflict || led.Applied {
			t.Fatalf("f.txt in the redo without force: %+v (applied %v)", fe, led.Applied)
		}
		if d := cmp.Diff(before, snapshot(t, e, root)); d != "" {
			t.Fatalf("a refused redo changed the tree:\n%s", d)
		}
		must(f.Undo(ctx, "S", history.RewindOptions{Force: true}))(t)
		if d := cmp.Diff(start, snapshot(t, e, root)); d != "" {
			t.Fatalf("the tree after undoing the undo (-start +got):\n%s", d)
		}
	})
}

// A write whose outcome is unknown (no Wrote) leaves the file unknown: other bytes there
// are a conflict; the pre-image still there is nothing to do.
func TestRewindUnconfirmedWrite(t *testing.T) {
	forEachStore(t, func(t *testing.T, _ storeCase, s history.Store) {
		ctx := t.Context()
		e, root := workspace(t)
		f := history.NewFiles(s, e)
		a, b := filepath.Join(root, "a.txt"), filepath.Join(root, "b.txt")
		write(t, e, a, "a0\n", 0o644)
		write(t, e, b, "b0\n", 0o644)
		must(s.MintBoundary(ctx, "S", 1))(t)
		track(t, f, "S", a)
		write(t, e, a, "a partly", 0o644) // the write failed ambiguously, and did land
		track(t, f, "S", b)               // this one failed and left nothing
		led, err := f.Rewind(ctx, "S", 1, history.RewindOptions{DryRun: true})
		check(t, err)
		if ae := entryOf(t, led, a); ae.Status != history.StatusConflict || !strings.Contains(ae.Reason, "no confirmed outcome") {
			t.Fatalf("a.txt: %+v", ae)
		}
		if be := entryOf(t, led, b); be.Status != history.StatusUnchanged {
			t.Fatalf("b.txt: %+v", be)
		}
		// A later write that succeeded makes the file the agent's again.
		must(s.MintBoundary(ctx, "S", 2))(t)
		agentWrite(t, f, e, "S", a, "a2\n", 0o644)
		_, err = f.Rewind(ctx, "S", 1, history.RewindOptions{})
		check(t, err)
		if got := string(must(e.ReadFile(ctx, a))(t)); got != "a0\n" {
			t.Fatalf("a.txt after the rewind = %q", got)
		}
	})
}

// A rewind stopped halfway — a write that fails after leaving part of its bytes, or a
// cancellation while a write hangs — leaves every file whole (its bytes from before the
// rewind, or the restored ones), and a second rewind, or an undo, then completes.
func TestRewindStoppedHalfway(t *testing.T) {
	for _, fault := range []string{"partial write", "cancelled"} {
		for _, then := range []string{"rewind again", "undo"} {
			t.Run(fault+"/"+then, func(t *testing.T) {
				forEachStore(t, func(t *testing.T, _ storeCase, s history.Store) {
					ctx := t.Context()
					mem, root := workspace(t)
					e := envtest.NewFaulty(mem)
					f := history.NewFiles(s, e)
					paths := []string{"a.txt", "b.txt", "c.txt", "src/d.txt"}
					for _, p := range paths {
						write(t, e, filepath.Join(root, p), p+" v0\n", 0o644)
					}
					start := snapshot(t, e, root)
					must(s.MintBoundary(ctx, "S", 1))(t)
					for _, p := range paths {
						agentWrite(t, f, e, "S", filepath.Join(root, p), p+" v1\nmore\n", 0o644)
					}
					agentWrite(t, f, e, "S", filepath.Join(root, "new.txt"), "new\n", 0o644)
					before := snapshot(t, e, root)

					b := filepath.Join(root, "b.txt")
					rctx, rf := ctx, f
					switch fault {
					case "partial write":
						e.Inject(envtest.Fault{Op: envtest.OpWriteFile, Path: b, Err: syscall.ENOSPC, Partial: true, PartialBytes: 3, Times: 1})
					case "cancelled":
						// The write of b hangs, and the rewind is cancelled 50ms after that
						// write began: a deadline counted from the call would, on a slow
						// machine, end the rewind before it reached any write.
						var cancel context.CancelFunc
						rctx, cancel = context.WithCancel(ctx)
						defer cancel()
						e.Inject(envtest.Fault{Op: envtest.OpWriteFile, Path: b, Hold: make(chan struct{}), Times: 1})
						rf = history.NewFiles(s, onWrite{ExecutionEnv: e, path: b, fn: func() { time.AfterFunc(50*time.Millisecond, cancel) }})
					}
					led, err := rf.Rewind(rctx, "S", 1, history.RewindOptions{})
					wantCode(t, err, history.CodePartialRestore)
					if !led.Applied || entryOf(t, led, b).Status != history.StatusFailed {
						t.Fatalf("the stopped rewind's ledger: %+v", led)
					}
					after := snapshot(t, e, root)
					for p := range before {
						got, was := after[p]
						wantOld, wantNew := before[p], start[p]
						_, existed := start[p]
						if !(got == wantOld && was) && !(got == wantNew && was == existed) {
							t.Fatalf("%s after the stopped rewind is %+v (present %v): neither its bytes before (%+v) nor the restored ones (%+v)", p, got, was, wantOld, wantNew)
						}
					}
					e.Reset()

					switch then {
					case "rewind again":
						led, err = f.Rewind(ctx, "S", 1, history.RewindOptions{})
						check(t, err)
						if d := cmp.Diff(start, snapshot(t, e, root)); d != "" {
							t.Fatalf("the tree after the second rewind (-start +got):\n%s", d)
						}
					case "undo":
						led, err = f.Undo(ctx, "S", history.RewindOptions{})
						check(t, err)
						if d := cmp.Diff(before, snapshot(t, e, root)); d != "" {
							t.Fatalf("the tree after the undo (-before +got):\n%s", d)
						}
					}
				})
			})
		}
	}
}

// onWrite calls fn as a write of path begins.
type onWrite struct {
	env.ExecutionEnv
	path string
	fn   func()
}

func (o onWrite) WriteFile(ctx context.Context, path string, data []byte, perm fs.FileMode) error {
	if path == o.path {
		o.fn()
	}
	return o.ExecutionEnv.WriteFile(ctx, path, data, perm)
}

// cancelOnSave cancels the rewind's context as the rewind begins to save the files'
// state.
type cancelOnSave struct {
	history.Store
	cancel context.CancelFunc
}

func (c cancelOnSave) MintRewind(ctx context.Context, scope string, turn int, saved []history.Saved) (history.Boundary, []history.Record, error) {
	c.cancel()
	return c.Store.MintRewind(ctx, scope, turn, saved)
}

// A cancellation that arrives while a rewind saves the files' state does not cut the
// save off: the save completes, the rewind then stops before it changes a file, and
// says so (CodePartialRestore, every file it would change failed); an undo of it, or a
// second rewind, then works. One that arrives before the save changes nothing.
func TestRewindCancelledDuringSave(t *testing.T) {
	forEachStore(t, func(t *testing.T, _ storeCase, s history.Store) {
		ctx := t.Context()
		e, root := workspace(t)
		f := history.NewFiles(s, e)
		paths := []string{"a.txt", "b.txt", "src/c.txt"}
		for _, p := range paths {
			write(t, e, filepath.Join(root, p), p+" v0\n", 0o644)
		}
		start := snapshot(t, e, root)
		must(s.MintBoundary(ctx, "S", 1))(t)
		for _, p := range paths {
			agentWrite(t, f, e, "S", filepath.Join(root, p), p+" v1\n", 0o644)
		}
		agentWrite(t, f, e, "S", filepath.Join(root, "new.txt"), "new\n", 0o644)
		before := snapshot(t, e, root)

		cctx, cancel := context.WithCancel(ctx)
		cancel()
		led, err := f.Rewind(cctx, "S", 1, history.RewindOptions{})
		if !errors.Is(err, context.Canceled) || led.Applied || led.Saved != 0 {
			t.Fatalf("a rewind cancelled before it began: %v, %+v", err, led)
		}

		cctx, cancel = context.WithCancel(ctx)
		defer cancel()
		led, err = history.NewFiles(cancelOnSave{Store: s, cancel: cancel}, e).Rewind(cctx, "S", 1, history.RewindOptions{})
		wantCode(t, err, history.CodePartialRestore)
		if !led.Applied || led.Saved == 0 {
			t.Fatalf("a rewind cancelled during its save did not save: %+v", led)
		}
		if n := led.Count(history.StatusFailed); n != len(led.Entries) {
			t.Fatalf("a rewind cancelled during its save: %d of %d files failed: %+v", n, len(led.Entries), led.Entries)
		}
		if !strings.Contains(err.Error(), "no file was changed") {
			t.Fatalf("the refusal of a rewind that changed nothing: %v", err)
		}
		if d := cmp.Diff(before, snapshot(t, e, root)); d != "" {
			t.Fatalf("a rewind cancelled during its save changed the tree:\n%s", d)
		}
		bs := must(s.Boundaries(ctx, "S"))(t)
		if last := bs[len(bs)-1]; last.ID != led.Saved || last.Kind != history.KindRewind {
			t.Fatalf("the saved rewind boundary %d is not the newest: %+v", led.Saved, bs)
		}

		must(f.Undo(ctx, "S", history.RewindOptions{}))(t)
		if d := cmp.Diff(before, snapshot(t, e, root)); d != "" {
			t.Fatalf("the tree after undoing the cancelled rewind (-before +got):\n%s", d)
		}
		must(f.Rewind(ctx, "S", 1, history.RewindOptions{}))(t)
		if d := cmp.Diff(start, snapshot(t, e, root)); d != "" {
			t.Fatalf("the tree after the second rewind (-start +got):\n%s", d)
		}
	})
}

// A rewind that cannot save the files' state first changes nothing.
func TestRewindSaveFailsChangesNothing(t *testing.T) {
	ctx := t.Context()
	e, root := workspace(t)
	s := &failingRewindStore{Memory: history.NewMemory()}
	f := history.NewFiles(s, e)
	a := filepath.Join(root, "a.txt")
	write(t, e, a, "a0\n", 0o644)
	must(s.MintBoundary(ctx, "S", 1))(t)
	agentWrite(t, f, e, "S", a, "a1\n", 0o644)
	led, err := f.Rewind(ctx, "S", 1, history.RewindOptions{})
	wantCode(t, err, history.CodeSaveFailed)
	if led.Applied {
		t.Fatal("a rewind that saved nothing says it applied")
	}
	if got := string(must(e.ReadFile(ctx, a))(t)); got != "a1\n" {
		t.Fatalf("a.txt = %q after a rewind that could not save", got)
	}
}

type failingRewindStore struct{ *history.Memory }

func (failingRewindStore) MintRewind(context.Context, string, int, []history.Saved) (history.Boundary, []history.Record, error) {
	return history.Boundary{}, nil, syscall.EIO
}

// A history file of schema 1 migrates forward: its boundaries are turns, its records
// have no after-image (so a rewind over them asks for force), and new ones work.
func TestSQLiteMigratesFromSchema1(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sqlitedb.Open(path, sqlitedb.Options{})
	check(t, err)
	check(t, sqlitedb.Migrate(ctx, db, "history", history.SchemaSteps[:1]))
	_, err = db.Exec(`INSERT INTO history_boundaries (scope, turn, created_at) VALUES ('S', 1, 1)`)
	check(t, err)
	_, err = db.Exec(`INSERT INTO history_blobs (sum, size, data) VALUES (?, 3, ?)`, sha("a0\n"), []byte("a0\n"))
	check(t, err)
	_, err = db.Exec(`INSERT INTO history_records (scope, boundary, turn, key, existed, sum, mode, size, created_at)
		VALUES ('S', 1, 1, '/w/a.txt', 1, ?, 420, 3, 2)`, sha("a0\n"))
	check(t, err)
	check(t, sqlitedb.Close(db))

	s, err := history.OpenSQLite(path)
	check(t, err)
	defer s.Close()
	bs := must(s.Boundaries(ctx, "S"))(t)
	if len(bs) != 1 || bs[0].Kind != history.KindTurn {
		t.Fatalf("migrated boundaries %+v", bs)
	}
	recs := must(s.Records(ctx, "S", 0))(t)
	if len(recs) != 1 || recs[0].After != "" || recs[0].Sum != sha("a0\n") {
		t.Fatalf("migrated records %+v", recs)
	}
	e, _ := workspace(t)
	write(t, e, "/w/a.txt", "a1\n", 0o644)
	led, err := history.NewFiles(s, e).Rewind(ctx, "S", 1, history.RewindOptions{})
	wantCode(t, err, history.CodePartialRestore)
	if led.Entries[0].Status != history.StatusConflict {
		t.Fatalf("a record without an after-image: %+v", led.Entries)
	}
	check(t, s.SetAfter(ctx, recs[0].ID, sha("a1\n")))
	must(history.NewFiles(s, e).Rewind(ctx, "S", 1, history.RewindOptions{}))(t)
	if got := string(must(e.ReadFile(ctx, "/w/a.txt"))(t)); got != "a0\n" {
		t.Fatalf("a.txt = %q", got)
	}
	var v int
	check(t, sqlOpen(t, path).QueryRow(`SELECT version FROM schema_version WHERE component = 'history'`).Scan(&v))
	if v != len(history.SchemaSteps) {
		t.Fatalf("schema version %d, want %d", v, len(history.SchemaSteps))
	}
}

func sqlOpen(t *testing.T, path string) *sql.DB {
	db, err := sqlitedb.Open(path, sqlitedb.Options{})
	check(t, err)
	t.Cleanup(func() { sqlitedb.Close(db) })
	return db
}

// saveMeanwhile is a store whose rewind save, before it stores, lets a person save a
// file: the moment between a rewind's check and its change, which the save can stretch
// to seconds behind another process's transaction.
type saveMeanwhile struct {
	history.Store
	meanwhile func()
}

func (s saveMeanwhile) MintRewind(ctx context.Context, scope string, turn int, saves []history.Saved) (history.Boundary, []history.Record, error) {
	s.meanwhile()
	return s.Store.MintRewind(ctx, scope, turn, saves)
}

// A person's save that lands while a rewind runs, after the rewind checked the file, is
// not overwritten: the file is left as the person saved it, a conflict, and the rewind's
// other files are restored. Calibrated: when the rewind wrote what its check decided,
// the person's bytes were replaced, and an undo could not bring them back (they were
// never saved).
func TestRewindLeavesAFileSavedWhileItRan(t *testing.T) {
	forEachStore(t, func(t *testing.T, _ storeCase, s history.Store) {
		ctx := t.Context()
		e, root := workspace(t)
		a, b := filepath.Join(root, "a.txt"), filepath.Join(root, "b.txt")
		write(t, e, a, "v1\n", 0o644)
		write(t, e, b, "v1\n", 0o644)
		f := history.NewFiles(s, e)
		must(s.MintBoundary(ctx, "S", 1))(t)
		agentWrite(t, f, e, "S", a, "agent\n", 0o644)
		agentWrite(t, f, e, "S", b, "agent\n", 0o644)

		f = history.NewFiles(saveMeanwhile{Store: s, meanwhile: func() { write(t, e, a, "PERSON'S WORK\n", 0o644) }}, e)
		led, err := f.Rewind(ctx, "S", 1, history.RewindOptions{AcceptPartialRestore: true})
		check(t, err)
		if got := read(t, e, a); got != "PERSON'S WORK\n" {
			t.Errorf("a.txt is %q after the rewind; the person's save was overwritten", got)
		}
		if ae := entryOf(t, led, a); ae.Status != history.StatusConflict || !strings.Contains(ae.Reason, "changed while the rewind ran") {
			t.Errorf("a.txt in the ledger: %+v", ae)
		}
		if got := read(t, e, b); got != "v1\n" {
			t.Errorf("b.txt is %q, want its restore to v1", got)
		}
	})
}

// read is the file's content, "" when it cannot be read.
func read(t *testing.T, e env.ExecutionEnv, path string) string {
	t.Helper()
	data, _ := e.ReadFile(t.Context(), path)
	return string(data)
}
