// Package anthropictest is a fake Anthropic Messages API for tests: an httptest server
// that speaks the real wire format, so the provider in package anthropic, and the sema
// binary in end-to-end tests (through ANTHROPIC_BASE_URL), can be driven without a
// network or a key.
//
// Invariants:
//   - Each request that passes validation consumes the next scripted [Turn], in order.
//     A request that arrives when no turn is left fails the test and is answered
//     with 400 invalid_request_error.
//   - A request that the real API would refuse (no model, max_tokens below 1, a tool_use
//     left without its tool_result in the next message, tool_result blocks after other
//     content, an empty text block, an unsigned thinking block, more than four cache
//     breakpoints, …) is answered with 400 invalid_request_error and consumes no turn,
//     so a bug in the caller surfaces as the error the real API would give. The fake is
//     stricter than the API in one respect: roles must alternate, where the API would
//     merge two consecutive messages of one role.
//   - Every request is recorded, valid or not, with its headers and decoded JSON body.
//   - A streamed answer uses exactly the event names and JSON shapes of the API:
//     message_start (with usage), content_block_start, content_block_delta (text_delta,
//     thinking_delta, signature_delta, input_json_delta), content_block_stop,
//     message_delta (stop reason and usage), message_stop, and ping events. Text and tool
//     input are split over several deltas, tool input mid-token.
package anthropictest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sema-agent/sema/model/internal/fakeserver"
)

// Turn scripts the server's answer to one request: a response (Text, Thinking,
// ToolCalls, StopReason, Usage), an HTTP failure (Status), or a broken stream (Fault).
type Turn struct {
	// Thinking, when not empty, is streamed first as a thinking block signed with
	// Signature ("sig-<n>" when empty).
	Thinking string
	// Signature signs the thinking block; see Thinking for its default.
	Signature string
	// Text, when not empty, is streamed as one text block.
	Text string
	// ToolCalls are streamed after the text as tool_use blocks, in order.
	ToolCalls []ToolCall
	// StopReason is sent in message_delta. Empty means "tool_use" when there are
	// tool calls and "end_turn" otherwise.
	StopReason string
	// Usage is reported as the API does: input and cache counts in message_start, the
	// output count (and the input and cache counts again) in message_delta.
	Usage Usage
	// Model is the model named in message_start; empty means the requested model.
	Model string

	// Status, when not zero, answers the request with this HTTP status and an Anthropic
	// error body instead of a response (429 rate_limit_error, 529 overloaded_error, …).
	Status int
	// ErrorType is the error.type of a failure: of the body when Status is set, of the
	// error event when Fault is FaultErrorEvent. Empty means the type the API uses for
	// Status (overloaded_error for an error event).
	ErrorType string
	// ErrorMessage is the error.message of a failure; empty means a generic one.
	ErrorMessage string
	// Header holds extra response headers, such as "retry-after". A failure with
	// status 429 or 529 gets "retry-after: 0" unless Header sets it, so that tests of
	// retries do not wait.
	Header http.Header

	// Fault breaks the stream of an otherwise scripted response.
	Fault Fault
}

// ToolCall scripts one tool_use block.
type ToolCall struct {
	// ID is the tool_use id; empty means "toolu_<n>".
	ID string
	// Name is the tool the block calls.
	Name string
	// Input is the tool input as JSON text; empty means no input at all (the API then
	// sends no input_json_delta with content, and the client must read it as {}).
	Input string
}

// Usage is the token usage a turn reports.
type Usage struct {
	// InputTokens is usage.input_tokens: the uncached input.
	InputTokens int64
	// OutputTokens is usage.output_tokens.
	OutputTokens int64
	// CacheReadInputTokens is usage.cache_read_input_tokens.
	CacheReadInputTokens int64
	// CacheCreationInputTokens is usage.cache_creation_input_tokens.
	CacheCreationInputTokens int64
}

// Fault is a way a stream breaks.
type Fault int

const (
	// FaultNone streams the whole response.
	FaultNone Fault = iota
	// FaultMalformed sends message_start, then an event whose data is not JSON, then
	// ends the response.
	FaultMalformed
	// FaultTruncated sends every event but the final message_stop, then ends the
	// response cleanly, as a proxy that cut the stream would.
	FaultTruncated
	// FaultStall sends message_start and a ping, then sends nothing more until the
	// client goes away or the server closes.
	FaultStall
	// FaultErrorEvent sends message_start and a ping, then an "event: error" with
	// ErrorType (default overloaded_error), as the API does when it fails after the
	// response has started.
	FaultErrorEvent
)

// Request is one request the server received: method, path, headers, the decoded
// JSON body (nil when the body was not a JSON object) and the raw body, with Decode for
// a typed view.
type Request = fakeserver.Request

// Server is the fake API. Its methods are safe for concurrent use.
type Server struct {
	t       testing.TB
	srv     *httptest.Server
	closing chan struct{}

	script   fakeserver.Script[Turn]
	recorder fakeserver.Recorder
}

// NewServer starts a fake API that answers requests with turns, in order. The server
// closes when the test ends; a request still stalled by FaultStall is released then.
func NewServer(t testing.TB, turns ...Turn) *Server {
	t.Helper()
	s := &Server{t: t, closing: make(chan struct{})}
	s.script.Enqueue(turns...)
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	t.Cleanup(func() {
		close(s.closing)
		s.srv.Close()
	})
	return s
}

// URL is the server's base URL, for Config.BaseURL or ANTHROPIC_BASE_URL.
func (s *Server) URL() string { return s.srv.URL }

// Enqueue appends turns to the script.
func (s *Server) Enqueue(turns ...Turn) { s.script.Enqueue(turns...) }

// Requests returns a copy of every request received so far, in arrival order.
func (s *Server) Requests() []Request { return s.recorder.Requests() }

// RequestCount is the number of requests received so far.
func (s *Server) RequestCount() int { return s.recorder.RequestCount() }

// Remaining is the number of scripted turns not consumed yet.
func (s *Server) Remaining() int { return s.script.Remaining() }

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	rec, n, err := s.recorder.Record(r)
	if err != nil {
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		writeError(w, http.StatusNotFound, "not_found_error", fmt.Sprintf("Not found: %s %s", r.Method, r.URL.Path), nil)
		return
	}
	if status, typ, msg := checkHeaders(r.Header); status != 0 {
		writeError(w, status, typ, msg, nil)
		return
	}
	if rec.Body == nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "The request body is not a valid JSON object.", nil)
		return
	}
	if msg := validate(rec.Body); msg != "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", msg, nil)
		return
	}

	turn, id, err := s.script.Next(n)
	if err != nil {
		s.t.Errorf("anthropictest: %v", err)
		writeError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("anthropictest: no scripted turn is left for request %d", n), nil)
		return
	}

	if turn.Status != 0 {
		typ := turn.ErrorType
		if typ == "" {
			typ = errorTypeFor(turn.Status)
		}
		msg := turn.ErrorMessage
		if msg == "" {
			msg = defaultMessage(typ)
		}
		h := turn.Header.Clone()
		if h == nil {
			h = http.Header{}
		}
		if (turn.Status == http.StatusTooManyRequests || turn.Status == 529) && h.Get("retry-after") == "" && h.Get("retry-after-ms") == "" {
			h.Set("retry-after", "0")
		}
		writeError(w, turn.Status, typ, msg, h)
		return
	}

	model, _ := rec.Body["model"].(string)
	if turn.Model != "" {
		model = turn.Model
	}
	for k, vs := range turn.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("request-id", fmt.Sprintf("req_%03d", id))
	if stream, _ := rec.Body["stream"].(bool); stream {
		s.stream(w, r, turn, model, id)
		return
	}
	s.whole(w, r, turn, model, id)
}

// checkHeaders refuses a request without credentials or API version, as the API does.
func checkHeaders(h http.Header) (status int, typ, msg string) {
	if h.Get("x-api-key") == "" && !strings.HasPrefix(h.Get("authorization"), "Bearer ") {
		return http.StatusUnauthorized, "authentication_error", "x-api-key header is required"
	}
	if h.Get("anthropic-version") == "" {
		return http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required"
	}
	return 0, "", ""
}

// errorTypeFor is the error.type the API sends with status.
func errorTypeFor(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	default:
		return "api_error"
	}
}

func defaultMessage(typ string) string {
	switch typ {
	case "authentication_error":
		return "invalid x-api-key"
	case "permission_error":
		return "Your API key does not have permission to use the specified resource."
	case "not_found_error":
		return "model: not found"
	case "rate_limit_error":
		return "Number of request tokens has exceeded your per-minute rate limit."
	case "overloaded_error":
		return "Overloaded"
	case "invalid_request_error":
		return "Invalid request."
	default:
		return "Internal server error"
	}
}

// errorBody is the JSON the API sends with an error status and in an error event.
func errorBody(typ, msg, requestID string) []byte {
	body := map[string]any{
		"type":  "error",
		"error": map[string]any{"type": typ, "message": msg},
	}
	if requestID != "" {
		body["request_id"] = requestID
	}
	b, _ := json.Marshal(body)
	return b
}

func writeError(w http.ResponseWriter, status int, typ, msg string, h http.Header) {
	for k, vs := range h {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("content-type", "application/json")
	w.Header().Set("request-id", "req_error")
	w.WriteHeader(status)
	w.Write(errorBody(typ, msg, "req_error"))
}

// stopReason is the stop reason a turn reports.
func (t Turn) stopReason() string {
	switch {
	case t.StopReason != "":
		return t.StopReason
	case len(t.ToolCalls) > 0:
		return "tool_use"
	default:
		return "end_turn"
	}
}

// sse writes the Messages API's named events, each flushed.
type sse struct{ fakeserver.SSE }

// send writes one event; data is JSON already ([]byte) or marshalled.
func (e sse) send(event string, data any) {
	var b []byte
	if raw, ok := data.([]byte); ok {
		b = raw
	} else {
		b, _ = json.Marshal(data)
	}
	e.Event(event, string(b))
}

type obj = map[string]any

func (s *Server) stream(w http.ResponseWriter, r *http.Request, turn Turn, model string, id int) {
	e := sse{fakeserver.StartSSE(w)}

	u := turn.Usage
	startOutput := min(u.OutputTokens, 1)
	e.send("message_start", obj{"type": "message_start", "message": obj{
		"id": fmt.Sprintf("msg_%03d", id), "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": obj{
			"input_tokens":                u.InputTokens,
			"cache_creation_input_tokens": u.CacheCreationInputTokens,
			"cache_read_input_tokens":     u.CacheReadInputTokens,
			"output_tokens":               startOutput,
		},
	}})
	e.send("ping", obj{"type": "ping"})

	switch turn.Fault {
	case FaultMalformed:
		e.send("content_block_start", []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`))
		e.send("content_block_delta", []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel`))
		return
	case FaultStall:
		select {
		case <-r.Context().Done():
		case <-s.closing:
		}
		return
	case FaultErrorEvent:
		typ := turn.ErrorType
		if typ == "" {
			typ = "overloaded_error"
		}
		msg := turn.ErrorMessage
		if msg == "" {
			msg = defaultMessage(typ)
		}
		e.send("error", errorBody(typ, msg, fmt.Sprintf("req_%03d", id)))
		return
	}

	e.blocks(turn, id)
	e.send("message_delta", obj{"type": "message_delta",
		"delta": obj{"stop_reason": turn.stopReason(), "stop_sequence": nil},
		"usage": obj{
			"input_tokens":                u.InputTokens,
			"cache_creation_input_tokens": u.CacheCreationInputTokens,
			"cache_read_input_tokens":     u.CacheReadInputTokens,
			"output_tokens":               u.OutputTokens,
		},
	})
	if turn.Fault == FaultTruncated {
		return
	}
	e.send("message_stop", obj{"type": "message_stop"})
}

// blocks streams a turn's content blocks as the API does: thinking, then text, then
// each tool call, numbered from 0.
func (e sse) blocks(turn Turn, id int) {
	index := 0
	if turn.Thinking != "" {
		sig := turn.Signature
		if sig == "" {
			sig = fmt.Sprintf("sig-%d", id)
		}
		e.send("content_block_start", obj{"type": "content_block_start", "index": index,
			"content_block": obj{"type": "thinking", "thinking": "", "signature": ""}})
		for _, chunk := range split(turn.Thinking, 6) {
			e.send("content_block_delta", obj{"type": "content_block_delta", "index": index,
				"delta": obj{"type": "thinking_delta", "thinking": chunk}})
		}
		e.send("content_block_delta", obj{"type": "content_block_delta", "index": index,
			"delta": obj{"type": "signature_delta", "signature": sig}})
		e.send("content_block_stop", obj{"type": "content_block_stop", "index": index})
		index++
	}
	if turn.Text != "" {
		e.send("content_block_start", obj{"type": "content_block_start", "index": index,
			"content_block": obj{"type": "text", "text": ""}})
		for i, chunk := range split(turn.Text, 5) {
			if i == 1 {
				e.send("ping", obj{"type": "ping"})
			}
			e.send("content_block_delta", obj{"type": "content_block_delta", "index": index,
				"delta": obj{"type": "text_delta", "text": chunk}})
		}
		e.send("content_block_stop", obj{"type": "content_block_stop", "index": index})
		index++
	}
	for i, call := range turn.ToolCalls {
		callID := call.ID
		if callID == "" {
			callID = fmt.Sprintf("toolu_%03d_%d", id, i+1)
		}
		e.send("content_block_start", obj{"type": "content_block_start", "index": index,
			"content_block": obj{"type": "tool_use", "id": callID, "name": call.Name, "input": obj{}}})
		// The API's first input delta is empty; the input follows in pieces that cut
		// through keys and values.
		chunks := append([]string{""}, split(call.Input, 4)...)
		for _, chunk := range chunks {
			e.send("content_block_delta", obj{"type": "content_block_delta", "index": index,
				"delta": obj{"type": "input_json_delta", "partial_json": chunk}})
		}
		e.send("content_block_stop", obj{"type": "content_block_stop", "index": index})
		index++
	}
}

// whole answers a request without "stream": true with the complete message object.
func (s *Server) whole(w http.ResponseWriter, r *http.Request, turn Turn, model string, id int) {
	if turn.Fault == FaultStall {
		select {
		case <-r.Context().Done():
		case <-s.closing:
		}
		return
	}
	content := []any{}
	if turn.Thinking != "" {
		sig := turn.Signature
		if sig == "" {
			sig = fmt.Sprintf("sig-%d", id)
		}
		content = append(content, obj{"type": "thinking", "thinking": turn.Thinking, "signature": sig})
	}
	if turn.Text != "" {
		content = append(content, obj{"type": "text", "text": turn.Text})
	}
	for i, call := range turn.ToolCalls {
		callID := call.ID
		if callID == "" {
			callID = fmt.Sprintf("toolu_%03d_%d", id, i+1)
		}
		input := json.RawMessage(call.Input)
		if len(bytes.TrimSpace(input)) == 0 {
			input = json.RawMessage(`{}`)
		}
		content = append(content, obj{"type": "tool_use", "id": callID, "name": call.Name, "input": input})
	}
	b, err := json.Marshal(obj{
		"id": fmt.Sprintf("msg_%03d", id), "type": "message", "role": "assistant", "model": model,
		"content": content, "stop_reason": turn.stopReason(), "stop_sequence": nil,
		"usage": obj{
			"input_tokens":                turn.Usage.InputTokens,
			"cache_creation_input_tokens": turn.Usage.CacheCreationInputTokens,
			"cache_read_input_tokens":     turn.Usage.CacheReadInputTokens,
			"output_tokens":               turn.Usage.OutputTokens,
		},
	})
	if err != nil {
		s.t.Errorf("anthropictest: turn %d does not encode: %v", id, err)
		writeError(w, http.StatusInternalServerError, "api_error", "anthropictest: the scripted turn does not encode", nil)
		return
	}
	if turn.Fault != FaultNone {
		// A body cut in half is what a broken non-streaming answer looks like.
		b = b[:len(b)/2]
	}
	w.Header().Set("content-type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

// split cuts s into pieces of at most n runes, so that every piece is valid UTF-8
// while keys, values and words are still cut in the middle.
func split(s string, n int) []string {
	var out []string
	runes := []rune(s)
	for len(runes) > 0 {
		k := min(n, len(runes))
		out = append(out, string(runes[:k]))
		runes = runes[k:]
	}
	return out
}
