package anthropictest

import (
	"net/http"

	"github.com/sema-agent/sema/model/providertest"
)

// ConformanceTurn is the script of a turn of the provider conformance suite
// (model/providertest) in this API's words: an overload is 529, a truncated stream
// lacks its message_stop, a stall is FaultStall.
func ConformanceTurn(turn providertest.Turn) Turn {
	w := Turn{
		Text:       turn.Text,
		StopReason: string(turn.StopReason),
		Usage: Usage{
			InputTokens:              turn.Usage.InputTokens,
			OutputTokens:             turn.Usage.OutputTokens,
			CacheReadInputTokens:     turn.Usage.CacheReadTokens,
			CacheCreationInputTokens: turn.Usage.CacheWriteTokens,
		},
	}
	for _, c := range turn.ToolCalls {
		w.ToolCalls = append(w.ToolCalls, ToolCall{ID: c.ID, Name: c.Name, Input: c.Input})
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
		w.Fault = FaultTruncated
	case providertest.FailStall:
		w.Fault = FaultStall
	}
	return w
}
