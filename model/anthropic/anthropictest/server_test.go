package anthropictest

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sema-agent/sema/model/internal/fakeserver"
)

// post sends body to srv as the SDK would and returns the response status and body.
func post(t *testing.T, srv *Server, body string, header map[string]string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL()+"/v1/messages", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("content-type", "application/json")
	req.Header.Set("x-api-key", "k")
	req.Header.Set("anthropic-version", "2023-06-01")
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

const okBody = `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`

func TestValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		body   string
		header map[string]string
		status int
		want   string // part of the error message
	}{
		{"no api key", okBody, map[string]string{"x-api-key": ""}, 401, "x-api-key"},
		{"no version", okBody, map[string]string{"anthropic-version": ""}, 400, "anthropic-version"},
		{"not JSON", `{`, nil, 400, "JSON"},
		{"no model", `{"max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, nil, 400, "model"},
		{"zero max_tokens", `{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, nil, 400, "max_tokens"},
		{"no messages", `{"model":"m","max_tokens":10,"messages":[]}`, nil, 400, "at least one message"},
		{"assistant first", `{"model":"m","max_tokens":10,"messages":[{"role":"assistant","content":"hi"}]}`, nil, 400, "first message"},
		{"roles repeat", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}]}`, nil, 400, "alternate"},
		{"empty text block", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`, nil, 400, "non-empty"},
		{"tool_use unanswered", `{"model":"m","max_tokens":10,"messages":[
			{"role":"user","content":"a"},
			{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"X","input":{}}]},
			{"role":"user","content":[{"type":"text","text":"b"}]}]}`, nil, 400, "toolu_1"},
		{"tool_use last", `{"model":"m","max_tokens":10,"messages":[
			{"role":"user","content":"a"},
			{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"X","input":{}}]}]}`, nil, 400, "toolu_1"},
		{"stray tool_result", `{"model":"m","max_tokens":10,"messages":[
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_9","content":"x"}]}]}`, nil, 400, "toolu_9"},
		{"tool_result after text", `{"model":"m","max_tokens":10,"messages":[
			{"role":"user","content":"a"},
			{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"X","input":{}}]},
			{"role":"user","content":[{"type":"text","text":"b"},{"type":"tool_result","tool_use_id":"toolu_1"}]}]}`, nil, 400, "must come first"},
		{"tool input not an object", `{"model":"m","max_tokens":10,"messages":[
			{"role":"user","content":"a"},
			{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"X","input":"{}"}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1"}]}]}`, nil, 400, "input"},
		{"thinking without signature", `{"model":"m","max_tokens":10,"messages":[
			{"role":"user","content":"a"},
			{"role":"assistant","content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"b"}]},
			{"role":"user","content":"c"}]}`, nil, 400, "signature"},
		{"image not base64", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[
			{"type":"image","source":{"type":"base64","media_type":"image/png","data":"%%%"}}]}]}`, nil, 400, "base64"},
		{"image type", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[
			{"type":"image","source":{"type":"base64","media_type":"image/bmp","data":"AAAA"}}]}]}`, nil, 400, "media_type"},
		{"tool schema type", `{"model":"m","max_tokens":10,"tools":[{"name":"X","input_schema":{"type":"string"}}],"messages":[{"role":"user","content":"a"}]}`, nil, 400, "input_schema"},
		{"tool name", `{"model":"m","max_tokens":10,"tools":[{"name":"bad name","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"a"}]}`, nil, 400, "name"},
		{"duplicate tools", `{"model":"m","max_tokens":10,"tools":[{"name":"X","input_schema":{"type":"object"}},{"name":"X","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"a"}]}`, nil, 400, "unique"},
		{"five breakpoints", `{"model":"m","max_tokens":10,"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],
			"tools":[{"name":"A","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}},{"name":"B","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}],
			"messages":[{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"text","text":"b","cache_control":{"type":"ephemeral"}}]}]}`, nil, 400, "maximum of 4"},
		{"valid conversation with tools", `{"model":"m","max_tokens":10,"stream":true,
			"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],
			"tools":[{"name":"Read","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}],
			"messages":[{"role":"user","content":"a"},
				{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"tool_use","id":"toolu_1","name":"Read","input":{"p":1}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":[{"type":"text","text":"no"},
					{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw=="}}]}]}]}`, nil, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var turns []Turn
			if tt.status == 200 {
				turns = []Turn{{Text: "ok"}}
			}
			srv := NewServer(t, turns...)
			status, _, body := post(t, srv, tt.body, tt.header)
			if status != tt.status {
				t.Fatalf("status = %d (%s), want %d", status, body, tt.status)
			}
			if tt.status != 200 {
				var e struct {
					Type  string `json:"type"`
					Error struct {
						Type    string `json:"type"`
						Message string `json:"message"`
					} `json:"error"`
				}
				if err := json.Unmarshal([]byte(body), &e); err != nil || e.Type != "error" {
					t.Fatalf("error body %q is not an Anthropic error", body)
				}
				if !strings.Contains(e.Error.Message, tt.want) {
					t.Errorf("message %q lacks %q", e.Error.Message, tt.want)
				}
				if srv.Remaining() != 0 {
					t.Errorf("a refused request consumed a turn")
				}
			}
			if srv.RequestCount() != 1 {
				t.Errorf("%d requests recorded, want 1", srv.RequestCount())
			}
		})
	}
}

// event is one parsed server-sent event.
type event struct {
	name string
	data map[string]any
}

func parseEvents(t *testing.T, body string) []event {
	t.Helper()
	var out []event
	var name string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var data map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &data); err != nil {
				t.Fatalf("data of %s is not JSON: %v", name, err)
			}
			if data["type"] != name {
				t.Errorf("event %s carries type %v", name, data["type"])
			}
			out = append(out, event{name, data})
		}
	}
	return out
}

func TestStreamShape(t *testing.T) {
	t.Parallel()
	srv := NewServer(t, Turn{
		Thinking:  "pondering",
		Signature: "SIG",
		Text:      "Hello, world",
		ToolCalls: []ToolCall{{ID: "toolu_a", Name: "Read", Input: `{"file_path":"x.go"}`}, {Name: "LS"}},
		Usage:     Usage{InputTokens: 7, OutputTokens: 9, CacheReadInputTokens: 5, CacheCreationInputTokens: 3},
	})
	status, h, body := post(t, srv, okBody, nil)
	if status != 200 || !strings.HasPrefix(h.Get("content-type"), "text/event-stream") {
		t.Fatalf("status %d, content-type %q", status, h.Get("content-type"))
	}
	events := parseEvents(t, body)
	var names []string
	for _, e := range events {
		names = append(names, e.name)
	}
	if names[0] != "message_start" || names[len(names)-1] != "message_stop" || names[len(names)-2] != "message_delta" {
		t.Errorf("event order %v", names)
	}
	start := events[0].data["message"].(map[string]any)
	if start["model"] != "m" || start["role"] != "assistant" || start["stop_reason"] != nil {
		t.Errorf("message_start = %v", start)
	}
	if u := start["usage"].(map[string]any); u["input_tokens"] != 7.0 || u["cache_read_input_tokens"] != 5.0 || u["cache_creation_input_tokens"] != 3.0 || u["output_tokens"] != 1.0 {
		t.Errorf("message_start usage = %v", u)
	}
	// Reassemble the blocks from the deltas.
	type blk struct {
		typ, id, name, text, sig, input string
		deltas                          int
	}
	var blocks []*blk
	pings := 0
	for _, e := range events {
		switch e.name {
		case "ping":
			pings++
		case "content_block_start":
			cb := e.data["content_block"].(map[string]any)
			b := &blk{typ: cb["type"].(string)}
			if b.typ == "tool_use" {
				b.id, b.name = cb["id"].(string), cb["name"].(string)
			}
			blocks = append(blocks, b)
		case "content_block_delta":
			b := blocks[int(e.data["index"].(float64))]
			d := e.data["delta"].(map[string]any)
			b.deltas++
			switch d["type"] {
			case "text_delta":
				b.text += d["text"].(string)
			case "thinking_delta":
				b.text += d["thinking"].(string)
			case "signature_delta":
				b.sig += d["signature"].(string)
			case "input_json_delta":
				b.input += d["partial_json"].(string)
			}
		case "message_delta":
			if d := e.data["delta"].(map[string]any); d["stop_reason"] != "tool_use" {
				t.Errorf("stop_reason = %v", d["stop_reason"])
			}
			if u := e.data["usage"].(map[string]any); u["output_tokens"] != 9.0 {
				t.Errorf("message_delta usage = %v", u)
			}
		}
	}
	if pings == 0 {
		t.Error("no ping events")
	}
	want := []blk{
		{typ: "thinking", text: "pondering", sig: "SIG"},
		{typ: "text", text: "Hello, world"},
		{typ: "tool_use", id: "toolu_a", name: "Read", input: `{"file_path":"x.go"}`},
		{typ: "tool_use", id: "toolu_001_2", name: "LS"},
	}
	if len(blocks) != len(want) {
		t.Fatalf("%d blocks, want %d", len(blocks), len(want))
	}
	for i, w := range want {
		got := *blocks[i]
		got.deltas = 0
		if got != w {
			t.Errorf("block %d = %+v, want %+v", i, got, w)
		}
	}
	if blocks[1].deltas < 2 || blocks[2].deltas < 3 {
		t.Errorf("text in %d deltas, tool input in %d; both must be split", blocks[1].deltas, blocks[2].deltas)
	}
}

func TestFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		turn       Turn
		status     int
		errType    string
		retryAfter string
	}{
		{Turn{Status: 429}, 429, "rate_limit_error", "0"},
		{Turn{Status: 529}, 529, "overloaded_error", "0"},
		{Turn{Status: 529, Header: http.Header{"Retry-After": {"3"}}}, 529, "overloaded_error", "3"},
		{Turn{Status: 401}, 401, "authentication_error", ""},
		{Turn{Status: 500, ErrorType: "api_error"}, 500, "api_error", ""},
	}
	for _, tt := range tests {
		srv := NewServer(t, tt.turn)
		status, h, body := post(t, srv, okBody, nil)
		if status != tt.status || !strings.Contains(body, `"type":"`+tt.errType+`"`) {
			t.Errorf("turn %+v: status %d body %s", tt.turn, status, body)
		}
		if got := h.Get("retry-after"); got != tt.retryAfter {
			t.Errorf("turn %+v: retry-after %q, want %q", tt.turn, got, tt.retryAfter)
		}
	}
}

func TestFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fault Fault
		check func(t *testing.T, body string)
	}{
		{FaultTruncated, func(t *testing.T, body string) {
			if !strings.Contains(body, "event: message_delta") || strings.Contains(body, "message_stop") {
				t.Errorf("truncated stream:\n%s", body)
			}
		}},
		{FaultMalformed, func(t *testing.T, body string) {
			if !strings.Contains(body, `"text":"Hel`+"\n") {
				t.Errorf("malformed stream lacks the broken event:\n%s", body)
			}
		}},
		{FaultErrorEvent, func(t *testing.T, body string) {
			if !strings.Contains(body, "event: error\ndata: {\"error\":{\"message\":\"Overloaded\",\"type\":\"overloaded_error\"}") {
				t.Errorf("error event missing:\n%s", body)
			}
		}},
	}
	for _, tt := range tests {
		srv := NewServer(t, Turn{Text: "Hello", Fault: tt.fault})
		status, _, body := post(t, srv, okBody, nil)
		if status != 200 {
			t.Fatalf("fault %d: status %d", tt.fault, status)
		}
		tt.check(t, body)
	}
}

func TestNonStreaming(t *testing.T) {
	t.Parallel()
	srv := NewServer(t, Turn{Text: "hi", ToolCalls: []ToolCall{{ID: "toolu_1", Name: "LS"}}, Usage: Usage{InputTokens: 2, OutputTokens: 3}})
	status, _, body := post(t, srv, `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, nil)
	if status != 200 {
		t.Fatalf("status %d", status)
	}
	var msg struct {
		Type    string           `json:"type"`
		Content []map[string]any `json:"content"`
		Stop    string           `json:"stop_reason"`
		Usage   map[string]int   `json:"usage"`
	}
	if err := json.Unmarshal([]byte(body), &msg); err != nil {
		t.Fatal(err)
	}
	if msg.Type != "message" || len(msg.Content) != 2 || msg.Stop != "tool_use" || msg.Usage["output_tokens"] != 3 {
		t.Errorf("message = %+v", msg)
	}
	if in, ok := msg.Content[1]["input"].(map[string]any); !ok || len(in) != 0 {
		t.Errorf("tool input = %v, want {}", msg.Content[1]["input"])
	}
}

func TestTurnsInOrderAndExhaustion(t *testing.T) {
	t.Parallel()
	rec := &fakeserver.ErrorsTB{TB: t}
	srv := NewServer(rec, Turn{Text: "one"})
	srv.Enqueue(Turn{Status: 429})
	if _, _, body := post(t, srv, okBody, nil); !strings.Contains(body, `"text":"one"`) {
		t.Errorf("first answer %s", body)
	}
	if status, _, _ := post(t, srv, okBody, nil); status != 429 {
		t.Errorf("second answer status %d, want the enqueued 429", status)
	}
	if status, _, _ := post(t, srv, okBody, nil); status != 400 {
		t.Errorf("third answer status %d, want 400", status)
	}
	if errs := rec.Errors(); len(errs) != 1 || !strings.Contains(errs[0], "only 2 turns") {
		t.Errorf("test errors = %q; want one about the missing turn", errs)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || reqs[0].Body["model"] != "m" || reqs[0].Header.Get("x-api-key") != "k" {
		t.Errorf("recorded requests = %+v", reqs)
	}
}
