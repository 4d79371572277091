// Package answercheck checks a person's answer to a parked question against the
// checkpoint it quotes: that the stored arguments are the reviewed ones, that the
// checkpoint is still the parked turn's pending call, and what an allow with an edit
// may change. It also words the refusal of a second answer. It reads no store and runs
// nothing: the leg hands it the checkpoint, the turn and a deny-rule recheck.
package answercheck

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/session"
)

// The codes of a refused answer; agent's CodeStale, CodeEditDenied, CodeAnswerInvalid
// and CodeTampered are the same strings.
const (
	CodeStale         = "checkpoint.stale"
	CodeEditDenied    = "checkpoint.edit_denied"
	CodeAnswerInvalid = "checkpoint.answer_invalid"
	CodeTampered      = "checkpoint.tampered"
)

// Answer is a person's decision, as plain values.
type Answer struct {
	Allow        bool
	UpdatedInput json.RawMessage
	Reason       string
}

// Recheck judges an edited input against the deny rules. It returns the deny rules'
// reason when they refuse it, or an error that refuses the answer for another cause
// (the parked tool is gone).
type Recheck func(edit json.RawMessage) (reason string, denied bool, err error)

// Verify refuses a checkpoint whose stored arguments no longer match their recorded
// sha256: they are not the ones a person reviewed.
func Verify(cp session.Checkpoint) error {
	if session.SHA256Hex(cp.Args) != cp.ArgsSHA256 {
		return sema.Errorf(CodeTampered, "checkpoint %s's arguments do not match their recorded sha256; it cannot be answered", cp.ID)
	}
	return nil
}

// MatchTurn refuses a checkpoint that is not the pending call of the parked turn: the
// call at pending must be the checkpoint's tool, or, for a delegated child's question
// (childToolUseID set), the Task call that started the child.
func MatchTurn(cp session.Checkpoint, calls []model.Block, pending int, childToolUseID string) error {
	stale := pending >= len(calls)
	switch {
	case stale:
	case childToolUseID != "":
		stale = calls[pending].Name != "Task" || calls[pending].ID != childToolUseID
	default:
		stale = calls[pending].Name != cp.Tool
	}
	if stale {
		return sema.Errorf(CodeStale, "checkpoint %s does not match the parked turn", cp.ID)
	}
	return nil
}

// Decide is the decision the answer records on the checkpoint and the input the call
// runs with: the stored, reviewed arguments (never re-derived), or on an allow the
// person's edit once it is valid JSON the deny rules let through.
func Decide(cp session.Checkpoint, a Answer, recheck Recheck) (session.Decision, json.RawMessage, error) {
	input := cp.Args
	d := session.Decision{Verdict: session.VerdictDeny, Reason: a.Reason}
	if !a.Allow {
		return d, input, nil
	}
	d.Verdict = session.VerdictAllow
	if len(a.UpdatedInput) == 0 {
		return d, input, nil
	}
	if !json.Valid(a.UpdatedInput) {
		return d, nil, sema.Errorf(CodeAnswerInvalid, "the edited input is not valid JSON")
	}
	reason, denied, err := recheck(a.UpdatedInput)
	if err != nil {
		return d, nil, err
	}
	if denied {
		return d, nil, sema.Errorf(CodeEditDenied, "the edited input is refused by the deny rules: %s", reason)
	}
	d.Args = a.UpdatedInput
	return d, a.UpdatedInput, nil
}

// Claimed is the input the claimed checkpoint runs with: the decision's edit when the
// claim recorded one, else input.
func Claimed(claimed session.Checkpoint, input json.RawMessage) json.RawMessage {
	if claimed.Decision != nil && len(claimed.Decision.Args) > 0 {
		return claimed.Decision.Args
	}
	return input
}

// AnsweringLeg finds the leg that claimed cp among its session's legs: the last one,
// other than self and the leg that parked, that started before the claim (a resume
// starts its leg, then claims).
func AnsweringLeg(legs []session.Leg, self string, cp session.Checkpoint) (session.Leg, bool) {
	var found session.Leg
	ok := false
	for _, g := range legs {
		if g.ID != self && g.ID != cp.LegID && !g.StartedAt.After(cp.ClaimedAt) {
			found, ok = g, true
		}
	}
	return found, ok
}

// AlreadyAnswered is the refusal of a second answer to cp. A person who answers twice
// most often did not see what the first answer led to, so it says how the leg that ran
// the answered call ended (answering, when known) and where the session stands: an
// open question to answer (open, detail "open_checkpoint"), or a session a plain
// resume continues.
func AlreadyAnswered(cp session.Checkpoint, answering *session.Leg, open *session.Checkpoint) *sema.Error {
	verdict := "allowed"
	if cp.Decision.Verdict == session.VerdictDeny {
		verdict = "denied"
	}
	msg := fmt.Sprintf("checkpoint %s was already answered (%s) at %s", cp.ID, verdict, cp.ClaimedAt.UTC().Format(time.RFC3339))
	e := &sema.Error{Code: session.CodeAlreadyClaimed}
	e = e.With("checkpoint_id", cp.ID).With("session_id", cp.SessionID).With("verdict", string(cp.Decision.Verdict))
	if answering != nil {
		e = e.With("answered_leg_status", string(answering.Status))
		switch answering.Status {
		case sema.StatusRunning:
			msg += "; the leg that answered it has not recorded its end (it is still running, or its process was stopped)"
		case sema.StatusCompleted:
			msg += "; the leg that answered it finished (completed)"
		default:
			msg += fmt.Sprintf("; the leg that answered it finished with status %s", answering.Status)
		}
	}
	if open != nil {
		e = e.With("open_checkpoint", open.ID)
		msg += fmt.Sprintf(". The session now waits at checkpoint %s (%s); answer that one", open.ID, open.Tool)
	} else {
		msg += ". The session is intact; continue it with a new prompt (a plain resume)"
	}
	e.Message = msg
	return e
}
