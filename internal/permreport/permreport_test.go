package permreport

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/settings"
	"github.com/sema-agent/sema/tools"
)

func rules(t *testing.T, allow, deny, ask []string) permission.RuleSet {
	t.Helper()
	rs, err := permission.ParseRules(allow, deny, ask)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestSourcesOrderAndSeats(t *testing.T) {
	seats := Seats{
		Policy:     rules(t, []string{"Read"}, []string{"Bash(rm:*)"}, nil),
		Allowed:    rules(t, []string{"Grep"}, nil, nil),
		Disallowed: rules(t, nil, []string{"WebFetch"}, nil),
		Ask:        rules(t, nil, nil, []string{"Edit"}),
		Settings: []settings.Applied{{Path: "/r/.claude/settings.json", Layer: settings.Project, Rules: []settings.RuleFact{
			{Rule: "Bash(git push:*)", Behavior: permission.Allow, Applied: false},
			{Rule: "Write", Behavior: permission.Deny, Applied: true},
		}}},
	}
	got := Sources(seats)
	want := []string{
		"deny Bash(rm:*) policy", "deny WebFetch task_disallowed", "deny Write settings",
		"ask Edit task_ask",
		"allow Read policy", "allow Grep task_allowed", "allow Bash(git push:*) settings",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d sources: %+v", len(got), got)
	}
	for i, s := range got {
		if line := string(s.Behavior) + " " + s.Rule + " " + s.Origin; line != want[i] {
			t.Errorf("source %d: %q, want %q", i, line, want[i])
		}
	}
	last := got[len(got)-1]
	if last.Applied || last.Path != "/r/.claude/settings.json" || last.Layer != settings.Project || !got[0].Applied {
		t.Errorf("settings source: %+v", last)
	}
	if Sources(Seats{}) != nil {
		t.Error("no rules, yet sources")
	}
}

func TestNamedAndNotApplied(t *testing.T) {
	all := []Source{
		{Rule: "Bash(git push:*)", Behavior: permission.Allow, Applied: false},
		{Rule: "Bash(git push:*)", Behavior: permission.Deny, Applied: true},
		{Rule: "Read", Behavior: permission.Allow, Applied: true},
	}
	m := rules(t, nil, []string{"Bash(git push:*)"}, nil)
	if got := Named(all, m, true); len(got) != 1 || got[0].Behavior != permission.Deny {
		t.Errorf("applied: %+v", got)
	}
	if got := Named(all, m, false); got != nil {
		t.Errorf("a deny match named the unapplied allow: %+v", got)
	}
	left, err := NotApplied(all)
	if err != nil || len(left) != 1 || left[0].String() != "Bash(git push:*)" {
		t.Fatalf("not applied: %v %v", left, err)
	}
	if _, err := NotApplied([]Source{{Rule: "Bash(", Applied: false}}); err == nil {
		t.Error("an unparsable rule left out parsed")
	}
}

func TestCheckedCall(t *testing.T) {
	pc, assumed := CheckedCall("Read", nil)
	if pc.Effect != tools.EffectRead || pc.EffectDefaulted || string(pc.Input) != "{}" || len(assumed) != 0 {
		t.Errorf("Read: %+v %q", pc, assumed)
	}
	pc, assumed = CheckedCall("Bash", json.RawMessage(`{"command":"ls"}`))
	if pc.Effect != tools.EffectExec || len(assumed) != 1 || !strings.Contains(assumed[0], "sandbox") {
		t.Errorf("Bash: %+v %q", pc, assumed)
	}
	pc, _ = CheckedCall("WebFetch", nil)
	if pc.Effect != tools.EffectRead || !pc.Passthrough {
		t.Errorf("WebFetch: %+v", pc)
	}
	pc, assumed = CheckedCall("mcp__gh__create_issue", nil)
	if pc.Effect != tools.EffectExec || !pc.EffectDefaulted || pc.DeclaredBy != permission.DeclaredByMCP || len(assumed) != 1 {
		t.Errorf("MCP: %+v %q", pc, assumed)
	}
	pc, assumed = CheckedCall("Deploy", nil)
	if pc.Effect != tools.EffectExec || !pc.EffectDefaulted || len(assumed) != 1 || !strings.HasPrefix(assumed[0], "Deploy is not") {
		t.Errorf("unknown tool: %+v %q", pc, assumed)
	}
}

func TestUnrun(t *testing.T) {
	if got := Unrun(0, permission.ModeDefault); got != nil {
		t.Errorf("nothing unrun: %q", got)
	}
	if got := Unrun(2, permission.ModeAuto); len(got) != 2 {
		t.Errorf("hooks and classifier: %q", got)
	}
}
