package client

import (
	"encoding/json"
	"time"
)

// TaskSpec is the body of POST /v1/tasks: one task, in the command line's words, so a
// `sema run` invocation maps to it one to one. Every field is optional except Prompt
// (and Cwd, which the service needs to know where to work). Unknown fields, and known
// ones spelled in another case, are refused (400, request.unknown_field).
type TaskSpec struct {
	// Prompt is the user's request (sema run's argument).
	Prompt string `json:"prompt,omitempty"`
	// Cwd is the task root (--cwd): an existing directory that resolves inside the
	// tenant's base directory (400 tenant.root_outside_base, or
	// tenant.root_not_directory for a file, at submission).
	Cwd string `json:"cwd,omitempty"`
	// PermissionMode is --permission-mode: default, acceptEdits, plan, auto, dontAsk or
	// bypassPermissions.
	PermissionMode string `json:"permission_mode,omitempty"`
	// Model is --model: "provider/name" or a bare model name.
	Model string `json:"model,omitempty"`
	// AllowedTools and DisallowedTools are --allowedTools and --disallowedTools, in rule
	// syntax.
	AllowedTools []string `json:"allowed_tools,omitempty"`
	// DisallowedTools: see AllowedTools.
	DisallowedTools []string `json:"disallowed_tools,omitempty"`
	// AddDirs are --add-dir: extra write roots, each inside the tenant's base.
	AddDirs []string `json:"add_dirs,omitempty"`
	// AddReadDirs are --add-read-dir: extra read-only roots, each inside the base.
	AddReadDirs []string `json:"add_read_dirs,omitempty"`
	// Worktree runs the task in a git worktree of its own, as sema -w NAME does: made
	// (or reused) at .sema/worktrees/NAME of the repository Cwd is in, on the branch
	// sema/NAME, and made the task's root; the repository and the worktree must be
	// inside the tenant's base. Empty: the task runs in Cwd.
	Worktree string `json:"worktree,omitempty"`
	// MaxTurns is --max-turns (0: no bound).
	MaxTurns int `json:"max_turns,omitempty"`
	// MaxBudgetUSD is --max-budget-usd (0: no budget).
	MaxBudgetUSD float64 `json:"max_budget_usd,omitempty"`
	// Resume is --resume: the session to continue.
	Resume string `json:"resume,omitempty"`
	// ForkSession is --fork-session: continue Resume in a new session.
	ForkSession bool `json:"fork_session,omitempty"`
	// OnAsk is --on-ask: park (the service's default: a question waits for a decision
	// over the API) or deny.
	OnAsk string `json:"on_ask,omitempty"`
}

// Task is a submitted task as the service reports it (POST /v1/tasks answers with
// TaskID, SessionID and Status; GET /v1/tasks/{id} with all of it).
type Task struct {
	// TaskID names the task.
	TaskID string `json:"task_id"`
	// SessionID is the session the task runs in (empty for a fork until it starts).
	SessionID string `json:"session_id"`
	// Status is queued, running, or a result status of --output-format json:
	// completed, awaiting_approval, max_turns, budget_exceeded, error, cancelled.
	Status string `json:"status"`
	// CheckpointID names the open question when Status is awaiting_approval.
	CheckpointID string `json:"checkpoint_id,omitempty"`
	// Prompt is the task's prompt as submitted (GET /v1/tasks and GET /v1/tasks/{id}).
	Prompt string `json:"prompt,omitempty"`
	// ScheduleID names the schedule whose firing submitted the task (empty for a task
	// submitted otherwise).
	ScheduleID string `json:"schedule_id,omitempty"`
	// Result is the last leg's result object, as --output-format json prints it.
	Result json.RawMessage `json:"result,omitempty"`
	// CreatedAt and UpdatedAt are when the task was submitted and last changed.
	CreatedAt time.Time `json:"created_at,omitzero"`
	// UpdatedAt: see CreatedAt.
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// Terminal reports whether the task has ended for good: every status but queued,
// running and awaiting_approval (a parked task goes on after a decision).
func (t Task) Terminal() bool {
	switch t.Status {
	case StatusQueued, StatusRunning, StatusAwaitingApproval:
		return false
	}
	return true
}

// The task statuses the service adds to the result statuses.
const (
	// StatusQueued: submitted (or decided, or interrupted) and waiting for a worker.
	StatusQueued = "queued"
	// StatusRunning: a worker runs its leg.
	StatusRunning = "running"
	// StatusAwaitingApproval: the leg parked at a question; a decision resumes it.
	StatusAwaitingApproval = "awaiting_approval"
)

// Event is one event of a task's stream (GET /v1/tasks/{id}/events): Data is one line of
// `sema run --output-format stream-json`, ID its place in the task's stream; Type,
// Subtype, Turn and ParentToolUseID are read from Data, and Payload decodes the rest by
// its type.
type Event struct {
	// ID is the event's sequence number in the task, from 1; Last-Event-ID resumes after
	// it.
	ID int64 `json:"id"`
	// Data is the stream-json object.
	Data json.RawMessage `json:"data"`
	// Type is Data's type: one of the Event* constants.
	Type string `json:"-"`
	// Subtype is Data's subtype (init for the system event, question for a permission
	// question), if any.
	Subtype string `json:"-"`
	// Turn is the turn the event belongs to, if any.
	Turn int `json:"-"`
	// ParentToolUseID names the Task call whose delegated leg the event is from; empty
	// for the task's own leg.
	ParentToolUseID string `json:"-"`
}

// Checkpoint is an open question (GET /v1/checkpoints?status=open).
type Checkpoint struct {
	// ID names the checkpoint; a decision quotes it.
	ID string `json:"id"`
	// TaskID and SessionID are the task and session that wait for it.
	TaskID string `json:"task_id"`
	// SessionID: see TaskID.
	SessionID string `json:"session_id"`
	// Tool is the parked call's tool.
	Tool string `json:"tool"`
	// Input is the call's arguments exactly as they will run when allowed unedited.
	Input json.RawMessage `json:"input"`
	// InputSHA256 is the hex sha256 of Input.
	InputSHA256 string `json:"input_sha256"`
	// Gate is the kind of question: tool_permission or plan_review.
	Gate string `json:"gate"`
	// Message is the question's sentence.
	Message string `json:"message,omitempty"`
	// Status is open or answered.
	Status string `json:"status"`
	// CreatedAt is when the leg parked.
	CreatedAt time.Time `json:"created_at,omitzero"`
}

// Decision is the body of POST /v1/checkpoints/{id}/decision: one-shot, as sema approve.
type Decision struct {
	// Decision is allow or deny.
	Decision string `json:"decision"`
	// Input, with allow, replaces the call's arguments. The deny rules judge it again
	// before the decision is answered: a refused edit is an *Error (403
	// checkpoint.edit_denied) and the question stays open.
	Input json.RawMessage `json:"input,omitempty"`
	// Message is the person's sentence; on a deny the model sees it.
	Message string `json:"message,omitempty"`
	// Budget, with allow, answers a budget question (a checkpoint of gate budget): the
	// new limits the task continues under, above what it spent. Allowing a budget
	// question without one, or with a limit not above the spending, is refused (400
	// budget.raise_invalid) and the question stays open; any other question refuses it.
	Budget *BudgetRaise `json:"budget,omitempty"`
}

// BudgetRaise is a decision's new budget for a budget question; zero leaves a limit as
// it was, and the limit the question is about must be raised.
type BudgetRaise struct {
	// MaxBudgetUSD is the new dollar budget.
	MaxBudgetUSD float64 `json:"max_budget_usd,omitempty"`
	// MaxTokensTotal is the new token budget.
	MaxTokensTotal int64 `json:"max_tokens_total,omitempty"`
}

// Session is a stored session as GET /v1/sessions lists it.
type Session struct {
	// ID names the session.
	ID string `json:"id"`
	// ParentID is the session it was forked from, if any.
	ParentID string `json:"parent_id,omitempty"`
	// ForkAt is the id of the entry of ParentID's transcript the fork copied last (its
	// Fork.At, or the head when At was empty); empty when it is not a fork.
	ForkAt string `json:"fork_at,omitempty"`
	// Root is the session's task root.
	Root string `json:"root"`
	// Title is the first prompt's first line.
	Title string `json:"title,omitempty"`
	// Model is the model the session started with.
	Model string `json:"model,omitempty"`
	// CreatedAt and UpdatedAt are when it was created and last changed.
	CreatedAt time.Time `json:"created_at"`
	// UpdatedAt: see CreatedAt.
	UpdatedAt time.Time `json:"updated_at"`
}

// Transcript is a page of a session's transcript (GET /v1/sessions/{id}).
type Transcript struct {
	// Session is the session.
	Session Session `json:"session"`
	// Entries are the page's entries, oldest first, in the form `sema sessions show
	// --output-format json` prints them.
	Entries []json.RawMessage `json:"entries"`
	// Next is the offset of the next page; 0 when this page is the last.
	Next int `json:"next,omitempty"`
}

// Message is the body of POST /v1/sessions/{id}/messages: continue the session with a
// new prompt, as a new task.
type Message struct {
	// Prompt is the new request.
	Prompt string `json:"prompt"`
	// PermissionMode, Model, MaxTurns and MaxBudgetUSD are as in TaskSpec.
	PermissionMode string `json:"permission_mode,omitempty"`
	// Model: see PermissionMode.
	Model string `json:"model,omitempty"`
	// MaxTurns: see PermissionMode.
	MaxTurns int `json:"max_turns,omitempty"`
	// MaxBudgetUSD: see PermissionMode.
	MaxBudgetUSD float64 `json:"max_budget_usd,omitempty"`
}

// Fork is the body of POST /v1/sessions/{id}/fork: continue the session in a new one
// with a new prompt, as a new task.
type Fork struct {
	// Prompt is the new session's request.
	Prompt string `json:"prompt"`
	// At is the transcript entry to fork at; empty: the head.
	At string `json:"at,omitempty"`
}

// Rewind is the body of POST /v1/sessions/{id}/rewind: return the session's files to the
// start of a turn, as `sema rewind`.
type Rewind struct {
	// Turn is the turn to return to (turns are numbered from 1 across the session's
	// legs; 0 is its beginning).
	Turn int `json:"turn"`
	// Files returns the files the session's tools changed at or after Turn to what they
	// were at its start; Conversation moves the session's head back to it. At least one
	// is required (400, request.rewind_empty).
	Files bool `json:"files,omitempty"`
	// Conversation: see Files.
	Conversation bool `json:"conversation,omitempty"`
	// Undo returns the files to where they were before the session's last rewind.
	Undo bool `json:"undo,omitempty"`
	// DryRun reports what would change and changes nothing.
	DryRun bool `json:"dry_run,omitempty"`
	// AcceptPartial restores what it can when some files conflict.
	AcceptPartial bool `json:"accept_partial,omitempty"`
}

// Error is every error answer's body: a stable code and a sentence saying what to
// change.
type Error struct {
	// Code is the stable error code (request.unknown_field, checkpoint.already_claimed, …).
	Code string `json:"code"`
	// Message says what went wrong and what to change.
	Message string `json:"message"`
	// RequestID is the request's id, as the X-Request-Id header carries it.
	RequestID string `json:"request_id,omitempty"`
	// Status is the HTTP status it came with.
	Status int `json:"-"`
}

// Error returns the code and the message.
func (e *Error) Error() string { return e.Code + ": " + e.Message }
