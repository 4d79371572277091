package anthropic

import (
	"testing"

	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/anthropic/anthropictest"
	"github.com/sema-agent/sema/model/providertest"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Harness{
		Retries: 1,
		New: func(t *testing.T, turns ...providertest.Turn) model.Provider {
			srv := anthropictest.NewServer(t)
			for _, turn := range turns {
				srv.Enqueue(anthropictest.ConformanceTurn(turn))
			}
			return newProvider(t, srv.URL(), Config{MaxRetries: 1})
		},
	})
}
