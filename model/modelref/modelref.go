// Package modelref opens the provider a PROVIDER/MODEL reference names ("anthropic/
// claude-sonnet-4-5", "openai/gpt-4.1", "openai-compatible/llama3.1", "scripted/PATH"),
// the way the command line and the service both read --model: the provider's own
// environment variables for keys and addresses, and a refusal by name — never a silent
// fallback — for a reference that cannot be opened.
package modelref

import (
	"os"
	"slices"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/anthropic"
	"github.com/sema-agent/sema/model/openai"
	"github.com/sema-agent/sema/model/scripted"
)

// Default model names when a reference names only a provider.
const (
	// DefaultAnthropic is the Anthropic model of "anthropic" or of no reference with
	// ANTHROPIC_API_KEY set.
	DefaultAnthropic = "claude-sonnet-4-5"
	// DefaultOpenAI is the OpenAI model of "openai" or of no reference with only
	// OPENAI_API_KEY set.
	DefaultOpenAI = "gpt-4.1"
)

// Open builds the provider ref names and returns it with the model name to send. With
// no reference it picks the provider whose API key is set; with neither it refuses
// (config.model_missing), pointing at the demo. baseURL is the address of an
// OpenAI-compatible server (empty: OPENAI_BASE_URL).
func Open(ref, baseURL string) (model.Provider, string, error) {
	if ref == "" {
		switch {
		case os.Getenv("ANTHROPIC_API_KEY") != "":
			ref = "anthropic/" + DefaultAnthropic
		case os.Getenv("OPENAI_API_KEY") != "":
			ref = "openai/" + DefaultOpenAI
		default:
			return nil, "", sema.Errorf("config.model_missing",
				"no model is configured: pass --model anthropic/%s with ANTHROPIC_API_KEY set, --model openai/%s with OPENAI_API_KEY set, or --model openai-compatible/MODEL --base-url URL; or try `sema demo`",
				DefaultAnthropic, DefaultOpenAI)
		}
	}
	ref, err := Resolve(ref)
	if err != nil {
		return nil, "", err
	}
	prov, name := Split(ref)
	switch prov {
	case "scripted":
		// scripted/PATH replays a JSON script (see package model/scripted).
		if name == "" {
			return nil, "", sema.Errorf("config.model_invalid", "the scripted provider needs a script: --model scripted/PATH")
		}
		p, err := scripted.Load(name)
		return p, "scripted", err
	case "anthropic":
		if baseURL != "" {
			return nil, "", sema.Errorf("config.base_url_invalid", "--base-url applies to OpenAI-compatible servers; for Anthropic set ANTHROPIC_BASE_URL")
		}
		p, err := anthropic.FromEnv()
		return p, or(name, DefaultAnthropic), err
	case "openai":
		p, err := openai.FromEnv(baseURL)
		return p, or(name, DefaultOpenAI), err
	case "openai-compatible":
		// A compatible server has no default address and no default model: both must be
		// named, so that a typo never sends a prompt to a server the user did not mean.
		if baseURL == "" && os.Getenv("OPENAI_BASE_URL") == "" {
			return nil, "", sema.Errorf("config.base_url_missing", "openai-compatible needs the server's address: pass --base-url URL (for Ollama: http://localhost:11434/v1) or set OPENAI_BASE_URL")
		}
		if name == "" {
			return nil, "", sema.Errorf("config.model_invalid", "openai-compatible needs a model name: --model openai-compatible/MODEL")
		}
		p, err := openai.FromEnv(baseURL)
		return p, name, err
	}
	return nil, "", sema.Errorf("config.model_invalid", "unknown model provider %q; use anthropic, openai, openai-compatible or scripted", prov)
}

// CodeModelUnknown refuses a model name without a provider that is neither an alias nor
// a model id sema can place (claude-…, gpt-…, o1…o9), and an alias given to a provider
// that has no such family. The message lists the models sema knows.
const CodeModelUnknown = "config.model_unknown"

// providers are the provider names a reference may start with.
var providers = []string{"anthropic", "openai", "openai-compatible", "scripted"}

// Resolve spells ref as PROVIDER/MODEL the way Claude Code's users write a model too:
//
//   - an alias (sonnet, opus, haiku), alone or after anthropic/, is the newest model of
//     that family the provider knows (model.Newest): "opus" is "anthropic/claude-opus-4-5";
//   - a model id without a provider is its provider's: "claude-opus-4-1" is
//     "anthropic/claude-opus-4-1", "gpt-4.1" is "openai/gpt-4.1";
//   - a provider alone, and anything after openai-compatible/ or scripted/, is unchanged
//     (a compatible server's names are its own).
//
// A bare name it cannot place, and an alias after openai/, are refused with
// CodeModelUnknown, naming the models it knows. An empty ref stays empty.
func Resolve(ref string) (string, error) {
	if ref == "" || slices.Contains(providers, ref) {
		return ref, nil
	}
	prov, name, slashed := strings.Cut(ref, "/")
	if !slashed {
		name = ref
		if prov = model.ProviderOf(ref); prov == "" && slices.Contains(model.Aliases, ref) {
			prov = "anthropic"
		}
		if prov == "" {
			return "", unknownModel(ref, "")
		}
	}
	switch prov {
	case "anthropic", "openai":
		if slices.Contains(model.Aliases, name) {
			id, ok := model.ResolveAlias(prov, name)
			if !ok {
				return "", unknownModel(name, prov)
			}
			name = id
		}
	}
	return prov + "/" + name, nil
}

// ResolveName is the model id name means for the provider named provider: an alias
// resolved (model.ResolveAlias), any other name unchanged. It is how a model named
// where the provider is already chosen (an agent file's model:) is read.
func ResolveName(provider, name string) string {
	id, _ := model.ResolveAlias(provider, name)
	return id
}

// unknownModel refuses name, which provider ("" when none was named) cannot place.
func unknownModel(name, provider string) error {
	var known []string
	for _, k := range model.Catalog() {
		if provider == "" || k.Provider == provider {
			known = append(known, k.ID)
		}
	}
	if provider != "" {
		// An alias given to a provider without that family (Resolve's only such case):
		// offering the aliases again would offer what was just refused.
		return sema.Errorf(CodeModelUnknown, "%s has no model %q: %s are families of Anthropic's models; use anthropic/%s (or %s alone), or a model of %s (%s)",
			provider, name, strings.Join(model.Aliases, ", "), name, name, provider, strings.Join(known, ", ")).With("model", name).With("known", known)
	}
	return sema.Errorf(CodeModelUnknown, "unknown model %q; name an alias (%s), a model sema knows (%s), or PROVIDER/MODEL (anthropic/…, openai/…, openai-compatible/MODEL with --base-url)",
		name, strings.Join(model.Aliases, ", "), strings.Join(known, ", ")).With("model", name).With("known", known)
}

// Split splits PROVIDER/MODEL at the first slash.
func Split(ref string) (provider, name string) {
	p, n, _ := strings.Cut(ref, "/")
	return p, n
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
