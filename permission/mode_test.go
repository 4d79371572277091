package permission

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/shellscan"
)

func TestModePolicyOf(t *testing.T) {
	t.Parallel()
	files := []string{"mkdir", "touch", "rm", "rmdir", "mv", "cp", "sed"}
	tests := []struct {
		mode Mode
		want ModePolicy
	}{
		{ModeDefault, ModePolicy{WriteGate: WriteGateAsk, Unstated: UnstatedAsk}},
		{ModeAcceptEdits, ModePolicy{WriteGate: WriteGateAcceptRoot, FileCommands: files, Unstated: UnstatedAsk}},
		{ModePlan, ModePolicy{EnablePlanMode: true, WriteGate: WriteGatePlan, Unstated: UnstatedAsk}},
		{ModeAuto, ModePolicy{WriteGate: WriteGateAsk, Unstated: UnstatedAsk}},
		{ModeDontAsk, ModePolicy{WriteGate: WriteGateAsk, Unstated: UnstatedAsk}},
		{ModeBypassPermissions, ModePolicy{WriteGate: WriteGateNone, WriteFace: fence.FaceOpen, Unstated: UnstatedNone}},
	}
	if len(tests) != len(Modes()) {
		t.Fatalf("the table covers %d modes, there are %d", len(tests), len(Modes()))
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
	if diff := cmp.Diff(shellscan.FileCommands, ModePolicyOf(ModeAcceptEdits).FileCommands); diff != "" {
		t.Errorf("acceptEdits file commands differ from shellscan.FileCommands:\n%s", diff)
	}
	// The returned list is a copy: changing it changes no later answer.
	p := ModePolicyOf(ModeAcceptEdits)
	p.FileCommands[0] = "curl"
	if ModePolicyOf(ModeAcceptEdits).FileCommands[0] != "mkdir" {
		t.Error("ModePolicyOf shares its FileCommands slice")
	}
}

func TestParseMode(t *testing.T) {
	t.Parallel()
	for _, m := range Modes() {
		got, err := ParseMode(string(m))
		if err != nil || got != m {
			t.Errorf("ParseMode(%q) = %q, %v", m, got, err)
		}
	}
	for _, bad := range []string{"", "Default", "DEFAULT", "accept_edits", "acceptedits", "bypass", "yolo", " default", "default ", "plan\n"} {
		_, err := ParseMode(bad)
		if !sema.IsCode(err, CodeModeInvalid) {
			t.Errorf("ParseMode(%q) error = %v, want %s", bad, err, CodeModeInvalid)
		}
	}
}

func TestClamp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		req, ceil Mode
		want      Mode
		folded    bool
	}{
		{"", "", ModeDefault, false},
		{ModeAuto, "", ModeAuto, false},
		{"", ModeAcceptEdits, ModeAcceptEdits, false},
		{ModeBypassPermissions, ModeDefault, ModeDefault, true},
		{ModeBypassPermissions, ModeBypassPermissions, ModeBypassPermissions, false},
		{ModeDefault, ModeBypassPermissions, ModeDefault, false},
		{ModeAcceptEdits, ModeDefault, ModeDefault, true},
		{ModeDontAsk, ModeDefault, ModeDontAsk, false},
		{ModeDefault, ModeDontAsk, ModeDontAsk, true},
		{ModePlan, ModeDontAsk, ModePlan, false},
		{ModeAcceptEdits, ModeAuto, ModeAuto, true},
		{ModeAuto, ModeAcceptEdits, ModeAcceptEdits, true},
		{ModeAuto, ModeBypassPermissions, ModeAuto, false},
		{ModeBypassPermissions, ModePlan, ModePlan, true},
		{ModeDontAsk, ModePlan, ModePlan, true},
		{ModeDefault, ModePlan, ModePlan, true},
	}
	for _, tt := range tests {
		got, folded := Clamp(tt.req, tt.ceil)
		if got != tt.want || folded != tt.folded {
			t.Errorf("Clamp(%q, %q) = %q, %v; want %q, %v", tt.req, tt.ceil, got, folded, tt.want, tt.folded)
		}
	}
	// No child ever exceeds its parent: for every pair, the result is the request or
	// the ceiling, and never more permissive than the ceiling.
	for _, r := range Modes() {
		for _, c := range Modes() {
			got, _ := Clamp(r, c)
			if got != r && got != c {
				t.Errorf("Clamp(%s, %s) = %s, neither", r, c, got)
			}
			if rank(got) > rank(c) {
				t.Errorf("Clamp(%s, %s) = %s exceeds the ceiling", r, c, got)
			}
			if c == ModePlan && got != ModePlan {
				t.Errorf("Clamp(%s, plan) = %s", r, got)
			}
		}
	}
}
