package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/internal/answercheck"
	"github.com/sema-agent/sema/internal/budget"
	"github.com/sema-agent/sema/internal/transcript"
	"github.com/sema-agent/sema/session"
)

// BudgetRaise is an answer's new budget for a budget question (gate budget): the limits
// the run continues under, which count what the question says was spent (not a fresh
// allowance from the question on).
// Zero leaves a limit as it was. The limit the question is about must be raised, and
// every limit given must be above what the run has spent; otherwise the answer is
// refused (budget.raise_invalid) and the question stays open.
type BudgetRaise struct {
	// MaxTokensTotal is the new token budget (TaskSpec.MaxTokensTotal).
	MaxTokensTotal int64 `json:"max_tokens_total,omitempty"`
	// MaxBudgetUSD is the new dollar budget (TaskSpec.MaxBudgetUSD).
	MaxBudgetUSD float64 `json:"max_budget_usd,omitempty"`
}

// budgetTool is the Tool a budget checkpoint records: a checkpoint names what it parks,
// and a budget question parks the run's next model request, not a tool call.
const budgetTool = "Budget"

// kindBudget is the transcript entry a leg that answers a budget question records first:
// the answer and the limits it left in force. It ends the parked entry's hold on the
// chain (the question is answered), and a later resume of the session reads the last
// one to keep the raised limits.
const kindBudget = "budget"

// budgetQuestion is a budget checkpoint's arguments: which limit the next request would
// pass, the limits in force and what the run had spent when it asked.
type budgetQuestion struct {
	// Budget is tokens or usd.
	Budget         string  `json:"budget"`
	MaxTokensTotal int64   `json:"max_tokens_total,omitempty"`
	MaxBudgetUSD   float64 `json:"max_budget_usd,omitempty"`
	SpentTokens    int64   `json:"spent_tokens"`
	SpentUSD       float64 `json:"spent_usd"`
	// Estimate is the next request's estimated input in tokens.
	Estimate int64 `json:"estimate_tokens"`
}

// budgetEntry is the payload of a kindBudget entry.
type budgetEntry struct {
	Checkpoint     string  `json:"checkpoint"`
	Allowed        bool    `json:"allowed"`
	MaxTokensTotal int64   `json:"max_tokens_total,omitempty"`
	MaxBudgetUSD   float64 `json:"max_budget_usd,omitempty"`
	SpentTokens    int64   `json:"spent_tokens"`
	SpentUSD       float64 `json:"spent_usd"`
}

// budgetAnswer is the claimed answer to a budget question the resumed leg acts on
// before its first request.
type budgetAnswer struct {
	entry  budgetEntry
	reason string
}

// parksBudget reports whether a budget the next request would pass is asked about
// rather than ending the run: the task parks its questions and the passed limit is the
// leg's own. A delegated child's budget is its parent's share, which only the parent's
// person can raise, so a child still stops (and its Task call says so).
// A firm limit (TaskSpec.FirmTokensTotal, FirmBudgetUSD) is the deployment's, not the
// task's, and is not asked about either.
func (l *leg) parksBudget(detail map[string]any) bool {
	firm := detail["budget"] == "tokens" && l.spec.FirmTokensTotal || detail["budget"] == "usd" && l.spec.FirmBudgetUSD
	return l.spec.OnAsk == OnAskPark && l.link == nil && detail["inherited"] == false && !firm
}

// parkBudget ends the leg at a budget question: a checkpoint of gate budget whose
// arguments say which limit, the limits and the spending, and a parked entry with no
// pending call, so the resumed leg goes on with the request it was about to make.
func (l *leg) parkBudget(ctx context.Context, s *turnLoop, detail map[string]any, est int64) {
	maxTokens, maxUSD, tokens, usd := l.budget.Own()
	q := budgetQuestion{Budget: fmt.Sprint(detail["budget"]), MaxTokensTotal: maxTokens, MaxBudgetUSD: maxUSD, SpentTokens: tokens, SpentUSD: usd, Estimate: est}
	args, err := json.Marshal(q)
	if err != nil {
		s.res.Status, s.res.Error = sema.StatusError, sema.Errorf(CodeParkFailed, "the budget question could not be parked: %v", err)
		return
	}
	if !l.flushRecords(ctx) {
		// A new session that could not be stored (openBeside) parks nothing.
		l.stopped(s.res)
		return
	}
	park := session.Checkpoint{SessionID: l.sessionID, LegID: l.legID, Tool: budgetTool, Args: args, Gate: session.GateBudget,
		Mode: string(l.modes.Declared()), PrePlanMode: string(l.modes.PrePlanMode()), Claim: l.writeClaim()}
	cp, err := l.store.Park(context.WithoutCancel(ctx), park)
	if sema.IsCode(err, session.CodeLeaseLost) {
		if err = l.reclaim(ctx); err == nil {
			cp, err = l.store.Park(context.WithoutCancel(ctx), park)
		}
		if sema.IsCode(err, session.CodeLeaseLost) {
			s.res.Status, s.res.Error = sema.StatusError, leaseLostError(err)
			return
		}
	}
	if err != nil {
		s.res.Status, s.res.Error = sema.StatusError, sema.Errorf(CodeParkFailed, "the budget question could not be parked: %v", err)
		return
	}
	// Pending -1: no call of the last turn waits; the question is the next request.
	entry := parkedEntry{Turn: s.turn, Pending: -1, Checkpoint: cp.ID, Budget: true}
	entry.ReadState, entry.ForgetRead = l.readDelta()
	if _, ok := l.record(ctx, transcript.KindParked, entry); !ok {
		l.stopped(s.res)
		return
	}
	s.res.Status = sema.StatusAwaitingApproval
	s.res.Checkpoint = &CheckpointInfo{ID: cp.ID, Tool: cp.Tool, Input: cp.Args, InputSHA256: cp.ArgsSHA256, Gate: string(cp.Gate), Message: q.message()}
}

// message is the question's sentence: which limit, spent against limit, the estimate,
// and what an answer must carry.
func (q budgetQuestion) message() string {
	if q.Budget == "usd" {
		return fmt.Sprintf("The run paused before its next model request, which would pass its budget of $%.4f: $%.4f of $%.4f is spent, and the request's input is about %d tokens. Allow with a higher --max-budget-usd (above $%.4f) to continue, or deny to end the run.",
			q.MaxBudgetUSD, q.SpentUSD, q.MaxBudgetUSD, q.Estimate, q.SpentUSD)
	}
	return fmt.Sprintf("The run paused before its next model request, which would pass its token budget: %d of %d tokens are spent, and the request is about %d tokens. Allow with a higher --max-tokens-total (above %d) to continue, or deny to end the run.",
		q.SpentTokens, q.MaxTokensTotal, q.Estimate, q.SpentTokens)
}

// checkRaise judges an allowing answer's raise against the question: the passed limit
// raised, every limit given above what is spent. It returns the limits in force after it.
func (q budgetQuestion) checkRaise(r *BudgetRaise) (tokens int64, usd float64, err error) {
	need := fmt.Sprintf("a token budget above %d (--max-tokens-total; max_tokens_total in a decision's budget)", q.SpentTokens)
	if q.Budget == "usd" {
		need = fmt.Sprintf("a dollar budget above %.4f (--max-budget-usd; max_budget_usd in a decision's budget)", q.SpentUSD)
	}
	if r == nil || r.MaxTokensTotal == 0 && r.MaxBudgetUSD == 0 {
		return 0, 0, sema.Errorf(CodeBudgetRaiseInvalid, "allowing a budget question needs a new budget: give %s, or deny to end the run", need).With("budget", q.Budget)
	}
	if r.MaxTokensTotal < 0 || r.MaxBudgetUSD < 0 || math.IsNaN(r.MaxBudgetUSD) || math.IsInf(r.MaxBudgetUSD, 0) {
		return 0, 0, sema.Errorf(CodeBudgetRaiseInvalid, "a new budget is a positive number; give %s", need).With("budget", q.Budget)
	}
	if q.Budget == "tokens" && r.MaxTokensTotal == 0 || q.Budget == "usd" && r.MaxBudgetUSD == 0 {
		return 0, 0, sema.Errorf(CodeBudgetRaiseInvalid, "the run paused at its %s budget, which the answer leaves as it was; give %s", budgetWord(q.Budget), need).With("budget", q.Budget)
	}
	tokens, usd = q.MaxTokensTotal, q.MaxBudgetUSD
	if r.MaxTokensTotal > 0 {
		if r.MaxTokensTotal <= q.SpentTokens {
			return 0, 0, sema.Errorf(CodeBudgetRaiseInvalid, "a token budget of %d is not above the %d tokens the run has spent; give --max-tokens-total above %d", r.MaxTokensTotal, q.SpentTokens, q.SpentTokens).
				With("budget", "tokens").With("spent", q.SpentTokens)
		}
		tokens = r.MaxTokensTotal
	}
	if r.MaxBudgetUSD > 0 {
		if r.MaxBudgetUSD <= q.SpentUSD {
			return 0, 0, sema.Errorf(CodeBudgetRaiseInvalid, "a budget of $%.4f is not above the $%.4f the run has spent; give --max-budget-usd above %.4f", r.MaxBudgetUSD, q.SpentUSD, q.SpentUSD).
				With("budget", "usd").With("spent", q.SpentUSD)
		}
		usd = r.MaxBudgetUSD
	}
	return tokens, usd, nil
}

func budgetWord(b string) string {
	if b == "usd" {
		return "dollar"
	}
	return "token"
}

// CheckBudgetAnswer judges answer a against checkpoint cp as Resume would, without
// claiming anything: a budget question (gate budget) allowed needs a raise above what
// the run spent of the limit it passed, and denied carries none; any other question
// takes no raise. A host that records decisions before a leg runs them (sema serve)
// refuses a bad one at once with it (budget.raise_invalid), leaving the question open.
// It returns the limits the run continues under when a raise is allowed.
func CheckBudgetAnswer(cp session.Checkpoint, a Answer) (*BudgetRaise, error) {
	if cp.Gate != session.GateBudget {
		if a.Budget != nil {
			return nil, sema.Errorf(CodeBudgetRaiseInvalid, "checkpoint %s asks about a %s call, not the budget; answer it without a new budget", cp.ID, cp.Tool)
		}
		return nil, nil
	}
	if !a.Allow {
		if a.Budget != nil {
			return nil, sema.Errorf(CodeBudgetRaiseInvalid, "a denial carries no new budget: drop it, or allow")
		}
		return nil, nil
	}
	var q budgetQuestion
	if err := json.Unmarshal(cp.Args, &q); err != nil {
		return nil, sema.Errorf(CodeAnswerInvalid, "checkpoint %s does not hold a budget question: %v", cp.ID, err)
	}
	tokens, usd, err := q.checkRaise(a.Budget)
	if err != nil {
		return nil, err
	}
	return &BudgetRaise{MaxTokensTotal: tokens, MaxBudgetUSD: usd}, nil
}

// prepareBudgetAnswer checks an answer to a budget question and claims it, as
// prepareAnswer does a call's: everything that refuses refuses before the claim, so a
// refused answer leaves the question open. An allowed raise puts the leg's pool at the
// new limits with the run's spending so far.
func (l *leg) prepareBudgetAnswer(ctx context.Context, cp session.Checkpoint) error {
	a := l.answer
	if cp.SessionID != l.spec.sessionID() {
		return sema.Errorf(CodeAnswerInvalid, "checkpoint %s belongs to session %s, not %s", cp.ID, cp.SessionID, l.spec.sessionID())
	}
	if err := answercheck.Verify(cp); err != nil {
		return err
	}
	if len(a.UpdatedInput) > 0 {
		return sema.Errorf(CodeAnswerInvalid, "a budget question has no call to edit; answer it with a new budget (Answer.Budget) instead of updated input")
	}
	if cp.Decision != nil {
		return l.alreadyAnswered(ctx, cp)
	}
	if p := l.resume.parked; p == nil || p.Checkpoint != cp.ID || !p.Budget {
		return sema.Errorf(CodeStale, "checkpoint %s is not where session %s stopped; it can no longer be answered", cp.ID, cp.SessionID)
	}
	raised, err := CheckBudgetAnswer(cp, *a)
	if err != nil {
		return err
	}
	var q budgetQuestion
	if err := json.Unmarshal(cp.Args, &q); err != nil {
		return sema.Errorf(CodeAnswerInvalid, "checkpoint %s does not hold a budget question: %v", cp.ID, err)
	}
	entry := budgetEntry{Checkpoint: cp.ID, Allowed: a.Allow, SpentTokens: q.SpentTokens, SpentUSD: q.SpentUSD,
		MaxTokensTotal: q.MaxTokensTotal, MaxBudgetUSD: q.MaxBudgetUSD}
	d := session.Decision{Verdict: session.VerdictDeny, Reason: a.Reason}
	if a.Allow {
		tokens, usd := raised.MaxTokensTotal, raised.MaxBudgetUSD
		if usd > 0 && q.MaxBudgetUSD == 0 {
			// A new dollar budget needs the price the door checks for one given at the start.
			spec := l.spec
			spec.MaxBudgetUSD = usd
			if err := validateBudget(l.deps, &spec); err != nil {
				return err
			}
		}
		entry.MaxTokensTotal, entry.MaxBudgetUSD = tokens, usd
		raise, err := json.Marshal(BudgetRaise{MaxTokensTotal: tokens, MaxBudgetUSD: usd})
		if err != nil {
			return err
		}
		d = session.Decision{Verdict: session.VerdictAllow, Args: raise, Reason: a.Reason}
	}
	if _, err := l.claim(ctx, cp, d); err != nil {
		return err
	}
	l.budgetAnswer = &budgetAnswer{entry: entry, reason: a.Reason}
	if a.Allow {
		l.budget = budget.New(entry.MaxTokensTotal, entry.MaxBudgetUSD, nil)
		l.budget.Add(entry.SpentTokens, entry.SpentUSD) // the run goes on from what it spent
	}
	return nil
}

// keepRaisedBudget puts a later leg of a session whose budget a person raised under the
// raised limits where its spec's are lower: the raise was given for the run, and the
// host re-supplies the spec it started with. A limit the spec leaves unset stays unset.
func (l *leg) keepRaisedBudget() {
	r := l.resume.budget
	if r == nil || l.link != nil {
		return
	}
	tokens, usd := l.spec.MaxTokensTotal, l.spec.MaxBudgetUSD
	if tokens > 0 && r.MaxTokensTotal > tokens && !l.spec.FirmTokensTotal {
		tokens = r.MaxTokensTotal
	}
	if usd > 0 && r.MaxBudgetUSD > usd && !l.spec.FirmBudgetUSD {
		usd = r.MaxBudgetUSD
	}
	if tokens != l.spec.MaxTokensTotal || usd != l.spec.MaxBudgetUSD {
		l.spec.MaxTokensTotal, l.spec.MaxBudgetUSD = tokens, usd
		l.budget = budget.New(tokens, usd, nil)
	}
}

// answerBudget acts on the claimed answer to the budget question the chain stopped at:
// the answer is recorded first (the question is answered, and the limits kept), then an
// allowed raise lets the leg go on to the request it was about to make, and a denial
// ends the run as the budget would have. It reports whether the leg goes on.
func (l *leg) answerBudget(ctx context.Context, s *turnLoop) bool {
	b := l.budgetAnswer
	if b == nil {
		return true // a plain resume moved past the question: this leg's own budget holds
	}
	l.budgetAnswer = nil
	if _, ok := l.record(ctx, kindBudget, b.entry); !ok {
		return !l.stopped(s.res)
	}
	if b.entry.Allowed {
		l.spec.MaxTokensTotal, l.spec.MaxBudgetUSD = b.entry.MaxTokensTotal, b.entry.MaxBudgetUSD
		return true
	}
	msg := "a person declined to raise the budget; the run stopped before its next model request"
	if b.reason != "" {
		msg += ": " + b.reason
	}
	s.res.Status = sema.StatusBudgetExceeded
	l.notice(sema.Notice{Code: CodeBudgetExceeded, Message: msg, Detail: map[string]any{"checkpoint": b.entry.Checkpoint,
		"max_tokens_total": b.entry.MaxTokensTotal, "max_budget_usd": b.entry.MaxBudgetUSD, "spent_tokens": b.entry.SpentTokens, "spent_usd": b.entry.SpentUSD}})
	return false
}

// lastBudgetRaise is the limits the last allowed budget answer of the chain left in
// force, if one did.
func lastBudgetRaise(entries []session.Entry) *BudgetRaise {
	var out *BudgetRaise
	for _, e := range entries {
		if e.Kind != kindBudget {
			continue
		}
		var b budgetEntry
		if json.Unmarshal(e.Payload, &b) == nil && b.Allowed {
			out = &BudgetRaise{MaxTokensTotal: b.MaxTokensTotal, MaxBudgetUSD: b.MaxBudgetUSD}
		}
	}
	return out
}
