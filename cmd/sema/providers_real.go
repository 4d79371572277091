package main

import (
	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
)

func openRealProvider(prov, name, baseURL string) (model.Provider, string, error) {
	return nil, "", sema.Errorf("config.model_invalid", "unknown model provider %q; use anthropic, openai, openai-compatible or scripted", prov)
}
