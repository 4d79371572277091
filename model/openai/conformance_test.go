package openai_test

import (
	"testing"

	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/openai"
	"github.com/sema-agent/sema/model/openai/openaitest"
	"github.com/sema-agent/sema/model/providertest"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Harness{
		Retries: 1,
		New: func(t *testing.T, turns ...providertest.Turn) model.Provider {
			srv := openaitest.NewServer(t)
			for _, turn := range turns {
				srv.Enqueue(openaitest.ConformanceTurn(turn))
			}
			return newProvider(t, srv.URL(), func(c *openai.Config) { c.MaxRetries = 1 })
		},
	})
}
