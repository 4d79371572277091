package treestate_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/history/treestate"
)

// benchProtected is the walk of one Bash call (before and after) over a repository-sized
// tree of 20,000 files with protected entries at several depths (a .git, nested .vscode
// and .envrc), judged by the real fence; mode picks what the walk does with them.
func benchProtected(b *testing.B, mode string) {
	r := benchTree(b, 20000)
	for i := range 10 {
		d := filepath.Join(r, fmt.Sprintf("d%02d", i*7))
		os.MkdirAll(filepath.Join(d, ".vscode"), 0o755)
		os.WriteFile(filepath.Join(d, ".vscode", "settings.json"), []byte("{}"), 0o644)
		os.WriteFile(filepath.Join(d, ".envrc"), []byte("export A=1"), 0o644)
	}
	os.MkdirAll(filepath.Join(r, ".git", "hooks"), 0o755)
	os.WriteFile(filepath.Join(r, ".git", "config"), []byte("[core]\n"), 0o644)
	f, err := fence.New(context.Background(), fence.Config{Env: env.NewHost(), Root: r})
	if err != nil {
		b.Fatal(err)
	}
	cfg := treestate.Config{Env: env.NewHost(), Roots: []string{r}, StageDir: b.TempDir() + "/stage"}
	if mode != "history" {
		cfg.Protected = func(p string) bool {
			if !fence.ProtectedCandidate(p[strings.LastIndexByte(p, '/')+1:]) {
				return false
			}
			ok, _ := f.IsProtected(p)
			return ok
		}
		cfg.Spots = fence.ProtectedSpots()
	}
	cfg.ProtectedOnly = mode == "protected-only"
	tr := treestate.New(cfg)
	ctx := context.Background()
	for range 2 { // prime, then settle the racy window
		if _, err := tr.Sync(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	// CPU time is steadier than wall time on a shared machine.
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	defer func() {
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
		cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/call")
	}()
	for i := 0; i < b.N; i++ {
		if _, err := tr.Sync(ctx, nil); err != nil {
			b.Fatal(err)
		}
		d, err := tr.SyncGuarded(ctx, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		if mode != "history" && len(d.Protected) != 21 {
			b.Fatalf("%d protected entries, want 21", len(d.Protected))
		}
	}
}

// History alone (today's walk), history with the protection, the protection alone (file
// history off).
func BenchmarkCall20kHistory(b *testing.B)          { benchProtected(b, "history") }
func BenchmarkCall20kHistoryProtected(b *testing.B) { benchProtected(b, "protected") }
func BenchmarkCall20kProtectedOnly(b *testing.B)    { benchProtected(b, "protected-only") }
