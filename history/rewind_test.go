package history_test

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/env/envtest"
	"github.com/sema-agent/sema/history"
)

// fileState is a file as a snapshot sees it.
type fileState struct {
	Content string
	Mode    fs.FileMode
}

// snapshot reads every regular file under root through the env.
func snapshot(t *testing.T, e env.ExecutionEnv, root string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	var walk func(dir string)
	walk = func(dir string) {
		ents, err := e.ReadDir(t.Context(), dir)
		check(t, err)
		for _, de := range ents {
			p := filepath.Join(dir, de.Name)
			switch {
			case de.Type.IsDir():
				walk(p)
			case de.Type.IsRegular():
				fi, err := e.Lstat(t.Context(), p)
				check(t, err)
				data, err := e.ReadFile(t.Context(), p)
				check(t, err)
				rel, _ := filepath.Rel(root, p)
				out[rel] = fileState{string(data), fi.Mode.Perm()}
			}
		}
	}
	walk(root)
	return out
}

// op is one change a turn makes to a file, recorded first as the write lane does.
type op struct {
	path    string // relative to the root
	content string // the new content; "" with remove
	mode    fs.FileMode
	remove  bool
}

// scenario is three turns over a small tree: files modified in every turn, created in
// turns 1 and 2 (one in new directories), deleted in turns 2 and 3, one recreated, one
// whose mode changes, and one never touched.
var (
	initial = []op{
		{path: "a.txt", content: "a0\nsecond line\n", mode: 0o644},
		{path: "c.txt", content: "c0\n", mode: 0o644},
		{path: "run.sh", content: "#!/bin/sh\nrun0\n", mode: 0o755},
		{path: "keep.txt", content: "never touched\n", mode: 0o600},
		{path: "empty.txt", content: "", mode: 0o644},
	}
	turns = [][]op{
		1: {
			{path: "a.txt", content: "a1\n", mode: 0o644},
			{path: "src/new1.go", content: "package n1\n", mode: 0o644},
			{path: "empty.txt", content: "filled\n", mode: 0o644},
		},
		2: {
			{path: "a.txt", content: "a2\n", mode: 0o644},
			{path: "c.txt", remove: true},
			{path: "run.sh", content: "#!/bin/sh\nrun2\n", mode: 0o600},
			{path: "gen/deep/b.txt", content: "b2\n", mode: 0o640},
		},
		3: {
			{path: "a.txt", content: "a3\n", mode: 0o644},
			{path: "src/new1.go", content: "package n3\n", mode: 0o644},
			{path: "c.txt", content: "c3 recreated\n", mode: 0o644},
			{path: "run.sh", remove: true},
			{path: "gen/deep/b.txt", content: "b3\nb3\nb3\n", mode: 0o640},
			{path: "a.txt", content: "a3 again\n", mode: 0o644}, // a second edit in one turn
		},
	}
)

func mkdirAll(t *testing.T, e env.ExecutionEnv, dir string) {
	t.Helper()
	if fi, err := e.Lstat(t.Context(), dir); err == nil && fi.IsDir() {
		return
	}
	mkdirAll(t, e, filepath.Dir(dir))
	if err := e.Mkdir(t.Context(), dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		t.Fatal(err)
	}
}

func apply(t *testing.T, f *history.Files, e env.ExecutionEnv, scope, root string, o op) {
	t.Helper()
	p := filepath.Join(root, o.path)
	var rec history.Record
	if f != nil {
		var err error
		if rec, _, err = f.Track(t.Context(), scope, p); err != nil {
			t.Fatal(err)
		}
	}
	if o.remove {
		check(t, e.Remove(t.Context(), p))
		return
	}
	mkdirAll(t, e, filepath.Dir(p))
	write(t, e, p, o.content, o.mode)
	if f != nil {
		// As the write lane does after a write that succeeded.
		check(t, f.Wrote(t.Context(), rec, []byte(o.content)))
	}
}

// runScenario plays the scenario into scope and returns the tree's snapshot at the start
// of each turn (index 1..3) and at the end (index 4).
func runScenario(t *testing.T, s history.Store, e env.ExecutionEnv, scope, root string) []map[string]fileState {
	t.Helper()
	f := history.NewFiles(s, e)
	for _, o := range initial {
		apply(t, nil, e, scope, root, o)
	}
	snaps := make([]map[string]fileState, 5)
	for turn := 1; turn <= 3; turn++ {
		snaps[turn] = snapshot(t, e, root)
		must(s.MintBoundary(t.Context(), scope, turn))(t)
		for _, o := range turns[turn] {
			apply(t, f, e, scope, root, o)
		}
	}
	snaps[4] = snapshot(t, e, root)
	return snaps
}

func statuses(l history.Ledger) map[string]history.Status {
	out := map[string]history.Status{}
	for _, e := range l.Entries {
		out[e.Path] = e.Status
	}
	return out
}

func TestRewindThreeBoundaries(t *testing.T) {
	for _, tc := range []struct {
		turn int
		want map[string]history.Status // by path relative to the root
	}{
		{1, map[string]history.Status{"a.txt": history.StatusRestored, "c.txt": history.StatusRestored,
			"run.sh": history.StatusRestored, "src/new1.go": history.StatusDeleted, "gen/deep/b.txt": history.StatusDeleted,
			"empty.txt": history.StatusRestored}},
		{2, map[string]history.Status{"a.txt": history.StatusRestored, "c.txt": history.StatusRestored,
			"run.sh": history.StatusRestored, "src/new1.go": history.StatusRestored, "gen/deep/b.txt": history.StatusDeleted}},
		{3, map[string]history.Status{"a.txt": history.StatusRestored, "c.txt": history.StatusDeleted,
			"run.sh": history.StatusRestored, "src/new1.go": history.StatusRestored, "gen/deep/b.txt": history.StatusRestored}},
	} {
		t.Run("to turn "+string(rune('0'+tc.turn)), func(t *testing.T) {
			forEachStore(t, func(t *testing.T, _ storeCase, s history.Store) {
				e, root := workspace(t)
				snaps := runScenario(t, s, e, "S", root)
				led, err := history.NewFiles(s, e).Rewind(t.Context(), "S", tc.turn, history.RewindOptions{SessionID: "S"})
				check(t, err)
				if d := cmp.Diff(snaps[tc.turn], snapshot(t, e, root)); d != "" {
					t.Fatalf("tree after rewinding to turn %d (-want +got):\n%s", tc.turn, d)
				}
				want := map[string]history.Status{}
				for p, st := range tc.want {
					want[filepath.Join(root, p)] = st
				}
				if d := cmp.Diff(want, statuses(led)); d != "" {
					t.Fatalf("ledger (-want +got):\n%s", d)
				}
				if !led.Applied || !led.Complete() || led.Turn != tc.turn {
					t.Fatalf("ledger %+v", led)
				}
				// Rewinding again finds nothing left to do.
				again, err := history.NewFiles(s, e).Rewind(t.Context(), "S", tc.turn, history.RewindOptions{})
				check(t, err)
				if n := again.Count(history.StatusUnchanged); n != len(again.Entries) {
					t.Fatalf("a second rewind changed files: %+v", again.Entries)
				}
			})
		})
	}
}

// The same scenario on the host filesystem: real modes, real atomic writes, a parent
// directory recreated.
func TestRewindHost(t *testing.T) {
	forEachStore(t, func(t *testing.T, _ storeCase, s history.Store) {
		e, root := env.NewHost(), t.TempDir()
		snaps := runScenario(t, s, e, "S", root)
		check(t, e.Remove(t.Context(), filepath.Join(root, "gen/deep/b.txt")))
		check(t, e.Remove(t.Context(), filepath.Join(root, "gen/deep")))
		check(t, e.Remove(t.Context(), filepath.Join(root, "gen")))
		_, err := history.NewFiles(s, e).Rewind(t.Context(), "S", 3, history.RewindOptions{})
		check(t, err)
		if d := cmp.Diff(snaps[3], snapshot(t, e, root)); d != "" {
			t.Fatalf("host tree after rewinding to turn 3 (-want +got):\n%s", d)
		}
		_, err = history.NewFiles(s, e).Rewind(t.Context(), "S", 1, history.RewindOptions{})
		check(t, err)
		if d := cmp.Diff(snaps[1], snapshot(t, e, root)); d != "" {
			t.Fatalf("host tree after rewinding to turn 1 (-want +got):\n%s", d)
		}
	})
}

func TestRewindDryRun(t *testing.T) {
	forEachStore(t, func(t *testing.T, _ storeCase, s history.Store) {
		e, root := workspace(t)
		runScenario(t, s, e, "S", root)
		// A mode-only difference is a restore too.
		write(t, e, filepath.Join(root, "src/new1.go"), "package n1\n", 0o600)
		before := snapshot(t, e, root)
		led, err := history.NewFiles(s, e).Rewind(t.Context(), "S", 2, history.RewindOptions{DryRun: true})
		check(t, err)
		if d := cmp.Diff(before, snapshot(t, e, root)); d != "" {
			t.Fatalf("a dry run changed the tree:\n%s", d)
		}
		want := []history.LedgerEntry{
			{Path: filepath.Join(root, "a.txt"), Status: history.StatusRestored, Lines: 1, CurrentLines: 1, Added: 1, Removed: 1},
			{Path: filepath.Join(root, "c.txt"), Status: history.StatusRestored, Lines: 1, CurrentLines: 1, Added: 1, Removed: 1},
			{Path: filepath.Join(root, "gen/deep/b.txt"), Status: history.StatusDeleted, Lines: 0, CurrentLines: 3, Removed: 3},
			{Path: filepath.Join(root, "run.sh"), Status: history.StatusRestored, Lines: 2, CurrentLines: 0, Added: 2},
			{Path: filepath.Join(root, "src/new1.go"), Status: history.StatusRestored, Lines: 1, CurrentLines: 1},
		}
		if d := cmp.Diff(want, led.Entries); d != "" {
			t.Fatalf("dry-run ledger (-want +got):\n%s", d)
		}
		if led.Applied || !led.Complete() {
			t.Fatalf("dry-run ledger %+v", led)
		}
		if got := len(led.Changed()); got != 5 {
			t.Fatalf("Changed() lists %d paths, want 5", got)
		}
	})
}

func TestRewindPartialConflict(t *testing.T) {
	forEachStore(t, func(t *testing.T, _ storeCase, s history.Store) {
		ctx := t.Context()
		e, root := workspace(t)
		snaps := runScenario(t, s, e, "S", root)
		// Someone replaced a.txt with a directory, put a link where run.sh was, and swapped
		// the src directory for a link to a directory outside the workspace.
		a := filepath.Join(root, "a.txt")
		check(t, e.Remove(ctx, a))
		check(t, e.Mkdir(ctx, a, 0o755))
		check(t, e.Symlink("/elsewhere", filepath.Join(root, "run.sh")))
		src := filepath.Join(root, "src")
		check(t, e.Remove(ctx, filepath.Join(src, "new1.go")))
		check(t, e.Remove(ctx, src))
		check(t, e.MkdirAll("/outside", 0o755))
		write(t, e, "/outside/new1.go", "not ours\n", 0o644)
		check(t, e.Symlink("/outside", src))
		before := snapshot(t, e, root)
		f := history.NewFiles(s, e)

		led, err := f.Rewind(ctx, "S", 1, history.RewindOptions{})
		wantCode(t, err, history.CodePartialRestore)
		if led.Applied || led.Count(history.StatusConflict) != 3 {
			t.Fatalf("refused ledger %+v", led)
		}
		if d := cmp.Diff(before, snapshot(t, e, root)); d != "" {
			t.Fatalf("a refused rewind changed files:\n%s", d)
		}

		led, err = f.Rewind(ctx, "S", 1, history.RewindOptions{AcceptPartialRestore: true})
		check(t, err)
		st := statuses(led)
		if st[a] != history.StatusConflict || st[filepath.Join(root, "run.sh")] != history.StatusConflict ||
			st[filepath.Join(src, "new1.go")] != history.StatusConflict || !led.Applied {
			t.Fatalf("accepted partial ledger %+v", led.Entries)
		}
		if got := string(must(e.ReadFile(ctx, "/outside/new1.go"))(t)); got != "not ours\n" {
			t.Fatalf("the rewind wrote through a linked directory: /outside/new1.go = %q", got)
		}
		for _, e := range led.Entries {
			if e.Status == history.StatusConflict && e.Reason == "" {
				t.Fatalf("conflict without a reason: %+v", e)
			}
		}
		want := map[string]fileState{}
		for k, v := range snaps[1] {
			if k != "a.txt" && k != "run.sh" {
				want[k] = v
			}
		}
		if d := cmp.Diff(want, snapshot(t, e, root)); d != "" {
			t.Fatalf("the files not in conflict were not restored (-want +got):\n%s", d)
		}
		if fi, err := e.Lstat(ctx, a); err != nil || !fi.IsDir() {
			t.Fatal("the conflicting directory was touched")
		}
	})
}

func TestRewindPartialFailure(t *testing.T) {
	for _, accept := range []bool{false, true} {
		t.Run(map[bool]string{false: "refused", true: "accepted"}[accept], func(t *testing.T) {
			forEachStore(t, func(t *testing.T, _ storeCase, s history.Store) {
				mem, root := workspace(t)
				snaps := runScenario(t, s, mem, "S", root)
				faulty := envtest.NewFaulty(mem)
				c := filepath.Join(root, "c.txt")
				faulty.Inject(envtest.Errno(envtest.OpWriteFile, c, syscall.EACCES))
				led, err := history.NewFiles(s, faulty).Rewind(t.Context(), "S", 1, history.RewindOptions{AcceptPartialRestore: accept})
				if accept {
					check(t, err)
				} else {
					wantCode(t, err, history.CodePartialRestore)
				}
				if !led.Applied || statuses(led)[c] != history.StatusFailed || led.Complete() {
					t.Fatalf("ledger %+v", led)
				}
				// Every other file is back at turn 1.
				got := snapshot(t, mem, root)
				want := snaps[1]
				want["c.txt"] = snaps[4]["c.txt"]
				if d := cmp.Diff(want, got); d != "" {
					t.Fatalf("tree (-want +got):\n%s", d)
				}
			})
		})
	}
}

func TestRewindRefusals(t *testing.T) {
	forEachStore(t, func(t *testing.T, _ storeCase, s history.Store) {
		ctx := t.Context()
		e, root := workspace(t)
		snaps := runScenario(t, s, e, "S", root)
		f := history.NewFiles(s, e)
		for _, tc := range []struct {
			name  string
			scope string
			turn  int
			opts  history.RewindOptions
			code  string
		}{
			{"child", "S", 1, history.RewindOptions{SessionID: "child-session"}, history.CodeChildCannotRewind},
			{"unknown turn", "S", 7, history.RewindOptions{}, history.CodeBoundaryNotFound},
			{"no scope", "", 1, history.RewindOptions{}, history.CodeScopeInvalid},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := f.Rewind(ctx, tc.scope, tc.turn, tc.opts)
				wantCode(t, err, tc.code)
				if d := cmp.Diff(snaps[4], snapshot(t, e, root)); d != "" {
					t.Fatalf("a refused rewind changed files:\n%s", d)
				}
			})
		}
		wantCode(t, history.RefuseChildRewind("root-session", "child-session"), history.CodeChildCannotRewind)
		if err := history.RefuseChildRewind("S", "S"); err != nil {
			t.Fatalf("a session's own scope was refused: %v", err)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := f.Rewind(cctx, "S", 1, history.RewindOptions{}); !errors.Is(err, context.Canceled) {
			t.Fatalf("Rewind with a cancelled context = %v", err)
		}
		if d := cmp.Diff(snaps[4], snapshot(t, e, root)); d != "" {
			t.Fatalf("a cancelled rewind changed files:\n%s", d)
		}
		// Turn 0 is the scope's beginning.
		_, err := f.Rewind(ctx, "S", 0, history.RewindOptions{})
		check(t, err)
		if d := cmp.Diff(snaps[1], snapshot(t, e, root)); d != "" {
			t.Fatalf("rewind to 0 (-want +got):\n%s", d)
		}
	})
}

// A branch restarted at an earlier turn mints that turn again; a later rewind to it
// means the newest mint, on the branch being worked on.
func TestRewindRemintedTurn(t *testing.T) {
	forEachStore(t, func(t *testing.T, _ storeCase, s history.Store) {
		ctx := t.Context()
		e, _ := workspace(t)
		f := history.NewFiles(s, e)
		a := "/w/a.txt"
		write(t, e, a, "a0", 0o644)
		edit := func(turn int, content string) {
			must(s.MintBoundary(ctx, "S", turn))(t)
			rec := track(t, f, "S", a)
			write(t, e, a, content, 0o644)
			check(t, f.Wrote(ctx, rec, []byte(content)))
		}
		read := func() string { return string(must(e.ReadFile(ctx, a))(t)) }
		edit(1, "a1")
		edit(2, "a2")
		must(f.Rewind(ctx, "S", 1, history.RewindOptions{}))(t)
		if read() != "a0" {
			t.Fatalf("after rewind to 1: %q", read())
		}
		edit(1, "x1") // the branch: turn 1 again
		edit(2, "x2")
		must(f.Rewind(ctx, "S", 2, history.RewindOptions{}))(t)
		if read() != "x1" {
			t.Fatalf("rewind to the re-minted turn 2 gave %q, want the branch's x1", read())
		}
		must(f.Rewind(ctx, "S", 1, history.RewindOptions{}))(t)
		if read() != "a0" {
			t.Fatalf("rewind to turn 1 gave %q, want a0", read())
		}
	})
}

func TestCarryFork(t *testing.T) {
	forEachStore(t, func(t *testing.T, _ storeCase, s history.Store) {
		ctx := t.Context()
		e, root := workspace(t)
		snaps := runScenario(t, s, e, "parent", root)
		parentRecs := must(s.Records(ctx, "parent", 0))(t)

		n := must(s.CarryFork(ctx, "parent", "fork"))(t)
		if n != len(parentRecs) || n == 0 {
			t.Fatalf("carried %d records, the parent has %d", n, len(parentRecs))
		}
		var turns []int
		for _, b := range must(s.Boundaries(ctx, "fork"))(t) {
			turns = append(turns, b.Turn)
		}
		if d := cmp.Diff([]int{1, 2, 3}, turns); d != "" {
			t.Fatalf("fork boundaries (-want +got):\n%s", d)
		}
		forkRecs := must(s.Records(ctx, "fork", 0))(t)
		for i, r := range forkRecs {
			p := parentRecs[i]
			if r.Scope != "fork" || r.ID == p.ID || r.Key != p.Key || r.Sum != p.Sum || r.Turn != p.Turn || r.Existed != p.Existed {
				t.Fatalf("fork record %d = %+v, parent's %+v", i, r, p)
			}
		}
		// The carry is done once: the parent goes on, the fork does not inherit that.
		must(s.MintBoundary(ctx, "parent", 4))(t)
		track(t, history.NewFiles(s, e), "parent", filepath.Join(root, "keep.txt"))
		if n := must(s.CarryFork(ctx, "parent", "fork"))(t); n != 0 {
			t.Fatalf("a second carry copied %d records", n)
		}
		if got := must(s.Records(ctx, "fork", 0))(t); len(got) != len(forkRecs) {
			t.Fatalf("the fork has %d records after a second carry, want %d", len(got), len(forkRecs))
		}
		// The fork rewinds to a boundary it inherited, through its own scope.
		_, err := history.NewFiles(s, e).Rewind(ctx, "fork", 2, history.RewindOptions{SessionID: "fork"})
		check(t, err)
		if d := cmp.Diff(snaps[2], snapshot(t, e, root)); d != "" {
			t.Fatalf("fork rewind to inherited turn 2 (-want +got):\n%s", d)
		}
		// The fork's carried records do not keep the parent's blobs hostage: forgetting
		// the parent leaves the fork whole.
		check(t, s.Forget(ctx, "parent"))
		_, err = history.NewFiles(s, e).Rewind(ctx, "fork", 1, history.RewindOptions{})
		check(t, err)
		if d := cmp.Diff(snaps[1], snapshot(t, e, root)); d != "" {
			t.Fatalf("fork rewind after the parent was forgotten (-want +got):\n%s", d)
		}

		must(s.MintBoundary(ctx, "busy", 1))(t)
		_, err = s.CarryFork(ctx, "fork", "busy")
		wantCode(t, err, history.CodeCarryConflict)
		if n := must(s.CarryFork(ctx, "fork", "fork"))(t); n != 0 {
			t.Fatalf("carrying a scope into itself copied %d", n)
		}
		// A parent without history still marks the carry done.
		if n := must(s.CarryFork(ctx, "empty-parent", "fork2"))(t); n != 0 {
			t.Fatalf("carried %d from an empty parent", n)
		}
	})
}

// A file whose pre-image was not kept (history.Record.Lost: over a snapshot's size cap,
// or lost with a killed command's snapshot) is never reported restored: the rewind
// names it failed, with why, refuses a full restore, and with AcceptPartialRestore puts
// back the others and leaves it as it is.
func TestRewindNamesALostPreImage(t *testing.T) {
	ctx := t.Context()
	e := env.NewHost()
	root := t.TempDir()
	store := history.NewMemory()
	files := history.NewFiles(store, e)
	big, small := filepath.Join(root, "big.bin"), filepath.Join(root, "small.txt")
	check(t, e.WriteFile(ctx, big, []byte("what a command left\n"), 0o644))
	check(t, e.WriteFile(ctx, small, []byte("after\n"), 0o644))
	if _, err := store.MintBoundary(ctx, "S", 1); err != nil {
		t.Fatal(err)
	}
	lost, _, err := store.Insert(ctx, history.Record{Scope: "S", Key: big, Existed: true, Lost: true, Mode: 0o644, Size: 9 << 20}, nil)
	check(t, err)
	check(t, store.SetAfter(ctx, lost.ID, history.SumOf([]byte("what a command left\n"))))
	rec, _, err := store.Insert(ctx, history.Record{Scope: "S", Key: small, Existed: true, Mode: 0o644}, []byte("before\n"))
	check(t, err)
	check(t, store.SetAfter(ctx, rec.ID, history.SumOf([]byte("after\n"))))

	for _, force := range []bool{false, true} {
		led, err := files.Rewind(ctx, "S", 1, history.RewindOptions{DryRun: true, Force: force})
		check(t, err)
		if got := statusOf(led, big); got.Status != history.StatusFailed || got.Reason == "" {
			t.Fatalf("dry run (force %v): big.bin %+v; want failed with a reason", force, got)
		}
		if _, err := files.Rewind(ctx, "S", 1, history.RewindOptions{Force: force}); !sema.IsCode(err, history.CodePartialRestore) {
			t.Fatalf("rewind (force %v): %v; want %s", force, err, history.CodePartialRestore)
		}
		if b, _ := e.ReadFile(ctx, small); string(b) != "after\n" {
			t.Fatalf("a refused rewind changed small.txt: %q", b)
		}
	}
	led, err := files.Rewind(ctx, "S", 1, history.RewindOptions{AcceptPartialRestore: true})
	check(t, err)
	if statusOf(led, small).Status != history.StatusRestored || statusOf(led, big).Status != history.StatusFailed {
		t.Fatalf("partial restore: %+v", led.Entries)
	}
	if b, _ := e.ReadFile(ctx, small); string(b) != "before\n" {
		t.Fatalf("small.txt %q; want it restored", b)
	}
	if b, _ := e.ReadFile(ctx, big); string(b) != "what a command left\n" {
		t.Fatalf("big.bin %q; want it left as it was", b)
	}
}

func statusOf(l history.Ledger, path string) history.LedgerEntry {
	for _, e := range l.Entries {
		if e.Path == path {
			return e
		}
	}
	return history.LedgerEntry{}
}
