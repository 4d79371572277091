package history_test

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/env/envtest"
	"github.com/sema-agent/sema/history"
)

// tornBatch is a Mem whose batch write tears the files in torn — it leaves the first
// three bytes of the new content and fails with EIO, as a write that is not atomic
// would — and fails the ones in refused with EACCES, nothing written.
type tornBatch struct {
	*envtest.Mem
	torn, refused map[string]bool
	batches       atomic.Int32
}

func (b *tornBatch) WriteFiles(ctx context.Context, files []env.FileWrite) []error {
	b.batches.Add(1)
	errs := make([]error, len(files))
	var rest []env.FileWrite
	var at []int
	for i, f := range files {
		switch {
		case b.torn[f.Path]:
			if err := b.Mem.WriteFile(ctx, f.Path, f.Data[:3], f.Perm); err != nil {
				errs[i] = err
				continue
			}
			errs[i] = &fs.PathError{Op: "write", Path: f.Path, Err: syscall.EIO}
		case b.refused[f.Path]:
			errs[i] = &fs.PathError{Op: "write", Path: f.Path, Err: syscall.EACCES}
		default:
			rest, at = append(rest, f), append(at, i)
		}
	}
	for j, err := range b.Mem.WriteFiles(ctx, rest) {
		errs[at[j]] = err
	}
	return errs
}

// A rewind writes its restores in one batch when the env can, and a file that fails in
// the batch is handled as a failed WriteFile is: reported by path, and a torn one gets
// its previous bytes back; every other file is restored.
func TestRewindBatchFailures(t *testing.T) {
	forEachStore(t, func(t *testing.T, _ storeCase, s history.Store) {
		mem, root := workspace(t)
		snaps := runScenario(t, s, mem, "S", root)
		// a.txt is there and torn, run.sh is gone and torn (a partial new file), c.txt is
		// there and refused.
		a, run, c := filepath.Join(root, "a.txt"), filepath.Join(root, "run.sh"), filepath.Join(root, "c.txt")
		e := &tornBatch{Mem: mem, torn: map[string]bool{a: true, run: true}, refused: map[string]bool{c: true}}
		led, err := history.NewFiles(s, e).Rewind(t.Context(), "S", 1, history.RewindOptions{AcceptPartialRestore: true})
		check(t, err)
		if e.batches.Load() != 1 {
			t.Fatalf("%d batches, want the restores in one", e.batches.Load())
		}
		ea, er, ec := entryOf(t, led, a), entryOf(t, led, run), entryOf(t, led, c)
		if ea.Status != history.StatusFailed || !strings.Contains(ea.Reason, "input/output error") || !strings.Contains(ea.Reason, "previous bytes were put back") {
			t.Fatalf("the torn file's entry: %+v", ea)
		}
		if er.Status != history.StatusFailed || !strings.Contains(er.Reason, "input/output error") {
			t.Fatalf("the torn new file's entry: %+v", er)
		}
		if ec.Status != history.StatusFailed || !strings.Contains(ec.Reason, c) {
			t.Fatalf("the refused file's entry: %+v", ec)
		}
		want := snaps[1]
		want["a.txt"], want["c.txt"] = snaps[4]["a.txt"], snaps[4]["c.txt"]
		delete(want, "run.sh") // gone before the rewind; its partial restore was removed
		if d := cmp.Diff(want, snapshot(t, mem, root)); d != "" {
			t.Fatalf("tree (-want +got):\n%s", d)
		}
	})
}
