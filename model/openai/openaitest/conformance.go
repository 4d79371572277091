package openaitest

import (
	"net/http"

	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/providertest"
)

// finishReasons are the Chat Completions words for the engine's stop reasons.
var finishReasons = map[model.StopReason]string{
	model.StopEndTurn:   "stop",
	model.StopToolUse:   "tool_calls",
	model.StopMaxTokens: "length",
}

// ConformanceTurn is the script of a turn of the provider conformance suite
// (model/providertest) in this API's words: stop reasons become finish reasons, cached
// and cache-written tokens are counted inside the prompt tokens, an overload is 503, a
// truncated stream ends without finish_reason or [DONE], a stall is FaultStall.
func ConformanceTurn(turn providertest.Turn) Turn {
	u := turn.Usage
	w := Turn{
		Text:         turn.Text,
		FinishReason: finishReasons[turn.StopReason],
		Usage: Usage{
			PromptTokens:     u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens,
			CompletionTokens: u.OutputTokens,
			CachedTokens:     u.CacheReadTokens,
			CacheWriteTokens: u.CacheWriteTokens,
		},
	}
	for _, c := range turn.ToolCalls {
		w.ToolCalls = append(w.ToolCalls, ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Input})
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
		w.Fault = FaultTruncated
	case providertest.FailStall:
		w.Fault = FaultStall
	}
	return w
}
