package pricing_test

import (
	"math"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/pricing"
)

func TestLookup(t *testing.T) {
	t.Parallel()
	sonnet := pricing.Price{Input: 3, Output: 15, CacheWrite: 3.75, CacheRead: 0.30}
	local := pricing.Price{}
	over := pricing.Table{
		"claude-haiku-4-5": {Input: 0.5, Output: 2.5, CacheWrite: 0.6, CacheRead: 0.05},
		"llama3.1":         local,
	}
	for _, c := range []struct {
		name  string
		want  pricing.Price
		known bool
	}{
		// Exact names of the built-in table.
		{"claude-sonnet-4-5", sonnet, true},
		{"gpt-4.1", pricing.Price{Input: 2, Output: 8, CacheWrite: 2, CacheRead: 0.50}, true},
		{"claude-opus-4-5", pricing.Price{Input: 5, Output: 25, CacheWrite: 6.25, CacheRead: 0.50}, true},
		// A family's dated snapshots, in each provider's spelling.
		{"claude-sonnet-4-5-20250929", sonnet, true},
		{"claude-sonnet-4-5@20250929", sonnet, true},
		{"claude-3-7-sonnet-latest", sonnet, true},
		{"gpt-4.1-2025-04-14", pricing.Price{Input: 2, Output: 8, CacheWrite: 2, CacheRead: 0.50}, true},
		{"claude-opus-4-20250514", pricing.Price{Input: 15, Output: 75, CacheWrite: 18.75, CacheRead: 1.50}, true},
		// Another tier is not a snapshot of a family, even when its name starts with it.
		{"gpt-4.1-mini", pricing.Price{Input: 0.40, Output: 1.60, CacheWrite: 0.40, CacheRead: 0.10}, true},
		{"gpt-4.1-turbo", pricing.Price{}, false},
		{"claude-opus-4-6", pricing.Price{}, false},
		{"claude-sonnet-4-5-2025", pricing.Price{}, false},
		{"claude-sonnet-4-5-2025092x", pricing.Price{}, false},
		// Unknown: a local model, a router's spelling, the scripted provider, nothing.
		{"llama3.2", pricing.Price{}, false},
		{"anthropic/claude-sonnet-4-5", pricing.Price{}, false},
		{"scripted", pricing.Price{}, false},
		{"", pricing.Price{}, false},
		// The deployment's entries win, for their family's snapshots too, and may price a
		// model at zero.
		{"claude-haiku-4-5-20251001", over["claude-haiku-4-5"], true},
		{"llama3.1", local, true},
	} {
		got, known := pricing.Lookup(c.name, over)
		if got != c.want || known != c.known {
			t.Errorf("Lookup(%q) = %+v, %v; want %+v, %v", c.name, got, known, c.want, c.known)
		}
	}
}

func TestCost(t *testing.T) {
	t.Parallel()
	p := pricing.Price{Input: 3, Output: 15, CacheWrite: 3.75, CacheRead: 0.30}
	u := model.Usage{InputTokens: 1_000_000, OutputTokens: 100_000, CacheWriteTokens: 200_000, CacheReadTokens: 2_000_000}
	// 3 + 1.5 + 0.75 + 0.6
	if got := p.Cost(u); math.Abs(got-5.85) > 1e-9 {
		t.Fatalf("Cost = %v, want 5.85", got)
	}
	if got := p.Cost(model.Usage{}); got != 0 {
		t.Fatalf("the cost of nothing is %v", got)
	}
}

func TestValidateRefusesWhatIsNotAPrice(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		table pricing.Table
		ok    bool
	}{
		{"zero is free", pricing.Table{"m": {}}, true},
		{"negative", pricing.Table{"m": {Input: -1}}, false},
		{"NaN", pricing.Table{"m": {Output: math.NaN()}}, false},
		{"infinite", pricing.Table{"m": {CacheRead: math.Inf(1)}}, false},
		{"empty name", pricing.Table{" ": {Input: 1}}, false},
	} {
		err := c.table.Validate()
		if (err == nil) != c.ok || err != nil && !sema.IsCode(err, pricing.CodePricesInvalid) {
			t.Errorf("%s: Validate = %v", c.name, err)
		}
	}
	if err := pricing.Builtin().Validate(); err != nil {
		t.Fatalf("the built-in table: %v", err)
	}
}

func TestParseTable(t *testing.T) {
	t.Parallel()
	got, err := pricing.ParseTable([]byte(`{"llama3.1":{"input":0,"output":0,"cache_write":0,"cache_read":0},"claude-sonnet-4-5":{"input":2,"output":10,"cache_write":2.5,"cache_read":0.2}}`), "prices.json")
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := got.Match("claude-sonnet-4-5-20250929"); !ok || p.Output != 10 {
		t.Fatalf("parsed table matches %+v, %v", p, ok)
	}
	for _, bad := range []string{
		`[]`,
		`null`,
		`{"m":{"input":1,"output":1,"cache_write":1}}`,
		`{"m":{"input":1,"output":1,"cache_write":1,"cache_read":1,"per":"token"}}`,
		`{"m":{"input":-1,"output":1,"cache_write":1,"cache_read":1}}`,
		`{"m":null}`,
		`{"":{"input":1,"output":1,"cache_write":1,"cache_read":1}}`,
	} {
		if _, err := pricing.ParseTable([]byte(bad), "prices.json"); !sema.IsCode(err, pricing.CodePricesInvalid) {
			t.Errorf("ParseTable(%s) = %v, want %s", bad, err, pricing.CodePricesInvalid)
		}
	}
}
