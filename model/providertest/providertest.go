// Package providertest is the conformance suite of model.Provider. A provider is done
// when
//
//	providertest.Run(t, providertest.Harness{New: newProvider, Retries: 1})
//
// passes, where newProvider starts the provider's wire-format fake, scripts it with the
// suite's turns and returns a provider that talks to it.
//
// The suite speaks of what the engine relies on, not of any wire format: text streamed
// as deltas and assembled into the response, tool calls with an ID, a name and a JSON
// object input, the stop reason, the usage, cancellation that ends a call promptly,
// coded errors that say whether a retry could help, and broken streams refused rather
// than passed off as answers. A [Turn] says what the model's server answers one request
// with; a [Harness] translates it into its fake's script.
package providertest

import (
	"testing"

	"github.com/sema-agent/sema/model"
)

// Turn is the server's answer to one request, in terms every wire format can express:
// a response (Text, ToolCalls, StopReason, Usage) or a Failure.
type Turn struct {
	// Text, when not empty, is the response's one text block, streamed in pieces.
	Text string
	// ToolCalls follow the text as tool_use blocks, in order.
	ToolCalls []ToolCall
	// StopReason is the stop reason the server reports, in the model's words; empty
	// means tool_use when there are tool calls and end_turn otherwise. The suite only
	// scripts the words every provider maps (end_turn, tool_use, max_tokens).
	StopReason model.StopReason
	// Usage is what the server reports the response cost; the harness writes it in its
	// wire format's terms (OpenAI counts cached tokens inside the prompt tokens).
	Usage model.Usage
	// Failure, when not FailNone, replaces the response (or breaks its stream).
	Failure Failure
}

// ToolCall is one tool call of a Turn.
type ToolCall struct {
	// ID is the call's ID; empty leaves it to the fake, which makes one up.
	ID string
	// Name is the tool called.
	Name string
	// Input is the call's input as JSON text; empty means the server sends none.
	Input string
}

// Failure is a way the server fails to answer.
type Failure int

const (
	// FailNone answers with the turn's response.
	FailNone Failure = iota
	// FailRateLimited answers HTTP 429: transient, retried, then model.rate_limited.
	FailRateLimited
	// FailOverloaded answers the wire format's overload (529, or 503): transient,
	// retried, then model.overloaded.
	FailOverloaded
	// FailBadRequest answers HTTP 400: final at once, model.bad_request.
	FailBadRequest
	// FailAuth answers HTTP 401: final at once, model.auth.
	FailAuth
	// FailTruncated streams the start of the turn's response, then ends the stream
	// cleanly before its end marker, as a proxy that cut it would: transient, then
	// model.malformed_stream. A harness without a wire calls t.Skip.
	FailTruncated
	// FailStall starts the response, then sends nothing until the client goes away:
	// only cancellation ends the call. A harness without a wire calls t.Skip.
	FailStall
)

// Harness connects the suite to one provider.
type Harness struct {
	// New returns a provider whose calls are answered with turns, in order, each
	// consumed once. It calls t.Skip for a Failure its fake cannot produce. The
	// provider must not wait between retries (set its backoff to zero; the fakes ask
	// for no wait with retry-after: 0).
	New func(t *testing.T, turns ...Turn) model.Provider
	// Retries is how many times the provider New returns sends a request again after
	// a transient failure (FailRateLimited, FailOverloaded, FailTruncated). Zero is a
	// provider that does not retry, such as one replaying a script: its transient
	// failures are final at once.
	Retries int
	// Known names the checks (Run's subtests, such as "CancelledOnDelta") the provider
	// is known to fail, each with the reason; they are skipped with it, so that a gap is
	// written down where it is accepted rather than hidden.
	Known map[string]string
}

// Run runs every conformance test against providers made by h.New; each subtest gets
// its own provider and runs in parallel with the others.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"TextStreams", testTextStreams},
		{"ToolCalls", testToolCalls},
		{"ToolCallIDsMadeUp", testToolCallIDsMadeUp},
		{"EmptyResponse", testEmptyResponse},
		{"MaxTokens", testMaxTokens},
		{"Usage", testUsage},
		{"CancelledBeforeTheCall", testCancelledBeforeTheCall},
		{"CancelledMidStream", testCancelledMidStream},
		{"CancelledOnDelta", testCancelledOnDelta},
		{"FinalErrors", testFinalErrors},
		{"TransientErrorsRetried", testTransientErrorsRetried},
		{"TransientErrorsExhausted", testTransientErrorsExhausted},
		{"TruncatedStream", testTruncatedStream},
		{"Concurrent", testConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if why, ok := h.Known[tc.name]; ok {
				t.Skipf("known to fail: %s", why)
			}
			t.Parallel()
			tc.fn(t, h)
		})
	}
}
