// Package modelref opens the provider a PROVIDER/MODEL reference names ("anthropic/
// claude-sonnet-4-5", "openai/gpt-4.1", "openai-compatible/llama3.1", "scripted/PATH"),
// the way the command line and the service both read --model: the provider's own
// environment variables for keys and addresses, and a refusal by name — never a silent
// fallback — for a reference that cannot be opened.
package modelref

import (
	"os"
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
