package agent

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/mcp"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/tools"
	"github.com/sema-agent/sema/tools/files"
)

// callKey carries the raw input of the call being run to the write lane's permission
// station, which sees only the lane's view of the call.
type callKey struct{}

type runningCall struct {
	name  string
	input json.RawMessage
	// edited: the input is an approver's edit of the parked call, a new call the whole
	// fold judges again (gate.JudgeEdit).
	edited bool
}

// decide runs the fold for one call and answers its question, if it asks one. The
// returned decision is allow or deny; a deny has been recorded.
func (l *leg) decide(ctx context.Context, call permission.Call) permission.Decision {
	ref, _ := ctx.Value(callRefKey{}).(callRef)
	if approved, edited := l.isApproved(call.Tool, call.Input); approved {
		// A person approved exactly this call: only the deny rules still stand — unless
		// they edited it, which makes it a new call the whole fold judges again.
		var d permission.Decision
		var denied bool
		if edited {
			d = l.gate.JudgeEdit(ctx, call, call.Input)
			denied = d.Behavior != permission.Allow
		} else {
			d, denied = l.gate.RecheckDeny(ctx, call, call.Input)
		}
		if denied {
			l.deny(PermissionDenial{Tool: call.Tool, ToolUseID: ref.id, Input: json.RawMessage(orEmpty(call.Input)), Reason: d.Reason, Code: permission.CodeDenied})
			return d
		}
		if !edited {
			d = permission.Decision{Behavior: permission.Allow, DecidedBy: permission.LayerUser}
		}
		if jsonEqual(d.UpdatedInput, call.Input) {
			d.UpdatedInput = nil
		}
		return d
	}
	d := l.gate.Decide(ctx, call)
	if tl, ok := ctx.Value(typedLineKey{}).(*typedLine); ok {
		d = l.answerTypedLine(ctx, tl, call, d) // the person typed it: never a question
	}
	if d.Behavior == permission.Ask {
		ask := d
		// Read calls of one turn run concurrently; their questions are put one at a time,
		// so a person never sees two prompts at once.
		l.askMu.Lock()
		approver, seat, asked := l.approverSeat()
		// The classifier the mode controller armed: none while the leg is not in auto,
		// and none after a failed arming, so the question then goes to the approver.
		d = l.gate.Answer(ctx, call, ask, approver, l.modes.Classifier(), l.snapshot())
		l.askMu.Unlock()
		parked := l.parkPending(ctx)
		q := PermissionQuestion{Tool: call.Tool, Input: json.RawMessage(orEmpty(call.Input)), Message: ask.Reason,
			Gate: gateOf(ask), PersonOnly: ask.PersonOnly, AnsweredBy: AnsweredByNone, Behavior: d.Behavior}
		if len(ask.UpdatedInput) > 0 {
			q.Input = ask.UpdatedInput
		}
		switch {
		case *asked:
			q.AnsweredBy = seat
		case d.DecidedBy == permission.LayerClassifier:
			q.AnsweredBy = AnsweredByClassifier
		}
		if parked {
			q.Behavior = permission.Ask
			q.AnsweredBy = AnsweredByPark // parked by the task, or deferred by its approver
		}
		l.question(q)
		if parked {
			return d // parked, not denied: the leg ends awaiting the answer
		}
	}
	if d.Behavior != permission.Allow {
		msg := d.Reason
		if msg == "" {
			msg = "the call was not allowed"
		}
		l.deny(PermissionDenial{Tool: call.Tool, ToolUseID: ref.id, Input: json.RawMessage(orEmpty(call.Input)), Reason: msg, Code: permission.CodeDenied})
	}
	return d
}

// approverSeat returns the approver the leg's questions go to — as TaskSpec.OnAsk
// chooses: the parking seat, nobody, or Deps.Approver — with its seat's name and a flag it sets
// when it is called, so the permission event can say who answered. A nil approver stays
// nil: AnswerAsk reads that as nobody to ask.
func (l *leg) approverSeat() (permission.Approver, AnsweredBy, *bool) {
	asked := new(bool)
	approver, seat := l.deps.Approver, AnsweredByApprover
	switch l.spec.OnAsk {
	case OnAskPark:
		approver, seat = l.parkingApprover(), AnsweredByPark
	case OnAskDeny:
		approver = nil
	}
	if approver == nil {
		return nil, seat, asked
	}
	return permission.ApproverFunc(func(ctx context.Context, req permission.ApprovalRequest) (permission.ApprovalDecision, error) {
		*asked = true
		l.notifyHooks(ctx, req.Tool)
		if ref, ok := ctx.Value(callRefKey{}).(callRef); ok && req.ToolUseID == "" {
			req.ToolUseID = ref.id
		}
		d, err := approver.Approve(ctx, l.approvalAgent(req))
		if errors.Is(err, permission.ErrDefer) {
			return l.deferred(ctx, req)
		}
		if err == nil && d.Interrupt && d.Behavior != permission.Allow && req.ToolUseID != "" {
			l.mu.Lock()
			if l.interrupting == nil {
				l.interrupting = map[string]bool{}
			}
			l.interrupting[req.ToolUseID] = true
			l.mu.Unlock()
		}
		return d, err
	}), seat, asked
}

// errInterruptedByApprover is the cause of a task stopped by a refusal that asked to
// stop it (ApprovalDecision.Interrupt).
var errInterruptedByApprover = errors.New("the approver refused a call and stopped the task")

// interruptAfter stops the whole task — from the task's own leg down, so a child's
// refusal stops its parent too — when the call id's refusal asked to. It runs once the
// call has its result, so that the refusal is what the call answers, not the
// cancellation.
func (l *leg) interruptAfter(id string) {
	l.mu.Lock()
	stop := l.interrupting[id]
	delete(l.interrupting, id)
	l.mu.Unlock()
	if !stop {
		return
	}
	root := l
	for root.link != nil {
		root = root.link.parent
	}
	root.stop(errInterruptedByApprover)
}

// deferred parks a question the approver deferred (its person went away), as a parking
// task parks every question; without a store to park it in, the call is refused.
func (l *leg) deferred(ctx context.Context, req permission.ApprovalRequest) (permission.ApprovalDecision, error) {
	if l.deps.Store == nil || !l.mayDefer() {
		return permission.ApprovalDecision{Behavior: permission.Deny,
			Reason: "The person who was asked went away before answering, and this run has no session store to park the question in; the call did not run."}, nil
	}
	return l.parkingApprover().Approve(ctx, req)
}

// mayDefer reports whether the leg's questions may park although it does not park them
// all: its approver may defer one (permission.Deferring), and a store holds sessions.
func (l *leg) mayDefer() bool {
	d, ok := l.deps.Approver.(permission.Deferring)
	return ok && d.MayDefer() && l.deps.Store != nil && l.spec.OnAsk != OnAskDeny && l.spec.OnAsk != OnAskPark
}

// judge is the permission station of every call that does not go through the write lane
// (the lane asks at its own station 4). It returns the input the tool runs with — the
// model's, or a hook's or approver's edit — and whether a person approved this exact
// call, or a refusal.
func (l *leg) judge(ctx context.Context, t tools.Tool, call model.Block) (json.RawMessage, bool, *tools.Result) {
	spec := t.Spec()
	if l.laneTools[spec.Name] {
		return call.Input, false, nil
	}
	pc := seatedCall(spec)
	pc.Input, pc.Scope = call.Input, l.scope
	if r, ok := t.(permission.SeatReader); ok {
		pc.SeatOf = r.PermissionSeatOf
	}
	switch _, isMCP := mcp.ServerOf(t); {
	case isMCP:
		pc.DeclaredBy = permission.DeclaredByMCP
	case !l.isEngineTool(spec.Name):
		pc.DeclaredBy = permission.DeclaredByCaller
	}
	if e, ok := l.declaredEffect(spec.Name); ok {
		// The deployment's declaration outranks what the tool or its server claims.
		pc.Effect, pc.EffectDefaulted = e, false
	}
	pc, err := l.gate.Prepare(ctx, pc)
	if err != nil {
		r := tools.FromError(err, permission.CodeDenied)
		return nil, false, &r
	}
	d := l.decide(ctx, pc)
	if d.Behavior != permission.Allow {
		r := tools.Fail(permission.CodeDenied, "%s", denyText(d))
		return nil, false, &r
	}
	byPerson := d.DecidedBy == permission.LayerUser
	if len(d.UpdatedInput) > 0 {
		return d.UpdatedInput, byPerson, nil
	}
	return call.Input, byPerson, nil
}

// seatedCall is the gate's call for a tool, carrying every seat its spec declares. It is
// read for every tool; the engine's own declare only an Effect. An empty Effect is the
// fail-closed exec, marked defaulted so that a read-only claim may count where the gate
// allows a claim to; a PermissionSeat other than the tool's own counts as passthrough,
// the stricter reading of a word the run's door would have refused.
func seatedCall(spec tools.Spec) permission.Call {
	c := permission.Call{
		Tool:                    spec.Name,
		Effect:                  spec.Effect,
		ReadOnlyHint:            spec.ReadOnlyHint,
		Passthrough:             spec.PermissionSeat != tools.SeatOwn,
		PassthroughQuestion:     spec.PassthroughQuestion,
		RequiresUserInteraction: spec.RequiresUserInteraction,
	}
	if c.Effect == "" {
		c.Effect, c.EffectDefaulted = tools.EffectExec, true
	}
	return c
}

// permitWrite is the write lane's permission station: the same fold, asked after the
// lane's containment and read-before-edit checks passed, with the canonical target and
// its protected flag the lane resolved.
func (l *leg) permitWrite(ctx context.Context, req files.PermissionRequest) error {
	input := json.RawMessage(`{}`)
	if rc, ok := ctx.Value(callKey{}).(runningCall); ok && rc.name == req.Tool {
		input = rc.input
	}
	pc := permission.Call{
		Tool:   req.Tool,
		Effect: tools.EffectWrite,
		Input:  input,
		Paths: []permission.PathTarget{{
			Abs:             l.fence.Abs(req.Path),
			Canonical:       req.Key,
			Protected:       req.Protected,
			ProtectedReason: req.ProtectedReason,
		}},
		Scope: l.scope,
	}
	d := l.decide(ctx, pc)
	if d.Behavior != permission.Allow {
		return &sema.Error{Code: permission.CodeDenied, Message: denyText(d)}
	}
	if len(d.UpdatedInput) > 0 && !jsonEqual(d.UpdatedInput, input) {
		// The lane has already computed the bytes from the model's input; running an
		// edited input would need the lane's checks again. Refuse rather than write
		// something nobody approved.
		return sema.Errorf(CodeEditedWriteUnsupported, "an edited input for %s cannot be applied to a write in progress; deny the call and tell the model what to change instead", req.Tool)
	}
	return nil
}

func (l *leg) isEngineTool(name string) bool {
	for _, t := range l.deps.Tools {
		if t.Spec().Name == name {
			return false
		}
	}
	return true
}

// snapshot copies the transcript for the classifier.
func (l *leg) snapshot() []model.Message {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]model.Message(nil), l.transcript...)
}

func denyText(d permission.Decision) string {
	if d.Reason != "" {
		return d.Reason
	}
	return "The call was not allowed."
}

func orEmpty(b json.RawMessage) []byte {
	if len(b) == 0 {
		return []byte("{}")
	}
	return b
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ea, _ := json.Marshal(x)
	eb, _ := json.Marshal(y)
	return string(ea) == string(eb)
}

// armAuto is the leg's arming of its auto classifier, as the mode controller calls it:
// nil when no face is wired (Deps.Classifier is permission.NoClassifier, here or in an
// ancestor), so auto folds to default (face_absent); else the face's own Arm, when it
// has one, before the leg's denial-counting classifier is handed over.
func (l *leg) armAuto() func(context.Context) (permission.AutoClassifier, error) {
	if l.face == permission.NoClassifier {
		return nil
	}
	return func(ctx context.Context) (permission.AutoClassifier, error) {
		if a, ok := l.face.(permission.ClassifierArmer); ok {
			if err := a.Arm(ctx); err != nil {
				return nil, err
			}
		}
		return l.classifier, nil
	}
}
