package main

import (
	"os"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
)

// Default model names when --model names only a provider.
const (
	defaultAnthropicModel = "claude-sonnet-4-5"
	defaultOpenAIModel    = "gpt-4.1"
)

// openProvider builds the provider a PROVIDER/MODEL reference names. With no reference it
// picks the provider whose API key is set; with neither it refuses, pointing at the
// demo — it never falls back to the demo silently.
func openProvider(ref, baseURL string) (model.Provider, string, error) {
	if ref == "" {
		switch {
		case os.Getenv("ANTHROPIC_API_KEY") != "":
			ref = "anthropic/" + defaultAnthropicModel
		case os.Getenv("OPENAI_API_KEY") != "":
			ref = "openai/" + defaultOpenAIModel
		default:
			return nil, "", sema.Errorf("config.model_missing",
				"no model is configured: pass --model anthropic/%s with ANTHROPIC_API_KEY set, --model openai/%s with OPENAI_API_KEY set, or --model openai-compatible/MODEL --base-url URL; or try `sema demo`",
				defaultAnthropicModel, defaultOpenAIModel)
		}
	}
	prov, name := splitRef(ref)
	switch prov {
	case "scripted":
		// scripted/PATH replays a JSON script (see package model/scripted).
		if name == "" {
			return nil, "", sema.Errorf("config.model_invalid", "the scripted provider needs a script: --model scripted/PATH")
		}
		p, err := scripted.Load(name)
		return p, "scripted", err
	default:
		return openRealProvider(prov, name, baseURL)
	}
}
