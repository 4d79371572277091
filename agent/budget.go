package agent

import (
	"context"
	"math"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/internal/budget"
	"github.com/sema-agent/sema/internal/compact"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/pricing"
	"github.com/sema-agent/sema/tools"
)

// ModelUsage is what one model's requests used and cost, in the shape of Claude Code's
// modelUsage (TaskResult.ModelUsage).
type ModelUsage struct {
	// InputTokens counts the uncached input tokens.
	InputTokens int64 `json:"inputTokens"`
	// OutputTokens counts the generated tokens.
	OutputTokens int64 `json:"outputTokens"`
	// CacheReadInputTokens counts the input tokens served from the prompt cache.
	CacheReadInputTokens int64 `json:"cacheReadInputTokens"`
	// CacheCreationInputTokens counts the input tokens written to the prompt cache.
	CacheCreationInputTokens int64 `json:"cacheCreationInputTokens"`
	// CostUSD is what the requests cost at the model's price (Deps.Prices, else the
	// built-in table of package pricing); nil when the model has no price: unknown,
	// which is not zero.
	CostUSD *float64 `json:"costUSD"`
}

// newBudget is the leg's budget pool (package budget): its spec's limits, under its
// delegating leg's pool.
func newBudget(spec TaskSpec, lk *link) *budget.Pool {
	var parent *budget.Pool
	if lk != nil {
		parent = lk.parent.budget
	}
	return budget.New(spec.MaxTokensTotal, spec.MaxBudgetUSD, parent)
}

// validateBudget is the door's part for the budgets and the price seat. A cost budget
// whose spending cannot be priced is refused rather than ignored: a run the caller
// bounded must not run unbounded.
func validateBudget(deps *Deps, spec *TaskSpec) error {
	if spec.MaxBudgetUSD < 0 || math.IsNaN(spec.MaxBudgetUSD) || math.IsInf(spec.MaxBudgetUSD, 0) {
		return configError(CodeBudgetInvalid, "max budget is %v US dollars; give a positive amount, or 0 for no budget", spec.MaxBudgetUSD)
	}
	if spec.MaxTokensTotal < 0 {
		return configError(CodeTokensTotalInvalid, "max tokens total is %d; give a positive number, or 0 for no limit", spec.MaxTokensTotal)
	}
	if err := pricing.Table(deps.Prices).Validate(); err != nil {
		return err
	}
	if spec.MaxBudgetUSD > 0 {
		if spec.Model == "" {
			return configError(CodeBudgetUnmeasurable, "a budget of %v US dollars needs the model's price, and no model is named; set TaskSpec.Model", spec.MaxBudgetUSD)
		}
		if _, ok := pricing.Lookup(spec.Model, deps.Prices); !ok {
			return sema.Errorf(CodeBudgetUnmeasurable, "a budget of %v US dollars cannot be kept: the model %s has no known price; give its price (Deps.Prices; for the command line, prices.json in the state directory: $SEMA_HOME, else ~/.sema), or use a token budget instead", spec.MaxBudgetUSD, spec.Model).
				With("model", spec.Model)
		}
	}
	return nil
}

// priceOf is the price of a response's model: its reported name, else the name the leg
// asked for (a provider may report a name no table knows for a model the caller priced).
func (l *leg) priceOf(reported string) (pricing.Price, bool) {
	if p, ok := pricing.Lookup(reported, l.deps.Prices); ok {
		return p, true
	}
	if l.spec.Model != "" && l.spec.Model != reported {
		return pricing.Lookup(l.spec.Model, l.deps.Prices)
	}
	return pricing.Price{}, false
}

// charge counts one response — a turn's or a compaction summary's — in the leg's
// per-model usage and cost, and against its budgets and those above it.
func (l *leg) charge(resp *model.Response) {
	name := resp.Model
	if name == "" {
		name = l.spec.Model
	}
	if name == "" {
		name = l.deps.Provider.Name()
	}
	price, priced := l.priceOf(name)
	cost := price.Cost(resp.Usage)
	var known *float64
	if priced {
		known = &cost
	}
	l.tallies.Add(name, resp.Usage, known)
	l.budget.Add(budget.UsageTokens(resp.Usage), cost)
}

// addChildCosts adds a finished child's per-model usage and cost to the leg's report.
// Its budget was charged as the child spent.
func (l *leg) addChildCosts(byModel map[string]ModelUsage) {
	for name, mu := range byModel {
		l.tallies.Add(name, model.Usage{InputTokens: mu.InputTokens, OutputTokens: mu.OutputTokens,
			CacheReadTokens: mu.CacheReadInputTokens, CacheWriteTokens: mu.CacheCreationInputTokens}, mu.CostUSD)
	}
}

// costReport is the result's per-model usage and total cost (budget.Tallies.Report).
func (l *leg) costReport() (map[string]ModelUsage, *float64) {
	byModel, total := l.tallies.Report()
	var out map[string]ModelUsage
	for name, u := range byModel {
		if out == nil {
			out = map[string]ModelUsage{}
		}
		out[name] = ModelUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
			CacheReadInputTokens: u.CacheReadTokens, CacheCreationInputTokens: u.CacheWriteTokens, CostUSD: u.Cost}
	}
	return out, total
}

// requestEstimate is the local estimate of the input of the leg's next request: four
// bytes a token over the system prompt, the tool specs and the conversation (an image
// counts as the largest a provider accepts). It needs no provider and no tokenizer, so
// it is the same for every model; it is not exact, which is why a budget is checked
// against it only to decide whether to send the request at all.
func (l *leg) requestEstimate(msgs []model.Message) int64 {
	return int64(len(l.system)/4) + l.specTokens + compact.EstimateTokens(msgs)
}

// overBudget reports whether the leg's next request, estimated from msgs, would pass a
// budget — the leg's own, or one of a leg above it — and then ends res with status
// budget_exceeded and a notice saying which budget, what was spent and the estimate.
// The estimate is of the request's input: the response's output is not known before it
// comes, so the last response may carry the spending past the budget by up to one
// response's output (TaskSpec.MaxTokens bounds it). The input is priced as uncached,
// the most it can cost. The loop checks before a compaction (whose summary request
// carries about the whole conversation) and again before the turn's request. The one
// exception: when the provider refuses a request as too long, the summary request and
// the retried request that follow are sent without another check (both are counted).
//
// A task that parks its questions (OnAskPark) asks a person instead when the limit is
// its own: the leg ends awaiting approval at a budget question (parkBudget).
func (l *leg) overBudget(ctx context.Context, s *turnLoop) bool {
	if !l.budget.Limited() {
		return false
	}
	res := s.res
	est := l.requestEstimate(s.msgs)
	price, _ := l.priceOf(l.spec.Model)
	estUSD := float64(est) * price.Input / 1e6
	msg, detail, over := l.budget.Breach(est, estUSD)
	if !over {
		return false
	}
	if l.parksBudget(detail) {
		l.parkBudget(ctx, s, detail, est)
		return true
	}
	res.Status = sema.StatusBudgetExceeded
	l.notice(sema.Notice{Code: CodeBudgetExceeded, Message: msg, Detail: detail})
	return true
}

// childBudget bounds a child's spec by what the leg's budgets leave: the child may spend
// no more than that, and its spending counts against them as it happens. A leg with
// nothing left starts no child.
func (l *leg) childBudget(spec *TaskSpec) *tools.Result {
	tokens, limitsTokens, usd, limitsUSD := l.budget.Left()
	if limitsTokens {
		if tokens <= 0 {
			r := tools.Fail(CodeSubagentBudget, "The agent was not started: this task has no tokens left of its budget to give it.")
			return &r
		}
		spec.MaxTokensTotal = tokens
	}
	if limitsUSD {
		if usd <= 0 {
			r := tools.Fail(CodeSubagentBudget, "The agent was not started: this task has no money left of its budget to give it.")
			return &r
		}
		spec.MaxBudgetUSD = usd
	}
	return nil
}
