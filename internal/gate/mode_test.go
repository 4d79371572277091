package gate

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/shellscan"
)

func TestModePolicyOf(t *testing.T) {
	t.Parallel()
	files := []string{"mkdir", "touch", "rm", "rmdir", "mv", "cp", "sed"}
	tests := []struct {
		mode permission.Mode
		want ModePolicy
	}{
		{permission.ModeDefault, ModePolicy{WriteGate: WriteGateAsk, Unstated: UnstatedAsk}},
		{permission.ModeAcceptEdits, ModePolicy{WriteGate: WriteGateAcceptRoot, FileCommands: files, Unstated: UnstatedAsk}},
		{permission.ModePlan, ModePolicy{EnablePlanMode: true, WriteGate: WriteGatePlan, Unstated: UnstatedAsk}},
		{permission.ModeAuto, ModePolicy{WriteGate: WriteGateAsk, Unstated: UnstatedAsk}},
		{permission.ModeDontAsk, ModePolicy{WriteGate: WriteGateAsk, Unstated: UnstatedAsk}},
		{permission.ModeBypassPermissions, ModePolicy{WriteGate: WriteGateNone, WriteFace: fence.FaceOpen, Unstated: UnstatedNone}},
	}
	if len(tests) != len(permission.Modes()) {
		t.Fatalf("the table covers %d modes, there are %d", len(tests), len(permission.Modes()))
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, ModePolicyOf(tt.mode)); diff != "" {
				t.Errorf("ModePolicyOf(%s) (-want +got):\n%s", tt.mode, diff)
			}
		})
	}
	// The table's set is the one the shell analysis reads.
	if diff := cmp.Diff(shellscan.FileCommands, ModePolicyOf(permission.ModeAcceptEdits).FileCommands); diff != "" {
		t.Errorf("acceptEdits file commands differ from shellscan.FileCommands:\n%s", diff)
	}
	// The returned list is a copy: changing it changes no later answer.
	p := ModePolicyOf(permission.ModeAcceptEdits)
	p.FileCommands[0] = "curl"
	if ModePolicyOf(permission.ModeAcceptEdits).FileCommands[0] != "mkdir" {
		t.Error("ModePolicyOf shares its FileCommands slice")
	}
}

func TestClamp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		req, ceil permission.Mode
		want      permission.Mode
		folded    bool
	}{
		{"", "", permission.ModeDefault, false},
		{permission.ModeAuto, "", permission.ModeAuto, false},
		{"", permission.ModeAcceptEdits, permission.ModeAcceptEdits, false},
		{permission.ModeBypassPermissions, permission.ModeDefault, permission.ModeDefault, true},
		{permission.ModeBypassPermissions, permission.ModeBypassPermissions, permission.ModeBypassPermissions, false},
		{permission.ModeDefault, permission.ModeBypassPermissions, permission.ModeDefault, false},
		{permission.ModeAcceptEdits, permission.ModeDefault, permission.ModeDefault, true},
		{permission.ModeDontAsk, permission.ModeDefault, permission.ModeDontAsk, false},
		{permission.ModeDefault, permission.ModeDontAsk, permission.ModeDontAsk, true},
		{permission.ModePlan, permission.ModeDontAsk, permission.ModePlan, false},
		{permission.ModeAcceptEdits, permission.ModeAuto, permission.ModeAuto, true},
		{permission.ModeAuto, permission.ModeAcceptEdits, permission.ModeAcceptEdits, true},
		{permission.ModeAuto, permission.ModeBypassPermissions, permission.ModeAuto, false},
		{permission.ModeBypassPermissions, permission.ModePlan, permission.ModePlan, true},
		{permission.ModeDontAsk, permission.ModePlan, permission.ModePlan, true},
		{permission.ModeDefault, permission.ModePlan, permission.ModePlan, true},
	}
	for _, tt := range tests {
		got, folded := Clamp(tt.req, tt.ceil)
		if got != tt.want || folded != tt.folded {
			t.Errorf("Clamp(%q, %q) = %q, %v; want %q, %v", tt.req, tt.ceil, got, folded, tt.want, tt.folded)
		}
	}
	// No child ever exceeds its parent: for every pair, the result is the request or
	// the ceiling, and never more permissive than the ceiling.
	for _, r := range permission.Modes() {
		for _, c := range permission.Modes() {
			got, _ := Clamp(r, c)
			if got != r && got != c {
				t.Errorf("Clamp(%s, %s) = %s, neither", r, c, got)
			}
			if rank(got) > rank(c) {
				t.Errorf("Clamp(%s, %s) = %s exceeds the ceiling", r, c, got)
			}
			if c == permission.ModePlan && got != permission.ModePlan {
				t.Errorf("Clamp(%s, plan) = %s", r, got)
			}
		}
	}
}
