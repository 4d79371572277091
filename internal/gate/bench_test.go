package gate

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sema-agent/sema/env/envtest"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/shellscan"
	"github.com/sema-agent/sema/tools"
)

// benchGate is a gate over an in-memory tree (so the benchmark measures the fold, not a
// disk) with a realistic rule set.
func benchGate(b *testing.B, mode permission.Mode) (*Gate, permission.Scope) {
	b.Helper()
	ctx := context.Background()
	m := envtest.NewMem()
	for _, d := range []string{"/w", "/w/home", "/w/home/proj", "/w/home/proj/src", "/w/home/proj/.git"} {
		if err := m.Mkdir(ctx, d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	f, err := fence.New(ctx, fence.Config{Env: m, Root: "/w/home/proj"})
	if err != nil {
		b.Fatal(err)
	}
	rules, err := permission.ParseRules(
		[]string{"Bash(npm run test:*)", "Bash(git diff *)", "Bash(go test *)", "Edit(src/**)", "Read", "WebFetch(domain:docs.example.com)"},
		[]string{"Read(./secrets/**)", "Bash(rm -rf:*)", "Edit(//etc/**)", "Read(~/.ssh/**)"},
		[]string{"Bash(git push:*)", "Edit(./.github/**)"},
	)
	if err != nil {
		b.Fatal(err)
	}
	g, err := New(Config{Modes: FixedMode(mode), Rules: rules, Resolver: FenceResolver(f)})
	if err != nil {
		b.Fatal(err)
	}
	return g, ScopeOf(context.Background(), f, "/w/home")
}

func BenchmarkDecideWrite(b *testing.B) {
	g, scope := benchGate(b, permission.ModeAcceptEdits)
	ctx := context.Background()
	c, err := g.Prepare(ctx, permission.Call{Tool: "Write", Effect: tools.EffectWrite, Input: json.RawMessage(`{"file_path":"src/main.go","content":"package main"}`), Scope: scope})
	if err != nil {
		b.Fatal(err)
	}
	if d := g.Decide(ctx, c); d.Behavior != permission.Allow {
		b.Fatalf("Decide = %+v", d)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g.Decide(ctx, c)
	}
}

// bench20Command is a 20-segment command an allow rule set covers: each segment is
// allowed by a rule or read-only.
func bench20Command() string {
	parts := make([]string, 20)
	for i := range parts {
		switch i % 4 {
		case 0:
			parts[i] = "git diff --stat -- src"
		case 1:
			parts[i] = "ls -la src"
		case 2:
			parts[i] = "grep -rn TODO src"
		default:
			parts[i] = "npm run test -- --watch=false"
		}
	}
	return strings.Join(parts, " && ")
}

func BenchmarkDecideBash20Segments(b *testing.B) {
	g, scope := benchGate(b, permission.ModeDefault)
	ctx := context.Background()
	in, _ := json.Marshal(map[string]string{"command": bench20Command()})
	c := permission.Call{Tool: "Bash", Effect: tools.EffectExec, Input: in, Scope: scope}
	if d := g.Decide(ctx, c); d.Behavior != permission.Allow {
		b.Fatalf("Decide = %+v", d)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g.Decide(ctx, c)
	}
}

// BenchmarkShellscanBaseline20Segments measures what the gate cannot avoid for the
// command of BenchmarkDecideBash20Segments: parsing it and listing its targets. The
// difference between the two is the fold's own cost.
func BenchmarkShellscanBaseline20Segments(b *testing.B) {
	cmd := bench20Command()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		s, err := shellscan.Parse(cmd)
		if err != nil {
			b.Fatal(err)
		}
		shellscan.WriteTargets(s)
		shellscan.ReadTargets(s)
	}
}
