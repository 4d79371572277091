package gate

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/internal/rulematch"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/tools"
)

// testLeg is a workspace on the host inside t.TempDir():
//
//	base/home/            the home directory
//	base/home/proj/       the task root (write and read root)
//	base/home/proj/.scratch/   the exempt scratchpad (admitted by the fence)
//	base/outside/         a directory outside every root
type testLeg struct {
	t       testing.TB
	base    string
	home    string
	root    string
	scratch string
	outside string
	fence   *fence.Fence
	scope   permission.Scope
}

func newTestLeg(t testing.TB) *testLeg {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l := &testLeg{t: t, base: base, home: filepath.Join(base, "home"), outside: filepath.Join(base, "outside")}
	l.root = filepath.Join(l.home, "proj")
	l.scratch = filepath.Join(base, "scratch")
	for _, d := range []string{l.root, l.outside, filepath.Join(l.root, "src"), filepath.Join(l.root, ".git"), l.scratch} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f, err := fence.New(context.Background(), fence.Config{Env: env.NewHost(), Root: l.root, Scratchpad: fence.AdvertisedSpec{Path: l.scratch}})
	if err != nil {
		t.Fatal(err)
	}
	l.fence = f
	l.scope = ScopeOf(context.Background(), f, l.home)
	if len(l.scope.ExemptDirs) != 1 {
		t.Fatalf("the scratchpad was not admitted: %+v", f.Advertised())
	}
	return l
}

func (l *testLeg) write(rel, content string) string {
	l.t.Helper()
	p := filepath.Join(l.root, rel)
	if filepath.IsAbs(rel) {
		p = rel
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		l.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		l.t.Fatal(err)
	}
	return p
}

func (l *testLeg) gate(mode permission.Mode, rules permission.RuleSet, hooks ...permission.Hook) *Gate {
	l.t.Helper()
	g, err := New(Config{Modes: FixedMode(mode), Rules: rules, Hooks: hooks, Resolver: FenceResolver(l.fence)})
	if err != nil {
		l.t.Fatal(err)
	}
	return g
}

// fileCall builds a call of an engine file tool naming path (absolute or root-relative).
func (l *testLeg) fileCall(g *Gate, tool, path string) permission.Call {
	l.t.Helper()
	field := pathFields[tool]
	in, _ := json.Marshal(map[string]string{field: path})
	effect := tools.EffectWrite
	if rulematch.IsReadTool(tool) {
		effect = tools.EffectRead
	}
	c, err := g.Prepare(context.Background(), permission.Call{Tool: tool, Effect: effect, Input: in, Scope: l.scope})
	if err != nil {
		l.t.Fatal(err)
	}
	return c
}

// bashCall builds a Bash call.
func (l *testLeg) bashCall(cmd string, background bool) permission.Call {
	in, _ := json.Marshal(map[string]any{"command": cmd, "run_in_background": background})
	return permission.Call{Tool: "Bash", Effect: tools.EffectExec, Input: in, Scope: l.scope}
}

func mustRules(t testing.TB, allow, deny, ask []string) permission.RuleSet {
	t.Helper()
	s, err := permission.ParseRules(allow, deny, ask)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
