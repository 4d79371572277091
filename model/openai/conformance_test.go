package openai_test

import (
	"net/http"
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
				srv.Enqueue(wireTurn(turn))
			}
			return newProvider(t, srv.URL(), func(c *openai.Config) { c.MaxRetries = 1 })
		},
	})
}

// finishReasons are the Chat Completions words for the engine's stop reasons.
var finishReasons = map[model.StopReason]string{
	model.StopEndTurn:   "stop",
	model.StopToolUse:   "tool_calls",
	model.StopMaxTokens: "length",
}

// wireTurn is the fake API's script of a conformance turn. OpenAI counts cached and
// cache-written tokens inside the prompt tokens.
func wireTurn(turn providertest.Turn) openaitest.Turn {
	u := turn.Usage
	w := openaitest.Turn{
		Text:         turn.Text,
		FinishReason: finishReasons[turn.StopReason],
		Usage: openaitest.Usage{
			PromptTokens:     u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens,
			CompletionTokens: u.OutputTokens,
			CachedTokens:     u.CacheReadTokens,
			CacheWriteTokens: u.CacheWriteTokens,
		},
	}
	for _, c := range turn.ToolCalls {
		w.ToolCalls = append(w.ToolCalls, openaitest.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Input})
	}
	switch turn.Failure {
	case providertest.FailRateLimited:
		w.Status = http.StatusTooManyRequests
	case providertest.FailOverloaded:
		w.Status = http.StatusServiceUnavailable
	case providertest.FailBadRequest:
		w.Status = http.StatusBadRequest
	case providertest.FailAuth:
		w.Status = http.StatusUnauthorized
	case providertest.FailTruncated:
		w.Fault = openaitest.FaultTruncated
	case providertest.FailStall:
		w.Fault = openaitest.FaultStall
	}
	return w
}
