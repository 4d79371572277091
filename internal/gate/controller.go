package gate

import (
	"context"
	"fmt"
	"sync"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/permission"
)

// Ceiling bounds a child leg's mode: a parent's live controller (Current tracks the
// parent's steers) or a recorded word (RecordedCeiling). Observed answers the same word
// without starting anything (no classifier arming).
type Ceiling interface {
	Current() permission.Mode
	Observed() permission.Mode
}

// RecordedCeiling is a ceiling a checkpoint recorded.
type RecordedCeiling permission.Mode

// Current returns the recorded word.
func (r RecordedCeiling) Current() permission.Mode { return permission.Mode(r) }

// Observed returns the recorded word.
func (r RecordedCeiling) Observed() permission.Mode { return permission.Mode(r) }

// Arming is the deployment's facts the controller folds a declared mode against, bound
// once the deployment's capabilities are known (BindArming).
type Arming struct {
	// DenyBypass and DenyAuto report that the deployment denies those modes; a leg that
	// declares one runs as default (operator_deny).
	DenyBypass, DenyAuto bool
	// ArmAuto arms the auto classifier for this leg; nil means no classifier face is
	// wired, so auto folds to default (face_absent). It is called when the leg's
	// effective mode becomes auto (a steer, a parent's steer read through the ceiling)
	// and no classifier is armed yet. A panic is contained as an error.
	ArmAuto func(ctx context.Context) (permission.AutoClassifier, error)
	// OnArmFault hears an arming failure that no steer awaits (one a read started).
	// Observe-only: its panics are contained.
	OnArmFault func(error)
}

// ControllerOptions configures a ModeController.
type ControllerOptions struct {
	// OnNotice hears every fold, once, as a CodeModeFolded notice. May be nil.
	OnNotice func(sema.Notice)
	// PrePlanMode is the word a resumed leg had before a steer moved it into plan.
	PrePlanMode permission.Mode
	// PlanApproved says the leg resumes a plan review a person approved, and the resume
	// already left plan (ModeRequestAfterResume): the ExitPlanMode call the person
	// approved then reports the mode the leg runs in instead of refusing as a call
	// outside plan. It answers one such call; a later ExitPlanMode outside plan is
	// refused as usual. Default false.
	PlanApproved bool
}

type steer struct {
	mode    permission.Mode
	pending bool // its arming is running
}

// ModeController is the one resolution of a leg's effective mode, read live by every
// mode consumer (the gate, the manifest, the children's ceiling). The effective mode is
// derived on every read from three inputs — the requested word (the newest steer that
// still counts, else the spec's), the ceiling, and the arming facts — so a parent's
// steer reaches a running child on the child's next read, and nothing caches a stale
// answer. It is safe for concurrent use.
type ModeController struct {
	ceiling  Ceiling
	onNotice func(sema.Notice)

	mu         sync.Mutex
	spec       permission.Mode
	steers     []*steer
	arming     *Arming
	classifier permission.AutoClassifier
	inFlight   bool // a read-started arming is running
	readFault  bool // a read-started arming failed; not retried until the leg leaves auto
	prePlan    permission.Mode
	lastFold   string
	// planApproved is ControllerOptions.PlanApproved until ExitPlanMode takes it.
	planApproved bool
}

// NewModeController returns the controller of a leg that requested requested ("" for
// nothing) under ceiling (nil for a root leg). A fold the leg starts with (a ceiling
// fold) is announced now. A requested or pre-plan word outside the set of modes is
// refused with config.permission_mode_invalid: a mode a caller believes it declared
// must not silently run as another.
func NewModeController(requested permission.Mode, ceiling Ceiling, opts ControllerOptions) (*ModeController, error) {
	for _, m := range []permission.Mode{requested, opts.PrePlanMode} {
		if m != "" && !m.Valid() {
			_, err := permission.ParseMode(string(m))
			return nil, err
		}
	}
	c := &ModeController{spec: requested, ceiling: ceiling, onNotice: opts.OnNotice, prePlan: opts.PrePlanMode, planApproved: opts.PlanApproved}
	c.announce(c.ceilingWord(false))
	return c, nil
}

// ceilingWord reads the ceiling: Current to decide with it, Observed to report it. A
// ceiling word outside the set of modes (a damaged record) bounds the leg to plan, the
// mode in which nothing changes without a person's yes.
func (c *ModeController) ceilingWord(decide bool) permission.Mode {
	if c.ceiling == nil {
		return ""
	}
	m := c.ceiling.Observed()
	if decide {
		m = c.ceiling.Current()
	}
	if !m.Valid() {
		return permission.ModePlan
	}
	return m
}

func (c *ModeController) requestedLocked() permission.Mode {
	if n := len(c.steers); n > 0 {
		return c.steers[n-1].mode
	}
	return c.spec
}

// resolveLocked computes the receipt and the word its fold folded.
func (c *ModeController) resolveLocked(ceil permission.Mode) (permission.Receipt, permission.Mode) {
	req := c.requestedLocked()
	declared, clamped := Clamp(req, ceil)
	rec := permission.Receipt{Requested: req, Effective: declared}
	var folded permission.Mode
	if clamped {
		rec.FoldedBy, folded = permission.FoldInheritedCeiling, req
	}
	if a := c.arming; a != nil {
		switch {
		case declared == permission.ModeBypassPermissions && a.DenyBypass, declared == permission.ModeAuto && a.DenyAuto:
			rec.Effective, rec.FoldedBy, folded = permission.ModeDefault, permission.FoldOperatorDeny, declared
		case declared == permission.ModeAuto && a.ArmAuto == nil:
			rec.Effective, rec.FoldedBy, folded = permission.ModeDefault, permission.FoldFaceAbsent, declared
		}
	}
	return rec, folded
}

// noticeLocked returns the notice for a fold not yet announced, or nil.
func (c *ModeController) noticeLocked(rec permission.Receipt, folded permission.Mode) *sema.Notice {
	if rec.FoldedBy == "" {
		c.lastFold = ""
		return nil
	}
	key := string(rec.FoldedBy) + "|" + string(folded) + "|" + string(rec.Effective)
	if key == c.lastFold {
		return nil
	}
	c.lastFold = key
	var msg string
	switch rec.FoldedBy {
	case permission.FoldInheritedCeiling:
		msg = fmt.Sprintf("the permission mode %s exceeds the parent leg's mode, so the leg runs as %s", folded, rec.Effective)
	case permission.FoldOperatorDeny:
		msg = fmt.Sprintf("the deployment does not allow the permission mode %s, so the leg runs as %s", folded, rec.Effective)
	case permission.FoldFaceAbsent:
		msg = fmt.Sprintf("the permission mode %s needs a classifier and none is wired, so the leg runs as %s", folded, rec.Effective)
	}
	detail := map[string]any{"effective": string(rec.Effective), "folded_by": string(rec.FoldedBy), "folded": string(folded)}
	if rec.Requested != "" {
		detail["requested"] = string(rec.Requested)
	}
	return &sema.Notice{Code: permission.CodeModeFolded, Message: msg, Detail: detail}
}

func (c *ModeController) emit(n *sema.Notice) {
	if n != nil && c.onNotice != nil {
		c.onNotice(*n)
	}
}

// announce resolves against ceil and announces a fold not yet announced.
func (c *ModeController) announce(ceil permission.Mode) permission.Receipt {
	c.mu.Lock()
	rec, folded := c.resolveLocked(ceil)
	n := c.noticeLocked(rec, folded)
	c.mu.Unlock()
	c.emit(n)
	return rec
}

// Current is the effective mode, read to DECIDE with it. A read that finds the leg in
// auto with no classifier armed (a parent's steer reached it through the ceiling) arms
// it now; a failure goes to Arming.OnArmFault and the leg's questions then go to the
// approver, as under default.
func (c *ModeController) Current() permission.Mode {
	ceil := c.ceilingWord(true)
	c.mu.Lock()
	rec, folded := c.resolveLocked(ceil)
	n := c.noticeLocked(rec, folded)
	if rec.Effective != permission.ModeAuto {
		c.readFault = false
	}
	arm := rec.Effective == permission.ModeAuto && c.classifier == nil && !c.inFlight && !c.readFault &&
		c.arming != nil && c.arming.ArmAuto != nil
	var a *Arming
	if arm {
		c.inFlight, a = true, c.arming
	}
	c.mu.Unlock()
	c.emit(n)
	if arm {
		cl, err := armSafely(context.Background(), a.ArmAuto)
		c.mu.Lock()
		c.inFlight = false
		if err == nil {
			c.classifier = cl
		} else {
			c.readFault = true
		}
		c.mu.Unlock()
		if err != nil && a.OnArmFault != nil {
			func() {
				defer func() { _ = recover() }()
				a.OnArmFault(err)
			}()
		}
	}
	return rec.Effective
}

// Observed is the effective mode read to REPORT it: the same word as Current, reached
// through the ceilings' Observed, so nothing starts an arming.
func (c *ModeController) Observed() permission.Mode {
	ceil := c.ceilingWord(false)
	c.mu.Lock()
	defer c.mu.Unlock()
	rec, _ := c.resolveLocked(ceil)
	return rec.Effective
}

// Requested is the word the caller asked for right now: the newest steer that still
// counts, else the spec's ("" for none).
func (c *ModeController) Requested() permission.Mode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requestedLocked()
}

// Declared is the requested word after the ceiling clamp: what a checkpoint records.
func (c *ModeController) Declared() permission.Mode {
	ceil := c.ceilingWord(false)
	c.mu.Lock()
	defer c.mu.Unlock()
	d, _ := Clamp(c.requestedLocked(), ceil)
	return d
}

// declaredFor returns the declared mode a steer to m would give the leg now.
func (c *ModeController) declaredFor(m permission.Mode) permission.Mode {
	d, _ := Clamp(m, c.ceilingWord(false))
	return d
}

// PrePlanMode is the declared word the leg had when a steer (or EnterPlanMode) last moved
// it into plan, while it is there; "" for a leg that started in plan or is not in plan.
func (c *ModeController) PrePlanMode() permission.Mode {
	ceil := c.ceilingWord(false)
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, _ := Clamp(c.requestedLocked(), ceil); d != permission.ModePlan {
		return ""
	}
	return c.prePlan
}

// takePlanApproved reports whether the leg resumed an approved plan review whose exit
// no ExitPlanMode call has reported yet, and marks it reported.
func (c *ModeController) takePlanApproved() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ok := c.planApproved
	c.planApproved = false
	return ok
}

// Receipt is the three-member answer as it stands right now.
func (c *ModeController) Receipt() permission.Receipt {
	ceil := c.ceilingWord(false)
	c.mu.Lock()
	defer c.mu.Unlock()
	rec, _ := c.resolveLocked(ceil)
	return rec
}

// Classifier returns the armed auto classifier while the leg's effective mode is auto,
// else nil.
func (c *ModeController) Classifier() permission.AutoClassifier {
	if c.Current() != permission.ModeAuto {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.classifier
}

// BindArming binds the deployment's arming facts, once; a later call is ignored. It
// announces a fold-back if one results.
func (c *ModeController) BindArming(a Arming) permission.Receipt {
	c.mu.Lock()
	if c.arming == nil {
		c.arming = &a
	}
	c.mu.Unlock()
	return c.announce(c.ceilingWord(false))
}

// Steer changes the requested word. A steer into plan records the declared word the leg
// had (PrePlanMode); a steer out of plan clears it. A steer that makes the leg auto arms
// its classifier first; when that arming fails the steer is rejected
// (permission.auto_arm_failed), stops counting — the requested word is again the newest
// steer's that still counts, else the spec's — and the returned receipt is the leg's
// mode after the rollback. A steer that took effect outranks every older one.
func (c *ModeController) Steer(ctx context.Context, m permission.Mode) (permission.Receipt, error) {
	if !m.Valid() {
		_, err := permission.ParseMode(string(m))
		return c.Receipt(), err
	}
	ceil := c.ceilingWord(true)
	c.mu.Lock()
	before, _ := Clamp(c.requestedLocked(), ceil)
	s := &steer{mode: m, pending: true}
	c.steers = append(c.steers, s)
	rec, _ := c.resolveLocked(ceil)
	var arm func(context.Context) (permission.AutoClassifier, error)
	if rec.Effective == permission.ModeAuto && c.classifier == nil && c.arming != nil && c.arming.ArmAuto != nil {
		arm = c.arming.ArmAuto
	}
	if arm == nil {
		c.commitLocked(s, before)
		rec, folded := c.resolveLocked(ceil)
		n := c.noticeLocked(rec, folded)
		c.mu.Unlock()
		c.emit(n)
		return rec, nil
	}
	c.mu.Unlock()

	cl, err := armSafely(ctx, arm)

	c.mu.Lock()
	if err != nil {
		c.dropLocked(s)
		rec, folded := c.resolveLocked(ceil)
		n := c.noticeLocked(rec, folded)
		c.mu.Unlock()
		c.emit(n)
		return rec, &sema.Error{Code: permission.CodeAutoArmFailed, Err: err,
			Message: fmt.Sprintf("the auto classifier could not be armed (%v), so the steer to auto was rolled back; the leg stays %s", err, rec.Effective),
			Detail:  map[string]any{"requested": string(m), "effective": string(rec.Effective)}}
	}
	c.classifier = cl
	if c.holdsLocked(s) {
		c.commitLocked(s, before)
	}
	rec, folded := c.resolveLocked(ceil)
	n := c.noticeLocked(rec, folded)
	c.mu.Unlock()
	c.emit(n)
	return rec, nil
}

// commitLocked makes s take effect: the steers older than it stop counting, and the
// pre-plan word follows the move.
func (c *ModeController) commitLocked(s *steer, before permission.Mode) {
	s.pending = false
	for i, x := range c.steers {
		if x == s {
			c.steers = append([]*steer(nil), c.steers[i:]...)
			break
		}
	}
	switch {
	case s.mode == permission.ModePlan && before != permission.ModePlan:
		c.prePlan = before
	case s.mode != permission.ModePlan:
		c.prePlan = ""
	}
}

func (c *ModeController) holdsLocked(s *steer) bool {
	for _, x := range c.steers {
		if x == s {
			return true
		}
	}
	return false
}

func (c *ModeController) dropLocked(s *steer) {
	for i, x := range c.steers {
		if x == s {
			c.steers = append(c.steers[:i:i], c.steers[i+1:]...)
			return
		}
	}
}

// armSafely runs an arming with its panic contained.
func armSafely(ctx context.Context, arm func(context.Context) (permission.AutoClassifier, error)) (cl permission.AutoClassifier, err error) {
	defer func() {
		if p := recover(); p != nil {
			cl, err = nil, fmt.Errorf("the arming panicked: %v", p)
		}
	}()
	cl, err = arm(ctx)
	if err == nil && cl == nil {
		err = fmt.Errorf("the arming returned no classifier")
	}
	return cl, err
}

// RecordedMode is what a checkpoint row recorded of a leg's mode.
type RecordedMode struct {
	PermissionMode permission.Mode
	PrePlanMode    permission.Mode
}

// ResumeOutcome is the answer a resume brings to a parked question.
type ResumeOutcome struct {
	// Gate is the question's gate: GateToolPermission or GatePlanReview.
	Gate string
	// Decision is "allow", "deny" or "edit".
	Decision string
}

// ModeRequestAfterResume returns the mode a resumed leg requests: the re-passed spec's
// word (seat), else the word the checkpoint recorded — except where the resume approves
// or edits a plan_review over a row recorded in plan: the plan exits to the word the leg
// had before it (PrePlanMode; "" when absent, so the leg resolves its own default —
// default for a root, the parent's word for a child), unless the resume names another
// mode than plan (the approver's choice). A re-passed plan does not keep an approved
// plan open.
func ModeRequestAfterResume(seat permission.Mode, recorded RecordedMode, outcome *ResumeOutcome) permission.Mode {
	if outcome != nil && outcome.Gate == permission.GatePlanReview && recorded.PermissionMode == permission.ModePlan &&
		(outcome.Decision == "allow" || outcome.Decision == "edit") {
		if seat != "" && seat != permission.ModePlan {
			return seat
		}
		return recorded.PrePlanMode
	}
	if seat != "" {
		return seat
	}
	return recorded.PermissionMode
}
