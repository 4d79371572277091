package childleg

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/subagent"
	"github.com/sema-agent/sema/tools"
)

func TestSpecAndParse(t *testing.T) {
	s := Spec("- Explore: looks around (tools: read-only)\n")
	if s.Name != "Task" || s.Effect != tools.EffectExec || !strings.HasSuffix(s.Description, "Available agent types:\n- Explore: looks around (tools: read-only)\n") || !json.Valid(s.InputSchema) {
		t.Fatalf("spec: %+v", s)
	}
	in, refused := Parse(json.RawMessage(`{"description":"d","prompt":"find it","subagent_type":"Explore"}`))
	if refused != nil || in.Prompt != "find it" || in.SubagentType != "Explore" || in.Description != "d" {
		t.Fatalf("parse: %+v %+v", in, refused)
	}
	if _, refused = Parse(json.RawMessage(`{"description":"d","prompt":"  ","subagent_type":"Explore"}`)); refused == nil || refused.Code != tools.CodeInputInvalid {
		t.Fatalf("blank prompt: %+v", refused)
	}
	if _, refused = Parse(json.RawMessage(`[1]`)); refused == nil || !refused.IsError {
		t.Fatalf("not an object: %+v", refused)
	}
}

func TestDerive(t *testing.T) {
	p := Parent{Model: "parent-model", Provider: "anthropic", MaxTurns: 10, TurnsRun: 4}
	def := subagent.Definition{Name: "Plan", PermissionMode: permission.ModePlan, Prompt: "plan it", ReadOnly: true}
	own, refused := Derive(p, def)
	if refused != nil || own.Model != "parent-model" || own.Mode != permission.ModePlan || own.Prompt != "plan it" || !own.ReadOnly || own.MaxTurns != 6 {
		t.Fatalf("derived: %+v %+v", own, refused)
	}
	def = subagent.Definition{Model: "inherit"}
	if own, _ = Derive(Parent{Model: "m", ReadOnly: true}, def); own.Model != "m" || !own.ReadOnly || own.MaxTurns != 0 {
		t.Fatalf("inherit: %+v", own)
	}
	if own, _ = Derive(p, subagent.Definition{Model: "custom-model-7"}); own.Model != "custom-model-7" {
		t.Fatalf("a model name goes as written: %+v", own)
	}
	want, _ := model.ResolveAlias("anthropic", "haiku")
	if own, _ = Derive(p, subagent.Definition{Model: "haiku"}); own.Model != want {
		t.Fatalf("alias: %q, want %q", own.Model, want)
	}
	p.TurnsRun = 10
	if _, refused = Derive(p, def); refused == nil || refused.Code != CodeBudget || !strings.Contains(refused.TextOf(), "turn limit is 10") {
		t.Fatalf("no turns left: %+v", refused)
	}
}

type fake string

func (f fake) Spec() tools.Spec                                  { return tools.Spec{Name: string(f)} }
func (f fake) Run(context.Context, json.RawMessage) tools.Result { return tools.Text("") }

func names(r tools.Roster) []string {
	var out []string
	for _, t := range r {
		out = append(out, t.Spec().Name)
	}
	return out
}

func TestTools(t *testing.T) {
	r := tools.Roster{fake("Read"), fake("Bash"), fake("ExitPlanMode"), fake("EnterPlanMode"), fake("Task")}
	kept, missing := Tools(r, subagent.Definition{})
	if !slices.Equal(names(kept), []string{"Read", "Bash", "Task"}) || missing != nil {
		t.Fatalf("all: %v %v", names(kept), missing)
	}
	kept, missing = Tools(r, subagent.Definition{Tools: []string{"Read", "ExitPlanMode", "WebFetch"}, DisallowedTools: []string{"Bash"}})
	if !slices.Equal(names(kept), []string{"Read"}) || !slices.Equal(missing, []string{"WebFetch"}) {
		t.Fatalf("listed: %v %v", names(kept), missing)
	}
}

func TestAnswer(t *testing.T) {
	for _, c := range []struct {
		e    End
		code string
		text string
	}{
		{End{Status: sema.StatusCompleted, Result: "done"}, "", "done"},
		{End{Status: sema.StatusCompleted, Result: " "}, "", "(the agent finished without a final message)"},
		{End{Status: sema.StatusAwaitingApproval}, CodeFailed, "The Explore agent is waiting for a person's answer."},
		{End{Status: sema.StatusCancelled, Result: "half"}, tools.CodeCancelled, "The Explore agent was cancelled. Its last message: half"},
		{End{Status: sema.StatusMaxTurns, NumTurns: 3}, CodeFailed, "The Explore agent stopped after 3 turns, its limit, before it finished."},
		{End{Status: sema.StatusBudgetExceeded, NumTurns: 2}, CodeBudget, "The Explore agent stopped after 2 turns, before it finished: the next request would have passed the budget this task gave it."},
		{End{Status: sema.StatusError, Err: errors.New("boom")}, CodeFailed, "The Explore agent did not finish: it failed: boom."},
		{End{Status: sema.StatusError}, CodeFailed, "The Explore agent did not finish: it failed."},
	} {
		r := Answer("Explore", c.e)
		if r.Code != c.code || r.TextOf() != c.text || r.IsError != (c.code != "") {
			t.Errorf("%s: got %q %q", c.e.Status, r.Code, r.TextOf())
		}
	}
	if r := NotStarted("Plan", errors.New("no root"), true); r.Code != tools.CodeCancelled || r.TextOf() != "The Plan agent could not start: no root" {
		t.Errorf("not started, cancelled: %+v", r)
	}
	if r := NotStarted("Plan", errors.New("no root"), false); r.Code != CodeFailed {
		t.Errorf("not started: %+v", r)
	}
}
