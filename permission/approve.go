package permission

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sema-agent/sema/model"
)

// ApprovalRequest is one question put to an approver or the classifier: plain data a
// host can store, send and answer later.
type ApprovalRequest struct {
	// Tool and Input are the call as it would run (a hook's rewrite included).
	Tool  string          `json:"tool"`
	Input json.RawMessage `json:"input"`
	// Ask is the gate's question: its sentence, reason, gate and whether only a person
	// may answer it.
	Ask Decision `json:"ask"`
	// Mode is the leg's mode when the question was put.
	Mode Mode `json:"mode"`
	// Transcript is the leg's conversation so far, for the classifier. Optional.
	Transcript []model.Message `json:"-"`
}

// ApprovalDecision is an approver's answer.
type ApprovalDecision struct {
	// Behavior is Allow or Deny; anything else is read as Deny.
	Behavior Behavior `json:"behavior"`
	// Message is the approver's sentence; on a deny the model sees it.
	Message string `json:"message,omitempty"`
	// UpdatedInput, with an allow, is the approver's edit of the input: the call runs
	// with it after the deny rules judged it again.
	UpdatedInput json.RawMessage `json:"updated_input,omitempty"`
}

// Approver answers the questions the gate puts to a person: an interactive prompt, a
// host callback, or a parking seat. An error is read as a refusal.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (ApprovalDecision, error)
}

// ApproverFunc adapts a function to Approver.
type ApproverFunc func(ctx context.Context, req ApprovalRequest) (ApprovalDecision, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, req ApprovalRequest) (ApprovalDecision, error) {
	return f(ctx, req)
}

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
func AnswerAsk(ctx context.Context, mode Mode, req ApprovalRequest, approver Approver, classifier AutoClassifier) Decision {
	ask := req.Ask
	if ask.Behavior != Ask {
		return ask
	}
	if mode == ModeDontAsk {
		return Decision{Behavior: Deny, Reason: ReasonMode,
			Message: fmt.Sprintf("dontAsk mode refuses every question (%s). %s", strings.TrimSuffix(ask.Message, "."), howToAllow(req))}
	}
	if mode == ModeAuto && !ask.PersonOnly && classifier != nil {
		verdict, why, err := classifySafely(ctx, classifier, ClassifyRequest{Tool: req.Tool, Input: req.Input, Question: ask.Message, Transcript: req.Transcript})
		if err == nil {
			switch verdict {
			case Allow:
				return Decision{Behavior: Allow, Reason: ReasonClassifier, Message: sentence("The auto classifier allowed the call", why), UpdatedInput: ask.UpdatedInput}
			case Deny:
				return Decision{Behavior: Deny, Reason: ReasonClassifier, Message: sentence("The auto classifier refused the call", why)}
			}
		}
		// ask, or a failed classification: a person decides.
	}
	if approver == nil {
		return Decision{Behavior: Deny, Reason: ReasonMode, Message: noApproverMessage(req)}
	}
	ans, err := approveSafely(ctx, approver, req)
	if err != nil {
		return Decision{Behavior: Deny, Reason: ReasonUser, Message: fmt.Sprintf("The approval failed (%v), so the call was refused.", err)}
	}
	switch ans.Behavior {
	case Allow:
		d := Decision{Behavior: Allow, Reason: ReasonUser, Message: sentence("Approved", ans.Message), UpdatedInput: ask.UpdatedInput}
		if len(ans.UpdatedInput) > 0 {
			d.UpdatedInput = ans.UpdatedInput
		}
		return d
	default:
		return Decision{Behavior: Deny, Reason: ReasonUser, Message: sentence("The user refused the call", ans.Message)}
	}
}

func approveSafely(ctx context.Context, a Approver, req ApprovalRequest) (d ApprovalDecision, err error) {
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

func noApproverMessage(req ApprovalRequest) string {
	if req.Ask.PersonOnly {
		return fmt.Sprintf("Only a person can approve this (%s), and nobody is available to ask; run interactively, or park the run (--on-ask park) and answer it with sema approve.",
			strings.TrimSuffix(req.Ask.Message, "."))
	}
	return fmt.Sprintf("%s Nobody is available to approve it. %s", req.Ask.Message, howToAllow(req))
}

// howToAllow says how a caller allows such a call without a question.
func howToAllow(req ApprovalRequest) string {
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
	switch {
	case tool == "Bash":
		cmd, _, err := bashInput(input)
		cmd = strings.TrimSpace(cmd)
		if err == nil && cmd != "" {
			if _, why := literalCommand(cmd); why == "" && !strings.ContainsAny(cmd, "()\n") {
				return "Bash(" + cmd + ")"
			}
		}
		return ""
	case pathFields[tool] != "":
		var m map[string]any
		if json.Unmarshal(input, &m) == nil {
			if p, ok := m[pathFields[tool]].(string); ok && strings.HasPrefix(p, "/") && !strings.ContainsAny(p, "()*?[]{}\\") {
				family := "Read"
				if isEditTool(tool) {
					family = "Edit"
				}
				return family + "(/" + p + ")"
			}
		}
	}
	return tool
}

// Answer puts an ask to the leg's answerers (AnswerAsk with the gate's live mode) and
// judges an approver's edited input again by the deny rules (RecheckDeny): an edit a
// deny rule names is refused.
func (g *Gate) Answer(ctx context.Context, call Call, ask Decision, approver Approver, classifier AutoClassifier, transcript []model.Message) Decision {
	input := call.Input
	if len(ask.UpdatedInput) > 0 {
		input = ask.UpdatedInput
	}
	req := ApprovalRequest{Tool: call.Tool, Input: input, Ask: ask, Mode: g.modes.Current(), Transcript: transcript}
	d := AnswerAsk(ctx, req.Mode, req, approver, classifier)
	if d.Behavior == Allow && len(d.UpdatedInput) > 0 && !jsonEqual(d.UpdatedInput, ask.UpdatedInput) {
		if deny, denied := g.RecheckDeny(ctx, call, d.UpdatedInput); denied {
			return deny
		}
	}
	if d.Behavior == Ask {
		d.Gate = ask.Gate
	}
	return d
}

// RecheckDeny judges edited input by the deny rules (station 1): the call is rebuilt
// from input (its command, url and paths read again) and refused when a deny rule names
// it or its input cannot be judged.
func (g *Gate) RecheckDeny(ctx context.Context, call Call, input json.RawMessage) (Decision, bool) {
	if !json.Valid(input) {
		return Decision{Behavior: Deny, Reason: ReasonRule, Message: "The edited input is not valid JSON, so the call was refused."}, true
	}
	next, err := g.rederive(ctx, call, input)
	if err != nil {
		return Decision{Behavior: Deny, Reason: ReasonRule, Message: "The edited input cannot be judged (" + err.Error() + "), so the call was refused."}, true
	}
	f := &fold{call: next, mode: g.modes.Current()}
	f.policy = ModePolicyOf(f.mode)
	if d, ok := g.denyStation(ctx, f); ok {
		return d, true
	}
	return Decision{}, false
}

func jsonEqual(a, b json.RawMessage) bool { return string(a) == string(b) }
