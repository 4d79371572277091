package agent_test

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/pricing"
)

func used(in, out, cacheRead, cacheWrite int64) *model.Usage {
	return &model.Usage{InputTokens: in, OutputTokens: out, CacheReadTokens: cacheRead, CacheWriteTokens: cacheWrite}
}

var globCall = scripted.ToolCall{Name: "Glob", Input: json.RawMessage(`{"pattern":"*.txt"}`)}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// The cost is computed from each response's usage at the model's price: the deployment's
// seat, else the built-in table by the requested name (the scripted provider reports
// "scripted"); with neither it is unknown, and says so as null.
func TestCostFromDeclaredUsage(t *testing.T) {
	t.Parallel()
	sonnet := pricing.Price{Input: 3, Output: 15, CacheWrite: 3.75, CacheRead: 0.30}
	// (1400×3 + 300×15 + 300×3.75 + 5000×0.30) / 1e6
	const want = 0.011325
	cases := []struct {
		name   string
		prices map[string]pricing.Price
		model  string
		known  bool
	}{
		{"the deployment's price", map[string]pricing.Price{"scripted": sonnet}, "", true},
		{"the built-in price of the requested model", nil, "claude-sonnet-4-5", true},
		{"no price", nil, "", false},
		{"no price for this model", map[string]pricing.Price{"gpt-4.1": {Input: 1}}, "llama3.1", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := scripted.New(scripted.Script{Turns: []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{globCall}, Usage: used(1000, 200, 5000, 300)},
				{Text: "done", Usage: used(400, 100, 0, 0)},
			}})
			sp := spec(t)
			sp.Model = c.model
			res, err := agent.New(agent.Deps{Provider: p, Prices: c.prices}).Run(context.Background(), sp)
			if err != nil {
				t.Fatal(err)
			}
			mu, ok := res.ModelUsage["scripted"]
			if !ok || len(res.ModelUsage) != 1 || mu.InputTokens != 1400 || mu.OutputTokens != 300 || mu.CacheReadInputTokens != 5000 || mu.CacheCreationInputTokens != 300 {
				t.Fatalf("model usage %+v", res.ModelUsage)
			}
			out, _ := json.Marshal(res)
			if !c.known {
				if res.TotalCostUSD != nil || mu.CostUSD != nil || !strings.Contains(string(out), `"total_cost_usd":null`) {
					t.Fatalf("an unpriced run reports a cost: %v, %v; %s", res.TotalCostUSD, mu.CostUSD, out)
				}
				return
			}
			if res.TotalCostUSD == nil || !near(*res.TotalCostUSD, want) || mu.CostUSD == nil || !near(*mu.CostUSD, want) {
				t.Fatalf("cost %v (model %v), want %v", res.TotalCostUSD, mu.CostUSD, want)
			}
		})
	}
}

// A budget stops the leg before the request that would pass it — never after it — with
// the usage so far, status budget_exceeded and a notice naming the budget.
func TestBudgetStopsBeforeTheRequestThatWouldPassIt(t *testing.T) {
	t.Parallel()
	// At 10 dollars a million tokens, the first turn's 100,000 tokens cost 1 dollar.
	tenDollars := map[string]pricing.Price{"scripted": {Input: 10, Output: 10, CacheWrite: 10, CacheRead: 10}}
	cases := []struct {
		name     string
		tokens   int64
		usd      float64
		status   sema.Status
		requests int
		budget   string // the notice's budget, when it stops
	}{
		// The second request's estimate (the system prompt, the tool specs, the
		// conversation) is more than one token: with 100,000 spent it passes 100,001.
		{"tokens: stops before the second request", 100_001, 0, sema.StatusBudgetExceeded, 1, "tokens"},
		{"tokens: stops before the first request", 10, 0, sema.StatusBudgetExceeded, 0, "tokens"},
		{"tokens: room for both", 10_000_000, 0, sema.StatusCompleted, 2, ""},
		{"usd: stops before the second request", 0, 1.0001, sema.StatusBudgetExceeded, 1, "usd"},
		{"usd: stops before the first request", 0, 0.00001, sema.StatusBudgetExceeded, 0, "usd"},
		{"usd: room for both", 0, 100, sema.StatusCompleted, 2, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := scripted.New(scripted.Script{Turns: []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{globCall}, Usage: used(100_000, 0, 0, 0)},
				{Text: "done", Usage: used(10, 0, 0, 0)},
			}})
			sp := spec(t)
			sp.Model, sp.MaxTokensTotal, sp.MaxBudgetUSD = "scripted", c.tokens, c.usd
			res, err := agent.New(agent.Deps{Provider: p, Prices: tenDollars}).Run(context.Background(), sp)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != c.status || len(p.Requests()) != c.requests || res.NumTurns != c.requests {
				t.Fatalf("status %s after %d requests (%d turns); want %s after %d", res.Status, len(p.Requests()), res.NumTurns, c.status, c.requests)
			}
			if c.budget == "" {
				return
			}
			n := noticeOf(res, agent.CodeBudgetExceeded)
			if n == nil || n.Detail["budget"] != c.budget || n.Detail["inherited"] != false {
				t.Fatalf("notice %+v", n)
			}
			wantSpent := int64(100_000 * c.requests)
			if res.Usage.InputTokens != wantSpent {
				t.Fatalf("usage %+v, want %d input tokens", res.Usage, wantSpent)
			}
			if c.budget == "tokens" && (n.Detail["spent"] != wantSpent || n.Detail["limit"] != c.tokens || n.Detail["estimate"].(int64) <= 1) {
				t.Fatalf("notice detail %v", n.Detail)
			}
			if c.budget == "usd" && (res.TotalCostUSD == nil || !near(*res.TotalCostUSD, float64(c.requests)) || !near(n.Detail["spent"].(float64), float64(c.requests))) {
				t.Fatalf("cost %v, notice detail %v", res.TotalCostUSD, n.Detail)
			}
		})
	}
}

// A child gets no more than its parent has left, and what it spends counts against the
// parent's budget: the child stops at its share, and the parent stops before its next
// request. The result's usage and cost include the child's.
func TestChildIsBoundedByWhatTheParentHasLeft(t *testing.T) {
	t.Parallel()
	tenDollars := map[string]pricing.Price{"scripted": {Input: 10, Output: 10, CacheWrite: 10, CacheRead: 10}}
	cases := []struct {
		name   string
		tokens int64
		usd    float64
		limit  any // the child's own limit, as its notice reports it
	}{
		// The parent spends 100,000 of 300,000 tokens (1 of 3 dollars), leaving the child
		// 200,000 (2 dollars); the child's first response spends 199,999 of them.
		{"tokens", 300_000, 0, int64(200_000)},
		{"usd", 0, 3, 2.0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := scripted.New(scripted.Script{
				Turns: []scripted.Turn{
					{ToolCalls: []scripted.ToolCall{taskCall("task", "general-purpose", "child", "CHILD: look")}, Usage: used(100_000, 0, 0, 0)},
					{Text: "parent done", Usage: used(1, 0, 0, 0)},
				},
				Threads: []scripted.Thread{{Match: "CHILD", Turns: []scripted.Turn{
					{ToolCalls: []scripted.ToolCall{globCall}, Usage: used(199_999, 0, 0, 0)},
					{Text: "child done", Usage: used(1, 0, 0, 0)},
				}}},
			})
			sp := spec(t)
			sp.Model, sp.MaxTokensTotal, sp.MaxBudgetUSD = "scripted", c.tokens, c.usd
			evs, res := collect(t, agent.New(agent.Deps{Provider: p, Prices: tenDollars}).Events(context.Background(), sp))
			if len(p.Requests()) != 2 {
				t.Fatalf("%d requests, want the parent's first and the child's first", len(p.Requests()))
			}
			if len(res.Subagents) != 1 || res.Subagents[0].Status != sema.StatusBudgetExceeded || res.Status != sema.StatusBudgetExceeded {
				t.Fatalf("parent %s, children %+v", res.Status, res.Subagents)
			}
			if got := resultsByID(evs)["task"]; got == nil || got.Code != agent.CodeSubagentBudget {
				t.Fatalf("the Task call's result %+v", got)
			}
			var childNotice *sema.Notice
			for _, ev := range evs {
				if ev.Type == agent.EventNotice && ev.ParentToolUseID == "task" && ev.Notice.Code == agent.CodeBudgetExceeded {
					childNotice = ev.Notice
				}
			}
			if childNotice == nil || childNotice.Detail["limit"] != c.limit {
				t.Fatalf("the child's notice %+v, want its limit %v", childNotice, c.limit)
			}
			if res.Usage.InputTokens != 299_999 || res.ModelUsage["scripted"].InputTokens != 299_999 {
				t.Fatalf("usage %+v, model usage %+v", res.Usage, res.ModelUsage)
			}
			if res.TotalCostUSD == nil || !near(*res.TotalCostUSD, 2.99999) {
				t.Fatalf("cost %v, want the parent's and the child's", res.TotalCostUSD)
			}
		})
	}
}

// A leg whose budget is spent starts no child.
func TestTaskRefusedWhenNothingIsLeft(t *testing.T) {
	t.Parallel()
	p := scripted.New(scripted.Script{
		Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{taskCall("task", "general-purpose", "child", "CHILD: look")}, Usage: used(100_000, 0, 0, 0)},
			{Text: "parent done"},
		},
		Threads: []scripted.Thread{{Match: "CHILD", Turns: []scripted.Turn{{Text: "child done"}}}},
	})
	sp := spec(t)
	sp.MaxTokensTotal = 100_000
	evs, res := collect(t, agent.New(agent.Deps{Provider: p}).Events(context.Background(), sp))
	got := resultsByID(evs)["task"]
	if got == nil || got.Code != agent.CodeSubagentBudget || !strings.Contains(got.Text, "no tokens left") || len(res.Subagents) != 0 {
		t.Fatalf("result %+v, children %+v", got, res.Subagents)
	}
	if res.Status != sema.StatusBudgetExceeded || len(p.Requests()) != 1 {
		t.Fatalf("status %s after %d requests", res.Status, len(p.Requests()))
	}
}

// The door refuses a budget it cannot keep, and a price that is not one, by name.
func TestBudgetDoor(t *testing.T) {
	t.Parallel()
	priced := map[string]pricing.Price{"house-model": {Input: 1, Output: 1}}
	cases := []struct {
		name   string
		prices map[string]pricing.Price
		model  string
		tokens int64
		usd    float64
		code   string
	}{
		{"negative tokens", nil, "", -1, 0, agent.CodeTokensTotalInvalid},
		{"negative dollars", priced, "house-model", 0, -0.5, agent.CodeBudgetInvalid},
		{"NaN dollars", priced, "house-model", 0, math.NaN(), agent.CodeBudgetInvalid},
		{"infinite dollars", priced, "house-model", 0, math.Inf(1), agent.CodeBudgetInvalid},
		{"dollars without a model", priced, "", 0, 1, agent.CodeBudgetUnmeasurable},
		{"dollars for an unpriced model", priced, "scripted", 0, 1, agent.CodeBudgetUnmeasurable},
		{"a negative price", map[string]pricing.Price{"m": {Input: -1}}, "", 0, 0, pricing.CodePricesInvalid},
		{"a price without a name", map[string]pricing.Price{"": {}}, "", 0, 0, pricing.CodePricesInvalid},
		{"dollars for a priced model", priced, "house-model", 0, 1, ""},
		{"dollars for a built-in model", nil, "claude-sonnet-4-5-20250929", 0, 1, ""},
		{"tokens for an unpriced model", nil, "scripted", 1_000_000, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "done", Usage: used(1, 1, 0, 0)}}})
			sp := spec(t)
			sp.Model, sp.MaxTokensTotal, sp.MaxBudgetUSD = c.model, c.tokens, c.usd
			res, err := agent.New(agent.Deps{Provider: p, Prices: c.prices}).Run(context.Background(), sp)
			if c.code == "" {
				if err != nil || res.Status != sema.StatusCompleted {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if sema.CodeOf(err) != c.code || len(p.Requests()) != 0 {
				t.Fatalf("err %v after %d requests, want %s before any", err, len(p.Requests()), c.code)
			}
		})
	}
}
