// Package openaitest is a fake OpenAI Chat Completions API for tests: an httptest
// server that speaks the real wire format, so the provider in package openai, and the
// sema binary in end-to-end tests (through OPENAI_BASE_URL), can be driven without a
// network or a key.
//
// Invariants:
//   - Each request that passes validation consumes the next scripted [Turn], in order.
//     A request that arrives when no turn is left fails the test and is answered with
//     400 invalid_request_error.
//   - A request the real API would refuse (no model, no messages, an assistant
//     tool_call not answered by a tool message before the next user or assistant
//     message, a tool message answering no call, a malformed tool or content part, …)
//     is answered with 400 invalid_request_error and consumes no turn, so a bug in the
//     caller surfaces as the error the real API would give.
//   - Every request is recorded, valid or not, with its headers and decoded JSON body.
//   - A streamed answer is a sequence of "data: {chat.completion.chunk}" events shaped
//     as OpenAI sends them: a first chunk with the role, the text split over several
//     chunks, tool calls as deltas with index, id, type and function name followed by
//     the arguments split mid-token, a chunk with finish_reason, a usage chunk with
//     empty choices when stream_options.include_usage is set, then "data: [DONE]".
//   - Only streaming requests are scripted; a request without "stream": true is
//     answered with 400.
package openaitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sema-agent/sema/model/internal/fakeserver"
)

// Turn scripts the server's answer to one request: a response (Reasoning, Text,
// ToolCalls, FinishReason, Usage), an HTTP failure (Status), or a broken stream
// (Fault).
type Turn struct {
	// Reasoning, when not empty, is streamed first as delta.reasoning_content, as vLLM
	// and other compatible servers do for reasoning models.
	Reasoning string
	// Text, when not empty, is streamed as content deltas of a few characters each.
	Text string
	// ToolCalls are streamed after the text, in order, as tool_calls deltas.
	ToolCalls []ToolCall
	// FinishReason is sent in the last choice chunk. Empty means "tool_calls" when there
	// are tool calls and "stop" otherwise.
	FinishReason string
	// Usage is reported in the final usage chunk (sent only when the request set
	// stream_options.include_usage).
	Usage Usage
	// Model is the model named in every chunk; empty means the requested model.
	Model string

	// WholeToolCalls sends all tool calls in one chunk, each with its complete
	// arguments, as Ollama does.
	WholeToolCalls bool
	// OmitToolCallIndex leaves "index" out of every tool call delta, as some
	// compatible servers do.
	OmitToolCallIndex bool
	// OmitToolCallID leaves "id" out of every tool call delta; the client must make
	// ids up.
	OmitToolCallID bool
	// RepeatToolCallID repeats the id, type and function name on every delta of a
	// call instead of only the first.
	RepeatToolCallID bool

	// Status, when not zero, answers the request with this HTTP status and an OpenAI
	// error body {"error":{"message","type","param","code"}} instead of a response.
	Status int
	// ErrorType, ErrorCode and ErrorMessage fill the error body of a failure (Status,
	// or Fault FaultErrorEvent). Empty means what the API sends for the status: 401
	// invalid_api_key, 404 model_not_found, 429 rate_limit_exceeded, 500 server_error,
	// 400 invalid_request_error.
	ErrorType string
	// ErrorCode is the body's "code". Left empty it takes the status's default only
	// when ErrorType is empty too; otherwise the body has no code.
	ErrorCode string
	// ErrorMessage is the body's "message"; empty means a fixed sentence for the
	// status.
	ErrorMessage string
	// Header holds extra response headers. A failure with status 429 or 5xx gets
	// "retry-after: 0" unless Header sets retry-after, so tests of retries do not wait.
	Header http.Header

	// Fault breaks the stream of an otherwise scripted response.
	Fault Fault
}

// ToolCall scripts one tool call.
type ToolCall struct {
	// ID is the tool call id; empty means "call_<request>_<n>".
	ID string
	// Name is the function the call names.
	Name string
	// Arguments is the arguments string as the model writes it (JSON text, or not);
	// it is streamed verbatim, split mid-token.
	Arguments string
}

// Usage is the token usage a turn reports.
type Usage struct {
	// PromptTokens is usage.prompt_tokens, cached tokens included.
	PromptTokens int64
	// CompletionTokens is usage.completion_tokens.
	CompletionTokens int64
	// CachedTokens is prompt_tokens_details.cached_tokens (part of PromptTokens).
	CachedTokens int64
	// CacheWriteTokens is prompt_tokens_details.cache_write_tokens, sent when not zero.
	CacheWriteTokens int64
}

// Fault is a way a stream breaks.
type Fault int

const (
	// FaultNone streams the whole response.
	FaultNone Fault = iota
	// FaultMalformed sends the first chunk and some text, then a data line that is not
	// JSON, then the rest of the response as if nothing happened.
	FaultMalformed
	// FaultTruncated sends the first chunk and some text, then ends the response
	// cleanly: no finish_reason, no [DONE], as a proxy that cut the stream would.
	FaultTruncated
	// FaultNoDone sends the whole response, finish_reason and usage included, but
	// ends without "data: [DONE]".
	FaultNoDone
	// FaultStall sends the first chunk, then nothing more until the client goes away
	// or the server closes.
	FaultStall
	// FaultErrorEvent sends the first chunk, then "data: {"error":{…}}" (ErrorType
	// default server_error), as the API does when it fails mid-response, and ends.
	FaultErrorEvent
	// FaultReset sends the first chunk and some text, then aborts the connection.
	FaultReset
	// FaultNoAnswer reads the request and sends nothing, not even the status line,
	// until the client goes away or the server closes: a server that hangs before it
	// answers.
	FaultNoAnswer
)

// Request is one request the server received. It has the fields of the record every
// fake server keeps, so a conversion between the two costs nothing.
type Request fakeserver.Request

// Decode unmarshals the raw body into v.
func (r Request) Decode(v any) error { return fakeserver.Request(r).Decode(v) }

// Chat decodes the body into the typed view of a Chat Completions request; a body that
// does not decode yields the zero value.
func (r Request) Chat() ChatRequest {
	var c ChatRequest
	_ = json.Unmarshal(r.Raw, &c)
	return c
}

// Server is the fake API. Its methods are safe for concurrent use.
type Server struct {
	t       testing.TB
	srv     *httptest.Server
	closing chan struct{}

	script   fakeserver.Script[Turn]
	recorder fakeserver.Recorder

	mu     sync.Mutex
	apiKey string
}

// NewServer starts a fake API that answers requests with turns, in order. The server
// closes when the test ends; a request still stalled by FaultStall or FaultNoAnswer is
// released then.
func NewServer(t testing.TB, turns ...Turn) *Server {
	t.Helper()
	s := &Server{t: t, closing: make(chan struct{})}
	s.script.Enqueue(turns...)
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	t.Cleanup(s.Close)
	return s
}

// URL is the API root including "/v1", for Config.BaseURL or OPENAI_BASE_URL.
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// RootURL is the server's address without a version path; the server also answers
// POST /chat/completions, as compatible servers mounted at the root do.
func (s *Server) RootURL() string { return s.srv.URL }

// Close releases stalled requests and shuts the server down. It is called when the
// test ends and may be called earlier (a second call does nothing).
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.closing:
		s.mu.Unlock()
		return
	default:
		close(s.closing)
	}
	s.mu.Unlock()
	s.srv.Close()
}

// RequireAPIKey makes the server answer 401 invalid_api_key (consuming no turn) to any
// request that does not carry "Authorization: Bearer key", as the real API does. An
// empty key (the default) accepts every request, as most compatible servers do.
func (s *Server) RequireAPIKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apiKey = key
}

// Enqueue appends turns to the script.
func (s *Server) Enqueue(turns ...Turn) { s.script.Enqueue(turns...) }

// Requests returns a copy of every request received so far, in arrival order.
func (s *Server) Requests() []Request {
	recs := s.recorder.Requests()
	out := make([]Request, len(recs))
	for i, r := range recs {
		out[i] = Request(r)
	}
	return out
}

// RequestCount is the number of requests received so far.
func (s *Server) RequestCount() int { return s.recorder.RequestCount() }

// Remaining is the number of scripted turns not consumed yet.
func (s *Server) Remaining() int { return s.script.Remaining() }

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	rec, n, err := s.recorder.Record(r)
	if err != nil {
		return
	}
	s.mu.Lock()
	key := s.apiKey
	s.mu.Unlock()

	if r.URL.Path != "/v1/chat/completions" && r.URL.Path != "/chat/completions" {
		writeError(w, http.StatusNotFound, errorBody("invalid_request_error", "", fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path)), nil)
		return
	}
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, errorBody("invalid_request_error", "", fmt.Sprintf("Invalid method for URL (%s %s)", r.Method, r.URL.Path)), nil)
		return
	}
	if key != "" && r.Header.Get("Authorization") != "Bearer "+key {
		writeError(w, http.StatusUnauthorized, errorBody("invalid_request_error", "invalid_api_key", "Incorrect API key provided."), nil)
		return
	}
	if rec.Body == nil {
		writeError(w, http.StatusBadRequest, errorBody("invalid_request_error", "", "We could not parse the JSON body of your request."), nil)
		return
	}
	if msg := validate(rec.Body); msg != "" {
		writeError(w, http.StatusBadRequest, errorBody("invalid_request_error", "", msg), nil)
		return
	}
	if stream, _ := rec.Body["stream"].(bool); !stream {
		writeError(w, http.StatusBadRequest, errorBody("invalid_request_error", "", "openaitest: only streaming requests (\"stream\": true) are scripted"), nil)
		return
	}

	turn, id, err := s.script.Next(n)
	if err != nil {
		s.t.Errorf("openaitest: %v", err)
		writeError(w, http.StatusBadRequest, errorBody("invalid_request_error", "", fmt.Sprintf("openaitest: no scripted turn is left for request %d", n)), nil)
		return
	}

	if turn.Fault == FaultNoAnswer {
		select {
		case <-r.Context().Done():
		case <-s.closing:
		}
		return
	}
	if turn.Status != 0 {
		h := turn.Header.Clone()
		if h == nil {
			h = http.Header{}
		}
		if (turn.Status == http.StatusTooManyRequests || turn.Status >= 500) && h.Get("retry-after") == "" && h.Get("retry-after-ms") == "" {
			h.Set("retry-after", "0")
		}
		typ, code, msg := turn.failure(turn.Status)
		writeError(w, turn.Status, errorBody(typ, code, msg), h)
		return
	}

	model, _ := rec.Body["model"].(string)
	if turn.Model != "" {
		model = turn.Model
	}
	includeUsage := false
	if so, ok := rec.Body["stream_options"].(map[string]any); ok {
		includeUsage, _ = so["include_usage"].(bool)
	}
	for k, vs := range turn.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("x-request-id", fmt.Sprintf("req_%03d", id))
	s.stream(w, r, turn, model, id, includeUsage)
}

// failure is the error type, code and message of a failing turn.
func (t Turn) failure(status int) (typ, code, msg string) {
	typ, code, msg = t.ErrorType, t.ErrorCode, t.ErrorMessage
	var dt, dc, dm string
	switch {
	case status == http.StatusUnauthorized:
		dt, dc, dm = "invalid_request_error", "invalid_api_key", "Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys."
	case status == http.StatusNotFound:
		dt, dc, dm = "invalid_request_error", "model_not_found", "The model does not exist or you do not have access to it."
	case status == http.StatusTooManyRequests:
		dt, dc, dm = "requests", "rate_limit_exceeded", "Rate limit reached for requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s."
	case status >= 500:
		dt, dc, dm = "server_error", "", "The server had an error while processing your request. Sorry about that!"
	case status == 0:
		dt, dc, dm = "server_error", "", "The server had an error while processing your request. Sorry about that!"
	default:
		dt, dc, dm = "invalid_request_error", "", "Invalid request."
	}
	if typ == "" {
		typ = dt
	}
	if code == "" && t.ErrorType == "" {
		code = dc
	}
	if msg == "" {
		msg = dm
	}
	return typ, code, msg
}

// ContextTooLong is the failing turn the API sends for a prompt over the context
// window.
func ContextTooLong() Turn {
	return Turn{Status: http.StatusBadRequest, ErrorType: "invalid_request_error", ErrorCode: "context_length_exceeded",
		ErrorMessage: "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages."}
}

// errorBody is the JSON the API sends with an error status and in an error event.
func errorBody(typ, code, msg string) []byte {
	var c any
	if code != "" {
		c = code
	}
	b, _ := json.Marshal(ordered{{"error", ordered{{"message", msg}, {"type", typ}, {"param", nil}, {"code", c}}}})
	return b
}

func writeError(w http.ResponseWriter, status int, body []byte, h http.Header) {
	for k, vs := range h {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("content-type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// finishReason is the finish reason a turn reports.
func (t Turn) finishReason() string {
	switch {
	case t.FinishReason != "":
		return t.FinishReason
	case len(t.ToolCalls) > 0:
		return "tool_calls"
	default:
		return "stop"
	}
}

// split cuts s into pieces of n bytes, never inside a UTF-8 sequence, so pieces cut
// through words and JSON tokens as a tokenizer's output does.
func split(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		cut := min(n, len(s))
		for cut < len(s) && cut > 0 && s[cut]&0xC0 == 0x80 {
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
}

// stream writes the turn as an event stream.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, turn Turn, model string, id int, includeUsage bool) {
	c := chunker{sse: fakeserver.StartSSE(w), id: fmt.Sprintf("chatcmpl-openaitest%03d", id), model: model, usage: includeUsage}

	callIDs := make([]string, len(turn.ToolCalls))
	for i, tc := range turn.ToolCalls {
		callIDs[i] = tc.ID
		if callIDs[i] == "" {
			callIDs[i] = fmt.Sprintf("call_%03d_%d", id, i+1)
		}
	}

	// The first chunk carries the role. Without text, the API puts the start of the
	// first tool call in it and sends content null.
	text := split(turn.Text, 5)
	first := ordered{{"role", "assistant"}, {"content", ""}, {"refusal", nil}}
	startedCall := false
	if turn.Text == "" && turn.Reasoning == "" {
		first[1].v = nil
		if len(turn.ToolCalls) > 0 && !turn.WholeToolCalls {
			first = ordered{{"role", "assistant"}, {"content", nil},
				{"tool_calls", []any{callStart(turn, 0, callIDs[0])}}, {"refusal", nil}}
			startedCall = true
		}
	}
	c.choice(first, nil)

	switch turn.Fault {
	case FaultStall:
		select {
		case <-r.Context().Done():
		case <-s.closing:
		}
		return
	case FaultErrorEvent:
		typ, code, msg := turn.failure(0)
		c.data(errorBody(typ, code, msg))
		return
	}

	for _, piece := range split(turn.Reasoning, 6) {
		c.choice(ordered{{"reasoning_content", piece}}, nil)
	}
	// A fault strikes after the first piece of text (or before the tool calls when
	// there is no text), so the client has already shown something when it happens.
	faultAt := min(1, len(text))
	for i := 0; i <= len(text); i++ {
		if i == faultAt && c.fault(turn.Fault) {
			return
		}
		if i < len(text) {
			c.choice(ordered{{"content", text[i]}}, nil)
		}
	}

	if turn.WholeToolCalls && len(turn.ToolCalls) > 0 {
		var calls []any
		for i, tc := range turn.ToolCalls {
			call := ordered{}
			if !turn.OmitToolCallIndex {
				call = append(call, kv{"index", i})
			}
			if !turn.OmitToolCallID {
				call = append(call, kv{"id", callIDs[i]})
			}
			call = append(call, kv{"type", "function"}, kv{"function", ordered{{"name", tc.Name}, {"arguments", tc.Arguments}}})
			calls = append(calls, call)
		}
		c.choice(ordered{{"tool_calls", calls}}, nil)
	} else {
		for i, tc := range turn.ToolCalls {
			if i > 0 || !startedCall {
				c.choice(ordered{{"tool_calls", []any{callStart(turn, i, callIDs[i])}}}, nil)
			}
			for _, piece := range split(tc.Arguments, 4) {
				var call ordered
				if !turn.OmitToolCallIndex {
					call = append(call, kv{"index", i})
				}
				if turn.RepeatToolCallID {
					if !turn.OmitToolCallID {
						call = append(call, kv{"id", callIDs[i]})
					}
					call = append(call, kv{"type", "function"}, kv{"function", ordered{{"name", tc.Name}, {"arguments", piece}}})
				} else {
					call = append(call, kv{"function", ordered{{"arguments", piece}}})
				}
				c.choice(ordered{{"tool_calls", []any{call}}}, nil)
			}
		}
	}

	c.choice(ordered{}, turn.finishReason())
	if includeUsage {
		c.usageChunk(turn.Usage)
	}
	if turn.Fault == FaultNoDone {
		return
	}
	c.raw("[DONE]")
}

// callStart is the first delta of tool call i: index, id, type, name, empty arguments.
func callStart(turn Turn, i int, id string) ordered {
	var call ordered
	if !turn.OmitToolCallIndex {
		call = append(call, kv{"index", i})
	}
	if !turn.OmitToolCallID {
		call = append(call, kv{"id", id})
	}
	return append(call, kv{"type", "function"}, kv{"function", ordered{{"name", turn.ToolCalls[i].Name}, {"arguments", ""}}})
}

// chunker writes chat.completion.chunk events.
type chunker struct {
	sse   fakeserver.SSE
	id    string
	model string
	usage bool
}

const created = 1733000000

func (c chunker) head() ordered {
	return ordered{{"id", c.id}, {"object", "chat.completion.chunk"}, {"created", created}, {"model", c.model},
		{"service_tier", "default"}, {"system_fingerprint", "fp_openaitest"}}
}

// choice sends a chunk with one choice; finish is nil or the finish reason.
func (c chunker) choice(delta ordered, finish any) {
	if delta == nil {
		delta = ordered{}
	}
	ch := append(c.head(), kv{"choices", []any{ordered{{"index", 0}, {"delta", delta}, {"logprobs", nil}, {"finish_reason", finish}}}})
	if c.usage {
		ch = append(ch, kv{"usage", nil})
	}
	b, _ := json.Marshal(ch)
	c.data(b)
}

func (c chunker) usageChunk(u Usage) {
	prompt := ordered{{"cached_tokens", u.CachedTokens}, {"audio_tokens", 0}}
	if u.CacheWriteTokens != 0 {
		prompt = append(prompt, kv{"cache_write_tokens", u.CacheWriteTokens})
	}
	ch := append(c.head(), kv{"choices", []any{}}, kv{"usage", ordered{
		{"prompt_tokens", u.PromptTokens},
		{"completion_tokens", u.CompletionTokens},
		{"total_tokens", u.PromptTokens + u.CompletionTokens},
		{"prompt_tokens_details", prompt},
		{"completion_tokens_details", ordered{{"reasoning_tokens", 0}, {"audio_tokens", 0}, {"accepted_prediction_tokens", 0}, {"rejected_prediction_tokens", 0}}},
	}})
	b, _ := json.Marshal(ch)
	c.data(b)
}

// fault breaks the stream as f says; it reports whether the response must end.
func (c chunker) fault(f Fault) bool {
	switch f {
	case FaultMalformed:
		c.raw(`{"id":"` + c.id + `","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"oops`)
	case FaultTruncated:
		return true
	case FaultReset:
		panic(http.ErrAbortHandler)
	}
	return false
}

func (c chunker) data(b []byte) { c.raw(string(b)) }

func (c chunker) raw(s string) {
	c.sse.Event("", s)
}

// kv is one member of an ordered JSON object.
type kv struct {
	k string
	v any
}

// ordered is a JSON object that keeps its members in the order the API writes them.
type ordered []kv

func (o ordered) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(m.v)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}
