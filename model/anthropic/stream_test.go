package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sema-agent/sema/model"
)

// ev renders one server-sent event.
func ev(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }

const (
	msgStart = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":3,"cache_read_input_tokens":2,"output_tokens":1}}}`
	msgStop  = `{"type":"message_stop"}`
)

func textStart(i int) string {
	return fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":""}}`, i)
}

func textDelta(i int, s string) string {
	b, _ := json.Marshal(s)
	return fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}`, i, b)
}

func blockStop(i int) string { return fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i) }

func msgDelta(reason string) string {
	return fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":25}}`, reason)
}

func toolStart(i int, id, name string) string {
	return fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":%q,"name":%q,"input":{}}}`, i, id, name)
}

func inputDelta(i int, partial string) string {
	b, _ := json.Marshal(partial)
	return fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, i, b)
}

// sseServer answers every request with body as an event stream and counts requests.
func sseServer(t *testing.T, body string) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("content-type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestStreamAssembly(t *testing.T) {
	t.Parallel()
	usage := model.Usage{InputTokens: 10, OutputTokens: 25, CacheReadTokens: 2, CacheWriteTokens: 3}
	tests := []struct {
		name   string
		events []string // alternating event name and data
		want   *model.Response
		// deltas the caller sees, as kind:text or kind:name
		deltas []string
	}{
		{
			name: "text with a ping and the classic usage shape",
			events: []string{
				"message_start", msgStart, "ping", `{"type": "ping"}`,
				"content_block_start", textStart(0), "content_block_delta", textDelta(0, "Hel"),
				"content_block_delta", textDelta(0, "lo"), "content_block_stop", blockStop(0),
				"message_delta", msgDelta("end_turn"), "message_stop", msgStop,
			},
			want:   &model.Response{Model: "claude-x", Content: []model.Block{model.TextBlock("Hello")}, StopReason: model.StopEndTurn, Usage: usage},
			deltas: []string{"text:Hel", "text:lo"},
		},
		{
			name: "message_delta with running totals of every count",
			events: []string{
				"message_start", msgStart,
				"content_block_start", textStart(0), "content_block_delta", textDelta(0, "x"), "content_block_stop", blockStop(0),
				"message_delta", `{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"input_tokens":11,"cache_creation_input_tokens":0,"cache_read_input_tokens":9,"output_tokens":50}}`,
				"message_stop", msgStop,
			},
			want:   &model.Response{Model: "claude-x", Content: []model.Block{model.TextBlock("x")}, StopReason: model.StopMaxTokens, Usage: model.Usage{InputTokens: 11, OutputTokens: 50, CacheReadTokens: 9}},
			deltas: []string{"text:x"},
		},
		{
			name: "thinking with signature, then a tool call with input split mid-token",
			events: []string{
				"message_start", msgStart,
				"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
				"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me "}}`,
				"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"think."}}`,
				"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCkgI"}}`,
				"content_block_stop", blockStop(0),
				"content_block_start", toolStart(1, "toolu_9", "Bash"),
				"content_block_delta", inputDelta(1, ""),
				"content_block_delta", inputDelta(1, `{"comm`),
				"content_block_delta", inputDelta(1, `and": "ls -`),
				"content_block_delta", inputDelta(1, `la"}`),
				"content_block_stop", blockStop(1),
				"message_delta", msgDelta("tool_use"), "message_stop", msgStop,
			},
			want: &model.Response{Model: "claude-x", Content: []model.Block{
				{Kind: model.KindThinking, Text: "Let me think.", Signature: "EqQBCkgI"},
				{Kind: model.KindToolUse, ID: "toolu_9", Name: "Bash", Input: json.RawMessage(`{"command": "ls -la"}`)},
			}, StopReason: model.StopToolUse, Usage: usage},
			deltas: []string{"thinking:Let me ", "thinking:think.", "tool_use:Bash"},
		},
		{
			name: "tool call without input deltas gets {}",
			events: []string{
				"message_start", msgStart,
				"content_block_start", toolStart(0, "toolu_1", "LS"), "content_block_stop", blockStop(0),
				"message_delta", msgDelta("tool_use"), "message_stop", msgStop,
			},
			want: &model.Response{Model: "claude-x", Content: []model.Block{
				{Kind: model.KindToolUse, ID: "toolu_1", Name: "LS", Input: json.RawMessage(`{}`)},
			}, StopReason: model.StopToolUse, Usage: usage},
			deltas: []string{"tool_use:LS"},
		},
		{
			name: "tool call with its whole input in content_block_start",
			events: []string{
				"message_start", msgStart,
				"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_2","name":"Read","input":{"file_path":"a"}}}`,
				"content_block_stop", blockStop(0),
				"message_delta", msgDelta("tool_use"), "message_stop", msgStop,
			},
			want: &model.Response{Model: "claude-x", Content: []model.Block{
				{Kind: model.KindToolUse, ID: "toolu_2", Name: "Read", Input: json.RawMessage(`{"file_path":"a"}`)},
			}, StopReason: model.StopToolUse, Usage: usage},
			deltas: []string{"tool_use:Read"},
		},
		{
			name: "a tool call cut off by max_tokens is dropped",
			events: []string{
				"message_start", msgStart,
				"content_block_start", textStart(0), "content_block_delta", textDelta(0, "Writing"), "content_block_stop", blockStop(0),
				"content_block_start", toolStart(1, "toolu_3", "Write"),
				"content_block_delta", inputDelta(1, `{"content": "lo`),
				"content_block_stop", blockStop(1),
				"message_delta", msgDelta("max_tokens"), "message_stop", msgStop,
			},
			want:   &model.Response{Model: "claude-x", Content: []model.Block{model.TextBlock("Writing")}, StopReason: model.StopMaxTokens, Usage: usage},
			deltas: []string{"text:Writing", "tool_use:Write"},
		},
		{
			name: "empty text blocks, unknown blocks, deltas and events are skipped",
			events: []string{
				"message_start", msgStart,
				"content_block_start", textStart(0), "content_block_stop", blockStop(0),
				"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}`,
				"content_block_delta", inputDelta(1, `{"query": "x"}`),
				"content_block_stop", blockStop(1),
				"content_block_start", textStart(2),
				"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"citations_delta","citation":{"type":"char_location"}}}`,
				"content_block_delta", textDelta(2, "ok"),
				"content_block_stop", blockStop(2),
				"future_event", `{"type":"future_event","stuff":1}`,
				"message_delta", msgDelta("pause_turn"), "message_stop", msgStop,
			},
			want:   &model.Response{Model: "claude-x", Content: []model.Block{model.TextBlock("ok")}, StopReason: model.StopEndTurn, Usage: usage},
			deltas: []string{"text:ok"},
		},
		{
			name: "refusal",
			events: []string{
				"message_start", msgStart,
				"message_delta", msgDelta("refusal"), "message_stop", msgStop,
			},
			want: &model.Response{Model: "claude-x", StopReason: model.StopRefusal, Usage: usage},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var body strings.Builder
			for i := 0; i < len(tt.events); i += 2 {
				body.WriteString(ev(tt.events[i], tt.events[i+1]))
			}
			srv, _ := sseServer(t, body.String())
			p := newProvider(t, srv.URL, Config{})
			var deltas []string
			resp, err := p.Stream(context.Background(), &model.Request{Model: "m", Messages: []model.Message{userText("q")}}, func(d model.Delta) {
				if d.Kind == model.DeltaToolUse {
					deltas = append(deltas, string(d.Kind)+":"+d.Name)
					return
				}
				deltas = append(deltas, string(d.Kind)+":"+d.Text)
			})
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if diff := cmp.Diff(tt.want, resp); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.deltas, deltas); diff != "" {
				t.Errorf("deltas (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStreamFormatViolations(t *testing.T) {
	t.Parallel()
	ok := []string{"content_block_start", textStart(0), "content_block_delta", textDelta(0, "hi"), "content_block_stop", blockStop(0)}
	end := []string{"message_delta", msgDelta("end_turn"), "message_stop", msgStop}
	cat := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	start := []string{"message_start", msgStart}
	tests := []struct {
		name     string
		events   []string
		wantCode string
		// wantCalls is 1 unless a transient failure (a cut stream included) was retried.
		wantCalls int32
	}{
		{"event before message_start", cat(ok, start, end), model.CodeMalformedStream, 1},
		{"two message_starts", cat(start, start, ok, end), model.CodeMalformedStream, 1},
		{"block index gap", cat(start, []string{"content_block_start", textStart(1)}, end), model.CodeMalformedStream, 1},
		{"delta for an unknown block", cat(start, []string{"content_block_delta", textDelta(0, "x")}, end), model.CodeMalformedStream, 1},
		{"delta after stop", cat(start, ok, []string{"content_block_delta", textDelta(0, "x")}, end), model.CodeMalformedStream, 1},
		{"text delta for a tool block", cat(start, []string{"content_block_start", toolStart(0, "t", "X"), "content_block_delta", textDelta(0, "x"), "content_block_stop", blockStop(0)}, end), model.CodeMalformedStream, 1},
		{"tool_use without id", cat(start, []string{"content_block_start", toolStart(0, "", "X"), "content_block_stop", blockStop(0)}, end), model.CodeMalformedStream, 1},
		{"block never stopped", cat(start, []string{"content_block_start", textStart(0), "content_block_delta", textDelta(0, "x")}, end), model.CodeMalformedStream, 1},
		{"no stop reason", cat(start, ok, []string{"message_stop", msgStop}), model.CodeMalformedStream, 1},
		{"no message_stop", cat(start, ok, []string{"message_delta", msgDelta("end_turn")}), model.CodeMalformedStream, 3},
		{"empty body", nil, model.CodeMalformedStream, 3},
		{"data that is not JSON", cat(start, []string{"content_block_start", `{"type":"content_block_start",`}, end), model.CodeMalformedStream, 1},
		{"tool input that is not JSON", cat(start, []string{"content_block_start", toolStart(0, "t", "X"), "content_block_delta", inputDelta(0, `{"a": tru`), "content_block_stop", blockStop(0)}, end), model.CodeMalformedStream, 1},
		{"tool input that is not an object", cat(start, []string{"content_block_start", toolStart(0, "t", "X"), "content_block_delta", inputDelta(0, `["a"]`), "content_block_stop", blockStop(0)}, end), model.CodeMalformedStream, 1},
		{"overloaded error event after a delta is retried", cat(start, ok[:4], []string{"error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}), model.CodeOverloaded, 3},
		{"overloaded error event before any delta is retried", cat(start, []string{"error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}), model.CodeOverloaded, 3},
		{"api_error event is retried", cat(start, []string{"error", `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`}), model.CodeOverloaded, 3},
		{"invalid_request_error event", cat(start, []string{"error", `{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`}), model.CodeMalformedStream, 1},
		{"error event that is not JSON", cat(start, []string{"error", `Overloaded`}), model.CodeMalformedStream, 1},
		{"content_block_delta without an index", cat(start, ok[:2], []string{"content_block_delta", `{"type":"content_block_delta","delta":{"type":"text_delta","text":"x"}}`}, ok[4:], end), model.CodeMalformedStream, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var body strings.Builder
			for i := 0; i < len(tt.events); i += 2 {
				body.WriteString(ev(tt.events[i], tt.events[i+1]))
			}
			srv, calls := sseServer(t, body.String())
			p := newProvider(t, srv.URL, Config{MaxRetries: 2})
			resp, err := p.Stream(context.Background(), &model.Request{Model: "m", Messages: []model.Message{userText("q")}}, nil)
			if err == nil {
				t.Fatalf("Stream returned %+v; want %s", resp, tt.wantCode)
			}
			if code := codeOf(t, err); code != tt.wantCode {
				t.Errorf("code = %q (%v), want %q", code, err, tt.wantCode)
			}
			if n := calls.Load(); n != tt.wantCalls {
				t.Errorf("%d requests, want %d", n, tt.wantCalls)
			}
		})
	}
}

func TestConnectionDropMidStream(t *testing.T) {
	t.Parallel()
	// The handler announces a body longer than it sends, so the client's read fails
	// with an unexpected EOF after the first delta.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		part := ev("message_start", msgStart) + ev("content_block_start", textStart(0)) + ev("content_block_delta", textDelta(0, "hi"))
		w.Header().Set("content-type", "text/event-stream")
		w.Header().Set("content-length", fmt.Sprint(len(part)+100))
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(part))
	}))
	t.Cleanup(srv.Close)
	p := newProvider(t, srv.URL, Config{})
	var got string
	_, err := p.Stream(context.Background(), &model.Request{Model: "m", Messages: []model.Message{userText("q")}}, func(d model.Delta) { got += d.Text })
	if code := codeOf(t, err); code != model.CodeNetwork {
		t.Errorf("code = %q (%v), want %q", code, err, model.CodeNetwork)
	}
	if got != "hi" {
		t.Errorf("deltas before the drop = %q, want %q", got, "hi")
	}
}

// benchStream is a response of 1000 text deltas and a tool call whose input arrives in
// 200 pieces.
func benchStream() string {
	var body strings.Builder
	body.WriteString(ev("message_start", msgStart))
	body.WriteString(ev("content_block_start", textStart(0)))
	for i := 0; i < 1000; i++ {
		body.WriteString(ev("content_block_delta", textDelta(0, "word ")))
	}
	body.WriteString(ev("content_block_stop", blockStop(0)))
	body.WriteString(ev("content_block_start", toolStart(1, "toolu_1", "Write")))
	body.WriteString(ev("content_block_delta", inputDelta(1, `{"content": "`)))
	for i := 0; i < 200; i++ {
		body.WriteString(ev("content_block_delta", inputDelta(1, "0123456789")))
	}
	body.WriteString(ev("content_block_delta", inputDelta(1, `"}`)))
	body.WriteString(ev("content_block_stop", blockStop(1)))
	body.WriteString(ev("message_delta", msgDelta("tool_use")))
	body.WriteString(ev("message_stop", msgStop))
	return body.String()
}

// BenchmarkStreamAssembly measures benchStream end to end over a local HTTP connection.
func BenchmarkStreamAssembly(b *testing.B) {
	raw := benchStream()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-type", "text/event-stream")
		w.Write([]byte(raw))
	}))
	defer srv.Close()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	p, err := New(Config{APIKey: "k", BaseURL: srv.URL, HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		b.Fatal(err)
	}
	req := &model.Request{Model: "m", Messages: []model.Message{userText("q")}}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		resp, err := p.Stream(context.Background(), req, nil)
		if err != nil || len(resp.Content) != 2 {
			b.Fatalf("Stream: %v, %+v", err, resp)
		}
	}
}

// BenchmarkAssemble measures the decoding and assembly of benchStream alone, from
// memory: what BenchmarkStreamAssembly spends beyond HTTP.
func BenchmarkAssemble(b *testing.B) {
	raw := benchStream()
	body := strings.NewReader(raw)
	res := &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(body)}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		body.Reset(raw)
		acc := newAccumulator(nil)
		if err := assemble(res, acc); err != nil || !acc.stopped {
			b.Fatalf("assemble: %v", err)
		}
		if resp, err := acc.response(); err != nil || len(resp.Content) != 2 {
			b.Fatalf("response: %v, %+v", err, resp)
		}
	}
}

// Readers go back to a pool between streams: what one stream left unread — an event
// cut off mid-line, a line longer than the buffer, bytes after message_stop — never
// reaches the next, and the
// responses assembled before stay as they were.
func TestPooledReaderKeepsNothingBetweenStreams(t *testing.T) {
	assembleRaw := func(raw string) (*model.Response, error) {
		res := &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(raw))}
		acc := newAccumulator(nil)
		if err := assemble(res, acc); err != nil {
			return nil, err
		}
		if !acc.stopped {
			return nil, io.ErrUnexpectedEOF
		}
		return acc.response()
	}
	good := benchStream()
	want, err := assembleRaw(good)
	if err != nil {
		t.Fatal(err)
	}
	wantText := want.Content[0].Text
	long := strings.Repeat("x", 100<<10)
	leftovers := []string{
		good[:len(good)/2] + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"LEFT`,
		ev("message_start", msgStart) + ev("content_block_start", textStart(0)) + ev("content_block_delta", textDelta(0, long)),
		// Complete, with bytes after message_stop that assemble leaves unread.
		good + ev("content_block_delta", textDelta(0, "LEFT")),
	}
	for i := range 20 {
		assembleRaw(leftovers[i%len(leftovers)]) // incomplete: its error does not matter
		got, err := assembleRaw(good)
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		if got.Content[0].Text != wantText || string(got.Content[1].Input) != string(want.Content[1].Input) {
			t.Fatalf("round %d: a stream read after an unfinished one assembled differently", i)
		}
	}
	if want.Content[0].Text != wantText || strings.Contains(wantText, "LEFT") || strings.Contains(wantText, "xxx") {
		t.Fatal("an assembled response changed after its reader went back to the pool")
	}
}
