package agent

import (
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/sema-agent/sema"
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

// tally is one model's part of a leg's spending, its children's included.
type tally struct {
	usage model.Usage
	cost  float64
	// unpriced is set once a request of the model had no price: its cost is unknown.
	unpriced bool
}

// budget is what a leg may spend (its TaskSpec's MaxTokensTotal and MaxBudgetUSD; zero
// is no limit) and what the leg and every leg under it have spent so far, counted as
// each response arrives. parent is the delegating leg's budget: a child's spending
// counts against it too, so children that run at once draw on one pool, and none can
// spend what its siblings already did.
type budget struct {
	parent    *budget
	maxTokens int64
	maxUSD    float64

	mu     sync.Mutex
	tokens int64
	usd    float64
}

func newBudget(spec TaskSpec, lk *link) *budget {
	b := &budget{maxTokens: spec.MaxTokensTotal, maxUSD: spec.MaxBudgetUSD}
	if lk != nil {
		b.parent = lk.parent.budget
	}
	return b
}

// add counts a response's spending on b and every budget above it.
func (b *budget) add(tokens int64, usd float64) {
	for ; b != nil; b = b.parent {
		b.mu.Lock()
		b.tokens += tokens
		b.usd += usd
		b.mu.Unlock()
	}
}

func (b *budget) spent() (int64, float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tokens, b.usd
}

// left returns what the tightest limit of the chain leaves, for tokens and for dollars,
// and whether any budget of the chain limits each.
func (b *budget) left() (tokens int64, limitsTokens bool, usd float64, limitsUSD bool) {
	tokens, usd = math.MaxInt64, math.Inf(1)
	for ; b != nil; b = b.parent {
		t, u := b.spent()
		if b.maxTokens > 0 {
			tokens, limitsTokens = min(tokens, b.maxTokens-t), true
		}
		if b.maxUSD > 0 {
			usd, limitsUSD = min(usd, b.maxUSD-u), true
		}
	}
	return tokens, limitsTokens, usd, limitsUSD
}

// usageTokens is how a token budget counts a response: every token it reports — input,
// output, and the input read from or written to the prompt cache — since the provider
// processed each of them.
func usageTokens(u model.Usage) int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
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
	l.mu.Lock()
	t := l.tallyOf(name)
	t.usage = t.usage.Add(resp.Usage)
	t.cost += cost
	t.unpriced = t.unpriced || !priced
	l.mu.Unlock()
	l.budget.add(usageTokens(resp.Usage), cost)
}

// tallyOf returns the tally of a model, creating it; l.mu is held.
func (l *leg) tallyOf(name string) *tally {
	if l.tallies == nil {
		l.tallies = map[string]*tally{}
	}
	t := l.tallies[name]
	if t == nil {
		t = &tally{}
		l.tallies[name] = t
	}
	return t
}

// addChildCosts adds a finished child's per-model usage and cost to the leg's report.
// Its budget was charged as the child spent.
func (l *leg) addChildCosts(byModel map[string]ModelUsage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, mu := range byModel {
		t := l.tallyOf(name)
		t.usage = t.usage.Add(model.Usage{InputTokens: mu.InputTokens, OutputTokens: mu.OutputTokens,
			CacheReadTokens: mu.CacheReadInputTokens, CacheWriteTokens: mu.CacheCreationInputTokens})
		if mu.CostUSD == nil {
			t.unpriced = true
		} else {
			t.cost += *mu.CostUSD
		}
	}
}

// costReport is the result's per-model usage and total cost. The total is unknown (nil)
// as soon as one model's is: a sum that left out what could not be priced would read as
// a real, lower cost. A leg that made no request spent nothing, which is known.
func (l *leg) costReport() (map[string]ModelUsage, *float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	total, known := 0.0, true
	var out map[string]ModelUsage
	names := make([]string, 0, len(l.tallies))
	for name := range l.tallies {
		names = append(names, name)
	}
	sort.Strings(names) // the sum's rounding is the same on every run
	for _, name := range names {
		t := l.tallies[name]
		mu := ModelUsage{InputTokens: t.usage.InputTokens, OutputTokens: t.usage.OutputTokens,
			CacheReadInputTokens: t.usage.CacheReadTokens, CacheCreationInputTokens: t.usage.CacheWriteTokens}
		if t.unpriced {
			known = false
		} else {
			cost := t.cost
			mu.CostUSD = &cost
			total += cost
		}
		if out == nil {
			out = map[string]ModelUsage{}
		}
		out[name] = mu
	}
	if !known {
		return out, nil
	}
	return out, &total
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
func (l *leg) overBudget(res *TaskResult, msgs []model.Message) bool {
	limited := false
	for b := l.budget; b != nil && !limited; b = b.parent {
		limited = b.maxTokens > 0 || b.maxUSD > 0
	}
	if !limited {
		return false
	}
	est := l.requestEstimate(msgs)
	price, _ := l.priceOf(l.spec.Model)
	estUSD := float64(est) * price.Input / 1e6
	for b := l.budget; b != nil; b = b.parent {
		tokens, usd := b.spent()
		whose := "its"
		if b != l.budget {
			whose = "the delegating task's"
		}
		var n sema.Notice
		switch {
		case b.maxTokens > 0 && tokens+est > b.maxTokens:
			n = sema.Notice{Code: CodeBudgetExceeded,
				Message: fmt.Sprintf("the run stopped before its next model request, which would pass %s token budget: %d of %d tokens are spent, and the request is about %d tokens", whose, tokens, b.maxTokens, est),
				Detail:  map[string]any{"budget": "tokens", "limit": b.maxTokens, "spent": tokens, "estimate": est, "inherited": b != l.budget}}
		case b.maxUSD > 0 && usd+estUSD > b.maxUSD:
			n = sema.Notice{Code: CodeBudgetExceeded,
				Message: fmt.Sprintf("the run stopped before its next model request, which would pass %s budget of $%.4f: $%.4f is spent, and the request's input (about %d tokens) costs about $%.4f", whose, b.maxUSD, usd, est, estUSD),
				Detail:  map[string]any{"budget": "usd", "limit": b.maxUSD, "spent": usd, "estimate": estUSD, "estimate_tokens": est, "inherited": b != l.budget}}
		default:
			continue
		}
		res.Status = sema.StatusBudgetExceeded
		l.notice(n)
		return true
	}
	return false
}

// childBudget bounds a child's spec by what the leg's budgets leave: the child may spend
// no more than that, and its spending counts against them as it happens. A leg with
// nothing left starts no child.
func (l *leg) childBudget(spec *TaskSpec) *tools.Result {
	tokens, limitsTokens, usd, limitsUSD := l.budget.left()
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
