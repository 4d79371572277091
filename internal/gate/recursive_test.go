package gate

import (
	"context"
	"testing"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/shellscan"
)

func TestRecursiveSegments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cmd  string
		want []bool
	}{
		{"grep -r x .", []bool{true}},
		{"grep -nR x src", []bool{true}},
		{"grep --recursive x", []bool{true}},
		{"grep --recur x", []bool{true}},
		{"grep -d recurse x src", []bool{true}},
		{"grep --directories=recurse x src", []bool{true}},
		{"grep -n x README.md", []bool{false}},
		{"grep -n -- -r README.md", []bool{false}},
		{"rg x", []bool{true}},
		{"find . -name '*.go'", []bool{true}},
		{"du -sh", []bool{true}},
		{"tree src", []bool{true}},
		{"ls -la", []bool{false}},
		{"ls -lR src", []bool{true}},
		{"diff -ru a b", []bool{true}},
		{"diff a b", []bool{false}},
		{"git grep x", []bool{true}},
		{"git -C . grep x", []bool{true}},
		{"git ls-files", []bool{false}},
		{"git log -p", []bool{false}},
		{"cat README.md | grep -r x . && timeout 5 rg y", []bool{false, true, true}},
	}
	for _, tc := range tests {
		s, err := shellscan.Parse(tc.cmd)
		if err != nil {
			t.Fatalf("%q: %v", tc.cmd, err)
		}
		got := RecursiveSegments(s)
		if len(got) != len(tc.want) {
			t.Errorf("%q: %v, want %v", tc.cmd, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%q: %v, want %v", tc.cmd, got, tc.want)
				break
			}
		}
	}
}

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
