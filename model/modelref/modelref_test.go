package modelref

import (
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/pricing"
)

// Claude Code's aliases are the newest model of their family, bare ids find their
// provider, and what names a provider is left as written.
func TestResolve(t *testing.T) {
	for in, want := range map[string]string{
		"sonnet":                        "anthropic/claude-sonnet-4-5",
		"opus":                          "anthropic/claude-opus-4-5",
		"haiku":                         "anthropic/claude-haiku-4-5",
		"anthropic/opus":                "anthropic/claude-opus-4-5",
		"claude-opus-4-1":               "anthropic/claude-opus-4-1",
		"claude-sonnet-4-5-20250929":    "anthropic/claude-sonnet-4-5-20250929",
		"claude-someday-9":              "anthropic/claude-someday-9",
		"gpt-4.1":                       "openai/gpt-4.1",
		"o3-mini":                       "openai/o3-mini",
		"openai/gpt-4.1":                "openai/gpt-4.1",
		"anthropic":                     "anthropic",
		"openai-compatible/sonnet":      "openai-compatible/sonnet",
		"openai-compatible/llama3.1":    "openai-compatible/llama3.1",
		"anthropic/claude-new-model-99": "anthropic/claude-new-model-99",
		"":                              "",
	} {
		got, err := Resolve(in)
		if err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// A name that cannot be placed is refused with the models sema knows.
func TestResolveUnknown(t *testing.T) {
	for _, in := range []string{"sonet", "llama3.1", "openai/opus"} {
		_, err := Resolve(in)
		if !sema.IsCode(err, CodeModelUnknown) {
			t.Fatalf("Resolve(%q): %v, want %s", in, err, CodeModelUnknown)
		}
		msg := sema.MessageOf(err)
		if !strings.Contains(msg, "sonnet, opus, haiku") || !strings.Contains(msg, "gpt-4.1") {
			t.Errorf("Resolve(%q) says %q; want the aliases and the known models", in, msg)
		}
	}
	if _, err := Resolve("openai/opus"); !strings.Contains(sema.MessageOf(err), "openai has no model \"opus\"") || strings.Contains(sema.MessageOf(err), "claude-") ||
		!strings.Contains(sema.MessageOf(err), "use anthropic/opus") || strings.Contains(sema.MessageOf(err), "name an alias") {
		t.Errorf("openai/opus: %v; want openai's models only, and the alias sent to Anthropic instead", err)
	}
}

// Every model sema knows has a price, so a budget given with an alias or a bare id can
// be kept; and an alias is the newest of its family by release date.
func TestAliasesArePriced(t *testing.T) {
	released := map[string]string{}
	for _, k := range model.Catalog() {
		released[k.ID] = k.Released
		if _, priced := pricing.Lookup(k.ID, nil); !priced {
			t.Errorf("%s has no price", k.ID)
		}
	}
	for _, a := range model.Aliases {
		id, ok := model.ResolveAlias("anthropic", a)
		if !ok {
			t.Fatalf("alias %s resolves to nothing", a)
		}
		for _, k := range model.Catalog() {
			if k.Family == a && k.Released > released[id] {
				t.Errorf("%s resolves to %s, but %s is newer", a, id, k.ID)
			}
		}
	}
	if id, _ := model.ResolveAlias("anthropic", "opus"); id != "claude-opus-4-5" {
		t.Errorf("opus is %s, want claude-opus-4-5", id)
	}
}
