package permission

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema/tools"
)

// verdict renders a decision for table comparison: "allow", "deny", "ask", and "ask!"
// for a person-only question.
func verdict(d Decision) string {
	if d.Behavior == Ask && d.PersonOnly {
		return "ask!"
	}
	return string(d.Behavior)
}

var matrixModes = []Mode{ModeDefault, ModeAcceptEdits, ModePlan, ModeAuto, ModeDontAsk, ModeBypassPermissions}

// TestModeToolMatrix is the full mode × tool-kind table for the tools other than Bash
// (shell_test.go holds Bash's rows), with no rules and no hooks.
func TestModeToolMatrix(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	type build func(g *Gate) Call
	file := func(tool, path string) build { return func(g *Gate) Call { return l.fileCall(g, tool, path) } }
	other := func(c Call) build {
		return func(*Gate) Call { c.Scope = l.scope; return c }
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
		{"mcp tool", other(Call{Tool: "mcp__gh__create_issue", DeclaredBy: DeclaredByMCP, Effect: tools.EffectExec, EffectDefaulted: true}),
			[6]string{"ask", "ask", "ask!", "ask", "ask", "allow"}},
		{"mcp tool with readOnlyHint", other(Call{Tool: "mcp__gh__list", DeclaredBy: DeclaredByMCP, Effect: tools.EffectExec, EffectDefaulted: true, ReadOnlyHint: true}),
			[6]string{"ask", "ask", "ask", "ask", "ask", "allow"}},
		{"mcp hint under a declared effect", other(Call{Tool: "mcp__gh__push", DeclaredBy: DeclaredByMCP, Effect: tools.EffectExec, ReadOnlyHint: true}),
			[6]string{"ask", "ask", "ask!", "ask", "ask", "allow"}},
		{"mcp tool declared read", other(Call{Tool: "mcp__gh__get", DeclaredBy: DeclaredByMCP, Effect: tools.EffectRead}),
			[6]string{"ask", "ask", "ask", "ask", "ask", "allow"}},
		{"caller tool, exec", other(Call{Tool: "deploy", DeclaredBy: DeclaredByCaller, Effect: tools.EffectExec}),
			[6]string{"allow", "allow", "ask!", "allow", "allow", "allow"}},
		{"caller tool, read", other(Call{Tool: "lookup", DeclaredBy: DeclaredByCaller, Effect: tools.EffectRead}),
			[6]string{"allow", "allow", "allow", "allow", "allow", "allow"}},
		{"caller tool, passthrough", other(Call{Tool: "ticket", DeclaredBy: DeclaredByCaller, Effect: tools.EffectWrite, Passthrough: true}),
			[6]string{"ask", "ask", "ask!", "ask", "ask", "allow"}},
		{"engine exec tool", other(Call{Tool: "TodoWrite", Effect: tools.EffectExec}),
			[6]string{"allow", "allow", "allow", "allow", "allow", "allow"}},
		{"ExitPlanMode", other(Call{Tool: "ExitPlanMode", Effect: tools.EffectRead, Input: json.RawMessage(`{"plan":"x"}`)}),
			[6]string{"allow", "allow", "ask!", "allow", "allow", "allow"}},
		{"EnterPlanMode", other(Call{Tool: "EnterPlanMode", Effect: tools.EffectRead}),
			[6]string{"allow", "allow", "allow", "allow", "allow", "allow"}},
	}
	for _, row := range rows {
		for i, m := range matrixModes {
			g := l.gate(m, RuleSet{})
			d := g.Decide(context.Background(), row.call(g))
			if got := verdict(d); got != row.want[i] {
				t.Errorf("%s under %s = %s (%s: %s), want %s", row.kind, m, got, d.Reason, d.Message, row.want[i])
			}
			if d.Behavior == Ask && d.Gate == "" {
				t.Errorf("%s under %s: an ask without a gate", row.kind, m)
			}
			if d.Message == "" {
				t.Errorf("%s under %s: no sentence", row.kind, m)
			}
		}
	}
	// The plan review is its own question, and plan's own questions say so.
	g := l.gate(ModePlan, RuleSet{})
	d := g.Decide(context.Background(), Call{Tool: "ExitPlanMode", Effect: tools.EffectRead, Scope: l.scope})
	if d.Gate != GatePlanReview || d.Reason != ReasonMode {
		t.Errorf("ExitPlanMode under plan = %+v", d)
	}
	d = g.Decide(context.Background(), l.fileCall(g, "Write", "src/a.go"))
	if d.Gate != GateToolPermission || d.Reason != ReasonMode || !strings.Contains(d.Message, "Plan mode") {
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
			if d.Behavior != Deny || d.Reason != ReasonRule || d.Rule != "Read(./secret/**)" {
				t.Errorf("%s %s under %s = %+v, want deny by the rule", tc.tool, tc.path, m, d)
			}
		}
		// Outside the denied directory the allow rules stand (plan's own question
		// excepted: no rule answers it).
		d := g.Decide(context.Background(), l.fileCall(g, "Edit", "src/ok.go"))
		if want := map[bool]string{true: "ask!", false: "allow"}[m == ModePlan]; verdict(d) != want {
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
	g := l.gate(ModeDefault, mustRules(t, []string{"Edit(./pub/**)"}, nil, nil))
	if d := g.Decide(context.Background(), l.fileCall(g, "Write", "pub/a.txt")); d.Behavior != Allow || d.Reason != ReasonRule {
		t.Errorf("pub/a.txt = %+v", d)
	}
	if d := g.Decide(context.Background(), l.fileCall(g, "Write", "pub/ext/a.txt")); d.Behavior != Ask {
		t.Errorf("a write through a link out of the allowed directory = %+v", d)
	}
	// The other way round: a deny rule names the link's spelling too.
	g = l.gate(ModeBypassPermissions, mustRules(t, nil, []string{"Edit(./pub/**)"}, nil))
	if d := g.Decide(context.Background(), l.fileCall(g, "Write", "pub/ext/a.txt")); d.Behavior != Deny {
		t.Errorf("a deny rule missed the spelled path = %+v", d)
	}
	if d := g.Decide(context.Background(), l.fileCall(g, "Write", "src/a.txt")); d.Behavior != Allow {
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
		if d := g.Decide(ctx, l.fileCall(g, "Write", "src/a.go")); d.Behavior != Deny {
			t.Errorf("%s: deny lost: %+v", m, d)
		}
		d := g.Decide(ctx, l.fileCall(g, "Write", "docs/a.md"))
		want := "ask"
		if m == ModePlan {
			want = "ask" // the ask rule (station 3) precedes the plan gate
		}
		if verdict(d) != want || d.Reason != ReasonRule {
			t.Errorf("%s: ask rule: %+v", m, d)
		}
		if d := g.Decide(ctx, l.fileCall(g, "Edit", "docs/a.md")); m != ModePlan && d.Behavior != Allow {
			t.Errorf("%s: allow rule: %+v", m, d)
		}
	}
	// An allow rule does not answer the plan question or a safety question.
	g := l.gate(ModePlan, mustRules(t, []string{"Write"}, nil, nil))
	if d := g.Decide(ctx, l.fileCall(g, "Write", "a.txt")); verdict(d) != "ask!" {
		t.Errorf("an allow rule answered the plan question: %+v", d)
	}
	g = l.gate(ModeAcceptEdits, mustRules(t, []string{"Write"}, nil, nil))
	if d := g.Decide(ctx, l.fileCall(g, "Write", ".git/hooks/pre-commit")); verdict(d) != "ask!" || d.Reason != ReasonSafety {
		t.Errorf("an allow rule answered a protected-path question: %+v", d)
	}
}

func TestHooks(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	ctx := context.Background()
	answer := func(d HookDecision, err error) Hook {
		return func(context.Context, Call) (HookDecision, error) { return d, err }
	}
	tests := []struct {
		name   string
		mode   Mode
		rules  RuleSet
		hooks  []Hook
		path   string
		want   string
		reason Reason
	}{
		{"allow", ModeDefault, RuleSet{}, []Hook{answer(HookDecision{Behavior: Allow}, nil)}, "a.txt", "allow", ReasonHook},
		{"deny under bypass", ModeBypassPermissions, RuleSet{}, []Hook{answer(HookDecision{Behavior: Deny, Reason: "no"}, nil)}, "a.txt", "deny", ReasonHook},
		{"ask under bypass", ModeBypassPermissions, RuleSet{}, []Hook{answer(HookDecision{Behavior: Ask}, nil)}, "a.txt", "ask", ReasonHook},
		{"no opinion", ModeAcceptEdits, RuleSet{}, []Hook{answer(HookDecision{}, nil)}, "a.txt", "allow", ReasonMode},
		{"error fails closed", ModeBypassPermissions, RuleSet{}, []Hook{answer(HookDecision{Behavior: Allow}, errors.New("down"))}, "a.txt", "deny", ReasonHook},
		{"panic fails closed", ModeBypassPermissions, RuleSet{}, []Hook{func(context.Context, Call) (HookDecision, error) { panic("boom") }}, "a.txt", "deny", ReasonHook},
		{"odd word fails closed", ModeBypassPermissions, RuleSet{}, []Hook{answer(HookDecision{Behavior: "yes"}, nil)}, "a.txt", "deny", ReasonHook},
		{"deny rule before hook allow", ModeDefault, mustRules(t, nil, []string{"Write"}, nil), []Hook{answer(HookDecision{Behavior: Allow}, nil)}, "a.txt", "deny", ReasonRule},
		{"ask rule after hook allow", ModeDefault, mustRules(t, nil, nil, []string{"Write"}), []Hook{answer(HookDecision{Behavior: Allow}, nil)}, "a.txt", "ask", ReasonRule},
		{"hook allow does not answer plan", ModePlan, RuleSet{}, []Hook{answer(HookDecision{Behavior: Allow}, nil)}, "a.txt", "ask!", ReasonMode},
		{"hook allow does not answer safety", ModeDefault, RuleSet{}, []Hook{answer(HookDecision{Behavior: Allow}, nil)}, ".git/config", "ask!", ReasonSafety},
		{"a later deny wins over an earlier allow", ModeDefault, RuleSet{}, []Hook{answer(HookDecision{Behavior: Allow}, nil), answer(HookDecision{Behavior: Deny}, nil)}, "a.txt", "deny", ReasonHook},
		{"ask among allows", ModeDefault, RuleSet{}, []Hook{answer(HookDecision{Behavior: Ask}, nil), answer(HookDecision{Behavior: Allow}, nil)}, "a.txt", "ask", ReasonHook},
	}
	for _, tt := range tests {
		g := l.gate(tt.mode, tt.rules, tt.hooks...)
		d := g.Decide(ctx, l.fileCall(g, "Write", tt.path))
		if verdict(d) != tt.want || d.Reason != tt.reason {
			t.Errorf("%s: %+v, want %s by %s", tt.name, d, tt.want, tt.reason)
		}
	}
}

func TestHookRewriteMeetsDenyRulesAgain(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	ctx := context.Background()
	rewrite := func(path string) Hook {
		return func(_ context.Context, c Call) (HookDecision, error) {
			in, _ := json.Marshal(map[string]string{"file_path": path, "content": "x"})
			return HookDecision{Behavior: Allow, UpdatedInput: in}, nil
		}
	}
	g := l.gate(ModeBypassPermissions, mustRules(t, nil, []string{"Edit(./secret/**)"}, nil), rewrite("secret/k"))
	if d := g.Decide(ctx, l.fileCall(g, "Write", "a.txt")); d.Behavior != Deny || d.Rule != "Edit(./secret/**)" {
		t.Errorf("a rewrite into a denied path = %+v", d)
	}
	g = l.gate(ModeDefault, RuleSet{}, rewrite("b.txt"))
	d := g.Decide(ctx, l.fileCall(g, "Write", "a.txt"))
	if d.Behavior != Allow || !strings.Contains(string(d.UpdatedInput), "b.txt") {
		t.Errorf("the rewrite is not carried: %+v", d)
	}
	// A rewrite onto a protected path meets the safety station.
	g = l.gate(ModeAcceptEdits, RuleSet{}, rewrite(".git/config"))
	if d := g.Decide(ctx, l.fileCall(g, "Write", "a.txt")); verdict(d) != "ask!" || !strings.Contains(string(d.UpdatedInput), ".git/config") {
		t.Errorf("a rewrite onto a protected path = %+v", d)
	}
	// A rewrite that is not JSON fails closed.
	bad := func(context.Context, Call) (HookDecision, error) {
		return HookDecision{Behavior: Allow, UpdatedInput: json.RawMessage(`{`)}, nil
	}
	g = l.gate(ModeBypassPermissions, RuleSet{}, bad)
	if d := g.Decide(ctx, l.fileCall(g, "Write", "a.txt")); d.Behavior != Deny {
		t.Errorf("an invalid rewrite = %+v", d)
	}
}

func TestExemptDirsSwallowedRoot(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	ctx := context.Background()
	g := l.gate(ModeDefault, RuleSet{})
	for _, exempt := range []string{l.root, l.home, "/"} {
		s := l.scope
		s.ExemptDirs = append([]string{exempt}, s.ExemptDirs...)
		c := l.fileCall(g, "Write", "src/a.go")
		c.Scope = s
		if d := g.Decide(ctx, c); d.Behavior != Ask {
			t.Errorf("exempt %s swallowed the root: %+v", exempt, d)
		}
		screened, notices := ScreenExemptDirs(s)
		if len(notices) != 1 || notices[0].Code != CodeExemptDirSwallowsRoot || len(screened.ExemptDirs) != 1 || screened.ExemptDirs[0] != l.scratch {
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
	if d := g.Decide(ctx, c); d.Behavior != Ask {
		t.Errorf("a non-canonical exempt directory exempted: %+v", d)
	}
}

func TestOtherRuleKinds(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	ctx := context.Background()
	fetch := func(g *Gate, url string) Call {
		in, _ := json.Marshal(map[string]string{"url": url})
		c, err := g.Prepare(ctx, Call{Tool: "WebFetch", DeclaredBy: DeclaredByCaller, Effect: tools.EffectRead, Passthrough: true, Input: in, Scope: l.scope})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	g := l.gate(ModeDefault, mustRules(t, []string{"WebFetch(domain:docs.example.com)"}, []string{"WebFetch(domain:*.evil.org)"}, nil))
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
	mcp := func(name string) Call {
		return Call{Tool: name, DeclaredBy: DeclaredByMCP, Effect: tools.EffectExec, EffectDefaulted: true, Scope: l.scope}
	}
	g = l.gate(ModeBypassPermissions, mustRules(t, []string{"mcp__ok"}, []string{"mcp__gh"}, nil))
	for _, tt := range []struct{ name, want string }{
		{"mcp__gh__create_issue", "deny"},
		{"mcp__ghx__create_issue", "allow"},
		{"mcp__ok__x", "allow"},
	} {
		if d := g.Decide(ctx, mcp(tt.name)); verdict(d) != tt.want {
			t.Errorf("%s = %+v", tt.name, d)
		}
	}
	g = l.gate(ModeDefault, mustRules(t, []string{"mcp__ok__*"}, nil, nil))
	if d := g.Decide(ctx, mcp("mcp__ok__x")); d.Behavior != Allow || d.Reason != ReasonRule {
		t.Errorf("an allowed MCP server's tool = %+v", d)
	}
	if d := g.Decide(ctx, mcp("mcp__other__x")); d.Behavior != Ask || d.Message != UnstatedAskMessage("mcp__other__x") {
		t.Errorf("an unstated MCP call = %+v", d)
	}
	c := mcp("mcp__other__x")
	c.PassthroughQuestion = "Execute skill: deploy"
	if d := g.Decide(ctx, c); d.Message != "Execute skill: deploy" {
		t.Errorf("the tool's own question was not put: %+v", d)
	}
}

func TestDecideReadsTheInput(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	ctx := context.Background()
	g := l.gate(ModeBypassPermissions, mustRules(t, nil, []string{"Read(./secret/**)", "WebFetch(domain:evil.org)", "Bash(rm:*)"}, nil))
	for _, c := range []Call{
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
		if d := g.Decide(ctx, c); d.Behavior != Deny {
			t.Errorf("%s %s = %+v", c.Tool, c.Input, d)
		}
	}
}

func TestNewGateNeedsModes(t *testing.T) {
	t.Parallel()
	if _, err := NewGate(GateConfig{}); err == nil {
		t.Error("NewGate without a mode source succeeded")
	}
}

func TestGateReadsModeLive(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	ctx := context.Background()
	mc := mustController(t, ModeDefault, nil, ControllerOptions{})
	g, err := NewGate(GateConfig{Modes: mc, Resolver: FenceResolver(l.fence)})
	if err != nil {
		t.Fatal(err)
	}
	c := l.fileCall(g, "Write", "a.txt")
	if d := g.Decide(ctx, c); d.Behavior != Ask {
		t.Fatalf("default: %+v", d)
	}
	mc.Steer(ctx, ModeAcceptEdits)
	if d := g.Decide(ctx, c); d.Behavior != Allow {
		t.Fatalf("after the steer: %+v", d)
	}
	mc.Steer(ctx, ModePlan)
	if d := g.Decide(ctx, c); verdict(d) != "ask!" {
		t.Fatalf("after the plan steer: %+v", d)
	}
}
