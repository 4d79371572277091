package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
)

// A leg that resumes a parked plan review takes its mode from the checkpoint: an approved
// (or edited) plan leaves plan for the pre-plan word — the leg's own default when there is
// none — unless the approver names another mode than plan; a denied one stays in plan. The
// write the model makes next behaves as that mode says.
func TestResumedPlanReviewSetsTheMode(t *testing.T) {
	t.Parallel()
	const (
		landed = "landed" // the Write ran without a question
		parked = "parked" // the Write parked at a question
	)
	tests := []struct {
		name string
		// start is the first leg's mode; a leg not started in plan enters it with
		// EnterPlanMode, so its pre-plan word is start.
		start permission.Mode
		// settingsDefault is the root's .sema/settings.json defaultMode (trusted).
		settingsDefault permission.Mode
		answer          agent.Answer
		// resumeMode is the mode the resume re-passes (spec.PermissionMode).
		resumeMode    permission.Mode
		wantRequested permission.Mode
		wantEffective permission.Mode
		wantWrite     string
	}{
		{"approved: back to the pre-plan word", permission.ModeAcceptEdits, "", agent.Answer{Allow: true}, "",
			permission.ModeAcceptEdits, permission.ModeAcceptEdits, landed},
		{"approved: the pre-plan default asks", permission.ModeDefault, "", agent.Answer{Allow: true}, "",
			permission.ModeDefault, permission.ModeDefault, parked},
		{"approved with the approver's mode", permission.ModeDefault, "", agent.Answer{Allow: true}, permission.ModeAcceptEdits,
			permission.ModeAcceptEdits, permission.ModeAcceptEdits, landed},
		{"approved with plan re-passed", permission.ModeAcceptEdits, "", agent.Answer{Allow: true}, permission.ModePlan,
			permission.ModeAcceptEdits, permission.ModeAcceptEdits, landed},
		{"edited plan", permission.ModeAcceptEdits, "", agent.Answer{Allow: true, UpdatedInput: json.RawMessage(`{"plan":"1. write a.txt, carefully"}`)}, "",
			permission.ModeAcceptEdits, permission.ModeAcceptEdits, landed},
		{"started in plan: the settings default", permission.ModePlan, permission.ModeAcceptEdits, agent.Answer{Allow: true}, "",
			permission.ModeAcceptEdits, permission.ModeAcceptEdits, landed},
		{"started in plan, no settings: default", permission.ModePlan, "", agent.Answer{Allow: true}, "",
			"", permission.ModeDefault, parked},
		{"denied: stays in plan", permission.ModeAcceptEdits, "", agent.Answer{Reason: "not yet"}, "",
			permission.ModePlan, permission.ModePlan, parked},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := newStores(t)
			root := t.TempDir()
			if tt.settingsDefault != "" {
				os.MkdirAll(filepath.Join(root, ".sema"), 0o755)
				os.WriteFile(filepath.Join(root, ".sema", "settings.json"), []byte(`{"permissions":{"defaultMode":"`+string(tt.settingsDefault)+`"}}`), 0o644)
			}
			var turns []scripted.Turn
			if tt.start != permission.ModePlan {
				turns = append(turns, scripted.Turn{ToolCalls: []scripted.ToolCall{call("EnterPlanMode", `{}`)}})
			}
			turns = append(turns,
				scripted.Turn{ToolCalls: []scripted.ToolCall{call("ExitPlanMode", `{"plan":"1. write a.txt"}`)}},
				scripted.Turn{ToolCalls: []scripted.ToolCall{write("a.txt", "after the plan")}},
				scripted.Turn{Text: "done"},
			)
			p := scripted.New(scripted.Script{Turns: turns})
			deps := agent.Deps{Provider: p, Store: st.sessions, History: st.history, Policy: &agent.Policy{TrustProjectSettings: true}}
			first, err := agent.New(deps).Run(context.Background(), agent.TaskSpec{Prompt: "plan, then write", Root: root, PermissionMode: tt.start, OnAsk: agent.OnAskPark})
			if err != nil {
				t.Fatal(err)
			}
			cp, ok := first.Parked()
			if !ok || cp.Tool != "ExitPlanMode" || cp.Gate != permission.GatePlanReview {
				t.Fatalf("first leg: %s %+v", first.Status, first.Checkpoint)
			}

			answer := tt.answer
			answer.CheckpointID = cp.ID
			spec := agent.TaskSpec{Root: root, OnAsk: agent.OnAskPark, PermissionMode: tt.resumeMode, Resume: &agent.Resume{SessionID: first.SessionID}}
			res, err := agent.New(deps).Resume(context.Background(), spec, answer)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Manifest.Mode; got.Requested != string(tt.wantRequested) || got.Effective != string(tt.wantEffective) {
				t.Fatalf("mode receipt %+v, want requested %q effective %q", got, tt.wantRequested, tt.wantEffective)
			}
			a := res.Answered
			if a == nil || a.Tool != "ExitPlanMode" || a.Allowed != tt.answer.Allow {
				t.Fatalf("answered %+v", a)
			}
			if tt.answer.Allow && (a.IsError || !strings.Contains(a.Text, "permission mode is now "+string(tt.wantEffective))) {
				t.Fatalf("the approved ExitPlanMode call answered %q (error %v)", a.Text, a.IsError)
			}
			_, statErr := os.Stat(filepath.Join(root, "a.txt"))
			switch tt.wantWrite {
			case landed:
				if res.Status != sema.StatusCompleted || statErr != nil {
					t.Fatalf("the write did not land: %s %v %v", res.Status, res.Error, statErr)
				}
			case parked:
				next, ok := res.Parked()
				if !ok || next.Tool != "Write" || !os.IsNotExist(statErr) {
					t.Fatalf("the write did not park: %s %+v (%v)", res.Status, next, statErr)
				}
			}
		})
	}
}
