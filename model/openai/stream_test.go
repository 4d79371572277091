package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
)

// sse renders data payloads as an event stream.
func sse(payloads ...string) string {
	var b strings.Builder
	for _, p := range payloads {
		b.WriteString("data: " + p + "\n\n")
	}
	return b.String()
}

// delta renders a chunk with one choice whose delta is d.
func delta(d string) string {
	return `{"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":` + d + `,"finish_reason":null}]}`
}

func finish(reason string) string {
	return `{"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"` + reason + `"}]}`
}

func assemble(t *testing.T, body string) (*model.Response, error) {
	t.Helper()
	a := newAssembler("req-model", nil)
	a.maxLine = 4096
	if err := a.read(strings.NewReader(body)); err != nil {
		return nil, err
	}
	return a.response(), nil
}

func TestToolDeltaMerging(t *testing.T) {
	t.Parallel()
	call := func(id, name, input string) model.Block {
		return model.Block{Kind: model.KindToolUse, ID: id, Name: name, Input: json.RawMessage(input)}
	}
	tests := []struct {
		name   string
		deltas []string
		want   []model.Block
	}{
		{
			"index reused for every call, distinct ids",
			[]string{
				`{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"LS","arguments":"{}"}}]}`,
				`{"tool_calls":[{"index":0,"id":"b","type":"function","function":{"name":"Read","arguments":"{\"file_path\":\"x\"}"}}]}`,
			},
			[]model.Block{call("a", "LS", `{}`), call("b", "Read", `{"file_path":"x"}`)},
		},
		{
			"index reused without ids, complete arguments",
			[]string{
				`{"tool_calls":[{"index":0,"function":{"name":"LS","arguments":"{\"path\":\"a\"}"}}]}`,
				`{"tool_calls":[{"index":0,"function":{"name":"LS","arguments":"{\"path\":\"b\"}"}}]}`,
			},
			[]model.Block{call("", "LS", `{"path":"a"}`), call("", "LS", `{"path":"b"}`)},
		},
		{
			"name repeated on every delta of one call",
			[]string{
				`{"tool_calls":[{"index":0,"id":"a","function":{"name":"Read","arguments":"{\"file"}}]}`,
				`{"tool_calls":[{"index":0,"function":{"name":"Read","arguments":"_path\":\"x\"}"}}]}`,
				`{"tool_calls":[{"index":0,"function":{"name":"Read"}}]}`,
			},
			[]model.Block{call("a", "Read", `{"file_path":"x"}`)},
		},
		{
			"id arrives after the name",
			[]string{
				`{"tool_calls":[{"index":0,"function":{"name":"LS","arguments":""}}]}`,
				`{"tool_calls":[{"index":0,"id":"late","function":{"arguments":"{}"}}]}`,
			},
			[]model.Block{call("late", "LS", `{}`)},
		},
		{
			"no index: continuation by id and by position",
			[]string{
				`{"tool_calls":[{"id":"a","type":"function","function":{"name":"Read","arguments":"{\"file_"}}]}`,
				`{"tool_calls":[{"id":"a","function":{"arguments":"path\":\"x\"}"}}]}`,
				`{"tool_calls":[{"id":"b","type":"function","function":{"name":"LS","arguments":"{\"pa"}}]}`,
				`{"tool_calls":[{"function":{"arguments":"th\":\".\"}"}}]}`,
			},
			[]model.Block{call("a", "Read", `{"file_path":"x"}`), call("b", "LS", `{"path":"."}`)},
		},
		{
			"sparse indexes keep arrival order",
			[]string{
				`{"tool_calls":[{"index":3,"id":"x","function":{"name":"LS","arguments":"{}"}}]}`,
				`{"tool_calls":[{"index":1,"id":"y","function":{"name":"Glob","arguments":"{}"}}]}`,
			},
			[]model.Block{call("x", "LS", `{}`), call("y", "Glob", `{}`)},
		},
		{
			"legacy function_call",
			[]string{
				`{"function_call":{"name":"LS","arguments":"{\"pa"}}`,
				`{"function_call":{"arguments":"th\":\"/\"}"}}`,
			},
			[]model.Block{call("", "LS", `{"path":"/"}`)},
		},
		{
			"arguments as an object, as some servers send",
			[]string{`{"tool_calls":[{"index":0,"id":"a","function":{"name":"LS","arguments":{"path":"/"}}}]}`},
			[]model.Block{call("a", "LS", `{"path":"/"}`)},
		},
		{
			"empty delta entries are ignored",
			[]string{`{"tool_calls":[{}]}`, `{"tool_calls":[]}`},
			nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var payloads []string
			for _, d := range tt.deltas {
				payloads = append(payloads, delta(d))
			}
			payloads = append(payloads, finish("tool_calls"), "[DONE]")
			resp, err := assemble(t, sse(payloads...))
			if err != nil {
				t.Fatal(err)
			}
			got := resp.ToolCalls()
			// Generated ids are random; check their form, then compare without them.
			for i := range got {
				if i < len(tt.want) && tt.want[i].ID == "" {
					if !strings.HasPrefix(got[i].ID, "call_") {
						t.Errorf("generated id %q", got[i].ID)
					}
					got[i].ID = ""
				}
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("calls (-want +got):\n%s", d)
			}
		})
	}
}

func TestEventStreamFraming(t *testing.T) {
	t.Parallel()
	text := func(s string) string { return delta(`{"content":` + fmt.Sprintf("%q", s) + `}`) }
	tests := []struct {
		name string
		body string
		want string // text, or the error code
	}{
		{"plain", sse(text("a"), text("b"), finish("stop"), "[DONE]"), "ab"},
		{"CRLF lines", strings.ReplaceAll(sse(text("a"), finish("stop"), "[DONE]"), "\n", "\r\n"), "a"},
		{"comments and other fields", ": keep-alive\n\nid: 1\nretry: 10\n" + sse(text("a"), finish("stop")) + ": OPENROUTER PROCESSING\n\n" + sse("[DONE]"), "a"},
		{"no space after colon", "data:" + text("a") + "\n\ndata:" + finish("stop") + "\n\ndata:[DONE]\n\n", "a"},
		{"last event without blank line", sse(text("a"), finish("stop")) + "data: [DONE]\n", "a"},
		{"data split over lines", "data: " + strings.Replace(text("a"), `"choices"`, "\ndata: \"choices\"", 1) + "\n\n" + sse(finish("stop"), "[DONE]"), "a"},
		{"nothing after [DONE] is read", sse(text("a"), finish("stop"), "[DONE]") + "data: {garbage\n\n", "a"},
		{"usage null and empty choices", sse(text("a"), `{"id":"c","choices":[],"usage":null}`, finish("stop"), "[DONE]"), "a"},
		{"other choices ignored", sse(`{"choices":[{"index":1,"delta":{"content":"other"}}]}`, text("a"), finish("stop"), "[DONE]"), "a"},
		{"empty data ignored", "data:\n\n" + sse(text("a"), finish("stop"), "[DONE]"), "a"},
		{"garbage", sse(text("a"), "{not json", finish("stop"), "[DONE]"), model.CodeMalformedStream},
		{"JSON but not an object", sse(text("a"), "[1,2]", finish("stop"), "[DONE]"), model.CodeMalformedStream},
		{"no [DONE]", sse(text("a"), finish("stop")), model.CodeMalformedStream},
		{"[DONE] without finish_reason", sse(text("a"), "[DONE]"), model.CodeMalformedStream},
		{"empty body", "", model.CodeMalformedStream},
		{"HTML", "<html><body>Bad gateway</body></html>", model.CodeMalformedStream},
		{"line too long", "data: " + strings.Repeat("x", 5000), model.CodeMalformedStream},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, err := assemble(t, tt.body)
			if strings.HasPrefix(tt.want, "model.") {
				if code := sema.CodeOf(err); code != tt.want {
					t.Fatalf("error = %v, want code %s", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text() != tt.want {
				t.Errorf("text = %q, want %q", resp.Text(), tt.want)
			}
			if resp.Model != "m" {
				t.Errorf("model = %q, want the streamed model", resp.Model)
			}
		})
	}
}

func TestLenientChunks(t *testing.T) {
	t.Parallel()
	body := sse(
		`{"model":"m","choices":[{"index":"0","delta":{"content":[{"type":"text","text":"Hel"},{"type":"text","text":"lo"}]}}]}`,
		`{"model":7,"choices":[{"index":0.0,"delta":{"content":null,"tool_calls":[{"index":"0","id":"a","function":{"name":"LS","arguments":{"path":"/"}}}]}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":12.0,"completion_tokens":"3","prompt_tokens_details":null}}`,
		"[DONE]")
	resp, err := assemble(t, body)
	if err != nil {
		t.Fatal(err)
	}
	want := &model.Response{
		Model: "m",
		Content: []model.Block{model.TextBlock("Hello"),
			{Kind: model.KindToolUse, ID: "a", Name: "LS", Input: json.RawMessage(`{"path":"/"}`)}},
		StopReason: model.StopToolUse,
		Usage:      model.Usage{InputTokens: 12, OutputTokens: 3},
	}
	if d := cmp.Diff(want, resp); d != "" {
		t.Errorf("response (-want +got):\n%s", d)
	}
}

func TestErrorEventIsAPIError(t *testing.T) {
	t.Parallel()
	tests := []string{
		sse(delta(`{"content":"a"}`), `{"error":{"message":"boom","type":"server_error","code":null}}`),
		"event: error\ndata: {\"message\":\"boom\"}\n\n",
	}
	for _, body := range tests {
		_, err := assemble(t, body)
		var ae *streamAPIError
		if !errors.As(err, &ae) || ae.Message != "boom" {
			t.Errorf("error = %v, want the server's error event", err)
		}
	}
}

func TestResponseModelFallsBackToRequest(t *testing.T) {
	t.Parallel()
	resp, err := assemble(t, sse(`{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}`, "[DONE]"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Model != "req-model" {
		t.Errorf("model = %q, want the requested model when the server names none", resp.Model)
	}
}

func TestRefusalDelta(t *testing.T) {
	t.Parallel()
	resp, err := assemble(t, sse(delta(`{"refusal":"I can't help with that."}`), finish("stop"), "[DONE]"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != model.StopRefusal || resp.Text() != "I can't help with that." {
		t.Errorf("stop = %s, text = %q; want a refusal with its text", resp.StopReason, resp.Text())
	}
}

func TestParseAPIError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		body   string
		want   apiError
	}{
		{"openai", 429, `{"error":{"message":"slow","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, apiError{429, "slow", "requests", "rate_limit_exceeded"}},
		{"numeric code", 404, `{"object":"error","message":"nope","type":"NotFoundError","code":404}`, apiError{404, "nope", "NotFoundError", "404"}},
		{"string error", 404, `{"error":"model not found"}`, apiError{404, "model not found", "", ""}},
		{"detail", 422, `{"detail":"field required"}`, apiError{422, "field required", "", ""}},
		{"text", 502, "<html>\n  Bad   Gateway\n</html>", apiError{502, "<html> Bad Gateway </html>", "", ""}},
		{"empty", 503, "", apiError{503, "Service Unavailable", "", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if d := cmp.Diff(tt.want, parseAPIError(tt.status, []byte(tt.body))); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
	long := parseAPIError(400, []byte(strings.Repeat("é", 400)))
	if len(long.Message) > 310 || !strings.HasSuffix(long.Message, "…") || !json.Valid([]byte(fmt.Sprintf("%q", long.Message))) {
		t.Errorf("a long message was not clipped cleanly: %d bytes", len(long.Message))
	}
}

func TestBodyEdgeCases(t *testing.T) {
	t.Parallel()
	p, err := New(Config{BaseURL: "http://localhost:1/v1"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.body(&model.Request{Model: "m", MaxTokens: 77, Messages: []model.Message{
		{Role: model.RoleUser},
		{Role: model.RoleAssistant},
		{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.KindToolUse, ID: "c", Name: "n"}}},
		{Role: model.RoleUser, Content: []model.Block{{Kind: model.KindToolResult, ID: "c"}}},
	}, Tools: []model.ToolSpec{{Name: "t"}}})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"model":          "m",
		"max_tokens":     77.0,
		"stream":         true,
		"stream_options": map[string]any{"include_usage": true},
		"messages": []any{
			map[string]any{"role": "user", "content": ""},
			map[string]any{"role": "assistant", "content": ""},
			map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "c", "type": "function", "function": map[string]any{"name": "n", "arguments": "{}"}}}},
			map[string]any{"role": "tool", "tool_call_id": "c", "content": ""},
		},
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "t", "parameters": map[string]any{"type": "object", "properties": map[string]any{}}}}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("body (-want +got):\n%s", d)
	}
}

// FuzzAssemble feeds arbitrary bytes to the stream reader: it must never panic, and
// whatever it accepts must be a response whose tool inputs are valid JSON.
func FuzzAssemble(f *testing.F) {
	f.Add(sse(delta(`{"content":"hi"}`), finish("stop"), "[DONE]"))
	f.Add(sse(delta(`{"tool_calls":[{"index":0,"id":"a","function":{"name":"LS","arguments":"{\"pa"}}]}`),
		delta(`{"tool_calls":[{"index":0,"function":{"arguments":"th\":1"}}]}`), finish("tool_calls"), "[DONE]"))
	f.Add(sse(delta(`{"tool_calls":[{"id":"a","function":{"name":"LS","arguments":{"x":1}}},{"function":{"arguments":"]"}}]}`), finish("length"), "[DONE]"))
	f.Add("event: error\ndata: {\"error\":\"x\"}\n\n")
	f.Add("data: {\"choices\":[{\"delta\":{\"reasoning\":\"r\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":1}}\n\ndata: [DONE]")
	f.Fuzz(func(t *testing.T, body string) {
		a := newAssembler("m", func(model.Delta) {})
		if err := a.read(strings.NewReader(body)); err != nil {
			var se *sema.Error
			var ae *streamAPIError
			if !errors.As(err, &se) && !errors.As(err, &ae) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("unexpected error type %T: %v", err, err)
			}
			return
		}
		resp := a.response()
		for _, c := range resp.ToolCalls() {
			if !json.Valid(c.Input) || c.ID == "" {
				t.Fatalf("call %+v has invalid input or no id", c)
			}
		}
		if _, err := json.Marshal(resp); err != nil {
			t.Fatal(err)
		}
	})
}

// benchBody is a long realistic stream: 2,000 text chunks and a tool call whose
// arguments arrive in 500 pieces.
func benchBody() string {
	var payloads []string
	payloads = append(payloads, delta(`{"role":"assistant","content":"","refusal":null}`))
	for i := range 2000 {
		payloads = append(payloads, delta(fmt.Sprintf(`{"content":"word%d "}`, i)))
	}
	payloads = append(payloads, delta(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"Write","arguments":""}}]}`))
	payloads = append(payloads, delta(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"content\":\""}}]}`))
	for range 500 {
		payloads = append(payloads, delta(`{"tool_calls":[{"index":0,"function":{"arguments":"abcdefgh"}}]}`))
	}
	payloads = append(payloads, delta(`{"tool_calls":[{"index":0,"function":{"arguments":"\"}"}}]}`))
	payloads = append(payloads, finish("tool_calls"), `{"id":"c","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":2500}}`, "[DONE]")
	return sse(payloads...)
}

func BenchmarkAssemble(b *testing.B) {
	body := benchBody()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		a := newAssembler("m", func(model.Delta) {})
		if err := a.read(strings.NewReader(body)); err != nil {
			b.Fatal(err)
		}
		if len(a.response().ToolCalls()) != 1 {
			b.Fatal("lost the tool call")
		}
	}
}

// The scanners' buffers go back to a pool between streams: a response assembled from
// one stays as it was while later streams reuse the buffer, and bytes a stream left
// after [DONE] never reach the next.
func TestPooledScanBufferKeepsNothingBetweenStreams(t *testing.T) {
	read := func(body string) *model.Response {
		t.Helper()
		a := newAssembler("m", nil)
		if err := a.read(strings.NewReader(body)); err != nil {
			t.Fatal(err)
		}
		return a.response()
	}
	first := read(sse(delta(`{"content":"first answer"}`), finish("stop")) + "data: [DONE]\n\n")
	for i := range 20 {
		tail := fmt.Sprintf("data: %s\n\n", delta(`{"content":"LEFT"}`))
		got := read(sse(delta(fmt.Sprintf(`{"content":"answer %d %s"}`, i, strings.Repeat("y", i*1000))), finish("stop")) + "data: [DONE]\n\n" + tail)
		if len(got.Content) != 1 || !strings.HasPrefix(got.Content[0].Text, fmt.Sprintf("answer %d ", i)) || strings.Contains(got.Content[0].Text, "LEFT") {
			t.Fatalf("round %d assembled %+v", i, got.Content)
		}
	}
	if len(first.Content) != 1 || first.Content[0].Text != "first answer" {
		t.Fatalf("the first response changed after its buffer was reused: %+v", first.Content)
	}
}
