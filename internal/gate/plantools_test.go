package gate

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/tools"
)

func TestPlanTools(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mc := mustController(t, permission.ModeAcceptEdits, nil, ControllerOptions{})
	enter, exit := NewEnterPlanMode(mc), NewExitPlanMode(mc)
	if enter.Spec().Name != "EnterPlanMode" || exit.Spec().Name != "ExitPlanMode" {
		t.Fatal("tool names")
	}
	for _, tl := range []tools.Tool{enter, exit} {
		if !json.Valid(tl.Spec().InputSchema) || tl.Spec().Effect != tools.EffectRead {
			t.Errorf("%s spec: %+v", tl.Spec().Name, tl.Spec())
		}
	}
	// ExitPlanMode outside plan fails and changes nothing.
	if r := exit.Run(ctx, json.RawMessage(`{"plan":"do it"}`)); !r.IsError || r.Code != permission.CodeNotInPlanMode || mc.Current() != permission.ModeAcceptEdits {
		t.Fatalf("exit outside plan: %+v, mode %s", r, mc.Current())
	}
	if r := enter.Run(ctx, json.RawMessage(`{}`)); r.IsError || mc.Current() != permission.ModePlan || mc.PrePlanMode() != permission.ModeAcceptEdits {
		t.Fatalf("enter: %+v, mode %s, pre-plan %s", r, mc.Current(), mc.PrePlanMode())
	}
	if r := enter.Run(ctx, json.RawMessage(`{"x":1}`)); !r.IsError || r.Code != tools.CodeInputInvalid {
		t.Errorf("enter with an unknown field: %+v", r)
	}
	// Under plan, the gate puts the ExitPlanMode call to a person as the plan review.
	g, _ := New(Config{Modes: mc})
	d := g.Decide(ctx, permission.Call{Tool: "ExitPlanMode", Effect: tools.EffectRead, Input: json.RawMessage(`{"plan":"do it"}`)})
	if d.Gate != permission.GatePlanReview || !d.PersonOnly || d.Behavior != permission.Ask {
		t.Fatalf("ExitPlanMode decision: %+v", d)
	}
	for _, bad := range []string{`{}`, `{"plan":"  "}`, `{"plan":1}`} {
		if r := exit.Run(ctx, json.RawMessage(bad)); !r.IsError || mc.Current() != permission.ModePlan {
			t.Errorf("exit with %s: %+v, mode %s", bad, r, mc.Current())
		}
	}
	if r := exit.Run(ctx, json.RawMessage(`{"plan":"1. edit\n2. test"}`)); r.IsError || mc.Current() != permission.ModeAcceptEdits {
		t.Fatalf("approved exit: %+v, mode %s", r, mc.Current())
	}
	// A leg that started in plan exits to default.
	mc2 := mustController(t, permission.ModePlan, nil, ControllerOptions{})
	if r := NewExitPlanMode(mc2).Run(ctx, json.RawMessage(`{"plan":"p"}`)); r.IsError || mc2.Current() != permission.ModeDefault {
		t.Errorf("exit of a leg that started in plan: %+v, %s", r, mc2.Current())
	}
	// Under a plan parent the child cannot leave plan.
	parent := mustController(t, permission.ModePlan, nil, ControllerOptions{})
	child := mustController(t, "", parent, ControllerOptions{})
	if r := NewExitPlanMode(child).Run(ctx, json.RawMessage(`{"plan":"p"}`)); !r.IsError || child.Current() != permission.ModePlan || child.Requested() != "" {
		t.Errorf("a child left its parent's plan: %+v, %s, requested %q", r, child.Current(), child.Requested())
	}
}

// A leg resuming an approved plan review starts out of plan: the approved ExitPlanMode
// call reports the leg's mode once, and a second call outside plan is refused.
func TestExitPlanModeAfterAnApprovedReview(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name     string
		mode     permission.Mode
		approved bool
		wantErr  []bool // one per call
	}{
		{"approved review, out of plan", permission.ModeAcceptEdits, true, []bool{false, true}},
		{"no review, out of plan", permission.ModeAcceptEdits, false, []bool{true}},
		{"approved review, still in plan", permission.ModePlan, true, []bool{false, true}},
	}
	for _, tt := range tests {
		mc := mustController(t, tt.mode, nil, ControllerOptions{PlanApproved: tt.approved})
		exit := NewExitPlanMode(mc)
		for i, want := range tt.wantErr {
			r := exit.Run(ctx, json.RawMessage(`{"plan":"p"}`))
			if r.IsError != want {
				t.Fatalf("%s: call %d: %+v", tt.name, i+1, r)
			}
			if r.IsError && r.Code != permission.CodeNotInPlanMode {
				t.Fatalf("%s: call %d: code %q", tt.name, i+1, r.Code)
			}
			if !r.IsError && !strings.Contains(r.TextOf(), "permission mode is now "+string(mc.Current())) {
				t.Fatalf("%s: call %d does not name the mode %s: %q", tt.name, i+1, mc.Current(), r.TextOf())
			}
		}
		if tt.mode == permission.ModePlan && mc.Current() != permission.ModeDefault {
			t.Fatalf("%s: an approved exit from plan left the leg in %s", tt.name, mc.Current())
		}
	}
}
