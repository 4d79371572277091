package anthropic

import (
	"net/http"
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
				srv.Enqueue(wireTurn(turn))
			}
			return newProvider(t, srv.URL(), Config{MaxRetries: 1})
		},
	})
}

// wireTurn is the fake API's script of a conformance turn.
func wireTurn(turn providertest.Turn) anthropictest.Turn {
	w := anthropictest.Turn{
		Text:       turn.Text,
		StopReason: string(turn.StopReason),
		Usage: anthropictest.Usage{
			InputTokens:              turn.Usage.InputTokens,
			OutputTokens:             turn.Usage.OutputTokens,
			CacheReadInputTokens:     turn.Usage.CacheReadTokens,
			CacheCreationInputTokens: turn.Usage.CacheWriteTokens,
		},
	}
	for _, c := range turn.ToolCalls {
		w.ToolCalls = append(w.ToolCalls, anthropictest.ToolCall{ID: c.ID, Name: c.Name, Input: c.Input})
	}
	switch turn.Failure {
	case providertest.FailRateLimited:
		w.Status = http.StatusTooManyRequests
	case providertest.FailOverloaded:
		w.Status = 529
	case providertest.FailBadRequest:
		w.Status = http.StatusBadRequest
	case providertest.FailAuth:
		w.Status = http.StatusUnauthorized
	case providertest.FailTruncated:
		w.Fault = anthropictest.FaultTruncated
	case providertest.FailStall:
		w.Fault = anthropictest.FaultStall
	}
	return w
}
