package agent

import (
	"context"

	"github.com/sema-agent/sema/internal/gate"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/session"
)

// modeRequest is what the leg's mode controller starts from.
type modeRequest struct {
	// requested is the word the leg asks for ("" for its own default).
	requested permission.Mode
	// prePlan is the word to return to from plan, for a leg that starts in plan.
	prePlan permission.Mode
	// planApproved: the leg resumes an approved plan review and has left plan already.
	planApproved bool
}

// readCheckpoint reads the checkpoint a resume answers, once: the leg's mode is taken
// from it (modeFor) before the mode controller is built, and prepareAnswer judges and
// claims the same row at the end of prepare. Reading claims nothing, so a resume refused
// in between leaves the question open.
func (l *leg) readCheckpoint(ctx context.Context) error {
	if l.answer == nil {
		return nil
	}
	cp, err := l.store.Checkpoint(ctx, l.answer.CheckpointID)
	if err != nil {
		return err
	}
	l.checkpoint = &cp
	return nil
}

// modeFor resolves the mode word the leg asks for. A resume that answers a parked
// question takes it from the checkpoint row, as gate.ModeRequestAfterResume says: the
// re-passed spec's word, else the word the row recorded — except that approving or
// editing a plan review recorded in plan leaves plan, for the pre-plan word or the
// approver's choice of another mode than plan. Any other resume takes the session's
// recorded word unless the spec names one, and a new session the spec's word. Where
// that leaves no word, the root's settings default applies (defaultMode), else the
// controller's own default.
func (l *leg) modeFor(loaded *session.Session, defaultMode permission.Mode) modeRequest {
	var req modeRequest
	cp := l.checkpoint
	switch {
	case cp != nil && loaded != nil && cp.SessionID == loaded.ID:
		outcome := resumeOutcome(*l.answer, cp.Gate)
		recorded := gate.RecordedMode{PermissionMode: permission.Mode(cp.Mode), PrePlanMode: permission.Mode(cp.PrePlanMode)}
		req.requested = gate.ModeRequestAfterResume(l.spec.PermissionMode, recorded, outcome)
		// The approved review's exit is this leg's starting mode, so its ExitPlanMode
		// call has nothing left to do but say so.
		req.planApproved = cp.Gate == session.GatePlanReview && recorded.PermissionMode == permission.ModePlan && outcome.Decision != "deny"
		if req.requested == permission.ModePlan {
			req.prePlan = recorded.PrePlanMode
		}
	default:
		// A checkpoint of another session is refused by prepareAnswer; until then the
		// leg resolves as a plain resume would.
		req.requested, req.prePlan = requestedMode(l.spec, loaded, "")
	}
	if req.requested == "" {
		req.requested = defaultMode
	}
	return req
}

// resumeOutcome is the answer as the mode rule reads it: allow, edit (allow with
// arguments of the approver's), or deny.
func resumeOutcome(a Answer, g session.Gate) *gate.ResumeOutcome {
	decision := "deny"
	switch {
	case a.Allow && len(a.UpdatedInput) > 0:
		decision = "edit"
	case a.Allow:
		decision = "allow"
	}
	return &gate.ResumeOutcome{Gate: string(g), Decision: decision}
}
