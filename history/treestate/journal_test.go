package treestate_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/history/treestate"
)

// recoverAll runs Recover on stage and collects what it hands over.
func recoverAll(t *testing.T, stage string, skip func(string) bool) (string, treestate.Diff, bool, map[string]rec) {
	t.Helper()
	got := map[string]rec{}
	meta, d, armed, err := treestate.Recover(context.Background(), treestate.Config{Env: env.NewHost(), StageDir: stage, Skip: skip},
		func(_ context.Context, c treestate.Change, b []byte) error {
			got[c.Path] = rec{c, b}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return string(meta), d, armed, got
}

// A process that dies while a command runs (the Tree is dropped, Disarm never called)
// leaves a stage from which another process records what the command removed, edited
// and created, with the bytes from before it — as the dead process's After walk would
// have.
func TestRecoverFindsWhatAnArmedCommandChanged(t *testing.T) {
	r := root(t)
	stage := filepath.Join(root(t), "stage")
	write(t, r+"/edit.txt", "before\n", 0o644)
	write(t, r+"/gone.txt", "removed by the command\n", 0o600)
	write(t, r+"/sub/keep.txt", "untouched\n", 0o644)
	write(t, r+"/denied/secret", "never walked\n", 0o600)
	skip := func(p string) bool { return p == r+"/denied" }
	tr := treestate.New(treestate.Config{Env: env.NewHost(), Roots: []string{r}, StageDir: stage, Durable: true, Skip: skip})
	collect(t, tr)
	if err := tr.Arm([]byte("turn 3")); err != nil {
		t.Fatal(err)
	}
	// The command: sed -i, rm, a new file, and a new file where the walk was told not to
	// look (Recover, which has no Skip of the dead process's, must leave it out too).
	write(t, r+"/edit.txt", "after\n", 0o644)
	if err := os.Remove(r + "/gone.txt"); err != nil {
		t.Fatal(err)
	}
	write(t, r+"/new.txt", "created\n", 0o644)
	write(t, r+"/denied/other", "also never walked\n", 0o600)
	// The process dies here: no Sync, no Disarm.

	meta, d, armed, got := recoverAll(t, stage, nil)
	if !armed || meta != "turn 3" {
		t.Fatalf("armed %v, meta %q; want the mark and its meta", armed, meta)
	}
	if d.RecordErr != nil {
		t.Fatal(d.RecordErr)
	}
	if len(got) != 3 {
		t.Fatalf("recovered %v; want edit.txt, gone.txt and new.txt", keys(got))
	}
	if g := got[r+"/edit.txt"]; !g.c.Existed || string(g.data) != "before\n" || g.c.Gone {
		t.Errorf("edit.txt: %+v %q; want its bytes before the command", g.c, g.data)
	}
	if g := got[r+"/gone.txt"]; !g.c.Gone || string(g.data) != "removed by the command\n" || g.c.Mode.Perm() != 0o600 {
		t.Errorf("gone.txt: %+v %q; want its bytes and mode before the command", g.c, g.data)
	}
	if g := got[r+"/new.txt"]; g.c.Existed {
		t.Errorf("new.txt: %+v; want a file that did not exist", g.c)
	}
	// A second Recover of the same stage finds the same: the stage is left whole until
	// the caller removes it (after its records are stored).
	if _, _, _, again := recoverAll(t, stage, nil); len(again) != 3 {
		t.Fatalf("a second Recover found %v", keys(again))
	}
}

// Disarm after the command's walk: nothing is in flight, so Recover has nothing to do;
// and a stage whose pre-image file was lost hands the change over as lost, never as
// something it can restore.
func TestRecoverDisarmedAndLostPreImage(t *testing.T) {
	r := root(t)
	stage := filepath.Join(root(t), "stage")
	write(t, r+"/a.txt", "one\n", 0o644)
	tr := treestate.New(treestate.Config{Env: env.NewHost(), Roots: []string{r}, StageDir: stage, Durable: true})
	collect(t, tr)
	if err := tr.Arm(nil); err != nil {
		t.Fatal(err)
	}
	write(t, r+"/a.txt", "two\n", 0o644)
	collect(t, tr)
	if err := tr.Disarm(); err != nil {
		t.Fatal(err)
	}
	if _, _, armed, got := recoverAll(t, stage, nil); armed || len(got) != 0 {
		t.Fatalf("a disarmed stage: armed %v, %v", armed, keys(got))
	}

	// Armed again, and the pre-image of a.txt ("two\n") is removed from the stage.
	if err := tr.Arm(nil); err != nil {
		t.Fatal(err)
	}
	write(t, r+"/a.txt", "three\n", 0o644)
	ents, _ := os.ReadDir(stage)
	removed := 0
	for _, e := range ents {
		if len(e.Name()) == 64 {
			os.Remove(filepath.Join(stage, e.Name()))
			removed++
		}
	}
	if removed != 1 {
		t.Fatalf("the stage held %d pre-images; want a.txt's one", removed)
	}
	_, d, armed, got := recoverAll(t, stage, nil)
	g := got[r+"/a.txt"]
	if !armed || !g.c.Lost || !g.c.Unrecoverable || g.data != nil || d.RecordErr == nil {
		t.Fatalf("lost pre-image: armed %v, %+v, data %q, err %v; want a lost change and its error", armed, g.c, g.data, d.RecordErr)
	}
}

// While a command is armed, a walk that moves the snapshot on (a background task's
// changes recorded) must not drop a pre-image the index on disk still names: the
// stage is that index's until the next Arm writes a newer one.
func TestArmedStageKeepsWhatItsIndexNames(t *testing.T) {
	r := root(t)
	stage := filepath.Join(root(t), "stage")
	write(t, r+"/a.txt", "first\n", 0o644)
	tr := treestate.New(treestate.Config{Env: env.NewHost(), Roots: []string{r}, StageDir: stage, Durable: true})
	collect(t, tr)
	if err := tr.Arm(nil); err != nil {
		t.Fatal(err)
	}
	write(t, r+"/a.txt", "second\n", 0o644)
	collect(t, tr) // the snapshot moves on; "first\n" is no entry's any more
	// The process dies before the next Arm.
	_, d, _, got := recoverAll(t, stage, nil)
	if d.RecordErr != nil || string(got[r+"/a.txt"].data) != "first\n" {
		t.Fatalf("recovered %q (%v); want the pre-image the armed index names", got[r+"/a.txt"].data, d.RecordErr)
	}
	// Arm writes the new index; only then does the old pre-image go.
	if err := tr.Arm(nil); err != nil {
		t.Fatal(err)
	}
	if n := preImages(t, stage); n != 1 {
		t.Fatalf("after Arm the stage holds %d pre-images; want 1", n)
	}
	// Close keeps an armed stage (its command's record is not complete) and removes a
	// disarmed one.
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stage); err != nil {
		t.Fatalf("Close removed an armed stage: %v", err)
	}
	tr2 := treestate.New(treestate.Config{Env: env.NewHost(), Roots: []string{r}, StageDir: stage, Durable: true})
	collect(t, tr2)
	if err := tr2.Disarm(); err != nil {
		t.Fatal(err)
	}
	if err := tr2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stage); !os.IsNotExist(err) {
		t.Fatalf("Close left a disarmed stage: %v", err)
	}
}

func preImages(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if len(e.Name()) == 64 && !strings.Contains(e.Name(), ".") {
			n++
		}
	}
	return n
}

func keys(m map[string]rec) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A mark cut by a crash while it was being written (before any command started) reads
// as in flight with no meta: Recover runs, and finds only what changed since.
func TestTornMarkIsInFlight(t *testing.T) {
	r := root(t)
	stage := filepath.Join(root(t), "stage")
	write(t, r+"/a.txt", "one\n", 0o644)
	tr := treestate.New(treestate.Config{Env: env.NewHost(), Roots: []string{r}, StageDir: stage, Durable: true})
	collect(t, tr)
	if err := tr.Arm([]byte("meta that the tear cuts")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(stage, "mark"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stage, "mark"), b[:len(b)-5], 0o600); err != nil {
		t.Fatal(err)
	}
	write(t, r+"/a.txt", "two\n", 0o644)
	meta, _, armed, got := recoverAll(t, stage, nil)
	if !armed || meta != "" || string(got[r+"/a.txt"].data) != "one\n" {
		t.Fatalf("torn mark: armed %v, meta %q, got %v", armed, meta, keys(got))
	}
	// Disarm rewrites the in-flight byte alone: a disarmed mark is not in flight.
	if err := tr.Disarm(); err != nil {
		t.Fatal(err)
	}
	if _, _, armed, _ := recoverAll(t, stage, nil); armed {
		t.Fatal("a disarmed mark reads as in flight")
	}
}
