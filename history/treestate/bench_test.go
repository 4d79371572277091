package treestate_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/history/treestate"
)

// benchTree makes n files of about 1 KiB in 100 directories.
func benchTree(b *testing.B, n int) string {
	b.Helper()
	r, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	body := make([]byte, 1000)
	old := time.Now().Add(-time.Hour)
	for i := range n {
		d := filepath.Join(r, fmt.Sprintf("d%02d", i%100))
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
		p := filepath.Join(d, fmt.Sprintf("f%05d.txt", i))
		if err := os.WriteFile(p, body, 0o644); err != nil {
			b.Fatal(err)
		}
		// A settled tree: nothing was written within the racy window of a walk.
		if err := os.Chtimes(p, old, old); err != nil {
			b.Fatal(err)
		}
	}
	return r
}

// One Bash call costs two Syncs (before and after). changed files are rewritten between
// them; the bytes handed to the recorder are the store's growth per call. durable adds
// what a stage that outlives the process costs: Arm after the first walk (the pre-images
// and the index fsynced, the in-flight mark written), Disarm after the second.
func benchCall(b *testing.B, changed int, durable bool) {
	r := benchTree(b, 10000)
	tr := treestate.New(treestate.Config{Env: env.NewHost(), Roots: []string{r}, StageDir: b.TempDir() + "/stage", Durable: durable})
	ctx := context.Background()
	var grew int64
	record := func(_ context.Context, _ treestate.Change, pre []byte) error { grew += int64(len(pre)); return nil }
	if _, err := tr.Sync(ctx, nil); err != nil { // the first snapshot reads everything
		b.Fatal(err)
	}
	// Files written in the racy window are read again once; start from a settled cache.
	if _, err := tr.Sync(ctx, nil); err != nil {
		b.Fatal(err)
	}
	if durable { // the leg's first command pays for fsyncing the whole stage once
		if err := tr.Arm(nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := tr.Sync(ctx, record); err != nil {
			b.Fatal(err)
		}
		if durable {
			if err := tr.Arm(nil); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		for j := range changed {
			p := filepath.Join(r, fmt.Sprintf("d%02d", j%100), fmt.Sprintf("f%05d.txt", j))
			if err := os.WriteFile(p, []byte(fmt.Sprintf("call %d file %d\n", i, j)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		if _, err := tr.Sync(ctx, record); err != nil {
			b.Fatal(err)
		}
		if durable {
			if err := tr.Disarm(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(grew)/float64(b.N), "store-B/call")
}

// BenchmarkCall10k is one call on a settled 10,000-file tree, with 0 or 100 files
// changed by the command, with the stage a cache of the process (as before) and with a
// durable one (compare with benchstat -col /durable).
func BenchmarkCall10k(b *testing.B) {
	for _, changed := range []int{0, 100} {
		for _, durable := range []bool{false, true} {
			b.Run(fmt.Sprintf("changed=%d/durable=%v", changed, durable), func(b *testing.B) { benchCall(b, changed, durable) })
		}
	}
}

// BenchmarkFirstArm10k is the first Arm of a leg: every pre-image of a 10,000-file tree
// fsynced (one syncfs), and the index written.
func BenchmarkFirstArm10k(b *testing.B) {
	r := benchTree(b, 10000)
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		tr := treestate.New(treestate.Config{Env: env.NewHost(), Roots: []string{r}, StageDir: b.TempDir() + "/stage", Durable: true})
		if _, err := tr.Sync(ctx, nil); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := tr.Arm(nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkArmDisarmUnchanged is what durability adds to a command that changed nothing:
// the in-flight mark written and fsynced (with its directory) before, removed after.
func BenchmarkArmDisarmUnchanged(b *testing.B) {
	r := benchTree(b, 100)
	tr := treestate.New(treestate.Config{Env: env.NewHost(), Roots: []string{r}, StageDir: b.TempDir() + "/stage", Durable: true})
	if _, err := tr.Sync(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	if err := tr.Arm(nil); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := tr.Arm(nil); err != nil {
			b.Fatal(err)
		}
		if err := tr.Disarm(); err != nil {
			b.Fatal(err)
		}
	}
}
