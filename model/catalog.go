package model

import (
	"slices"
	"strings"
)

// Known is a model sema knows by name: which provider serves it, the family a Claude
// Code alias names ("sonnet", "opus", "haiku"; "" for none), and when it was released,
// which decides the newest of a family.
type Known struct {
	// Provider is the provider that serves the model ("anthropic", "openai").
	Provider string
	// ID is the model id the provider's API takes.
	ID string
	// Family is the alias that names the family's newest model; "" when none does.
	Family string
	// Released is the release date, YYYY-MM-DD.
	Released string
}

// catalog is the models sema knows, as their providers listed them in November 2025.
// A model missing here still runs when named with its provider (anthropic/ID): the
// catalog only resolves aliases and bare ids, and lists what is known in a refusal.
var catalog = []Known{
	{"anthropic", "claude-opus-4-5", "opus", "2025-11-24"},
	{"anthropic", "claude-opus-4-1", "opus", "2025-08-05"},
	{"anthropic", "claude-opus-4-0", "opus", "2025-05-22"},
	{"anthropic", "claude-sonnet-4-5", "sonnet", "2025-09-29"},
	{"anthropic", "claude-sonnet-4-0", "sonnet", "2025-05-22"},
	{"anthropic", "claude-3-7-sonnet", "sonnet", "2025-02-24"},
	{"anthropic", "claude-haiku-4-5", "haiku", "2025-10-15"},
	{"anthropic", "claude-3-5-haiku", "haiku", "2024-10-22"},
	{"openai", "gpt-5", "", "2025-08-07"},
	{"openai", "gpt-5-mini", "", "2025-08-07"},
	{"openai", "gpt-5-nano", "", "2025-08-07"},
	{"openai", "gpt-4.1", "", "2025-04-14"},
	{"openai", "gpt-4.1-mini", "", "2025-04-14"},
	{"openai", "gpt-4.1-nano", "", "2025-04-14"},
	{"openai", "o4-mini", "", "2025-04-16"},
	{"openai", "o3", "", "2025-04-16"},
	{"openai", "o3-mini", "", "2025-01-31"},
	{"openai", "gpt-4o", "", "2024-05-13"},
	{"openai", "gpt-4o-mini", "", "2024-07-18"},
	{"openai", "o1", "", "2024-12-17"},
}

// Catalog returns the models sema knows, newest first.
func Catalog() []Known {
	out := slices.Clone(catalog)
	slices.SortStableFunc(out, func(a, b Known) int { return strings.Compare(b.Released, a.Released) })
	return out
}

// Aliases are the family names Claude Code takes for a model: each means the newest
// model of that family its provider knows.
var Aliases = []string{"sonnet", "opus", "haiku"}

// Newest returns the newest model of family (an alias) that provider serves, and
// whether there is one.
func Newest(provider, family string) (string, bool) {
	best := Known{}
	for _, k := range catalog {
		if k.Provider == provider && k.Family == family && family != "" && k.Released > best.Released {
			best = k
		}
	}
	return best.ID, best.ID != ""
}

// ProviderOf returns the provider of a model id given without one: the catalog's, else
// by the id's form — claude-… is Anthropic's, gpt-… and o1…o9 OpenAI's. "" when the
// id says nothing.
func ProviderOf(id string) string {
	for _, k := range catalog {
		if k.ID == id {
			return k.Provider
		}
	}
	switch {
	case strings.HasPrefix(id, "claude-"):
		return "anthropic"
	case strings.HasPrefix(id, "gpt-"), len(id) >= 2 && id[0] == 'o' && id[1] >= '1' && id[1] <= '9':
		return "openai"
	}
	return ""
}

// ResolveAlias returns the model id an alias means for provider: the newest of the
// alias's family, with ok; any other name is returned unchanged, with ok false.
func ResolveAlias(provider, name string) (id string, ok bool) {
	if !slices.Contains(Aliases, name) {
		return name, false
	}
	if id, ok := Newest(provider, name); ok {
		return id, true
	}
	return name, false
}
