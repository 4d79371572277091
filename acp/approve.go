package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sema-agent/sema/permission"
)

// The ids of the permission options sema offers; the client answers with one.
const (
	optAllowOnce    = "allow_once"
	optAllowAlways  = "allow_always"
	optRejectOnce   = "reject_once"
	optRejectAlways = "reject_always"
)

// Approve implements permission.Approver: the gate's question goes to the client as
// session/request_permission, and the client's choice is the answer. "Always" choices
// hold for the rest of the session, for the rule the terminal's dialog would add
// (Options.Rule); a question only a person may answer (the plan gate, the safety
// stations) is asked every time and offers no "always". A prompt cancelled while its
// question is open answers no: the call does not run. A client that goes away with the
// question open defers it (permission.ErrDefer): the run parks it, for `sema approve`.
func (s *acpSession) Approve(ctx context.Context, req permission.ApprovalRequest) (permission.ApprovalDecision, error) {
	rule := s.a.opts.Rule(req)
	s.mu.Lock()
	allowed, rejected := s.allowed[rule], s.rejected[rule]
	s.mu.Unlock()
	if !req.Ask.PersonOnly {
		switch {
		case rejected:
			return deny("rejected by " + rule + ", which the person rejected always in this session"), nil
		case allowed:
			return permission.ApprovalDecision{Behavior: permission.Allow, Reason: "allowed by " + rule + ", which the person allowed always in this session"}, nil
		}
	}
	id := req.ToolUseID
	if id == "" {
		// A question about no call of the model's (a hook's, a child's own) still needs
		// an id the client can show it under.
		s.mu.Lock()
		s.questions++
		id = fmt.Sprintf("question-%d", s.questions)
		s.mu.Unlock()
	}
	call := s.describe(id, req.Tool, req.Input)
	call.Status = StatusPending
	var content []ToolCallContent
	if req.Ask.Reason != "" {
		content = append(content, textContent(req.Ask.Reason))
	}
	var plan struct {
		Plan string `json:"plan"`
	}
	if req.Tool == "ExitPlanMode" && json.Unmarshal(req.Input, &plan) == nil && plan.Plan != "" {
		// Leaving plan is a review of the plan: the client shows it with the question.
		content = append(content, textContent(plan.Plan))
	}
	if content != nil {
		call.Content = content
	}
	opts := []PermissionOption{{OptionID: optAllowOnce, Name: "Allow once", Kind: OptionAllowOnce}}
	if !req.Ask.PersonOnly {
		opts = append(opts, PermissionOption{OptionID: optAllowAlways, Name: "Allow always: " + rule, Kind: OptionAllowAlways})
	}
	opts = append(opts, PermissionOption{OptionID: optRejectOnce, Name: "Reject", Kind: OptionRejectOnce})
	if !req.Ask.PersonOnly {
		opts = append(opts, PermissionOption{OptionID: optRejectAlways, Name: "Reject always: " + rule, Kind: OptionRejectAlways})
	}
	var out RequestPermissionResponse
	s.mu.Lock()
	s.asking++
	s.mu.Unlock()
	err := s.a.conn.Call(ctx, MethodRequestPermission, RequestPermissionRequest{SessionID: s.id, ToolCall: call, Options: opts}, &out)
	s.mu.Lock()
	// Marked before the count drops, so the prompt's watch of the connection sees
	// either the open question or its deferral, whichever it looks at first.
	s.deferred = s.deferred || errors.Is(err, ErrClosed)
	s.asking--
	s.mu.Unlock()
	switch {
	case errors.Is(err, ErrClosed):
		// The editor went away with the question open: it waits, parked, for an answer
		// from `sema approve` or the terminal's /questions (the run refuses the call
		// where it cannot park it).
		return permission.ApprovalDecision{}, permission.ErrDefer
	case ctx.Err() != nil:
		return deny("the prompt was cancelled while the question was open"), nil
	case err != nil:
		return deny("the editor could not answer the question (" + err.Error() + "); the call did not run"), nil
	}
	if out.Outcome.Outcome != "selected" {
		return deny("the prompt was cancelled while the question was open"), nil
	}
	switch out.Outcome.OptionID {
	case optAllowAlways:
		if req.Ask.PersonOnly {
			break
		}
		s.mu.Lock()
		s.allowed[rule] = true
		s.mu.Unlock()
		s.inProgress(id)
		return permission.ApprovalDecision{Behavior: permission.Allow, Reason: "allowed always in this session by the person (" + rule + ")"}, nil
	case optAllowOnce:
		s.inProgress(id)
		return permission.ApprovalDecision{Behavior: permission.Allow, Reason: "allowed once by the person"}, nil
	case optRejectAlways:
		if req.Ask.PersonOnly {
			break
		}
		s.mu.Lock()
		s.rejected[rule] = true
		s.mu.Unlock()
		return deny("the person rejected it, and " + rule + " for the rest of the session, in the editor"), nil
	case optRejectOnce:
		return deny("the person rejected it in the editor"), nil
	}
	return deny("the editor answered with an option sema did not offer (" + out.Outcome.OptionID + "); the call did not run"), nil
}

// MayDefer implements permission.Deferring: a question open when the editor goes away
// is deferred (ErrDefer), to be parked.
func (s *acpSession) MayDefer() bool { return true }

// inProgress tells the client an approved call runs now.
func (s *acpSession) inProgress(id string) {
	if id != "" {
		s.update(SessionUpdate{SessionUpdate: UpdateToolCallUpdate, ToolCallID: id, Status: StatusInProgress})
	}
}

func deny(why string) permission.ApprovalDecision {
	return permission.ApprovalDecision{Behavior: permission.Deny, Reason: why}
}
