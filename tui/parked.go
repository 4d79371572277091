package tui

import (
	"context"
	"encoding/json"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/session"
)

// Parked is what a back-end offers, beyond Backend, to answer the questions other
// processes parked (sema -p --on-ask park, sema serve) in the sessions of its directory.
// The screen asks for it with a type assertion; without it /questions says so.
type Parked interface {
	// Pending lists the unanswered questions of the directory's sessions, oldest first.
	Pending(ctx context.Context) ([]PendingQuestion, error)
	// Answer answers question id (allow runs the parked call, deny refuses it with
	// reason) and resumes its leg, calling emit with each of its events, the result
	// last, before it returns. A question answered elsewhere meanwhile is refused with
	// session.CodeAlreadyClaimed, and nothing runs.
	Answer(ctx context.Context, id string, allow bool, reason string, emit func(agent.Event)) error
}

// PendingQuestion is one line of the /questions picker.
type PendingQuestion struct {
	// ID names the checkpoint (agent.Answer.CheckpointID).
	ID string
	// SessionID is the session whose leg parked.
	SessionID string
	// Title is that session's title, its first prompt.
	Title string
	// Tool is the parked call's tool.
	Tool string
	// Input is the call's arguments exactly as they will run when allowed.
	Input json.RawMessage
	// Agent is the delegated agent that asked (its Task call's description), when the
	// question is a child's: answering it resumes SessionID, which resumes the child.
	// "" for the session's own question.
	Agent string
	// PlanReview marks the model's ExitPlanMode question rather than a tool's.
	PlanReview bool
	// Budget marks a budget question (gate budget): Input says the limit and the
	// spending, and allowing it needs a new limit (BudgetParked).
	Budget bool
	// ParkedAt is when the leg parked.
	ParkedAt time.Time
}

var _ Parked = (*Local)(nil)

// pendingSessions caps how many of the directory's newest sessions Pending reads, and
// pendingChildren how many delegated children's sessions it looks among for their
// questions.
const (
	pendingSessions = 50
	pendingChildren = 1000
)

// Pending implements Parked: of the directory's root sessions, the checkpoints still
// unclaimed that their session waits at — the newest leg parked there and nothing ran
// after it — and, for a session that waits at its delegated child's question, the
// child's (at any depth), which is answered through the root session as `sema approve`
// answers it.
func (l *Local) Pending(ctx context.Context) ([]PendingQuestion, error) {
	admin, err := session.AsAdmin(l.store)
	if err != nil {
		return nil, err
	}
	root, err := l.root(ctx)
	if err != nil {
		return nil, err
	}
	all, err := admin.List(ctx, session.Filter{Root: root, RootsOnly: true, Limit: pendingSessions})
	if err != nil {
		return nil, err
	}
	var children map[string][]session.Session // by parent; read once, when a session waits
	var out []PendingQuestion
	for i := len(all) - 1; i >= 0; i-- { // oldest session first
		s := all[i]
		waiting, err := l.waitingLeg(ctx, s.ID)
		if err != nil {
			return nil, err
		}
		if waiting == "" {
			continue
		}
		asked := func(c session.Checkpoint, agent string) {
			out = append(out, PendingQuestion{ID: c.ID, SessionID: s.ID, Title: s.Title, Agent: agent, Tool: c.Tool,
				Input: c.Args, PlanReview: c.Gate == session.GatePlanReview, Budget: c.Gate == session.GateBudget, ParkedAt: c.CreatedAt})
		}
		if err := l.unclaimed(ctx, admin, s.ID, waiting, func(c session.Checkpoint) { asked(c, "") }); err != nil {
			return nil, err
		}
		if children == nil {
			if children, err = childrenOf(ctx, admin, root); err != nil {
				return nil, err
			}
		}
		// A child (and its children) waits at its own newest leg's question.
		queue := append([]session.Session(nil), children[s.ID]...)
		for len(queue) > 0 {
			c := queue[0]
			queue = append(queue[1:], children[c.ID]...)
			w, err := l.waitingLeg(ctx, c.ID)
			if err != nil {
				return nil, err
			}
			if w == "" {
				continue
			}
			if err := l.unclaimed(ctx, admin, c.ID, w, func(cp session.Checkpoint) { asked(cp, c.Title) }); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// unclaimed calls found with each checkpoint of the session that leg waits at and
// nobody has answered.
func (l *Local) unclaimed(ctx context.Context, admin session.Admin, sessionID, leg string, found func(session.Checkpoint)) error {
	cps, err := admin.Checkpoints(ctx, sessionID)
	if err != nil {
		return err
	}
	for _, c := range cps {
		if c.ClaimedAt.IsZero() && c.Decision == nil && (c.LegID == "" || c.LegID == leg) {
			found(c)
		}
	}
	return nil
}

// childrenOf maps each session of the directory to its delegated children's sessions.
func childrenOf(ctx context.Context, admin session.Admin, root string) (map[string][]session.Session, error) {
	all, err := admin.List(ctx, session.Filter{Root: root, Limit: pendingChildren})
	if err != nil {
		return nil, err
	}
	out := map[string][]session.Session{}
	for _, s := range all {
		if s.ParentID != "" {
			out[s.ParentID] = append(out[s.ParentID], s)
		}
	}
	return out, nil
}

// waitingLeg is the id of the session's newest leg when it ended awaiting approval; ""
// when the session does not wait at a question.
func (l *Local) waitingLeg(ctx context.Context, sessionID string) (string, error) {
	legs, err := l.store.Legs(ctx, sessionID)
	if err != nil || len(legs) == 0 {
		return "", err
	}
	last := legs[len(legs)-1]
	if last.Status != sema.StatusAwaitingApproval {
		return "", nil
	}
	return last.ID, nil
}

// Answer implements Parked: the runner claims the checkpoint and resumes its session's
// leg here, in the checkpoint's own session and mode, with this back-end's approver for
// any later question. The prompts go on continuing the screen's own session.
func (l *Local) Answer(ctx context.Context, id string, allow bool, reason string, emit func(agent.Event)) error {
	return l.answer(ctx, agent.Answer{CheckpointID: id, Allow: allow, Reason: reason}, emit)
}

var _ BudgetParked = (*Local)(nil)

// AnswerBudget implements BudgetParked: Answer's resume, allowing the budget question
// with the new limits.
func (l *Local) AnswerBudget(ctx context.Context, id string, raise agent.BudgetRaise, emit func(agent.Event)) error {
	return l.answer(ctx, agent.Answer{CheckpointID: id, Allow: true, Budget: &raise}, emit)
}

func (l *Local) answer(ctx context.Context, answer agent.Answer, emit func(agent.Event)) error {
	id := answer.CheckpointID
	if l.store == nil {
		return sema.Errorf(session.CodeAdminUnsupported, "this back-end was given no session store to find parked questions in")
	}
	c, err := l.store.Checkpoint(ctx, id)
	if err != nil {
		return err
	}
	// A delegated child's question is answered through the session that delegated it,
	// at the top of the chain: its resume resumes the child, then itself.
	top, err := l.topSession(ctx, c.SessionID)
	if err != nil {
		return err
	}
	emit = serialEmit(emit)
	ctx = retryNotices(ctx, emit)
	l.mu.Lock()
	spec := l.base
	ctl := &agent.Control{}
	spec.Prompt, spec.Control, spec.PermissionMode = "", ctl, ""
	spec.Resume = &agent.Resume{SessionID: top}
	l.control = ctl
	l.mu.Unlock()
	defer l.endLeg()
	for ev, err := range l.runner.ResumeEvents(ctx, spec, answer) {
		if err != nil {
			return err
		}
		emit(ev)
	}
	return nil
}

// topSession follows a session's parents to the session no Task call delegated.
func (l *Local) topSession(ctx context.Context, id string) (string, error) {
	for range pendingChildren { // a parent chain longer than this is not a delegation chain
		s, err := l.store.Get(ctx, id)
		if err != nil || s.ParentID == "" {
			return id, err
		}
		id = s.ParentID
	}
	return "", sema.Errorf(session.CodeInvalid, "session %s's parents do not end: the store holds a loop of delegated sessions", id)
}
