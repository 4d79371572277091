package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/permission"
)

// AnswerAsk answers a question (req.Ask, an ask) by the leg's mode:
//
//   - dontAsk: deny.
//   - auto: the classifier (allow, deny, or ask a person), except for a person-only
//     question (the plan gate, the safety stations), which goes to the approver; a
//     classifier error or timeout goes to the approver too.
//   - otherwise: the approver.
//
// With no approver the answer is deny, with a sentence saying how to allow the call (a
// flag or a rule). A decision that is not an ask is returned unchanged. The answer's
// UpdatedInput is the approver's edit, not yet judged again: Gate.Answer runs
// RecheckDeny on it.
func AnswerAsk(ctx context.Context, mode permission.Mode, req permission.ApprovalRequest, approver permission.Approver, classifier permission.AutoClassifier) permission.Decision {
	ask := req.Ask
	if ask.Behavior != permission.Ask {
		return ask
	}
	if mode == permission.ModeDontAsk {
		return permission.Decision{Behavior: permission.Deny, DecidedBy: permission.LayerMode,
			Reason: fmt.Sprintf("dontAsk mode refuses every question (%s). %s", strings.TrimSuffix(ask.Reason, "."), howToAllow(req))}
	}
	if mode == permission.ModeAuto && !ask.PersonOnly && classifier != nil {
		verdict, why, err := classifySafely(ctx, classifier, permission.ClassifyRequest{Tool: req.Tool, Input: req.Input, Question: ask.Reason, Transcript: req.Transcript})
		if err == nil {
			switch verdict {
			case permission.Allow:
				return permission.Decision{Behavior: permission.Allow, DecidedBy: permission.LayerClassifier, Reason: sentence("The auto classifier allowed the call", why), UpdatedInput: ask.UpdatedInput}
			case permission.Deny:
				return permission.Decision{Behavior: permission.Deny, DecidedBy: permission.LayerClassifier, Reason: sentence("The auto classifier refused the call", why)}
			}
		}
		// ask, or a failed classification: a person decides.
	}
	if approver == nil {
		return permission.Decision{Behavior: permission.Deny, DecidedBy: permission.LayerMode, Reason: noApproverMessage(req)}
	}
	ans, err := approveSafely(ctx, approver, req)
	if err != nil {
		return permission.Decision{Behavior: permission.Deny, DecidedBy: permission.LayerUser, Reason: fmt.Sprintf("The approval failed (%v), so the call was refused.", err)}
	}
	switch ans.Behavior {
	case permission.Allow:
		d := permission.Decision{Behavior: permission.Allow, DecidedBy: permission.LayerUser, Reason: sentence("Approved", ans.Reason), UpdatedInput: ask.UpdatedInput}
		if len(ans.UpdatedInput) > 0 {
			d.UpdatedInput = ans.UpdatedInput
		}
		return d
	default:
		return permission.Decision{Behavior: permission.Deny, DecidedBy: permission.LayerUser, Reason: sentence("The user refused the call", ans.Reason)}
	}
}

func approveSafely(ctx context.Context, a permission.Approver, req permission.ApprovalRequest) (d permission.ApprovalDecision, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the approver panicked: %v", p)
		}
	}()
	return a.Approve(ctx, req)
}

// sentence joins an opening and an optional reason into one sentence.
func sentence(opening, why string) string {
	why = strings.TrimSpace(why)
	if why == "" {
		return opening + "."
	}
	return opening + ": " + strings.TrimSuffix(why, ".") + "."
}

func noApproverMessage(req permission.ApprovalRequest) string {
	if req.Ask.PersonOnly {
		return fmt.Sprintf("Only a person can approve this (%s), and nobody is available to ask; run interactively, or park the run (--on-ask park) and answer it with sema approve.",
			strings.TrimSuffix(req.Ask.Reason, "."))
	}
	return fmt.Sprintf("%s Nobody is available to approve it. %s", req.Ask.Reason, howToAllow(req))
}

// howToAllow says how a caller allows such a call without a question.
func howToAllow(req permission.ApprovalRequest) string {
	if req.Ask.PersonOnly {
		return "Only a person can approve it."
	}
	rule := SuggestRule(req.Tool, req.Input)
	if rule == "" {
		return "To allow it, pass --allowed-tools with a Bash rule for each of its commands (for example 'Bash(git diff *)'), or add such rules to permissions.allow in a settings file."
	}
	return fmt.Sprintf("To allow it, pass --allowed-tools '%s' or add %q to permissions.allow in a settings file.", rule, rule)
}

// SuggestRule proposes the narrowest rule that would allow a call: the exact command for
// a Bash call of one plain command ("" for any other Bash call: a rule per command is
// needed), the absolute path for a file tool ("Edit(//abs/path)"), else the tool's name.
func SuggestRule(tool string, input json.RawMessage) string {
	if r := permission.NarrowRule(tool, input, ""); r != "" || tool == "Bash" {
		return r
	}
	return tool
}

// Answer puts an ask to the leg's answerers (AnswerAsk with the gate's live mode) and
// judges an approver's edited input again by the whole fold (JudgeEdit): an edit the
// fold refuses is refused.
func (g *Gate) Answer(ctx context.Context, call permission.Call, ask permission.Decision, approver permission.Approver, classifier permission.AutoClassifier, transcript []model.Message) permission.Decision {
	input := call.Input
	if len(ask.UpdatedInput) > 0 {
		input = ask.UpdatedInput
	}
	req := permission.ApprovalRequest{Tool: call.Tool, Input: input, Ask: ask, Mode: g.modes.Current(), Transcript: transcript}
	d := AnswerAsk(ctx, req.Mode, req, approver, classifier)
	// An approver that hands back the input it was asked about (as an SDK client's
	// canUseTool often does) edited nothing: that call was judged already.
	if d.Behavior == permission.Allow && len(d.UpdatedInput) > 0 && !jsonEqual(d.UpdatedInput, input) {
		e := g.JudgeEdit(ctx, call, d.UpdatedInput)
		if e.Behavior != permission.Allow {
			return e
		}
		d.UpdatedInput = e.UpdatedInput
	}
	if d.Behavior == permission.Ask {
		d.Gate = ask.Gate
	}
	return d
}

// JudgeEdit is the approved-edit round: an approver's edit is a new call, judged by the
// whole fold again on its own bytes — the deny rules, the PreToolUse hooks (which may
// deny it or rewrite it again), the ask rules, the mode's stations and the tool's seat
// read off the edit. A deny refuses the call. Any other answer leaves it the
// approver's: the approver put these very bytes, so a question the fold asks about
// them is the one its yes answered. The decision allows with the input that runs (the
// edit, or a hook's rewrite of it), decided by the user.
func (g *Gate) JudgeEdit(ctx context.Context, call permission.Call, input json.RawMessage) permission.Decision {
	if !json.Valid(input) {
		return permission.Decision{Behavior: permission.Deny, DecidedBy: permission.LayerRule, Reason: "The edited input is not valid JSON, so the call was refused."}
	}
	next, err := g.rederive(ctx, call, input)
	if err != nil {
		return permission.Decision{Behavior: permission.Deny, DecidedBy: permission.LayerRule, Reason: "The edited input cannot be judged (" + err.Error() + "), so the call was refused."}
	}
	d := g.Decide(ctx, next)
	if d.Behavior == permission.Deny {
		d.Reason = "The edited call was refused: " + d.Reason
		return d
	}
	run := input
	if len(d.UpdatedInput) > 0 {
		run = d.UpdatedInput
	}
	return permission.Decision{Behavior: permission.Allow, DecidedBy: permission.LayerUser, UpdatedInput: run}
}

// RecheckDeny judges edited input by the deny rules (station 1): the call is rebuilt
// from input (its command, url and paths read again) and refused when a deny rule names
// it or its input cannot be judged.
func (g *Gate) RecheckDeny(ctx context.Context, call permission.Call, input json.RawMessage) (permission.Decision, bool) {
	if !json.Valid(input) {
		return permission.Decision{Behavior: permission.Deny, DecidedBy: permission.LayerRule, Reason: "The edited input is not valid JSON, so the call was refused."}, true
	}
	next, err := g.rederive(ctx, call, input)
	if err != nil {
		return permission.Decision{Behavior: permission.Deny, DecidedBy: permission.LayerRule, Reason: "The edited input cannot be judged (" + err.Error() + "), so the call was refused."}, true
	}
	f := &fold{call: next, mode: g.modes.Current()}
	f.policy = ModePolicyOf(f.mode)
	if d, ok := g.denyStation(ctx, f); ok {
		return d, true
	}
	return permission.Decision{}, false
}

// jsonEqual reports whether a and b are the same JSON value, whatever their spelling
// (key order, blanks).
func jsonEqual(a, b json.RawMessage) bool {
	if string(a) == string(b) {
		return true
	}
	x, okA := decodeExact(a)
	y, okB := decodeExact(b)
	return okA && okB && reflect.DeepEqual(x, y)
}

// decodeExact decodes one JSON value keeping numbers as written, so two inputs that
// differ only past a float's precision are not taken for the same.
func decodeExact(b json.RawMessage) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return nil, false
	}
	return v, true
}
