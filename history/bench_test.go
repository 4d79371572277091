package history_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/env/envtest"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/session"
)

type benchCase struct {
	name string
	new  func(b *testing.B) (history.Store, env.ExecutionEnv, string)
}

// benchCases are the deployment's shape (SQLite shared with the session store, host
// files in a temporary directory) and the in-memory one (the cost of the logic alone).
func benchCases() []benchCase {
	return []benchCase{
		{"SQLite+Host", func(b *testing.B) (history.Store, env.ExecutionEnv, string) {
			dir := b.TempDir()
			ss, err := session.OpenSQLite(filepath.Join(dir, "sema.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { ss.Close() })
			hs, err := history.NewSQLite(b.Context(), ss.DB())
			if err != nil {
				b.Fatal(err)
			}
			root := filepath.Join(dir, "w")
			if err := env.NewHost().Mkdir(b.Context(), root, 0o755); err != nil {
				b.Fatal(err)
			}
			return hs, env.NewHost(), root
		}},
		{"Memory+Mem", func(b *testing.B) (history.Store, env.ExecutionEnv, string) {
			m := envtest.NewMem()
			if err := m.MkdirAll("/w", 0o755); err != nil {
				b.Fatal(err)
			}
			return history.NewMemory(), m, "/w"
		}},
	}
}

func content10KB(tag string) []byte {
	line := fmt.Sprintf("%-63s\n", "// "+tag)
	return []byte(strings.Repeat(line, 160)) // 160 × 64 B = 10 KiB
}

// BenchmarkTrack10KB is the first-touch record of a 10 KB file: lookup, read, hash, and
// one transaction with a new blob and the record.
func BenchmarkTrack10KB(b *testing.B) {
	const pool = 500
	for _, bc := range benchCases() {
		b.Run(bc.name, func(b *testing.B) {
			s, e, root := bc.new(b)
			ctx := b.Context()
			f := history.NewFiles(s, e)
			keys := make([]string, pool)
			round := 0
			fill := func() {
				for i := range keys {
					keys[i] = filepath.Join(root, fmt.Sprintf("f%03d.go", i))
					if err := e.WriteFile(ctx, keys[i], content10KB(fmt.Sprintf("round %d file %d", round, i)), 0o644); err != nil {
						b.Fatal(err)
					}
				}
				round++
				if _, err := s.MintBoundary(ctx, "S", round); err != nil {
					b.Fatal(err)
				}
			}
			fill()
			i := 0
			b.ReportAllocs()
			b.SetBytes(10 << 10)
			for b.Loop() {
				if i == pool {
					b.StopTimer()
					fill()
					i = 0
					b.StartTimer()
				}
				if _, minted, err := f.Track(ctx, "S", keys[i]); err != nil || !minted {
					b.Fatalf("Track: %v minted=%v", err, minted)
				}
				i++
			}
		})
	}
}

// BenchmarkBlobDedup tracks files that all hold the same 10 KB: after the first, every
// record reuses the one blob.
func BenchmarkBlobDedup(b *testing.B) {
	for _, bc := range benchCases() {
		b.Run(bc.name, func(b *testing.B) {
			s, e, root := bc.new(b)
			ctx := b.Context()
			f := history.NewFiles(s, e)
			key := filepath.Join(root, "same.go")
			if err := e.WriteFile(ctx, key, content10KB("same"), 0o644); err != nil {
				b.Fatal(err)
			}
			turn := 0
			b.ReportAllocs()
			for b.Loop() {
				turn++
				if _, err := s.MintBoundary(ctx, "S", turn); err != nil {
					b.Fatal(err)
				}
				if _, minted, err := f.Track(ctx, "S", key); err != nil || !minted {
					b.Fatalf("Track: %v minted=%v", err, minted)
				}
			}
			if bs, ok := s.(*history.Memory); ok && bs.BlobCount() != 1 {
				b.Fatalf("%d blobs", bs.BlobCount())
			}
		})
	}
}

// BenchmarkRewind1000 rewinds 1,000 files (10 KB each) the agent edited in one turn to
// their pre-images at the turn before. Each rewind also saves the 1,000 edited files for
// undo, so the store grows by 2,000 records per iteration.
func BenchmarkRewind1000(b *testing.B) {
	const files = 1000
	for _, bc := range benchCases() {
		b.Run(bc.name, func(b *testing.B) {
			s, e, root := bc.new(b)
			ctx := b.Context()
			f := history.NewFiles(s, e)
			keys := make([]string, files)
			for i := range keys {
				keys[i] = filepath.Join(root, fmt.Sprintf("f%04d.go", i))
				if err := e.WriteFile(ctx, keys[i], content10KB(fmt.Sprintf("original %d", i)), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := s.MintBoundary(ctx, "S", 1); err != nil {
				b.Fatal(err)
			}
			for _, k := range keys {
				if _, _, err := f.Track(ctx, "S", k); err != nil {
					b.Fatal(err)
				}
			}
			// modify is the agent's edit of every file in a new turn, as the write lane
			// does it: Track, write, Wrote — so the rewind finds the agent's bytes, not a
			// conflict.
			turn := 1
			// settle writes back what the setup left dirty (a thousand files, the store's
			// log), so the rewind's syncs are not timed flushing the setup's writes.
			settle := func() {
				if _, ok := e.(*env.Host); ok {
					syscall.Sync()
				}
			}
			modify := func() {
				turn++
				if _, err := s.MintBoundary(ctx, "S", turn); err != nil {
					b.Fatal(err)
				}
				for i, k := range keys {
					rec, _, err := f.Track(ctx, "S", k)
					if err != nil {
						b.Fatal(err)
					}
					data := content10KB(fmt.Sprintf("edited %d", i))
					if err := e.WriteFile(ctx, k, data, 0o644); err != nil {
						b.Fatal(err)
					}
					if err := f.Wrote(ctx, rec, data); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				modify()
				settle()
				b.StartTimer()
				led, err := f.Rewind(ctx, "S", 1, history.RewindOptions{})
				if err != nil || led.Count(history.StatusRestored) != files {
					b.Fatalf("Rewind: %v, %d restored", err, led.Count(history.StatusRestored))
				}
			}
		})
	}
}
