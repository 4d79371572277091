// Package budget keeps a leg's spending: what it may spend (a token and a dollar limit)
// and what it and every leg under it spent so far, counted as each response arrives,
// and its usage and cost by model for the result.
package budget

import (
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/sema-agent/sema/model"
)

// Pool is what a leg may spend (its MaxTokensTotal and MaxBudgetUSD; zero is no limit)
// and what the leg and every leg under it have spent so far. parent is the delegating
// leg's pool: a child's spending counts against it too, so children that run at once
// draw on one pool, and none can spend what its siblings already did.
type Pool struct {
	parent    *Pool
	maxTokens int64
	maxUSD    float64

	mu     sync.Mutex
	tokens int64
	usd    float64
}

// New returns a pool with the limits maxTokens and maxUSD (zero: none) under parent
// (nil for a root leg's).
func New(maxTokens int64, maxUSD float64, parent *Pool) *Pool {
	return &Pool{maxTokens: maxTokens, maxUSD: maxUSD, parent: parent}
}

// Own is the pool's own limits (zero: none) and what it has spent so far, its
// children's included: what a budget question reports and a raise is judged against.
func (b *Pool) Own() (maxTokens int64, maxUSD float64, tokens int64, usd float64) {
	tokens, usd = b.spent()
	return b.maxTokens, b.maxUSD, tokens, usd
}

// Add counts a response's spending on b and every pool above it.
func (b *Pool) Add(tokens int64, usd float64) {
	for ; b != nil; b = b.parent {
		b.mu.Lock()
		b.tokens += tokens
		b.usd += usd
		b.mu.Unlock()
	}
}

func (b *Pool) spent() (int64, float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tokens, b.usd
}

// Left returns what the tightest limit of the chain leaves, for tokens and for dollars,
// and whether any pool of the chain limits each.
func (b *Pool) Left() (tokens int64, limitsTokens bool, usd float64, limitsUSD bool) {
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

// Limited reports whether any pool of the chain has a limit.
func (b *Pool) Limited() bool {
	for ; b != nil; b = b.parent {
		if b.maxTokens > 0 || b.maxUSD > 0 {
			return true
		}
	}
	return false
}

// Breach says which limit of the chain a request of about est tokens, whose input costs
// about estUSD, would pass — the leg's own, or one of a leg above it: a sentence saying
// which, what was spent and the estimate, and the same as detail. ok is false when the
// request passes none.
func (b *Pool) Breach(est int64, estUSD float64) (msg string, detail map[string]any, ok bool) {
	for p := b; p != nil; p = p.parent {
		tokens, usd := p.spent()
		whose := "its"
		if p != b {
			whose = "the delegating task's"
		}
		switch {
		case p.maxTokens > 0 && tokens+est > p.maxTokens:
			return fmt.Sprintf("the run stopped before its next model request, which would pass %s token budget: %d of %d tokens are spent, and the request is about %d tokens", whose, tokens, p.maxTokens, est),
				map[string]any{"budget": "tokens", "limit": p.maxTokens, "spent": tokens, "estimate": est, "inherited": p != b}, true
		case p.maxUSD > 0 && usd+estUSD > p.maxUSD:
			return fmt.Sprintf("the run stopped before its next model request, which would pass %s budget of $%.4f: $%.4f is spent, and the request's input (about %d tokens) costs about $%.4f", whose, p.maxUSD, usd, est, estUSD),
				map[string]any{"budget": "usd", "limit": p.maxUSD, "spent": usd, "estimate": estUSD, "estimate_tokens": est, "inherited": p != b}, true
		}
	}
	return "", nil, false
}

// UsageTokens is how a token budget counts a response: every token it reports — input,
// output, and the input read from or written to the prompt cache — since the provider
// processed each of them.
func UsageTokens(u model.Usage) int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
}

// tally is one model's part of a leg's spending, its children's included.
type tally struct {
	usage model.Usage
	cost  float64
	// unpriced is set once a request of the model had no price: its cost is unknown.
	unpriced bool
}

// Tallies are a leg's usage and cost by model, its children's included. The zero value
// is empty and ready; it is safe for concurrent use.
type Tallies struct {
	mu sync.Mutex
	m  map[string]*tally
}

// Usage is one model's usage and cost; Cost is nil when a request of the model had no
// price: unknown, which is not zero.
type Usage struct {
	model.Usage
	Cost *float64
}

// Add counts usage u of the model name, which cost cost, or an unknown amount when
// cost is nil.
func (t *Tallies) Add(name string, u model.Usage, cost *float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]*tally{}
	}
	ta := t.m[name]
	if ta == nil {
		ta = &tally{}
		t.m[name] = ta
	}
	ta.usage = ta.usage.Add(u)
	if cost == nil {
		ta.unpriced = true
	} else {
		ta.cost += *cost
	}
}

// Report is the usage and cost by model (nil when nothing was counted), and the total
// cost. The total is unknown (nil) as soon as one model's is: a sum that left out what
// could not be priced would read as a real, lower cost. Nothing counted is nothing
// spent, which is known.
func (t *Tallies) Report() (map[string]Usage, *float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	total, known := 0.0, true
	var out map[string]Usage
	names := make([]string, 0, len(t.m))
	for name := range t.m {
		names = append(names, name)
	}
	sort.Strings(names) // the sum's rounding is the same on every run
	for _, name := range names {
		ta := t.m[name]
		u := Usage{Usage: ta.usage}
		if ta.unpriced {
			known = false
		} else {
			cost := ta.cost
			u.Cost = &cost
			total += cost
		}
		if out == nil {
			out = map[string]Usage{}
		}
		out[name] = u
	}
	if !known {
		return out, nil
	}
	return out, &total
}
