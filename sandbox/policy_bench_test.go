package sandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/sandbox"
)

// BenchmarkPolicyPerCommand is what a leg pays per command for its policy: the policy
// derived from the fence (the machine part cached per process) and the protected entries
// of the write roots. The home directory is a fake one holding a few credential stores
// and toolchains, the process's PATH and toolchain environment are the machine's.
func BenchmarkPolicyPerCommand(b *testing.B) {
	f, o := policyBench(b, false)
	b.ReportAllocs()
	for b.Loop() {
		p := sandbox.ForFence(f, o).WithProtected(f, false)
		if len(p.Write) == 0 {
			b.Fatal("no write roots")
		}
	}
}

// BenchmarkWithProtected is the per-command step alone, as the shell runs it: the set's
// policy is derived once, and each command takes it through WithProtected.
func BenchmarkWithProtected(b *testing.B) {
	f, o := policyBench(b, false)
	base := sandbox.ForFence(f, o)
	b.ReportAllocs()
	for b.Loop() {
		p := base.WithProtected(f, false)
		if len(p.Write) == 0 {
			b.Fatal("no write roots")
		}
	}
}

// BenchmarkWithProtectedHomeRoot is the per-command step where the home directory is a
// read root: every credential store lies beneath a grant, so each is looked at.
func BenchmarkWithProtectedHomeRoot(b *testing.B) {
	f, o := policyBench(b, true)
	base := sandbox.ForFence(f, o)
	b.ReportAllocs()
	for b.Loop() {
		p := base.WithProtected(f, false)
		if len(p.Hidden) < 2 {
			b.Fatalf("hidden %v", p.Hidden)
		}
	}
}

func policyBench(b *testing.B, homeRoot bool) (*fence.Fence, sandbox.Options) {
	base, _ := filepath.EvalSymlinks(b.TempDir())
	home := filepath.Join(base, "home")
	root := filepath.Join(base, "proj")
	for _, d := range []string{root, filepath.Join(root, ".git"), filepath.Join(root, "src"), filepath.Join(home, ".ssh"), filepath.Join(home, ".aws"), filepath.Join(home, ".cargo", "bin"), filepath.Join(home, ".local", "bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	cfg := fence.Config{Env: env.NewHost(), Root: root, StateDir: filepath.Join(home, ".sema"), Home: home}
	if homeRoot {
		cfg.AdditionalReadDirectories = []string{home}
	}
	f, err := fence.New(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	return f, sandbox.Options{Home: home, TempDir: filepath.Join(base, "tmp")}
}
