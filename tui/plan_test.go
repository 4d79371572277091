package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/sema-agent/sema/permission"
)

// TestPlanDialog: the plan gate's dialog shows the plan as rendered markdown, in a
// window ↓ and PgDn scroll; 1 approves it.
func TestPlanDialog(t *testing.T) {
	var b strings.Builder
	b.WriteString("## Plan\n\nChange **two** files:\n\n")
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&b, "- step %d\n", i)
	}
	input, _ := json.Marshal(map[string]string{"plan": b.String()})
	req := permission.ApprovalRequest{Tool: "ExitPlanMode", Input: input,
		Ask: permission.Decision{Behavior: permission.Ask, Gate: permission.GatePlanReview, PersonOnly: true}}
	approver := NewApprover()
	h := newHarness(t, Options{Backend: &fakeBackend{}, Approver: approver}, 80, 24)
	got := make(chan permission.ApprovalDecision, 1)
	go func() { d, _ := approver.Approve(context.Background(), req); got <- d }()
	h.until("the dialog", func() bool { return h.m.question != nil })
	f := h.frame()
	if strings.Contains(f, "**two**") || !strings.Contains(f, "two") || !strings.Contains(f, "• step 1") {
		t.Errorf("the plan is not rendered as markdown:\n%s", f)
	}
	if strings.Contains(f, "step 20") || !strings.Contains(f, "of 2") {
		t.Errorf("a long plan is not windowed:\n%s", f)
	}
	h.golden("plan_dialog")
	h.key(tea.KeyDown, 0)
	if h.m.plan.top != 1 {
		t.Errorf("↓ moved the plan to line %d, want 1", h.m.plan.top)
	}
	for range 5 {
		h.key(tea.KeyPgDown, 0)
	}
	if f := h.frame(); !strings.Contains(f, "step 20") || strings.Contains(f, "step 1\n") {
		t.Errorf("PgDn did not reach the plan's end:\n%s", f)
	}
	h.golden("plan_dialog_end")
	h.key(tea.KeyUp, 0)
	if h.m.question == nil {
		t.Fatal("a scroll key answered the question")
	}
	h.typeText("1", false)
	if d := <-got; d.Behavior != permission.Allow {
		t.Errorf("1 on the plan: %+v", d)
	}
	if h.m.plan != nil {
		t.Error("the plan stayed after its answer")
	}
}
