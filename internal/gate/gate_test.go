package gate

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/tools"
)

// verdict renders a decision for table comparison: "allow", "deny", "ask", and "ask!"
// for a person-only question.
func verdict(d permission.Decision) string {
	if d.Behavior == permission.Ask && d.PersonOnly {
		return "ask!"
	}
	return string(d.Behavior)
}

var matrixModes = []permission.Mode{permission.ModeDefault, permission.ModeAcceptEdits, permission.ModePlan, permission.ModeAuto, permission.ModeDontAsk, permission.ModeBypassPermissions}

// TestModeToolMatrix is the full mode × tool-kind table for the tools other than Bash
// (shell_test.go holds Bash's rows), with no rules and no hooks.
func TestModeToolMatrix(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	type build func(g *Gate) permission.Call
	file := func(tool, path string) build {
		return func(g *Gate) permission.Call { return l.fileCall(g, tool, path) }
	}
	other := func(c permission.Call) build {
		return func(*Gate) permission.Call { c.Scope = l.scope; return c }
	}
	rows := []struct {
		kind string
		call build
		want [6]string // default, acceptEdits, plan, auto, dontAsk, bypassPermissions
	}{
		{"read", file("Read", "README.md"), [6]string{"allow", "allow", "allow", "allow", "allow", "allow"}},
		{"glob", file("Glob", ""), [6]string{"allow", "allow", "allow", "allow", "allow", "allow"}},
		{"write inside", file("Write", "src/a.go"), [6]string{"ask", "allow", "ask!", "ask", "ask", "allow"}},
		{"edit inside", file("Edit", "src/a.go"), [6]string{"ask", "allow", "ask!", "ask", "ask", "allow"}},
		{"notebook inside", file("NotebookEdit", "n.ipynb"), [6]string{"ask", "allow", "ask!", "ask", "ask", "allow"}},
		{"write outside", file("Write", filepath.Join(l.outside, "x")), [6]string{"ask", "ask", "ask!", "ask", "ask", "allow"}},
		{"write protected", file("Write", ".git/config"), [6]string{"ask!", "ask!", "ask!", "ask!", "ask!", "allow"}},
		{"write rc file", file("Write", filepath.Join(l.home, ".bashrc")), [6]string{"ask!", "ask!", "ask!", "ask!", "ask!", "allow"}},
		{"write exempt", file("Write", filepath.Join(l.scratch, "notes.md")), [6]string{"allow", "allow", "allow", "allow", "allow", "allow"}},
		{"mcp tool", other(permission.Call{Tool: "mcp__gh__create_issue", DeclaredBy: permission.DeclaredByMCP, Effect: tools.EffectExec, EffectDefaulted: true}),
			[6]string{"ask", "ask", "ask!", "ask", "ask", "allow"}},
		{"mcp tool with readOnlyHint", other(permission.Call{Tool: "mcp__gh__list", DeclaredBy: permission.DeclaredByMCP, Effect: tools.EffectExec, EffectDefaulted: true, ReadOnlyHint: true}),
			[6]string{"ask", "ask", "ask", "ask", "ask", "allow"}},
		{"mcp hint under a declared effect", other(permission.Call{Tool: "mcp__gh__push", DeclaredBy: permission.DeclaredByMCP, Effect: tools.EffectExec, ReadOnlyHint: true}),
			[6]string{"ask", "ask", "ask!", "ask", "ask", "allow"}},
		{"mcp tool declared read", other(permission.Call{Tool: "mcp__gh__get", DeclaredBy: permission.DeclaredByMCP, Effect: tools.EffectRead}),
			[6]string{"ask", "ask", "ask", "ask", "ask", "allow"}},
		{"caller tool, exec", other(permission.Call{Tool: "deploy", DeclaredBy: permission.DeclaredByCaller, Effect: tools.EffectExec}),
			[6]string{"allow", "allow", "ask!", "allow", "allow", "allow"}},
		{"caller tool, read", other(permission.Call{Tool: "lookup", DeclaredBy: permission.DeclaredByCaller, Effect: tools.EffectRead}),
			[6]string{"allow", "allow", "allow", "allow", "allow", "allow"}},
		{"caller tool, passthrough", other(permission.Call{Tool: "ticket", DeclaredBy: permission.DeclaredByCaller, Effect: tools.EffectWrite, Passthrough: true}),
			[6]string{"ask", "ask", "ask!", "ask", "ask", "allow"}},
		{"engine exec tool", other(permission.Call{Tool: "TodoWrite", Effect: tools.EffectExec}),
			[6]string{"allow", "allow", "allow", "allow", "allow", "allow"}},
		{"ExitPlanMode", other(permission.Call{Tool: "ExitPlanMode", Effect: tools.EffectRead, Input: json.RawMessage(`{"plan":"x"}`)}),
			[6]string{"allow", "allow", "ask!", "allow", "allow", "allow"}},
		{"EnterPlanMode", other(permission.Call{Tool: "EnterPlanMode", Effect: tools.EffectRead}),
			[6]string{"allow", "allow", "allow", "allow", "allow", "allow"}},
	}
	for _, row := range rows {
		for i, m := range matrixModes {
			g := l.gate(m, permission.RuleSet{})
			d := g.Decide(context.Background(), row.call(g))
			if got := verdict(d); got != row.want[i] {
				t.Errorf("%s under %s = %s (%s: %s), want %s", row.kind, m, got, d.DecidedBy, d.Reason, row.want[i])
			}
			if d.Behavior == permission.Ask && d.Gate == "" {
				t.Errorf("%s under %s: an ask without a gate", row.kind, m)
			}
			if d.Reason == "" {
				t.Errorf("%s under %s: no sentence", row.kind, m)
			}
		}
	}
	// The plan review is its own question, and plan's own questions say so.
	g := l.gate(permission.ModePlan, permission.RuleSet{})
	d := g.Decide(context.Background(), permission.Call{Tool: "ExitPlanMode", Effect: tools.EffectRead, Scope: l.scope})
	if d.Gate != permission.GatePlanReview || d.DecidedBy != permission.LayerMode {
		t.Errorf("ExitPlanMode under plan = %+v", d)
	}
	d = g.Decide(context.Background(), l.fileCall(g, "Write", "src/a.go"))
	if d.Gate != permission.GateToolPermission || d.DecidedBy != permission.LayerMode || !strings.Contains(d.Reason, "Plan mode") {
		t.Errorf("a write under plan = %+v", d)
	}
}

func TestDenyReadRuleStopsWritesAndSymlinkReads(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	secret := l.write("secret/key.txt", "k")
	// A link inside the root, outside the denied directory, pointing into it.
	link := filepath.Join(l.root, "innocent.txt")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	rules := mustRules(t, []string{"Read", "Edit", "Write"}, []string{"Read(./secret/**)"}, nil)
	for _, m := range matrixModes {
		g := l.gate(m, rules)
		for _, tc := range []struct{ tool, path string }{
			{"Edit", "secret/key.txt"},
			{"Write", "secret/new.txt"},
			{"MultiEdit", "./secret/key.txt"},
			{"NotebookEdit", "secret/n.ipynb"},
			{"Read", "secret/key.txt"},
			{"Read", "innocent.txt"},
			{"Write", "innocent.txt"},
			{"Grep", "secret"},
			{"Read", filepath.Join(l.root, "src", "..", "secret", "key.txt")},
		} {
			d := g.Decide(context.Background(), l.fileCall(g, tc.tool, tc.path))
			if d.Behavior != permission.Deny || d.DecidedBy != permission.LayerRule || d.Rule != "Read(./secret/**)" {
				t.Errorf("%s %s under %s = %+v, want deny by the rule", tc.tool, tc.path, m, d)
			}
		}
		// Outside the denied directory the allow rules stand (plan's own question
		// excepted: no rule answers it).
		d := g.Decide(context.Background(), l.fileCall(g, "Edit", "src/ok.go"))
		if want := map[bool]string{true: "ask!", false: "allow"}[m == permission.ModePlan]; verdict(d) != want {
			t.Errorf("Edit src/ok.go under %s = %+v, want %s", m, d, want)
		}
	}
}

func TestAllowPathRuleMustMatchBothSpellings(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	if err := os.MkdirAll(filepath.Join(l.root, "pub"), 0o755); err != nil {
		t.Fatal(err)
	}
	// pub/ext points at a directory the allow rule does not name.
	if err := os.Symlink(filepath.Join(l.root, "src"), filepath.Join(l.root, "pub", "ext")); err != nil {
		t.Fatal(err)
	}
	g := l.gate(permission.ModeDefault, mustRules(t, []string{"Edit(./pub/**)"}, nil, nil))
	if d := g.Decide(context.Background(), l.fileCall(g, "Write", "pub/a.txt")); d.Behavior != permission.Allow || d.DecidedBy != permission.LayerRule {
		t.Errorf("pub/a.txt = %+v", d)
	}
	if d := g.Decide(context.Background(), l.fileCall(g, "Write", "pub/ext/a.txt")); d.Behavior != permission.Ask {
		t.Errorf("a write through a link out of the allowed directory = %+v", d)
	}
	// The other way round: a deny rule names the link's spelling too.
	g = l.gate(permission.ModeBypassPermissions, mustRules(t, nil, []string{"Edit(./pub/**)"}, nil))
	if d := g.Decide(context.Background(), l.fileCall(g, "Write", "pub/ext/a.txt")); d.Behavior != permission.Deny {
		t.Errorf("a deny rule missed the spelled path = %+v", d)
	}
	if d := g.Decide(context.Background(), l.fileCall(g, "Write", "src/a.txt")); d.Behavior != permission.Allow {
		t.Errorf("src/a.txt under bypass = %+v", d)
	}
}

func TestRuleOrder(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	ctx := context.Background()
	// Deny beats ask beats allow, across layers, in every mode.
	layers := mustRules(t, []string{"Write"}, nil, nil).Merge(mustRules(t, nil, nil, []string{"Write"}), mustRules(t, []string{"Edit"}, []string{"Edit(src/**)"}, nil))
	for _, m := range matrixModes {
		g := l.gate(m, layers)
		if d := g.Decide(ctx, l.fileCall(g, "Write", "src/a.go")); d.Behavior != permission.Deny {
			t.Errorf("%s: deny lost: %+v", m, d)
		}
		d := g.Decide(ctx, l.fileCall(g, "Write", "docs/a.md"))
		want := "ask"
		if m == permission.ModePlan {
			want = "ask" // the ask rule (station 3) precedes the plan gate
		}
		if verdict(d) != want || d.DecidedBy != permission.LayerRule {
			t.Errorf("%s: ask rule: %+v", m, d)
		}
		if d := g.Decide(ctx, l.fileCall(g, "Edit", "docs/a.md")); m != permission.ModePlan && d.Behavior != permission.Allow {
			t.Errorf("%s: allow rule: %+v", m, d)
		}
	}
	// An allow rule does not answer the plan question or a safety question.
	g := l.gate(permission.ModePlan, mustRules(t, []string{"Write"}, nil, nil))
	if d := g.Decide(ctx, l.fileCall(g, "Write", "a.txt")); verdict(d) != "ask!" {
		t.Errorf("an allow rule answered the plan question: %+v", d)
	}
	g = l.gate(permission.ModeAcceptEdits, mustRules(t, []string{"Write"}, nil, nil))
	if d := g.Decide(ctx, l.fileCall(g, "Write", ".git/hooks/pre-commit")); verdict(d) != "ask!" || d.DecidedBy != permission.LayerSafety {
		t.Errorf("an allow rule answered a protected-path question: %+v", d)
	}
}

func TestHooks(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	ctx := context.Background()
	answer := func(d permission.HookDecision, err error) permission.Hook {
		return func(context.Context, permission.Call) (permission.HookDecision, error) { return d, err }
	}
	tests := []struct {
		name   string
		mode   permission.Mode
		rules  permission.RuleSet
		hooks  []permission.Hook
		path   string
		want   string
		reason permission.Layer
	}{
		{"allow", permission.ModeDefault, permission.RuleSet{}, []permission.Hook{answer(permission.HookDecision{Behavior: permission.Allow}, nil)}, "a.txt", "allow", permission.LayerHook},
		{"deny under bypass", permission.ModeBypassPermissions, permission.RuleSet{}, []permission.Hook{answer(permission.HookDecision{Behavior: permission.Deny, Reason: "no"}, nil)}, "a.txt", "deny", permission.LayerHook},
		{"ask under bypass", permission.ModeBypassPermissions, permission.RuleSet{}, []permission.Hook{answer(permission.HookDecision{Behavior: permission.Ask}, nil)}, "a.txt", "ask", permission.LayerHook},
		{"no opinion", permission.ModeAcceptEdits, permission.RuleSet{}, []permission.Hook{answer(permission.HookDecision{}, nil)}, "a.txt", "allow", permission.LayerMode},
		{"error fails closed", permission.ModeBypassPermissions, permission.RuleSet{}, []permission.Hook{answer(permission.HookDecision{Behavior: permission.Allow}, errors.New("down"))}, "a.txt", "deny", permission.LayerHook},
		{"panic fails closed", permission.ModeBypassPermissions, permission.RuleSet{}, []permission.Hook{func(context.Context, permission.Call) (permission.HookDecision, error) { panic("boom") }}, "a.txt", "deny", permission.LayerHook},
		{"odd word fails closed", permission.ModeBypassPermissions, permission.RuleSet{}, []permission.Hook{answer(permission.HookDecision{Behavior: "yes"}, nil)}, "a.txt", "deny", permission.LayerHook},
		{"deny rule before hook allow", permission.ModeDefault, mustRules(t, nil, []string{"Write"}, nil), []permission.Hook{answer(permission.HookDecision{Behavior: permission.Allow}, nil)}, "a.txt", "deny", permission.LayerRule},
		{"ask rule after hook allow", permission.ModeDefault, mustRules(t, nil, nil, []string{"Write"}), []permission.Hook{answer(permission.HookDecision{Behavior: permission.Allow}, nil)}, "a.txt", "ask", permission.LayerRule},
		{"hook allow does not answer plan", permission.ModePlan, permission.RuleSet{}, []permission.Hook{answer(permission.HookDecision{Behavior: permission.Allow}, nil)}, "a.txt", "ask!", permission.LayerMode},
		{"hook allow does not answer safety", permission.ModeDefault, permission.RuleSet{}, []permission.Hook{answer(permission.HookDecision{Behavior: permission.Allow}, nil)}, ".git/config", "ask!", permission.LayerSafety},
		{"a later deny wins over an earlier allow", permission.ModeDefault, permission.RuleSet{}, []permission.Hook{answer(permission.HookDecision{Behavior: permission.Allow}, nil), answer(permission.HookDecision{Behavior: permission.Deny}, nil)}, "a.txt", "deny", permission.LayerHook},
		{"ask among allows", permission.ModeDefault, permission.RuleSet{}, []permission.Hook{answer(permission.HookDecision{Behavior: permission.Ask}, nil), answer(permission.HookDecision{Behavior: permission.Allow}, nil)}, "a.txt", "ask", permission.LayerHook},
	}
	for _, tt := range tests {
		g := l.gate(tt.mode, tt.rules, tt.hooks...)
		d := g.Decide(ctx, l.fileCall(g, "Write", tt.path))
		if verdict(d) != tt.want || d.DecidedBy != tt.reason {
			t.Errorf("%s: %+v, want %s by %s", tt.name, d, tt.want, tt.reason)
		}
	}
}

func TestHookRewriteMeetsDenyRulesAgain(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	ctx := context.Background()
	rewrite := func(path string) permission.Hook {
		return func(_ context.Context, c permission.Call) (permission.HookDecision, error) {
			in, _ := json.Marshal(map[string]string{"file_path": path, "content": "x"})
			return permission.HookDecision{Behavior: permission.Allow, UpdatedInput: in}, nil
		}
	}
	g := l.gate(permission.ModeBypassPermissions, mustRules(t, nil, []string{"Edit(./secret/**)"}, nil), rewrite("secret/k"))
	if d := g.Decide(ctx, l.fileCall(g, "Write", "a.txt")); d.Behavior != permission.Deny || d.Rule != "Edit(./secret/**)" {
		t.Errorf("a rewrite into a denied path = %+v", d)
	}
	g = l.gate(permission.ModeDefault, permission.RuleSet{}, rewrite("b.txt"))
	d := g.Decide(ctx, l.fileCall(g, "Write", "a.txt"))
	if d.Behavior != permission.Allow || !strings.Contains(string(d.UpdatedInput), "b.txt") {
		t.Errorf("the rewrite is not carried: %+v", d)
	}
	// A rewrite onto a protected path meets the safety station.
	g = l.gate(permission.ModeAcceptEdits, permission.RuleSet{}, rewrite(".git/config"))
	if d := g.Decide(ctx, l.fileCall(g, "Write", "a.txt")); verdict(d) != "ask!" || !strings.Contains(string(d.UpdatedInput), ".git/config") {
		t.Errorf("a rewrite onto a protected path = %+v", d)
	}
	// A rewrite that is not JSON fails closed.
	bad := func(context.Context, permission.Call) (permission.HookDecision, error) {
		return permission.HookDecision{Behavior: permission.Allow, UpdatedInput: json.RawMessage(`{`)}, nil
	}
	g = l.gate(permission.ModeBypassPermissions, permission.RuleSet{}, bad)
	if d := g.Decide(ctx, l.fileCall(g, "Write", "a.txt")); d.Behavior != permission.Deny {
		t.Errorf("an invalid rewrite = %+v", d)
	}
}

func TestExemptDirsSwallowedRoot(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	ctx := context.Background()
	g := l.gate(permission.ModeDefault, permission.RuleSet{})
	for _, exempt := range []string{l.root, l.home, "/"} {
		s := l.scope
		s.ExemptDirs = append([]string{exempt}, s.ExemptDirs...)
		c := l.fileCall(g, "Write", "src/a.go")
		c.Scope = s
		if d := g.Decide(ctx, c); d.Behavior != permission.Ask {
			t.Errorf("exempt %s swallowed the root: %+v", exempt, d)
		}
		screened, notices := ScreenExemptDirs(s)
		if len(notices) != 1 || notices[0].Code != permission.CodeExemptDirSwallowsRoot || len(screened.ExemptDirs) != 1 || screened.ExemptDirs[0] != l.scratch {
			t.Errorf("ScreenExemptDirs(%s) = %v, %v", exempt, screened.ExemptDirs, notices)
		}
	}
	// The admitted scratchpad is a write root and an exempt directory at once: it does
	// not swallow itself.
	if _, notices := ScreenExemptDirs(l.scope); len(notices) != 0 {
		t.Errorf("the scratchpad was screened out: %v", notices)
	}
	// An exempt directory that is not canonical exempts nothing.
	s := l.scope
	s.ExemptDirs = []string{l.scratch + "/"}
	c := l.fileCall(g, "Write", filepath.Join(l.scratch, "x"))
	c.Scope = s
	if d := g.Decide(ctx, c); d.Behavior != permission.Ask {
		t.Errorf("a non-canonical exempt directory exempted: %+v", d)
	}
}

func TestOtherRuleKinds(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	ctx := context.Background()
	fetch := func(g *Gate, url string) permission.Call {
		in, _ := json.Marshal(map[string]string{"url": url})
		c, err := g.Prepare(ctx, permission.Call{Tool: "WebFetch", DeclaredBy: permission.DeclaredByCaller, Effect: tools.EffectRead, Passthrough: true, Input: in, Scope: l.scope})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	g := l.gate(permission.ModeDefault, mustRules(t, []string{"WebFetch(domain:docs.example.com)"}, []string{"WebFetch(domain:*.evil.org)"}, nil))
	for _, tt := range []struct{ url, want string }{
		{"https://docs.example.com/a", "allow"},
		{"https://example.com/a", "ask"},
		{"https://x.evil.org/", "deny"},
		{"::nonsense", "deny"},
	} {
		if d := g.Decide(ctx, fetch(g, tt.url)); verdict(d) != tt.want {
			t.Errorf("WebFetch %s = %+v, want %s", tt.url, d, tt.want)
		}
	}
	mcp := func(name string) permission.Call {
		return permission.Call{Tool: name, DeclaredBy: permission.DeclaredByMCP, Effect: tools.EffectExec, EffectDefaulted: true, Scope: l.scope}
	}
	g = l.gate(permission.ModeBypassPermissions, mustRules(t, []string{"mcp__ok"}, []string{"mcp__gh"}, nil))
	for _, tt := range []struct{ name, want string }{
		{"mcp__gh__create_issue", "deny"},
		{"mcp__ghx__create_issue", "allow"},
		{"mcp__ok__x", "allow"},
	} {
		if d := g.Decide(ctx, mcp(tt.name)); verdict(d) != tt.want {
			t.Errorf("%s = %+v", tt.name, d)
		}
	}
	g = l.gate(permission.ModeDefault, mustRules(t, []string{"mcp__ok__*"}, nil, nil))
	if d := g.Decide(ctx, mcp("mcp__ok__x")); d.Behavior != permission.Allow || d.DecidedBy != permission.LayerRule {
		t.Errorf("an allowed MCP server's tool = %+v", d)
	}
	if d := g.Decide(ctx, mcp("mcp__other__x")); d.Behavior != permission.Ask || d.Reason != UnstatedAskMessage("mcp__other__x") {
		t.Errorf("an unstated MCP call = %+v", d)
	}
	c := mcp("mcp__other__x")
	c.PassthroughQuestion = "Execute skill: deploy"
	if d := g.Decide(ctx, c); d.Reason != "Execute skill: deploy" {
		t.Errorf("the tool's own question was not put: %+v", d)
	}
}

func TestDecideReadsTheInput(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	ctx := context.Background()
	g := l.gate(permission.ModeBypassPermissions, mustRules(t, nil, []string{"Read(./secret/**)", "WebFetch(domain:evil.org)", "Bash(rm:*)"}, nil))
	for _, c := range []permission.Call{
		// Paths not prepared: the gate reads them from the input.
		{Tool: "Write", Effect: tools.EffectWrite, Input: json.RawMessage(`{"file_path":"secret/a","content":"x"}`)},
		{Tool: "WebFetch", Effect: tools.EffectRead, Input: json.RawMessage(`{"url":"https://evil.org/x"}`)},
		// A command field that disagrees with the input: the input wins.
		{Tool: "Bash", Effect: tools.EffectExec, Command: "ls", Input: json.RawMessage(`{"command":"rm x"}`)},
		// Input the gate cannot read.
		{Tool: "Bash", Effect: tools.EffectExec, Input: json.RawMessage(`{"command":`)},
		{Tool: "Write", Effect: tools.EffectWrite, Input: json.RawMessage(`{"file_path":7}`)},
	} {
		c.Scope = l.scope
		if d := g.Decide(ctx, c); d.Behavior != permission.Deny {
			t.Errorf("%s %s = %+v", c.Tool, c.Input, d)
		}
	}
}

func TestNewGateNeedsModes(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{}); err == nil {
		t.Error("New without a mode source succeeded")
	}
}

func TestGateReadsModeLive(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	ctx := context.Background()
	mc := mustController(t, permission.ModeDefault, nil, ControllerOptions{})
	g, err := New(Config{Modes: mc, Resolver: FenceResolver(l.fence)})
	if err != nil {
		t.Fatal(err)
	}
	c := l.fileCall(g, "Write", "a.txt")
	if d := g.Decide(ctx, c); d.Behavior != permission.Ask {
		t.Fatalf("default: %+v", d)
	}
	mc.Steer(ctx, permission.ModeAcceptEdits)
	if d := g.Decide(ctx, c); d.Behavior != permission.Allow {
		t.Fatalf("after the steer: %+v", d)
	}
	mc.Steer(ctx, permission.ModePlan)
	if d := g.Decide(ctx, c); verdict(d) != "ask!" {
		t.Fatalf("after the plan steer: %+v", d)
	}
}
