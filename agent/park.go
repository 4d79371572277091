package agent

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/hooks"
	"github.com/sema-agent/sema/internal/answercheck"
	"github.com/sema-agent/sema/internal/toolcall"
	"github.com/sema-agent/sema/internal/transcript"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/settings"
	"github.com/sema-agent/sema/tools"
)

// Answer is a person's decision on a parked question, given to Runner.Resume (or
// ResumeEvents) for the leg that resumes it.
type Answer struct {
	// CheckpointID names the parked question.
	CheckpointID string `json:"checkpoint_id"`
	// Allow runs the parked call; false refuses it (the model sees Reason).
	Allow bool `json:"allow"`
	// UpdatedInput, with Allow, replaces the call's arguments. The deny rules judge it
	// again before anything is claimed; a denied edit is refused
	// (checkpoint.edit_denied). When it runs, the edit is a new call the whole fold
	// judges again (the PreToolUse hooks included): a refusal there refuses the call,
	// and a question the fold asks about it is the one this answer said yes to.
	UpdatedInput json.RawMessage `json:"updated_input,omitempty"`
	// Reason is the person's sentence; on a refusal the model sees it. Optional.
	Reason string `json:"reason,omitempty"`
	// Budget answers a budget question (gate budget): with Allow, the new limits the run
	// continues under from the request it paused before. Allowing a budget question
	// without one, or with a limit not above what the run spent, is refused
	// (budget.raise_invalid) and the question stays open; a denial ends the run
	// budget_exceeded. Any other question refuses it.
	Budget *BudgetRaise `json:"budget,omitempty"`
}

// CheckpointInfo describes a parked call in the result: what a person needs to answer
// it, and the id the answer quotes.
type CheckpointInfo struct {
	// ID names the stored checkpoint; Answer.CheckpointID quotes it.
	ID string `json:"id"`
	// Tool is the parked call's tool.
	Tool string `json:"tool"`
	// Input is the call's arguments exactly as stored and as they will run when
	// allowed unedited, in canonical JSON (session.CanonicalJSON).
	Input json.RawMessage `json:"input"`
	// InputSHA256 is the lowercase hex sha256 of Input; a resume refuses a checkpoint
	// whose stored arguments no longer match it (checkpoint.tampered).
	InputSHA256 string `json:"input_sha256"`
	// Gate is the kind of question: permission.GateToolPermission,
	// permission.GatePlanReview, or permission.GateBudget (Tool is then "Budget", Input
	// says which limit, the limits and the spending, and the answer carries a new
	// budget: Answer.Budget).
	Gate string `json:"gate"`
	// Message is the question's sentence.
	Message string `json:"message"`
	// Subagent is set when a delegated child leg asks: the checkpoint is stored in the
	// child's session, and the answer, given to this session's Resume, resumes the child
	// and then this leg.
	Subagent *SubagentRef `json:"subagent,omitempty"`
}

// parkRequest is the question a parking leg stopped at.
type parkRequest struct {
	req permission.ApprovalRequest
}

// approval is the decision a resumed leg executes for its pending call.
type approval struct {
	checkpoint string
	index      int
	tool       string
	input      json.RawMessage
	// edited reports that the person edited the input (Answer.UpdatedInput).
	edited bool
	allow  bool
	reason string
	// child is set when the question was a delegated child's: the pending call is the
	// Task call, and answering it resumes the child with claimed, the checkpoint as this
	// leg claimed it.
	child   *childPark
	claimed *session.Checkpoint
}

// parkingApprover stands in for a person when the task parks questions (OnAskPark): it
// remembers each call's question and refuses, and the dispatcher stops at the first
// call that asked.
func (l *leg) parkingApprover() permission.Approver {
	return permission.ApproverFunc(func(ctx context.Context, req permission.ApprovalRequest) (permission.ApprovalDecision, error) {
		call, _ := ctx.Value(callRefKey{}).(callRef)
		l.parks.mu.Lock()
		if l.parks.own == nil {
			l.parks.own = map[int]*parkRequest{}
		}
		if l.parks.own[call.index] == nil {
			l.parks.own[call.index] = &parkRequest{req: req}
		}
		l.parks.mu.Unlock()
		return permission.ApprovalDecision{Behavior: permission.Deny, Reason: "The question was parked for a person to answer."}, nil
	})
}

// parkPending reports whether the call ctx runs has a question parked.
func (l *leg) parkPending(ctx context.Context) bool {
	call, ok := ctx.Value(callRefKey{}).(callRef)
	if !ok {
		return false
	}
	l.parks.mu.Lock()
	defer l.parks.mu.Unlock()
	return l.parks.own[call.index] != nil
}

// parked ends the turn at a parked question: the exact pending call is stored as a
// checkpoint with the results of the calls before it, and the leg ends awaiting
// approval. A delegated child's question is already a checkpoint in the child's
// session; the parked entry names it. It reports whether the leg parked.
func (l *leg) parked(ctx context.Context, res *TaskResult, turn int, calls, results []model.Block) bool {
	tp := l.turnPark
	if tp == nil {
		return false
	}
	pending := tp.pending
	entry := parkedEntry{Turn: turn, Results: results, Pending: pending, Later: tp.later, Waiting: tp.waiting}
	var info CheckpointInfo
	if c := tp.child; c != nil {
		entry.Checkpoint, entry.Child = c.Checkpoint.ID, c
		info = c.Checkpoint
		info.Subagent = c.ref()
	} else {
		call := calls[pending]
		input := call.Input
		if len(tp.own.req.Input) > 0 {
			input = tp.own.req.Input
		}
		l.opened() // the leg's id, stored by now: the call's intent was committed
		park := session.Checkpoint{
			SessionID: l.sessionID,
			LegID:     l.legID,
			Tool:      call.Name,
			Args:      input,
			Gate:      session.Gate(gateOf(tp.own.req.Ask)),
			// The declared word (the request after the ceiling clamp) is what the row
			// records: a resume requests it, so a child's clamped request never comes
			// back wider than the leg that parked ran.
			Mode:        string(l.modes.Declared()),
			PrePlanMode: string(l.modes.PrePlanMode()),
			Claim:       l.writeClaim(),
		}
		cp, err := l.store.Park(context.WithoutCancel(ctx), park)
		if sema.IsCode(err, session.CodeLeaseLost) {
			// As for an entry (flushLocked): a lease that only expired is renewed and the
			// question parked once more; one another run took stops the leg.
			if err = l.reclaim(ctx); err == nil {
				cp, err = l.store.Park(context.WithoutCancel(ctx), park)
			}
			if sema.IsCode(err, session.CodeLeaseLost) {
				res.Status, res.Error = sema.StatusError, leaseLostError(err)
				return true
			}
		}
		if err != nil {
			res.Status = sema.StatusError
			res.Error = sema.Errorf(CodeParkFailed, "the question could not be parked: %v", err)
			return true
		}
		entry.Checkpoint = cp.ID
		info = CheckpointInfo{ID: cp.ID, Tool: cp.Tool, Input: cp.Args, InputSHA256: cp.ArgsSHA256, Gate: string(cp.Gate), Message: tp.own.req.Ask.Reason}
	}
	// The parked call is judged against what the leg had read, so an approved edit runs
	// if (and only if) the file is still as it was read.
	entry.ReadState, entry.ForgetRead = l.readDelta()
	if _, ok := l.record(ctx, transcript.KindParked, entry); !ok {
		// Without its parked entry the checkpoint is not where the session stopped, so
		// nobody could answer it: the leg ends in error, not awaiting an approval.
		return l.stopped(res)
	}
	res.Status = sema.StatusAwaitingApproval
	res.Checkpoint = &info
	return true
}

func gateOf(d permission.Decision) string {
	if d.Gate != "" {
		return d.Gate
	}
	return permission.GateToolPermission
}

// prepareAnswer checks a resume's answer against its checkpoint and claims it. It runs
// at the end of prepare: everything that can refuse the resume refuses before the
// claim, so a refused resume leaves the question open.
func (l *leg) prepareAnswer(ctx context.Context) error {
	a, cp := l.answer, *l.checkpoint // read before the mode was resolved (readCheckpoint)
	if cp.Gate == session.GateBudget {
		return l.prepareBudgetAnswer(ctx, cp)
	}
	if _, err := CheckBudgetAnswer(cp, *a); err != nil {
		return err // a raise for a question about a call
	}
	if p := l.resume.parked; p != nil && p.Child != nil && p.Checkpoint == cp.ID {
		return l.prepareChildAnswer(ctx, cp, p)
	}
	if cp.SessionID != l.spec.sessionID() && cp.Decision != nil && l.answersChild(ctx, cp) {
		return l.alreadyAnswered(ctx, cp) // a child's question this session moved past
	}
	if cp.SessionID != l.spec.sessionID() {
		return sema.Errorf(CodeAnswerInvalid, "checkpoint %s belongs to session %s, not %s", cp.ID, cp.SessionID, l.spec.sessionID())
	}
	if err := answercheck.Verify(cp); err != nil {
		return err
	}
	preclaimed := l.link != nil && l.link.claimed != nil && l.link.claimed.ID == cp.ID
	if cp.Decision != nil && !preclaimed {
		return l.alreadyAnswered(ctx, cp)
	}
	p := l.resume.parked
	if p == nil || p.Checkpoint != cp.ID {
		return sema.Errorf(CodeStale, "checkpoint %s is not where session %s stopped; it can no longer be answered", cp.ID, cp.SessionID)
	}
	if err := answercheck.MatchTurn(cp, toolcall.Last(l.resume.messages), p.Pending, ""); err != nil {
		return err
	}
	d, input, err := answercheck.Decide(cp, plainAnswer(a), func(edit json.RawMessage) (string, bool, error) {
		t := l.tools().Lookup(cp.Tool)
		if t == nil {
			return "", false, sema.Errorf(CodeStale, "the parked tool %s is not mounted on this leg", cp.Tool)
		}
		return l.recheckEdit(ctx, cp.Tool, t.Spec().Effect, edit)
	})
	if err != nil {
		return err
	}
	// One shape for both ways the answer arrives: an edited input is a new call, which
	// the whole fold judges again when it runs (permit), whoever claimed the checkpoint.
	approve := func(claimed session.Checkpoint) {
		l.approval = &approval{checkpoint: cp.ID, index: p.Pending, tool: cp.Tool, input: answercheck.Claimed(claimed, input),
			edited: len(a.UpdatedInput) > 0, allow: a.Allow, reason: a.Reason}
	}
	if preclaimed {
		// The delegating parent claimed it, with the same decision, before resuming us.
		approve(*l.link.claimed)
		return nil
	}
	claimed, err := l.claim(ctx, cp, d)
	if err != nil {
		return err
	}
	approve(claimed)
	return nil
}

func plainAnswer(a *Answer) answercheck.Answer {
	return answercheck.Answer{Allow: a.Allow, UpdatedInput: a.UpdatedInput, Reason: a.Reason}
}

// recheckEdit judges a person's edit of a parked call against the deny rules.
func (l *leg) recheckEdit(ctx context.Context, tool string, effect tools.Effect, edit json.RawMessage) (string, bool, error) {
	call := permission.Call{Tool: tool, Effect: effect, Input: edit, Scope: l.scope}
	dec, denied := l.gate.RecheckDeny(ctx, call, edit)
	return dec.Reason, denied, nil
}

// claim records the decision on the checkpoint, once; a claim another process made
// first is refused as a second answer.
func (l *leg) claim(ctx context.Context, cp session.Checkpoint, d session.Decision) (session.Checkpoint, error) {
	claimed, err := l.store.ClaimCheckpoint(ctx, cp.ID, d)
	if err != nil {
		if sema.CodeOf(err) == session.CodeAlreadyClaimed {
			// Another process claimed it between our read and our claim.
			if now, gerr := l.store.Checkpoint(ctx, cp.ID); gerr == nil && now.Decision != nil {
				return claimed, l.alreadyAnswered(ctx, now)
			}
		}
		return claimed, err
	}
	return claimed, nil
}

// prepareChildAnswer checks an answer to a delegated child's question (the parked entry
// names the child's checkpoint) and claims it here, so that a second answer is refused
// before anything runs; the child's resumed leg then runs the claimed decision. Down a
// nested chain only the outermost leg claims; each child passes the claim on.
func (l *leg) prepareChildAnswer(ctx context.Context, cp session.Checkpoint, p *parkedEntry) error {
	a := l.answer
	if err := answercheck.Verify(cp); err != nil {
		return err
	}
	preclaimed := l.link != nil && l.link.claimed != nil && l.link.claimed.ID == cp.ID
	if cp.Decision != nil && !preclaimed {
		return l.alreadyAnswered(ctx, cp)
	}
	if err := answercheck.MatchTurn(cp, toolcall.Last(l.resume.messages), p.Pending, p.Child.ToolUseID); err != nil {
		return err
	}
	d, input, err := answercheck.Decide(cp, plainAnswer(a), func(edit json.RawMessage) (string, bool, error) {
		effect := tools.EffectExec // fail closed for a tool only the child mounts
		if t := l.tools().Lookup(cp.Tool); t != nil {
			effect = t.Spec().Effect
		}
		return l.recheckEdit(ctx, cp.Tool, effect, edit)
	})
	if err != nil {
		return err
	}
	claimed := l.linkClaimed()
	if !preclaimed {
		c, err := l.claim(ctx, cp, d)
		if err != nil {
			return err
		}
		claimed = &c
	}
	l.approval = &approval{checkpoint: cp.ID, index: p.Pending, tool: "Task", input: input, edited: len(a.UpdatedInput) > 0,
		allow: a.Allow, reason: a.Reason, child: p.Child, claimed: claimed}
	return nil
}

func (l *leg) linkClaimed() *session.Checkpoint {
	if l.link == nil {
		return nil
	}
	return l.link.claimed
}

// answersChild reports whether cp belongs to a delegated descendant of this leg's
// session (a child, or a child's child).
func (l *leg) answersChild(ctx context.Context, cp session.Checkpoint) bool {
	id := cp.SessionID
	for range 32 { // deeper than any chain a deployment nests
		s, err := l.store.Get(ctx, id)
		if err != nil || s.ParentID == "" {
			return false
		}
		if s.ParentID == l.spec.sessionID() {
			return true
		}
		id = s.ParentID
	}
	return false
}

// alreadyAnswered is the refusal of a second answer, with how the leg that answered it
// ended and the session's open question, when the store knows them.
func (l *leg) alreadyAnswered(ctx context.Context, cp session.Checkpoint) error {
	var answering *session.Leg
	if legs, err := l.store.Legs(ctx, cp.SessionID); err == nil {
		if g, ok := answercheck.AnsweringLeg(legs, l.legID, cp); ok {
			answering = &g
		}
	}
	var open *session.Checkpoint
	if o, ok := l.openCheckpoint(ctx, cp.SessionID); ok {
		open = &o
	}
	return answercheck.AlreadyAnswered(cp, answering, open)
}

// openCheckpoint returns the session's newest unanswered checkpoint, if the session's
// chain still stops at it.
func (l *leg) openCheckpoint(ctx context.Context, sessionID string) (session.Checkpoint, bool) {
	p := l.resume.parked
	if p == nil {
		return session.Checkpoint{}, false
	}
	cp, err := l.store.Checkpoint(ctx, p.Checkpoint)
	if err != nil || cp.SessionID != sessionID || cp.Decision != nil {
		return session.Checkpoint{}, false
	}
	return cp, true
}

// answerPending runs (or refuses) the call a person answered, and keeps its result for
// TaskResult.Answered.
func (l *leg) answerPending(ctx context.Context, call model.Block) (res tools.Result) {
	a := l.approval
	l.approval = nil
	if a.child != nil {
		call, _ := ctx.Value(callRefKey{}).(callRef)
		return l.resumeDelegated(ctx, call, a)
	}
	defer func() {
		l.answered = &AnsweredCall{CheckpointID: a.checkpoint, Tool: call.Name, Input: json.RawMessage(orEmpty(a.input)), Allowed: a.allow,
			IsError: res.IsError, Code: res.Code, Text: res.TextOf()}
	}()
	if !a.allow {
		msg := "A person denied this call."
		if a.reason != "" {
			msg += " Their reason: " + a.reason
		}
		l.deny(PermissionDenial{Tool: call.Name, ToolUseID: call.ID, Input: json.RawMessage(orEmpty(a.input)), Reason: msg, Code: CodeDeniedByPerson})
		return tools.Fail(CodeDeniedByPerson, "%s", msg)
	}
	call.Input = a.input
	l.mu.Lock()
	l.approved = &runningCall{name: call.Name, input: a.input, edited: a.edited}
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.approved = nil
		l.mu.Unlock()
	}()
	return l.runTool(ctx, call)
}

// isApproved reports whether this exact call is the one a person approved, and whether
// its input is their edit.
func (l *leg) isApproved(name string, input json.RawMessage) (approved, edited bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.approved != nil && l.approved.name == name && jsonEqual(l.approved.input, input) {
		return true, l.approved.edited
	}
	return false, false
}

// abandoned answers the calls of a parked turn that a plain resume moved past: the
// pending call waited for an approval and did not run, unless an approval was given and
// the call started (its leg stopped before the result was stored).
func (l *leg) abandoned(ctx context.Context, calls []model.Block, p *parkedEntry) []model.Block {
	var out []model.Block
	for i, c := range calls[p.Pending:] {
		if b, ok := p.Later[p.Pending+i]; ok {
			out = append(out, b) // it ran to its end in the parked turn's batch
			continue
		}
		text := "This call was not run: it waited for an approval that was not given."
		switch {
		case p.Waiting[p.Pending+i] != nil || i == 0 && p.Child != nil:
			text = "The agent this call started stopped at a question that was not answered; its work so far stays in its session, but it did not finish."
		case l.resume.started[c.ID]:
			text = l.unknownOutcome(ctx)
		}
		out = append(out, model.Block{Kind: model.KindToolResult, ID: c.ID, IsError: true, Content: []model.Block{model.TextBlock(text)}})
	}
	return out
}

// abandonedInterrupted answers the calls a stopped leg never answered. A call recorded
// as started may have run, fully or in part: the model is told its outcome is unknown,
// never that it did not run. A call of a turn whose leg recorded intents but not this
// call's did not start. A turn without intents (an older transcript) cannot tell.
func (l *leg) abandonedInterrupted(ctx context.Context, calls []model.Block) []model.Block {
	var out []model.Block
	for _, c := range calls {
		text := "This call was not run: the run stopped before it started. Nothing it would have done happened; run it again if it is still needed."
		switch t := l.tools().Lookup(c.Name); {
		case !l.resume.intents || l.resume.started[c.ID]:
			text = l.unknownOutcome(ctx)
		case t != nil && l.readsOnly(t):
			// No intent is stored for a call that only reads: it may have run.
			text = "This call has no result: the run stopped before it was recorded. It only reads, so it changed nothing; run it again if it is still needed."
		}
		out = append(out, model.Block{Kind: model.KindToolResult, ID: c.ID, IsError: true, Content: []model.Block{model.TextBlock(text)}})
	}
	return out
}

// unknownOutcome is the answer to a call that may have run: what is known of the turn
// it belongs to, from file history, and what to do before repeating it.
func (l *leg) unknownOutcome(ctx context.Context) string {
	text := "The outcome of this call is unknown: it was started, but the run stopped before its result was recorded, so it may have run, fully or in part."
	if changed, ok := l.filesChangedInTurn(ctx, l.resume.turns); ok {
		if len(changed) == 0 {
			text += " File history recorded no change by the file tools during that turn (commands are not tracked)."
		} else {
			text += " File history recorded changes by the file tools during that turn (commands are not tracked) to: " + strings.Join(changed, ", ") + "."
		}
	}
	return text + " Check the workspace before repeating it."
}

// filesChangedInTurn lists the files the file tools first changed at or after the start
// of turn, relative to the task root when inside it; ok is false when the leg has no
// file history to ask.
func (l *leg) filesChangedInTurn(ctx context.Context, turn int) ([]string, bool) {
	if l.files == nil || turn < 1 {
		return nil, false
	}
	bs, err := l.deps.History.Boundaries(ctx, l.historyScope)
	if err != nil {
		return nil, false
	}
	from := int64(-1)
	if at, ok := l.resume.boundaries[turn]; ok {
		// The boundaries after the count the turn recorded are its own and later ones.
		if id, ok := boundaryFrom(bs, at, turn, false); ok {
			from = id
		}
	} else {
		for _, b := range bs {
			if b.Turn == turn {
				from = b.ID // the newest boundary of the turn: the branch that was running
			}
		}
	}
	if from < 0 {
		return nil, true // the turn never started a boundary, so nothing was first-touched
	}
	recs, err := l.deps.History.Records(ctx, l.historyScope, from)
	if err != nil {
		return nil, false
	}
	changed := []string{}
	for _, r := range recs {
		p := r.Key
		if rel, err := filepath.Rel(l.fence.Root(), p); err == nil && !strings.HasPrefix(rel, "..") {
			p = rel
		}
		if !slices.Contains(changed, p) {
			changed = append(changed, p)
		}
	}
	return changed, true
}

// wrapConfigRefused turns a refusal of a resume's re-supplied config into
// checkpoint.config_refused, keeping the original code in the detail.
func wrapConfigRefused(err error) error {
	var se *sema.Error
	// A busy session is not a refusal of the configuration: the same answer succeeds once
	// the other run ends.
	if !errors.As(err, &se) || len(se.Code) > 11 && se.Code[:11] == "checkpoint." || se.Code == session.CodeAlreadyClaimed || se.Code == session.CodeBusy ||
		se.Code == CodeBudgetRaiseInvalid {
		return err
	}
	field := refusedField[se.Code]
	if field == "" {
		field = "TaskSpec"
	}
	return (&sema.Error{Code: CodeConfigRefused, Message: "the resume's configuration is refused (" + field + "): " + se.Message, Err: err}).
		With("code", se.Code).With("field", field).With("reason", se.Message)
}

// refusedField names the seat a refusal of the door is about, so that a host answering a
// parked question can tell which of the values it re-supplied to change.
var refusedField = map[string]string{
	permission.CodeModeInvalid:     "TaskSpec.PermissionMode",
	permission.CodeRuleInvalid:     "TaskSpec.AllowedTools / DisallowedTools / AskTools",
	fence.CodeReadFaceInvalid:      "TaskSpec.ReadFace",
	fence.CodeWriteFaceInvalid:     "TaskSpec.WriteFace",
	fence.CodeReadFaceOpenRefused:  "TaskSpec.ReadFace",
	fence.CodeWriteFaceOpenRefused: "TaskSpec.WriteFace",
	fence.CodeRootInvalid:          "TaskSpec.Root",
	CodeMaxTurnsInvalid:            "TaskSpec.MaxTurns",
	CodeMaxTokensInvalid:           "TaskSpec.MaxTokens",
	sandbox.CodeModeInvalid:        "TaskSpec.Sandbox",
	sandbox.CodeNetworkInvalid:     "TaskSpec.SandboxNetwork",
	sandbox.CodeLoosened:           "TaskSpec.Sandbox / SandboxNetwork",
	CodeOnAskInvalid:               "TaskSpec.OnAsk",
	CodeApproverMissing:            "TaskSpec.OnAsk",
	CodeResumeInvalid:              "TaskSpec.Resume",
	CodeRewindInvalid:              "TaskSpec.Resume.Files",
	CodeHistoryMissing:             "Deps.History",
	CodeFileHistoryInvalid:         "TaskSpec.FileHistory / Deps.FileHistoryCapture",
	CodeFileHistoryPolicyInvalid:   "Deps.Policy.FileHistoryPolicy",
	history.CodeFilesystemMismatch: "TaskSpec.Resume.Files / Deps.Env",
	CodeStoreMissing:               "Deps.Store",
	CodeProviderMissing:            "Deps.Provider",
	fence.CodeDenyGlobInvalid:      "Deps.Policy.DenyGlobs",
	fence.CodeStateDirUnresolvable: "Deps.StateDir",
	settings.CodeSettingsInvalid:   "the settings files",
	CodeSettingsUnreadable:         "the workspace's settings files",
	settings.CodeSpecUnknownKey:    "the settings files",
	hooks.CodeConfigInvalid:        "the settings files' hooks / Deps.Hooks.Events",
	sandbox.CodeUnavailable:        "TaskSpec.Sandbox",
}
