package main

import (
	"os"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/anthropic"
	"github.com/sema-agent/sema/model/openai"
)

// openRealProvider builds a provider that calls a model API.
func openRealProvider(prov, name, baseURL string) (model.Provider, string, error) {
	switch prov {
	case "anthropic":
		if baseURL != "" {
			return nil, "", sema.Errorf("config.base_url_invalid", "--base-url applies to OpenAI-compatible servers; for Anthropic set ANTHROPIC_BASE_URL")
		}
		p, err := anthropic.FromEnv()
		return p, orDefault(name, defaultAnthropicModel), err
	case "openai":
		p, err := openai.FromEnv(baseURL)
		return p, orDefault(name, defaultOpenAIModel), err
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

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
