package permission

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/sema-agent/sema/model"
)

// ApprovalRequest is one question put to an approver (in auto mode, the classifier
// first sees it as a ClassifyRequest): plain data a host can store, send and answer
// later.
type ApprovalRequest struct {
	// Tool is the called tool's name.
	Tool string `json:"tool"`
	// Input is the call's JSON input as it would run: a hook's rewrite included.
	Input json.RawMessage `json:"input"`
	// Ask is the gate's question: its sentence (Reason), the layer that asked
	// (DecidedBy), the gate and whether only a person may answer it.
	Ask Decision `json:"ask"`
	// Mode is the leg's mode when the question was put.
	Mode Mode `json:"mode"`
	// Agent is the agent type of the delegated child leg that asks ("Explore"); empty
	// when the task's own leg asks.
	Agent string `json:"agent,omitempty"`
	// ToolUseID is the model's id of the call asked about, when the runner knows it.
	ToolUseID string `json:"tool_use_id,omitempty"`
	// Transcript is the leg's conversation so far, for the classifier. Optional.
	Transcript []model.Message `json:"-"`
}

// ApprovalDecision is an approver's answer.
type ApprovalDecision struct {
	// Behavior is Allow or Deny; anything else is read as Deny.
	Behavior Behavior `json:"behavior"`
	// Reason is the approver's sentence; on a deny the model sees it.
	Reason string `json:"reason,omitempty"`
	// UpdatedInput, with an allow, is the approver's edit of the input: the call runs
	// with it after the deny rules judged it again.
	UpdatedInput json.RawMessage `json:"updated_input,omitempty"`
	// Interrupt, with a deny, stops the whole task as well: the refusal is recorded
	// first (its permission event and the call's result, which the model would read),
	// then the task ends cancelled, and no call that had not started runs. With an
	// allow it means nothing.
	Interrupt bool `json:"interrupt,omitempty"`
}

// Approver answers the questions the gate puts to a person while the call waits: an
// interactive prompt or a host callback. An error is read as a refusal — except
// ErrDefer. A question that should wait for a person without holding the run is not an
// approver's job: a task parks it (agent.OnAskPark, which needs a session store), and
// Runner.Resume answers it later, in any process.
type Approver interface {
	// Approve answers one question. It may block until a person answers, and should
	// return when ctx is done. A non-nil error, or a panic, refuses the call with a
	// sentence that quotes it; a nil error with a Behavior other than Allow refuses it
	// too.
	Approve(ctx context.Context, req ApprovalRequest) (ApprovalDecision, error)
}

// ApproverFunc adapts a function to Approver.
type ApproverFunc func(ctx context.Context, req ApprovalRequest) (ApprovalDecision, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, req ApprovalRequest) (ApprovalDecision, error) {
	return f(ctx, req)
}

// ErrDefer is what an Approver returns when the person it asks went away with the
// question open (an editor that closed its connection): the question is not refused
// but parked, as agent.OnAskPark parks it, for Runner.Resume (or `sema approve`) to
// answer later. A run that has nowhere to park it (no session store) refuses the call.
var ErrDefer = errors.New("permission: the approver's person went away; the question waits for a later answer")

// Deferring is implemented by an Approver that may return ErrDefer. A run whose
// approver may defer runs a turn's calls one after another, as a parking run does, so
// that a deferred question parks at its own call, never in the middle of others.
type Deferring interface {
	// MayDefer reports whether the approver may return ErrDefer.
	MayDefer() bool
}
