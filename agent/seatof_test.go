package agent_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/tools"
)

// skillTool is a deployment's skill tool whose permission seat depends on the skill
// named: "deploy" declares what it may run, so its calls are the mode's unstated
// question ("Execute skill: deploy"); any other skill answers for itself (read).
type skillTool struct {
	mu  sync.Mutex
	ran []string
}

func (s *skillTool) Spec() tools.Spec {
	return tools.Spec{Name: "Skill", Description: "runs a skill", InputSchema: json.RawMessage(`{"type":"object"}`), Effect: tools.EffectRead}
}

func (s *skillTool) Run(_ context.Context, in json.RawMessage) tools.Result {
	var v struct{ Skill string }
	_ = json.Unmarshal(in, &v)
	s.mu.Lock()
	s.ran = append(s.ran, v.Skill)
	s.mu.Unlock()
	return tools.Text("ran " + v.Skill)
}

func (s *skillTool) PermissionSeatOf(in json.RawMessage) (bool, string) {
	var v struct{ Skill string }
	if json.Unmarshal(in, &v) != nil || v.Skill == "deploy" {
		return true, "Execute skill: " + v.Skill
	}
	return false, ""
}

// The per-call permission seat (the seeds' permissionSeatOf) is read off the input the
// gate judges: the model's ("lint" runs unasked as the read-only tool it is, "deploy"
// is put as "Execute skill: deploy"), and a PreToolUse hook's rewrite of "lint" into
// "deploy", which is asked about as deploy, not waved through as lint.
func TestPermissionSeatDependsOnTheCallsArguments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		skill     string
		rewriteTo string
		wantAsk   string // the question put; "" for none
		wantRan   string
	}{
		{"own seat", "lint", "", "", "lint"},
		{"passthrough seat", "deploy", "", "Execute skill: deploy", "deploy"},
		{"a hook's rewrite is read", "lint", "deploy", "Execute skill: deploy", "deploy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			skill := &skillTool{}
			var mu sync.Mutex
			var asked []string
			approver := permission.ApproverFunc(func(_ context.Context, req permission.ApprovalRequest) (permission.ApprovalDecision, error) {
				mu.Lock()
				asked = append(asked, req.Ask.Reason)
				mu.Unlock()
				return permission.ApprovalDecision{Behavior: permission.Allow}, nil
			})
			var hooks []permission.Hook
			if tt.rewriteTo != "" {
				hooks = append(hooks, func(context.Context, permission.Call) (permission.HookDecision, error) {
					return permission.HookDecision{UpdatedInput: json.RawMessage(`{"skill":"` + tt.rewriteTo + `"}`)}, nil
				})
			}
			p := scripted.New(scripted.Script{Turns: []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{call("Skill", `{"skill":"`+tt.skill+`"}`)}},
				{Text: "done"},
			}})
			deps := agent.Deps{Provider: p, Tools: []tools.Tool{skill}, Approver: approver, Hooks: &agent.Hooks{PreToolUse: hooks}}
			res, err := agent.New(deps).Run(context.Background(), agent.TaskSpec{Prompt: "skill", Root: t.TempDir()})
			must(t, err)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case tt.wantAsk == "" && len(asked) != 0:
				t.Fatalf("asked %q for an own-seat call", asked)
			case tt.wantAsk != "" && (len(asked) != 1 || asked[0] != tt.wantAsk):
				t.Fatalf("asked %q, want %q", asked, tt.wantAsk)
			}
			if len(skill.ran) != 1 || skill.ran[0] != tt.wantRan || len(res.PermissionDenials) != 0 {
				t.Fatalf("ran %v, denials %+v", skill.ran, res.PermissionDenials)
			}
		})
	}
}

// An approver's edit is a new call, judged by the whole fold again — not only by the
// deny rules: a PreToolUse hook that refuses the edited bytes refuses the call, live and
// on a parked call's resume, and nothing runs. A question the fold asks about the edit
// (an ask rule) is the one the approver's yes answered: the edit runs.
func TestApproversEditIsJudgedByTheWholeFold(t *testing.T) {
	t.Parallel()
	refuseForbidden := func(_ context.Context, c permission.Call) (permission.HookDecision, error) {
		if strings.Contains(string(c.Input), "forbidden") {
			return permission.HookDecision{Behavior: permission.Deny, Reason: "no forbidden skills"}, nil
		}
		return permission.HookDecision{}, nil
	}
	editTo := func(input string, asked *int) permission.Approver {
		return permission.ApproverFunc(func(context.Context, permission.ApprovalRequest) (permission.ApprovalDecision, error) {
			*asked++
			return permission.ApprovalDecision{Behavior: permission.Allow, UpdatedInput: json.RawMessage(input)}, nil
		})
	}
	model := func() *scripted.Provider {
		return scripted.New(scripted.Script{Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{call("Skill", `{"skill":"deploy"}`)}},
			{Text: "done"},
		}})
	}
	askSkill, err := permission.ParseRules(nil, nil, []string{"Skill"})
	must(t, err)
	for _, tt := range []struct {
		name    string
		edit    string
		policy  *agent.Policy
		wantRan []string
		denied  bool
	}{
		{"a hook refuses the edit", `{"skill":"forbidden"}`, nil, nil, true},
		{"an ask about the edit is the approver's", `{"skill":"lint"}`, &agent.Policy{Rules: askSkill}, []string{"lint"}, false},
	} {
		skill := &skillTool{}
		asked := 0
		deps := agent.Deps{Provider: model(), Tools: []tools.Tool{skill}, Approver: editTo(tt.edit, &asked), Policy: tt.policy,
			Hooks: &agent.Hooks{PreToolUse: []permission.Hook{refuseForbidden}}}
		res, err := agent.New(deps).Run(context.Background(), agent.TaskSpec{Prompt: "skill", Root: t.TempDir()})
		must(t, err)
		if asked != 1 || !slices.Equal(skill.ran, tt.wantRan) || (len(res.PermissionDenials) == 1) != tt.denied {
			t.Fatalf("%s: asked %d, ran %v, denials %+v", tt.name, asked, skill.ran, res.PermissionDenials)
		}
		if tt.denied && !strings.Contains(res.PermissionDenials[0].Reason, "no forbidden skills") {
			t.Fatalf("%s: denial %+v does not name the hook's reason", tt.name, res.PermissionDenials[0])
		}
	}

	// The same edit, given as the answer to a parked question.
	st := newStores(t)
	skill := &skillTool{}
	r := agent.New(agent.Deps{Provider: model(), Store: st.sessions, Tools: []tools.Tool{skill},
		Hooks: &agent.Hooks{PreToolUse: []permission.Hook{refuseForbidden}}})
	root := t.TempDir()
	parked, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "skill", Root: root, OnAsk: agent.OnAskPark})
	must(t, err)
	if parked.Status != sema.StatusAwaitingApproval {
		t.Fatalf("status %s, want a parked deploy", parked.Status)
	}
	res, err := r.Resume(context.Background(), agent.TaskSpec{Root: root, Resume: &agent.Resume{SessionID: parked.SessionID}},
		agent.Answer{CheckpointID: parked.Checkpoint.ID, Allow: true, UpdatedInput: json.RawMessage(`{"skill":"forbidden"}`)})
	must(t, err)
	if len(skill.ran) != 0 || len(res.PermissionDenials) != 1 || !strings.Contains(res.PermissionDenials[0].Reason, "no forbidden skills") {
		t.Fatalf("resumed edit: ran %v, denials %+v (%s %v)", skill.ran, res.PermissionDenials, res.Status, res.Error)
	}
}

// An approver that hands back the very input it was asked about (differently spelled,
// as an SDK client's canUseTool may) edited nothing: the call is not judged again, so
// the PreToolUse hooks run once.
func TestApproverEchoingTheInputIsNoEdit(t *testing.T) {
	t.Parallel()
	hookRuns := 0
	var mu sync.Mutex
	count := func(context.Context, permission.Call) (permission.HookDecision, error) {
		mu.Lock()
		hookRuns++
		mu.Unlock()
		return permission.HookDecision{}, nil
	}
	echo := permission.ApproverFunc(func(context.Context, permission.ApprovalRequest) (permission.ApprovalDecision, error) {
		return permission.ApprovalDecision{Behavior: permission.Allow, UpdatedInput: json.RawMessage(`{ "skill" : "deploy" }`)}, nil
	})
	skill := &skillTool{}
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("Skill", `{"skill":"deploy"}`)}},
		{Text: "done"},
	}})
	deps := agent.Deps{Provider: p, Tools: []tools.Tool{skill}, Approver: echo, Hooks: &agent.Hooks{PreToolUse: []permission.Hook{count}}}
	_, err := agent.New(deps).Run(context.Background(), agent.TaskSpec{Prompt: "skill", Root: t.TempDir()})
	must(t, err)
	mu.Lock()
	defer mu.Unlock()
	if hookRuns != 1 || !slices.Equal(skill.ran, []string{"deploy"}) {
		t.Fatalf("hook ran %d times, skill ran %v", hookRuns, skill.ran)
	}
}
