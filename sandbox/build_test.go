package sandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/sandbox"
)

func TestPolicyIsDerivedFromTheFence(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	home := filepath.Join(base, "home")
	root := filepath.Join(home, "proj")
	extra := filepath.Join(base, "extra")
	readOnly := filepath.Join(base, "ro")
	state := filepath.Join(home, ".sema")
	for _, d := range []string{root, extra, readOnly, state, filepath.Join(home, ".ssh"), filepath.Join(root, ".git"), filepath.Join(root, "src")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, ".envrc"), []byte("x"), 0o644)
	os.Symlink("/etc/hosts", filepath.Join(root, ".npmrc"))
	mk := func(write fence.Face) *fence.Fence {
		w := string(write)
		f, err := fence.New(context.Background(), fence.Config{Env: env.NewHost(), Root: root, StateDir: state,
			AdditionalDirectories: []string{extra}, AdditionalReadDirectories: []string{readOnly}, TaskWriteFace: &w})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	f := mk(fence.FaceRoots)
	p := sandbox.ForFence(f, sandbox.Options{Home: home, Getenv: func(string) string { return "" }, TempDir: extra})
	if !slices.Contains(p.Write, root) || !slices.Contains(p.Write, extra) || slices.Contains(p.Write, readOnly) {
		t.Errorf("write %v: want the write roots and not the read-only root", p.Write)
	}
	if !slices.Contains(p.Read, readOnly) || slices.Contains(p.Read, home) {
		t.Errorf("read %v: want the read roots and not the home directory", p.Read)
	}
	if p.Network {
		t.Error("the network is on by default")
	}
	// The state directory and ~/.ssh lie outside every grant: nothing to hide.
	if len(p.Hidden) != 0 {
		t.Errorf("hidden %v, want none", p.Hidden)
	}
	ro := p.WithProtected(f, false).ReadOnly
	if !slices.Contains(ro, filepath.Join(root, ".git")) || !slices.Contains(ro, filepath.Join(root, ".envrc")) || slices.Contains(ro, filepath.Join(root, "src")) {
		t.Errorf("read-only %v: want .git and .envrc, not src", ro)
	}
	if slices.Contains(ro, filepath.Join(root, ".npmrc")) {
		t.Error("a protected name that is a symbolic link was bound (the grants judge its target)")
	}
	if got := p.WithProtected(f, true).ReadOnly; len(got) != 0 {
		t.Errorf("an approved call keeps read-only paths %v", got)
	}

	// The open write face: everything writable but the hidden places, which now lie
	// beneath a grant.
	open := mk(fence.FaceOpen)
	po := sandbox.ForFence(open, sandbox.Options{Home: home, Getenv: func(string) string { return "" }})
	if !slices.Equal(po.Write, []string{"/"}) {
		t.Errorf("open face write %v", po.Write)
	}
	if !slices.Contains(po.Hidden, state) || !slices.Contains(po.Hidden, filepath.Join(home, ".ssh")) {
		t.Errorf("open face hidden %v: want the state directory and ~/.ssh", po.Hidden)
	}
	if got := po.WithProtected(open, false).ReadOnly; len(got) != 0 {
		t.Errorf("open face keeps protected paths read-only: %v", got)
	}
}
