// Package pricing knows what model tokens cost: a table of list prices per model, in US
// dollars per million tokens, and the cost of a response's usage under one of them.
//
// A model name is matched against a table by its exact name first, then by its family:
// a key matches a name that is the key followed by a snapshot suffix — a date
// ("claude-sonnet-4-5-20250929", "gpt-4.1-2025-04-14", Vertex's
// "claude-sonnet-4-5@20250929") or "-latest" — so that the dated names providers report
// cost what their family costs. Nothing else counts as a family: "gpt-4.1-mini" is not
// "gpt-4.1", and "claude-opus-4-5" is not "claude-opus-4". A name that matches nothing
// has no price, and its cost is unknown, never zero: the package never guesses.
package pricing

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
)

// CodePricesInvalid refuses a price table that holds a negative or non-finite price, an
// empty model name, or (read from JSON) an unknown key or a missing price.
const CodePricesInvalid = "config.prices_invalid"

// Price is a model's list price in US dollars per million tokens, for each kind of
// token a response's usage counts (model.Usage).
type Price struct {
	// Input is the price of uncached input tokens.
	Input float64 `json:"input"`
	// Output is the price of generated tokens.
	Output float64 `json:"output"`
	// CacheWrite is the price of input tokens written to the prompt cache (Anthropic's
	// five-minute cache; OpenAI charges no premium and reports none).
	CacheWrite float64 `json:"cache_write"`
	// CacheRead is the price of input tokens served from the prompt cache.
	CacheRead float64 `json:"cache_read"`
}

// Cost returns what u costs at p, in US dollars.
func (p Price) Cost(u model.Usage) float64 {
	return (float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output +
		float64(u.CacheWriteTokens)*p.CacheWrite + float64(u.CacheReadTokens)*p.CacheRead) / 1e6
}

// Validate refuses a price below zero, NaN or infinite (CodePricesInvalid). A price of
// zero is valid: it declares a model that costs nothing, such as one served locally.
func (p Price) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"input", p.Input}, {"output", p.Output}, {"cache_write", p.CacheWrite}, {"cache_read", p.CacheRead}} {
		if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return sema.Errorf(CodePricesInvalid, "the %s price is %v; give US dollars per million tokens, 0 or more", f.name, f.v)
		}
	}
	return nil
}

// Table maps model names (or family names, see the package comment) to prices.
type Table map[string]Price

// Validate refuses an empty name or an invalid price (CodePricesInvalid), naming it.
func (t Table) Validate() error {
	for _, name := range t.names() {
		if strings.TrimSpace(name) == "" {
			return sema.Errorf(CodePricesInvalid, "a price is given for an empty model name; name the model it prices")
		}
		if err := t[name].Validate(); err != nil {
			return (&sema.Error{Code: CodePricesInvalid, Message: fmt.Sprintf("the price of %s is refused: %s", name, sema.MessageOf(err)), Err: err}).With("model", name)
		}
	}
	return nil
}

// Match returns the price of the model named name: the entry of that exact name, else
// the longest key of which name is a dated snapshot (see the package comment).
func (t Table) Match(name string) (Price, bool) {
	if p, ok := t[name]; ok {
		return p, true
	}
	best, found := "", false
	for key := range t {
		if len(key) > len(best) && isSnapshotOf(name, key) {
			best, found = key, true
		}
	}
	return t[best], found
}

// names returns the table's keys in order, so that a refusal names the same entry on
// every run.
func (t Table) names() []string {
	out := make([]string, 0, len(t))
	for k := range t {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// isSnapshotOf reports whether name is family followed by a snapshot suffix: -YYYYMMDD,
// @YYYYMMDD, -YYYY-MM-DD or -latest. A looser prefix rule would price a newer model of
// another tier ("claude-opus-4-5" under "claude-opus-4") at the wrong price.
func isSnapshotOf(name, family string) bool {
	rest, ok := strings.CutPrefix(name, family)
	if !ok || family == "" {
		return false
	}
	if rest == "-latest" {
		return true
	}
	if len(rest) == 9 && (rest[0] == '-' || rest[0] == '@') && digits(rest[1:]) {
		return true
	}
	return len(rest) == 11 && rest[0] == '-' && rest[5] == '-' && rest[8] == '-' &&
		digits(rest[1:5]) && digits(rest[6:8]) && digits(rest[9:])
}

func digits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// Lookup returns the price of the model named name: a match in overrides (exact, then
// family) wins over a match in the built-in table, so that a deployment's entry for a
// family also prices that family's dated snapshots.
func Lookup(name string, overrides Table) (Price, bool) {
	if p, ok := overrides.Match(name); ok {
		return p, true
	}
	return builtin.Match(name)
}

// Builtin returns a copy of the built-in table.
func Builtin() Table {
	out := make(Table, len(builtin))
	for k, v := range builtin {
		out[k] = v
	}
	return out
}

// builtin holds the public list prices of the Anthropic and OpenAI models, in US dollars
// per million tokens, as the providers published them in November 2025
// (anthropic.com/pricing, openai.com/api/pricing): standard (not batch) requests, and
// for Anthropic the five-minute cache write. Anthropic's higher price for prompts over
// 200,000 tokens (the 1M-token context beta) is not modelled: sema asks for the standard
// window. OpenAI charges nothing extra to write its cache, so its CacheWrite is the input
// price (it reports no cache writes anyway).
var builtin = Table{
	// Anthropic.
	"claude-opus-4-5":   {Input: 5, Output: 25, CacheWrite: 6.25, CacheRead: 0.50},
	"claude-opus-4-1":   {Input: 15, Output: 75, CacheWrite: 18.75, CacheRead: 1.50},
	"claude-opus-4-0":   {Input: 15, Output: 75, CacheWrite: 18.75, CacheRead: 1.50},
	"claude-opus-4":     {Input: 15, Output: 75, CacheWrite: 18.75, CacheRead: 1.50},
	"claude-sonnet-4-5": {Input: 3, Output: 15, CacheWrite: 3.75, CacheRead: 0.30},
	"claude-sonnet-4-0": {Input: 3, Output: 15, CacheWrite: 3.75, CacheRead: 0.30},
	"claude-sonnet-4":   {Input: 3, Output: 15, CacheWrite: 3.75, CacheRead: 0.30},
	"claude-3-7-sonnet": {Input: 3, Output: 15, CacheWrite: 3.75, CacheRead: 0.30},
	"claude-haiku-4-5":  {Input: 1, Output: 5, CacheWrite: 1.25, CacheRead: 0.10},
	"claude-3-5-haiku":  {Input: 0.80, Output: 4, CacheWrite: 1, CacheRead: 0.08},
	"claude-3-haiku":    {Input: 0.25, Output: 1.25, CacheWrite: 0.30, CacheRead: 0.03},
	// OpenAI.
	"gpt-5":        {Input: 1.25, Output: 10, CacheWrite: 1.25, CacheRead: 0.125},
	"gpt-5-mini":   {Input: 0.25, Output: 2, CacheWrite: 0.25, CacheRead: 0.025},
	"gpt-5-nano":   {Input: 0.05, Output: 0.40, CacheWrite: 0.05, CacheRead: 0.005},
	"gpt-4.1":      {Input: 2, Output: 8, CacheWrite: 2, CacheRead: 0.50},
	"gpt-4.1-mini": {Input: 0.40, Output: 1.60, CacheWrite: 0.40, CacheRead: 0.10},
	"gpt-4.1-nano": {Input: 0.10, Output: 0.40, CacheWrite: 0.10, CacheRead: 0.025},
	"gpt-4o":       {Input: 2.50, Output: 10, CacheWrite: 2.50, CacheRead: 1.25},
	"gpt-4o-mini":  {Input: 0.15, Output: 0.60, CacheWrite: 0.15, CacheRead: 0.075},
	"o3":           {Input: 2, Output: 8, CacheWrite: 2, CacheRead: 0.50},
	"o3-mini":      {Input: 1.10, Output: 4.40, CacheWrite: 1.10, CacheRead: 0.55},
	"o4-mini":      {Input: 1.10, Output: 4.40, CacheWrite: 1.10, CacheRead: 0.275},
	"o1":           {Input: 15, Output: 60, CacheWrite: 15, CacheRead: 7.50},
}

// ParseTable reads a price table from JSON, an object of model names to prices with all
// four members:
//
//	{"claude-sonnet-4-5": {"input": 3, "output": 15, "cache_write": 3.75, "cache_read": 0.3},
//	 "llama3.1": {"input": 0, "output": 0, "cache_write": 0, "cache_read": 0}}
//
// name labels the document in errors. An unknown key, a missing price (a price left out
// is not free) and an invalid one are refused with CodePricesInvalid.
func ParseTable(data []byte, name string) (Table, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil || raw == nil {
		return nil, sema.Errorf(CodePricesInvalid, "the price table %s is not a JSON object of model names to prices", name).With("path", name)
	}
	models := make([]string, 0, len(raw))
	for m := range raw {
		models = append(models, m)
	}
	sort.Strings(models) // the same entry is refused first on every run
	out := Table{}
	for _, model := range models {
		var p struct {
			Input      *float64 `json:"input"`
			Output     *float64 `json:"output"`
			CacheWrite *float64 `json:"cache_write"`
			CacheRead  *float64 `json:"cache_read"`
		}
		dec := json.NewDecoder(bytes.NewReader(raw[model]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return nil, sema.Errorf(CodePricesInvalid, "the price of %s in %s cannot be read: %v; give {\"input\", \"output\", \"cache_write\", \"cache_read\"} in US dollars per million tokens", model, name, err).
				With("path", name).With("model", model)
		}
		if p.Input == nil || p.Output == nil || p.CacheWrite == nil || p.CacheRead == nil {
			return nil, sema.Errorf(CodePricesInvalid, "the price of %s in %s leaves out a member; give all of input, output, cache_write and cache_read (0 for a kind of token that costs nothing)", model, name).
				With("path", name).With("model", model)
		}
		out[model] = Price{Input: *p.Input, Output: *p.Output, CacheWrite: *p.CacheWrite, CacheRead: *p.CacheRead}
	}
	if err := out.Validate(); err != nil {
		return nil, (&sema.Error{Code: CodePricesInvalid, Message: "in " + name + ": " + sema.MessageOf(err), Err: err}).With("path", name)
	}
	return out, nil
}

// FileName is the price table sema reads from its state directory: model prices that
// replace or add to the built-in ones (ParseTable's JSON shape). It is a file of its own,
// not a settings key: the settings files configure permissions and the sandbox, and a
// price is a fact of the deployment's contract with its provider, not of a project.
const FileName = "prices.json"

// LoadDir reads dir/FileName. A missing file (or an empty dir) is no table and no error;
// one that cannot be read or parsed is refused with CodePricesInvalid.
func LoadDir(dir string) (Table, error) {
	if dir == "" {
		return nil, nil
	}
	path := filepath.Join(dir, FileName)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		if hf := sema.HostFault(err, "read the price table "+path); hf != nil {
			return nil, hf.With("path", path)
		}
		return nil, sema.Errorf(CodePricesInvalid, "the price table %s cannot be read: %v", path, err).With("path", path)
	}
	return ParseTable(data, path)
}
