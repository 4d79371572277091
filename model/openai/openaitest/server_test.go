package openaitest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sema-agent/sema/model/internal/fakeserver"
)

// post sends body to the server and returns the status and the response body.
func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// events returns the data payloads of an event stream.
func events(body string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, p)
		}
	}
	return out
}

const okUser = `{"role":"user","content":"hi"}`

func chatBody(messages ...string) string {
	return `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[` + strings.Join(messages, ",") + `]}`
}

func TestValidation(t *testing.T) {
	t.Parallel()
	asst := `{"role":"assistant","content":null,"tool_calls":[{"id":"call_a","type":"function","function":{"name":"LS","arguments":"{}"}},{"id":"call_b","type":"function","function":{"name":"LS","arguments":"{}"}}]}`
	toolA := `{"role":"tool","tool_call_id":"call_a","content":"a"}`
	toolB := `{"role":"tool","tool_call_id":"call_b","content":[{"type":"text","text":"b"}]}`
	tests := []struct {
		name string
		body string
		want string // "" accepts; else a fragment of the 400 message
	}{
		{"minimal", chatBody(okUser), ""},
		{"tool calls answered", chatBody(okUser, asst, toolA, toolB, okUser), ""},
		{"answered in any order", chatBody(okUser, asst, toolB, toolA), ""},
		{"image part", chatBody(`{"role":"user","content":[{"type":"text","text":"x"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw=="}}]}`), ""},
		{"no model", `{"stream":true,"messages":[` + okUser + `]}`, "you must provide a model parameter"},
		{"no messages", `{"model":"m","stream":true}`, "Missing required parameter: 'messages'"},
		{"empty messages", `{"model":"m","stream":true,"messages":[]}`, "empty array"},
		{"unknown role", chatBody(`{"role":"robot","content":"x"}`), "Invalid value: 'robot'"},
		{"tool call unanswered before user", chatBody(okUser, asst, toolA, okUser), "did not have response messages: call_b"},
		{"tool call unanswered at end", chatBody(okUser, asst), "call_a, call_b"},
		{"tool message answers nothing", chatBody(okUser, toolA), "must be a response to a preceeding message with 'tool_calls'"},
		{"tool message answered twice", chatBody(okUser, asst, toolA, toolA), "must be a response"},
		{"tool message without id", chatBody(okUser, `{"role":"tool","content":"x"}`), "tool_call_id"},
		{"tool content null", chatBody(okUser, asst, `{"role":"tool","tool_call_id":"call_a","content":null}`, toolB), "expected a string, got null"},
		{"assistant with nothing", chatBody(okUser, `{"role":"assistant","content":null}`), "expected a string, got null"},
		{"arguments not a string", chatBody(okUser, `{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"LS","arguments":{}}}]}`), "function.arguments"},
		{"bad image URL", chatBody(`{"role":"user","content":[{"type":"image_url","image_url":{"url":"file:///etc/passwd"}}]}`), "image_url.url"},
		{"bad tool name", `{"model":"m","stream":true,"messages":[` + okUser + `],"tools":[{"type":"function","function":{"name":"has space"}}]}`, "tools[0].function.name"},
		{"duplicate tools", `{"model":"m","stream":true,"messages":[` + okUser + `],"tools":[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"a"}}]}`, "duplicate"},
		{"stream_options without stream", `{"model":"m","stream_options":{"include_usage":true},"messages":[` + okUser + `]}`, "only allowed when 'stream' is enabled"},
		{"max_tokens zero", `{"model":"m","stream":true,"max_tokens":0,"messages":[` + okUser + `]}`, "max_tokens"},
		{"not streaming", `{"model":"m","messages":[` + okUser + `]}`, "only streaming requests"},
		{"not JSON", `{`, "could not parse the JSON body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := NewServer(t, Turn{Text: "ok"})
			status, body := post(t, s.URL()+"/chat/completions", tt.body)
			if tt.want == "" {
				if status != http.StatusOK {
					t.Fatalf("status %d: %s", status, body)
				}
				if s.Remaining() != 0 {
					t.Error("an accepted request did not consume its turn")
				}
				return
			}
			if status != http.StatusBadRequest || !strings.Contains(body, tt.want) {
				t.Errorf("status %d, body %s; want 400 mentioning %q", status, body, tt.want)
			}
			var e struct {
				Error struct{ Message, Type string } `json:"error"`
			}
			if json.Unmarshal([]byte(body), &e) != nil || e.Error.Type != "invalid_request_error" {
				t.Errorf("body %s is not an OpenAI error", body)
			}
			if s.Remaining() != 1 {
				t.Error("a refused request consumed a turn")
			}
			if s.RequestCount() != 1 {
				t.Error("the refused request was not recorded")
			}
		})
	}
}

func TestStreamShape(t *testing.T) {
	t.Parallel()
	s := NewServer(t, Turn{Text: "Hello, world", ToolCalls: []ToolCall{{Name: "Read", Arguments: `{"file_path":"a.go"}`}},
		Usage: Usage{PromptTokens: 10, CompletionTokens: 3, CachedTokens: 4}})
	status, body := post(t, s.URL()+"/chat/completions", chatBody(okUser))
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	ev := events(body)
	if len(ev) < 8 || ev[len(ev)-1] != "[DONE]" {
		t.Fatalf("events = %v", ev)
	}
	type chunk struct {
		Object  string `json:"object"`
		Model   string `json:"model"`
		Choices []struct {
			Delta struct {
				Role      *string
				Content   *string
				ToolCalls []struct {
					Index    *int
					ID       string
					Type     string
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
			FinishReason *string `json:"finish_reason"`
		}
		Usage *struct {
			PromptTokens        int `json:"prompt_tokens"`
			PromptTokensDetails struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		}
	}
	var chunks []chunk
	for _, e := range ev[:len(ev)-1] {
		var c chunk
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatalf("event %s: %v", e, err)
		}
		if c.Object != "chat.completion.chunk" || c.Model != "m" {
			t.Errorf("chunk %s lacks object or model", e)
		}
		chunks = append(chunks, c)
	}
	first := chunks[0].Choices[0].Delta
	if first.Role == nil || *first.Role != "assistant" || first.Content == nil || *first.Content != "" {
		t.Errorf("first chunk %s does not carry the role", ev[0])
	}
	var text, args strings.Builder
	textChunks, argChunks := 0, 0
	var finish string
	for _, c := range chunks[1:] {
		if len(c.Choices) == 0 {
			continue
		}
		d := c.Choices[0].Delta
		if d.Content != nil {
			text.WriteString(*d.Content)
			textChunks++
		}
		for _, tc := range d.ToolCalls {
			if tc.Index == nil || *tc.Index != 0 {
				t.Errorf("tool call delta without index 0")
			}
			if tc.ID != "" && (tc.Type != "function" || tc.Function.Name != "Read" || tc.Function.Arguments != "") {
				t.Errorf("first tool call delta %+v is not id/type/name with empty arguments", tc)
			}
			args.WriteString(tc.Function.Arguments)
			if tc.Function.Arguments != "" {
				argChunks++
			}
		}
		if f := c.Choices[0].FinishReason; f != nil {
			finish = *f
		}
	}
	if text.String() != "Hello, world" || textChunks < 2 {
		t.Errorf("text %q in %d chunks", text.String(), textChunks)
	}
	if args.String() != `{"file_path":"a.go"}` || argChunks < 3 {
		t.Errorf("arguments %q in %d chunks", args.String(), argChunks)
	}
	if finish != "tool_calls" {
		t.Errorf("finish_reason = %q", finish)
	}
	last := chunks[len(chunks)-1]
	if len(last.Choices) != 0 || last.Usage == nil || last.Usage.PromptTokens != 10 || last.Usage.PromptTokensDetails.CachedTokens != 4 {
		t.Errorf("last chunk %s is not the usage chunk", ev[len(ev)-2])
	}
}

func TestNoUsageChunkUnlessAsked(t *testing.T) {
	t.Parallel()
	s := NewServer(t, Turn{Text: "hi"})
	_, body := post(t, s.URL()+"/chat/completions", `{"model":"m","stream":true,"messages":[`+okUser+`]}`)
	if strings.Contains(body, `"usage"`) {
		t.Errorf("usage sent without stream_options.include_usage:\n%s", body)
	}
}

func TestFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		turn       Turn
		status     int
		code       string
		retryAfter string
	}{
		{Turn{Status: 429}, 429, "rate_limit_exceeded", "0"},
		{Turn{Status: 401}, 401, "invalid_api_key", ""},
		{Turn{Status: 404}, 404, "model_not_found", ""},
		{ContextTooLong(), 400, "context_length_exceeded", ""},
		{Turn{Status: 503}, 503, "", "0"},
		{Turn{Status: 429, Header: http.Header{"Retry-After": {"7"}}}, 429, "rate_limit_exceeded", "7"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status, tt.code), func(t *testing.T) {
			t.Parallel()
			s := NewServer(t, tt.turn)
			res, err := http.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(chatBody(okUser)))
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Code    *string `json:"code"`
				} `json:"error"`
			}
			if err := json.NewDecoder(res.Body).Decode(&e); err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tt.status || e.Error.Message == "" || e.Error.Type == "" {
				t.Errorf("status %d, error %+v", res.StatusCode, e.Error)
			}
			if got := ""; e.Error.Code != nil {
				got = *e.Error.Code
				if got != tt.code {
					t.Errorf("code = %q, want %q", got, tt.code)
				}
			} else if tt.code != "" {
				t.Errorf("code = null, want %q", tt.code)
			}
			if got := res.Header.Get("Retry-After"); got != tt.retryAfter {
				t.Errorf("retry-after = %q, want %q", got, tt.retryAfter)
			}
		})
	}
}

func TestFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fault    Fault
		check    func(events []string) bool
		describe string
	}{
		{FaultMalformed, func(ev []string) bool {
			bad := 0
			for _, e := range ev {
				if e != "[DONE]" && !json.Valid([]byte(e)) {
					bad++
				}
			}
			return bad == 1 && ev[len(ev)-1] == "[DONE]"
		}, "one data line that is not JSON, then the rest"},
		{FaultTruncated, func(ev []string) bool {
			return len(ev) >= 2 && !strings.Contains(strings.Join(ev, ""), "finish_reason\":\"") && ev[len(ev)-1] != "[DONE]"
		}, "no finish_reason and no [DONE]"},
		{FaultNoDone, func(ev []string) bool {
			return strings.Contains(strings.Join(ev, ""), `"finish_reason":"stop"`) && ev[len(ev)-1] != "[DONE]"
		}, "finish_reason but no [DONE]"},
		{FaultErrorEvent, func(ev []string) bool {
			return len(ev) == 2 && strings.HasPrefix(ev[1], `{"error":{`)
		}, "an error object after the first chunk"},
	}
	for _, tt := range tests {
		t.Run(tt.describe, func(t *testing.T) {
			t.Parallel()
			s := NewServer(t, Turn{Text: "Hello, world", Fault: tt.fault})
			_, body := post(t, s.URL()+"/chat/completions", chatBody(okUser))
			if ev := events(body); !tt.check(ev) {
				t.Errorf("want %s; got:\n%s", tt.describe, body)
			}
		})
	}
}

func TestStallReleasedOnClose(t *testing.T) {
	t.Parallel()
	s := NewServer(t, Turn{Fault: FaultStall})
	res, err := http.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(chatBody(okUser)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	r := bufio.NewReader(res.Body)
	line, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "data: ") {
		t.Fatalf("first line %q, %v", line, err)
	}
	done := make(chan struct{})
	go func() {
		io.Copy(io.Discard, r)
		close(done)
	}()
	s.Close()
	<-done
	s.Close() // a second Close does nothing
}

func TestPathsAndKeys(t *testing.T) {
	t.Parallel()
	s := NewServer(t, Turn{Text: "a"}, Turn{Text: "b"})
	if status, _ := post(t, s.RootURL()+"/v1/models", chatBody(okUser)); status != http.StatusNotFound {
		t.Errorf("unknown path: status %d, want 404", status)
	}
	res, err := http.Get(s.URL() + "/chat/completions")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: status %d, want 405", res.StatusCode)
	}
	s.RequireAPIKey("sk-k")
	if status, body := post(t, s.RootURL()+"/chat/completions", chatBody(okUser)); status != http.StatusUnauthorized || !strings.Contains(body, "invalid_api_key") {
		t.Errorf("no key: status %d, body %s", status, body)
	}
	req, _ := http.NewRequest(http.MethodPost, s.RootURL()+"/chat/completions", strings.NewReader(chatBody(okUser)))
	req.Header.Set("Authorization", "Bearer sk-k")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("with key: status %d", res.StatusCode)
	}
	if s.Remaining() != 1 || s.RequestCount() != 4 {
		t.Errorf("remaining %d, requests %d; want 1 and 4", s.Remaining(), s.RequestCount())
	}
	reqs := s.Requests()
	if reqs[3].Header.Get("Authorization") != "Bearer sk-k" || reqs[3].Body["model"] != "m" || reqs[3].Chat().Messages[0].Text() != "hi" {
		t.Errorf("recorded request %+v", reqs[3])
	}
	s.Enqueue(Turn{Text: "c"})
	if s.Remaining() != 2 {
		t.Errorf("Enqueue: remaining %d, want 2", s.Remaining())
	}
}

func TestExhaustedScriptFailsTheTest(t *testing.T) {
	t.Parallel()
	rec := &fakeserver.ErrorsTB{TB: t}
	s := NewServer(rec, Turn{Text: "only"})
	post(t, s.URL()+"/chat/completions", chatBody(okUser))
	status, body := post(t, s.URL()+"/chat/completions", chatBody(okUser))
	if status != http.StatusBadRequest || !strings.Contains(body, "no scripted turn") {
		t.Errorf("status %d, body %s", status, body)
	}
	if errs := rec.Errors(); len(errs) != 1 || !strings.Contains(errs[0], "request 2") {
		t.Errorf("errors = %v, want one naming request 2", errs)
	}
}

func TestSplit(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "abc", "héllo wörld ✓✓✓", strings.Repeat("日本", 9)} {
		pieces := split(s, 4)
		if strings.Join(pieces, "") != s {
			t.Errorf("split(%q) lost text: %q", s, pieces)
		}
		for _, p := range pieces {
			if !json.Valid([]byte(fmt.Sprintf("%q", p))) || strings.ToValidUTF8(p, "?") != p {
				t.Errorf("split(%q) cut a character: %q", s, p)
			}
		}
	}
}

func TestNoAnswer(t *testing.T) {
	t.Parallel()
	s := NewServer(t, Turn{Fault: FaultNoAnswer})
	c := &http.Client{Timeout: 50 * time.Millisecond}
	res, err := c.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(chatBody(okUser)))
	if err == nil {
		res.Body.Close()
		t.Fatalf("the server answered %d", res.StatusCode)
	}
	if s.RequestCount() != 1 || s.Remaining() != 0 {
		t.Errorf("requests %d, remaining turns %d", s.RequestCount(), s.Remaining())
	}
}
