package gate

import (
	"context"
	"testing"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/permission"
)

// TestRecursiveReadOfDenySetAsks: a read-only command that walks a directory holding
// (or possibly holding) files of the deny set is not answered by the mode.
func TestRecursiveReadOfDenySetAsks(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	l.write(".env", "SECRET=1\n")
	l.write("src/main.go", "package main\n")
	l.write("README.md", "x\n")
	gateWith := func(cfg fence.Config) *Gate {
		t.Helper()
		cfg.Env, cfg.Root = env.NewHost(), l.root
		f, err := fence.New(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		g, err := New(Config{Modes: FixedMode(permission.ModeDefault), Resolver: FenceResolver(f)})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	plain := gateWith(fence.Config{})
	globbed := gateWith(fence.Config{DenyGlobs: []string{".env"}})
	stated := gateWith(fence.Config{StateDir: l.root + "/state"})
	ruled, err := New(Config{Modes: FixedMode(permission.ModeDefault), Rules: mustRules(t, []string{"Bash(echo *)"}, nil, nil), Resolver: globbed.resolver})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		g    *Gate
		cmd  string
		want permission.Behavior
	}{
		{"no deny set", plain, "grep -r x .", permission.Allow},
		{"no deny set, rg", plain, "rg x", permission.Allow},
		{"deny glob", globbed, "grep -r x .", permission.Ask},
		{"deny glob, implicit cwd", globbed, "grep -r x", permission.Ask},
		{"deny glob, rg on no operand", globbed, "rg x", permission.Ask},
		{"deny glob, find", globbed, "find . -name x", permission.Ask},
		{"deny glob, ls -R", globbed, "ls -R", permission.Ask},
		{"deny glob, rg on a file", globbed, "rg x README.md", permission.Allow},
		{"deny glob, plain ls", globbed, "ls", permission.Allow},
		{"deny glob, cat", globbed, "cat README.md", permission.Allow},
		{"state dir in the root", stated, "rg x", permission.Ask},
		{"state dir elsewhere", stated, "rg x src", permission.Allow},
		{"allow rule beside a recursive read", ruled, "echo a && grep -r x .", permission.Ask},
		{"allow rule beside a plain read", ruled, "echo a && cat README.md", permission.Allow},
	}
	for _, tc := range tests {
		d := tc.g.Decide(context.Background(), l.bashCall(tc.cmd, false))
		if d.Behavior != tc.want {
			t.Errorf("%s: %q = %+v, want %s", tc.name, tc.cmd, d, tc.want)
		}
	}
}
