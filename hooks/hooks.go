// Package hooks runs the hooks a settings file or a deployment declares for the events
// of a run, speaking Claude Code's protocol so that existing hook scripts work
// unchanged: the event's facts as JSON on stdin, an answer as an exit code, stdout JSON
// and stderr.
//
// A hook is a command (run with /bin/sh -c in the project directory, in its own
// process group, confined by the caller's sandbox wrap, killed with everything it
// started at its timeout) or a Go function (Func). The hooks of one event that match
// run in parallel; identical commands run once; their outputs are capped. What they
// answer is merged into one Result, and the caller — the runner — decides what the
// result does: this package never judges a permission.
package hooks

import (
	"context"
	"encoding/json"
	"time"
)

// Event names the moment of a run a hook is registered for.
type Event string

// The events, as Claude Code names them.
const (
	// PreToolUse: before a tool call, inside the permission fold; the hook may deny, ask
	// or allow the call, and rewrite its input. Matcher: the tool name.
	PreToolUse Event = "PreToolUse"
	// PostToolUse: after a tool call succeeded; the hook may block (its reason goes to
	// the model) or add context. Matcher: the tool name.
	PostToolUse Event = "PostToolUse"
	// PostToolUseFailure: after a tool call failed. Matcher: the tool name.
	PostToolUseFailure Event = "PostToolUseFailure"
	// UserPromptSubmit: before the prompt reaches the model; the hook may block it or
	// add context.
	UserPromptSubmit Event = "UserPromptSubmit"
	// Stop: the root leg's model has answered without calling a tool; the hook may
	// block the stop (decision "block") so that the leg takes another turn.
	Stop Event = "Stop"
	// SubagentStop: as Stop, for a child leg of the Task tool.
	SubagentStop Event = "SubagentStop"
	// SessionStart: a leg starts. Matcher: the source (startup, resume, compact).
	SessionStart Event = "SessionStart"
	// SessionEnd: a leg ends. Matcher: the reason. It cannot block.
	SessionEnd Event = "SessionEnd"
	// PreCompact: before the conversation is compacted. Matcher: the trigger (manual,
	// auto). It cannot block.
	PreCompact Event = "PreCompact"
	// Notification: a permission question is waiting for a person. Matcher: the
	// notification type (permission_prompt). It cannot block.
	Notification Event = "Notification"
)

// Events lists every event, in the order the documentation gives them.
var Events = []Event{PreToolUse, PostToolUse, PostToolUseFailure, UserPromptSubmit, Stop, SubagentStop,
	SessionStart, SessionEnd, PreCompact, Notification}

// DefaultTimeout is a command hook's timeout when its configuration names none.
const DefaultTimeout = 60 * time.Second

// Func is a hook written in Go. An error is the hook's failure: for PreToolUse it fails
// closed (the call is refused), for every other event it is a notice. A panic is an
// error. The runner may call a Func from several goroutines at once.
type Func func(ctx context.Context, in Input) (Output, error)

// Hook is one hook: a Command or a Func (exactly one), registered for Event, for the
// targets Matcher matches.
type Hook struct {
	// Event is the event the hook is registered for.
	Event Event
	// Matcher selects the targets (tool name, source, trigger, type) the hook runs for,
	// as Claude Code reads it: empty or "*" matches every target; letters, digits, _
	// and | only ("Bash", "Edit|Write") name targets exactly; anything else is a
	// regular expression that must match somewhere in the target ("mcp__github__.*",
	// "^Notebook"). UserPromptSubmit, Stop and SubagentStop have no target and ignore
	// it.
	Matcher string
	// Command is the shell command of a command hook, run with /bin/sh -c.
	Command string
	// Timeout bounds a command hook (and a Func's context). Zero: DefaultTimeout.
	Timeout time.Duration
	// Func is a Go hook.
	Func Func
	// Source says where the hook was declared (a settings file's path, "Deps.Hooks"),
	// for notices and the manifest.
	Source string
}

// Input is what a hook reads: for a command, the JSON on its stdin. Its JSON form
// carries the fields Claude Code sends for the event (MarshalJSON).
type Input struct {
	// SessionID is the run's session.
	SessionID string `json:"session_id"`
	// TranscriptPath is a transcript file's path; sema keeps its transcripts in its
	// store, so it is empty and left out.
	TranscriptPath string `json:"transcript_path,omitempty"`
	// Cwd is the task root.
	Cwd string `json:"cwd"`
	// PermissionMode is the leg's permission mode when the hook runs.
	PermissionMode string `json:"permission_mode,omitempty"`
	// HookEventName is the event; Run sets it.
	HookEventName Event `json:"hook_event_name"`

	// ToolName is the tool of a tool event (Bash, Edit, mcp__server__tool, …).
	ToolName string `json:"tool_name,omitempty"`
	// ToolInput is the call's input, as the model gave it (or as a hook rewrote it).
	ToolInput json.RawMessage `json:"tool_input,omitempty"`
	// ToolResponse is PostToolUse's result of the call: {"content", "success",
	// "filePath" for a write}.
	ToolResponse json.RawMessage `json:"tool_response,omitempty"`
	// ToolUseID is the model's id of the call.
	ToolUseID string `json:"tool_use_id,omitempty"`
	// Error is PostToolUseFailure's error text.
	Error string `json:"error,omitempty"`

	// Prompt is UserPromptSubmit's prompt.
	Prompt string `json:"prompt,omitempty"`
	// StopHookActive (Stop, SubagentStop) reports that the leg is already going on
	// because a stop hook blocked an earlier stop.
	StopHookActive bool `json:"stop_hook_active,omitempty"`
	// Source is SessionStart's source: startup, resume or compact.
	Source string `json:"source,omitempty"`
	// Reason is SessionEnd's reason.
	Reason string `json:"reason,omitempty"`
	// Trigger is PreCompact's trigger: manual or auto.
	Trigger string `json:"trigger,omitempty"`
	// CustomInstructions is PreCompact's instructions for the summary (maybe empty).
	CustomInstructions string `json:"custom_instructions,omitempty"`
	// Message is Notification's text for the person.
	Message string `json:"message,omitempty"`
	// NotificationType is Notification's kind: permission_prompt.
	NotificationType string `json:"notification_type,omitempty"`
	// AgentID is the session of a SubagentStop's child leg.
	AgentID string `json:"agent_id,omitempty"`
	// AgentType is the name of the child leg's agent definition.
	AgentType string `json:"agent_type,omitempty"`
}

// Output is a hook's answer: the JSON a command prints on stdout when it exits 0, or
// what a Func returns. Every field is optional.
type Output struct {
	// Continue false stops the run after the hook, with StopReason for the person.
	Continue *bool `json:"continue,omitempty"`
	// StopReason is shown when Continue is false.
	StopReason string `json:"stopReason,omitempty"`
	// SuppressOutput keeps the hook's stdout out of the run's notices.
	SuppressOutput bool `json:"suppressOutput,omitempty"`
	// SystemMessage is a warning for the person (a notice).
	SystemMessage string `json:"systemMessage,omitempty"`
	// Decision is "block" (with Reason) — for PostToolUse, Stop, SubagentStop and
	// UserPromptSubmit — or, for PreToolUse only, the older "approve" (allow) and
	// "block" (deny).
	Decision string `json:"decision,omitempty"`
	// Reason explains Decision.
	Reason string `json:"reason,omitempty"`
	// HookSpecificOutput is the event's own answer.
	HookSpecificOutput *SpecificOutput `json:"hookSpecificOutput,omitempty"`
}

// SpecificOutput is an Output's hookSpecificOutput member.
type SpecificOutput struct {
	// HookEventName names the event the answer is for; when set it must be the event's.
	HookEventName Event `json:"hookEventName,omitempty"`
	// PermissionDecision (PreToolUse) is allow, deny or ask.
	PermissionDecision string `json:"permissionDecision,omitempty"`
	// PermissionDecisionReason explains it.
	PermissionDecisionReason string `json:"permissionDecisionReason,omitempty"`
	// UpdatedInput (PreToolUse) replaces the call's input; the rewrite is a new call
	// for the permission fold.
	UpdatedInput json.RawMessage `json:"updatedInput,omitempty"`
	// AdditionalContext (PostToolUse, PostToolUseFailure, UserPromptSubmit,
	// SessionStart) is text added for the model.
	AdditionalContext string `json:"additionalContext,omitempty"`
}
