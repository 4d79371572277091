// Package childleg is what the Task tool's child leg is given and what its parent is
// told: the Task tool's input, the part of the child's task its definition decides
// (model, mode, prompt, read-only mount, the turns it may run), the tools it mounts,
// and the Task call's answer once the child ends. It runs no leg: the parent derives,
// runs the child, and hands the child's end back as plain values.
package childleg

import (
	"encoding/json"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/subagent"
	"github.com/sema-agent/sema/tools"
)

// The codes of a Task call's failed answer; agent's CodeSubagentFailed and
// CodeSubagentBudget are the same strings.
const (
	CodeFailed = "subagent.failed"
	CodeBudget = "subagent.budget_exhausted"
)

// Input is the Task tool's input, Claude Code's shape.
type Input struct {
	Description  string `json:"description"`
	Prompt       string `json:"prompt"`
	SubagentType string `json:"subagent_type"`
}

var schema = json.RawMessage(`{"type":"object","properties":{` +
	`"description":{"type":"string","description":"A short (3-5 word) description of the task"},` +
	`"prompt":{"type":"string","description":"The task for the agent to perform: everything it needs to know, since it sees nothing of this conversation"},` +
	`"subagent_type":{"type":"string","description":"The type of specialized agent to use for this task"}},` +
	`"required":["description","prompt","subagent_type"],"additionalProperties":false}`)

// Spec is the Task tool's spec, listing the agent types of catalog (subagent.Catalog's
// Describe).
func Spec(catalog string) tools.Spec {
	desc := "Launch a new agent to handle a task on its own. The agent starts with no context but " +
		"the prompt you give it, works with its own tools, and answers with one final message, " +
		"which is all you see of its work; say in the prompt what it should report. Several Task " +
		"calls in one message run concurrently. Available agent types:\n" + catalog
	// Exec: the gate lets the engine's own tool through unless a rule says otherwise, and
	// the child's every call is judged by the child's own gate.
	return tools.Spec{Name: "Task", Description: desc, InputSchema: schema, Effect: tools.EffectExec}
}

// Parse reads a Task call's input, or the result that refuses it.
func Parse(raw json.RawMessage) (Input, *tools.Result) {
	var in Input
	if err := tools.Decode(raw, &in); err != nil {
		r := tools.FromError(err, tools.CodeInputInvalid)
		return in, &r
	}
	if strings.TrimSpace(in.Prompt) == "" {
		r := tools.Fail(tools.CodeInputInvalid, "Task needs a prompt: the whole task for the agent, which sees nothing of this conversation.")
		return in, &r
	}
	return in, nil
}

// Parent is what of the delegating leg the derivation reads.
type Parent struct {
	// Model is the parent's model; Provider its provider's name, which resolves a
	// definition's model alias.
	Model, Provider string
	// ReadOnly is the parent's read-only mount.
	ReadOnly bool
	// MaxTurns is the parent's turn limit (0: none); TurnsRun the turns it has run.
	MaxTurns, TurnsRun int
}

// Own is the part of a child's task its definition decides; the rest is the parent's.
type Own struct {
	Model    string
	Mode     permission.Mode
	Prompt   string
	ReadOnly bool
	// MaxTurns is what the parent's turn limit leaves (0: no limit).
	MaxTurns int
}

// Derive is what def gives a child of p: the definition's mode, prompt and model (an
// alias resolved for the parent's provider, "" or "inherit" the parent's), a read-only
// mount when either asks for one, and no more turns than the parent has left — or the
// result that refuses the call when none are.
func Derive(p Parent, def subagent.Definition) (Own, *tools.Result) {
	own := Own{Model: p.Model, Mode: def.PermissionMode, Prompt: def.Prompt, ReadOnly: p.ReadOnly || def.ReadOnly}
	if def.Model != "" && def.Model != "inherit" {
		// Claude Code's agent files name a family (model: sonnet): the newest model of it
		// the parent's provider knows. Any other name goes to the provider as written.
		own.Model, _ = model.ResolveAlias(p.Provider, def.Model)
	}
	if p.MaxTurns > 0 {
		left := p.MaxTurns - p.TurnsRun
		if left <= 0 {
			r := tools.Fail(CodeBudget, "The agent was not started: this task has no turns left to give it (its turn limit is %d).", p.MaxTurns)
			return own, &r
		}
		own.MaxTurns = left
	}
	return own, nil
}

// Tools keeps the tools of r def allows, never the plan-mode tools (a child's mode is
// its parent's business: it neither enters nor leaves plan). missing are the names def
// lists that r does not mount.
func Tools(r tools.Roster, def subagent.Definition) (kept tools.Roster, missing []string) {
	for _, t := range r {
		name := t.Spec().Name
		if name == "ExitPlanMode" || name == "EnterPlanMode" {
			continue
		}
		if def.Allows(name) {
			kept = append(kept, t)
		}
	}
	for _, name := range def.Tools {
		if kept.Lookup(name) == nil && r.Lookup(name) == nil {
			missing = append(missing, name)
		}
	}
	return kept, missing
}

// End is how a child leg ended, as the Task call's answer reads it.
type End struct {
	Status   sema.Status
	Result   string
	NumTurns int
	Err      error
}

// Answer is the Task call's result for a child of agent type name that ended as e: its
// final text, or a failure that says how it stopped, with its last message.
func Answer(name string, e End) tools.Result {
	switch e.Status {
	case sema.StatusCompleted:
		text := e.Result
		if strings.TrimSpace(text) == "" {
			text = "(the agent finished without a final message)"
		}
		return tools.Text(text)
	case sema.StatusAwaitingApproval:
		return tools.Fail(CodeFailed, "The %s agent is waiting for a person's answer.", name)
	case sema.StatusCancelled:
		return tools.Fail(tools.CodeCancelled, "The %s agent was cancelled.%s", name, lastWords(e.Result))
	case sema.StatusMaxTurns:
		return tools.Fail(CodeFailed, "The %s agent stopped after %d turns, its limit, before it finished.%s", name, e.NumTurns, lastWords(e.Result))
	case sema.StatusBudgetExceeded:
		return tools.Fail(CodeBudget, "The %s agent stopped after %d turns, before it finished: the next request would have passed the budget this task gave it.%s", name, e.NumTurns, lastWords(e.Result))
	default:
		msg := "it failed"
		if e.Err != nil {
			msg = "it failed: " + e.Err.Error()
		}
		return tools.Fail(CodeFailed, "The %s agent did not finish: %s.%s", name, msg, lastWords(e.Result))
	}
}

// NotStarted is the Task call's result for a child of agent type name that could not
// start; cancelled when the task was cancelled meanwhile.
func NotStarted(name string, err error, cancelled bool) tools.Result {
	code := CodeFailed
	if cancelled {
		code = tools.CodeCancelled
	}
	return tools.Fail(code, "The %s agent could not start: %s", name, sema.MessageOf(err))
}

func lastWords(text string) string {
	if strings.TrimSpace(text) == "" {
		return ""
	}
	return " Its last message: " + text
}
