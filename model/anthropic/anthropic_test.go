package anthropic

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/anthropic/anthropictest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newProvider returns a provider for srv whose stream-level retries do not wait.
func newProvider(t *testing.T, url string, cfg Config) *Provider {
	t.Helper()
	cfg.APIKey = "sk-ant-test"
	cfg.BaseURL = url
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = testClient(t)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	p.backoff = func(int) time.Duration { return 0 }
	return p
}

// testClient is an HTTP client whose idle connections close with the test, so that no
// connection goroutine outlives it.
func testClient(t *testing.T) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func userText(s string) model.Message {
	return model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock(s)}}
}

func codeOf(t *testing.T, err error) string {
	t.Helper()
	var se *sema.Error
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T) is not a *sema.Error", err, err)
	}
	return se.Code
}

// collect records deltas.
type collect struct{ deltas []model.Delta }

func (c *collect) on(d model.Delta) { c.deltas = append(c.deltas, d) }

func (c *collect) text(kind model.DeltaKind) string {
	var b strings.Builder
	for _, d := range c.deltas {
		if d.Kind == kind {
			b.WriteString(d.Text)
		}
	}
	return b.String()
}

func (c *collect) count(kind model.DeltaKind) int {
	n := 0
	for _, d := range c.deltas {
		if d.Kind == kind {
			n++
		}
	}
	return n
}

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		want string // a word the message must contain
	}{
		{"no key", Config{}, "ANTHROPIC_API_KEY"},
		{"blank key", Config{APIKey: "  "}, "ANTHROPIC_API_KEY"},
		{"relative base URL", Config{APIKey: "k", BaseURL: "localhost:8080"}, "ANTHROPIC_BASE_URL"},
		{"ftp base URL", Config{APIKey: "k", BaseURL: "ftp://example.com"}, "ANTHROPIC_BASE_URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := New(tt.cfg)
			if p != nil || err == nil {
				t.Fatalf("New(%+v) = %v, %v; want an error", tt.cfg, p, err)
			}
			if code := codeOf(t, err); code != model.CodeConfig {
				t.Errorf("code = %q, want %q", code, model.CodeConfig)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("message %q does not name %s", err, tt.want)
			}
		})
	}
}

func TestFromEnv(t *testing.T) {
	srv := anthropictest.NewServer(t, anthropictest.Turn{Text: "hi"})
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("ANTHROPIC_BASE_URL", "")
	if _, err := FromEnv(); !sema.IsCode(err, model.CodeConfig) || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Fatalf("FromEnv without a key = %v; want model.config naming ANTHROPIC_API_KEY", err)
	}
	t.Setenv("ANTHROPIC_API_KEY", "sk-from-env")
	t.Setenv("ANTHROPIC_BASE_URL", srv.URL())
	p, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "anthropic" {
		t.Errorf("Name() = %q", p.Name())
	}
	resp, err := p.Stream(context.Background(), &model.Request{Model: "claude-test", Messages: []model.Message{userText("hello")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text() != "hi" {
		t.Errorf("text = %q", resp.Text())
	}
	if got := srv.Requests()[0].Header.Get("x-api-key"); got != "sk-from-env" {
		t.Errorf("x-api-key = %q, want the key from ANTHROPIC_API_KEY", got)
	}
	p.http.CloseIdleConnections()
}

func TestStreamText(t *testing.T) {
	t.Parallel()
	const text = "Hello there, world — ünïcödé and all."
	srv := anthropictest.NewServer(t, anthropictest.Turn{
		Text:  text,
		Model: "claude-sonnet-4-5-20250929",
		Usage: anthropictest.Usage{InputTokens: 12, OutputTokens: 30},
	})
	p := newProvider(t, srv.URL(), Config{})
	var c collect
	resp, err := p.Stream(context.Background(), &model.Request{
		Model:    "claude-sonnet-4-5",
		System:   "Be brief.",
		Messages: []model.Message{userText("Say hello.")},
	}, c.on)
	if err != nil {
		t.Fatal(err)
	}
	want := &model.Response{
		Model:      "claude-sonnet-4-5-20250929",
		Content:    []model.Block{model.TextBlock(text)},
		StopReason: model.StopEndTurn,
		Usage:      model.Usage{InputTokens: 12, OutputTokens: 30},
	}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	if got := c.text(model.DeltaText); got != text {
		t.Errorf("deltas spell %q, want %q", got, text)
	}
	if n := c.count(model.DeltaText); n < 3 {
		t.Errorf("%d text deltas; the text streams in several chunks", n)
	}

	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Header.Get("x-api-key") != "sk-ant-test" {
		t.Errorf("x-api-key = %q", r.Header.Get("x-api-key"))
	}
	if a := r.Header.Get("authorization"); a != "" {
		t.Errorf("authorization = %q; the key goes only in x-api-key", a)
	}
	if r.Header.Get("anthropic-version") == "" {
		t.Error("no anthropic-version header")
	}
	if r.Body["stream"] != true {
		t.Errorf("stream = %v, want true", r.Body["stream"])
	}
	if r.Body["max_tokens"] != float64(DefaultMaxTokens) {
		t.Errorf("max_tokens = %v, want the default %d", r.Body["max_tokens"], DefaultMaxTokens)
	}
	if r.Body["model"] != "claude-sonnet-4-5" {
		t.Errorf("model = %v", r.Body["model"])
	}
}

func TestStreamToolUse(t *testing.T) {
	t.Parallel()
	srv := anthropictest.NewServer(t, anthropictest.Turn{
		Text: "Let me look.",
		ToolCalls: []anthropictest.ToolCall{
			{ID: "toolu_read", Name: "Read", Input: `{"file_path": "dïr/a b.go", "offset": 10, "limit": [1, {"x": null}]}`},
			{ID: "toolu_ls", Name: "LS"}, // no input at all
		},
		Usage: anthropictest.Usage{InputTokens: 100, OutputTokens: 40},
	})
	p := newProvider(t, srv.URL(), Config{})
	var c collect
	resp, err := p.Stream(context.Background(), &model.Request{
		Model:    "claude-test",
		Messages: []model.Message{userText("read a")},
		Tools: []model.ToolSpec{
			{Name: "Read", Description: "Reads a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"]}`)},
			{Name: "LS", Description: "Lists.", InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
		},
	}, c.on)
	if err != nil {
		t.Fatal(err)
	}
	want := []model.Block{
		model.TextBlock("Let me look."),
		{Kind: model.KindToolUse, ID: "toolu_read", Name: "Read", Input: json.RawMessage(`{"file_path": "dïr/a b.go", "offset": 10, "limit": [1, {"x": null}]}`)},
		{Kind: model.KindToolUse, ID: "toolu_ls", Name: "LS", Input: json.RawMessage(`{}`)},
	}
	if diff := cmp.Diff(want, resp.Content); diff != "" {
		t.Errorf("content (-want +got):\n%s", diff)
	}
	if resp.StopReason != model.StopToolUse {
		t.Errorf("stop reason = %q", resp.StopReason)
	}
	var names []string
	for _, d := range c.deltas {
		if d.Kind == model.DeltaToolUse {
			names = append(names, d.Name)
		}
	}
	if diff := cmp.Diff([]string{"Read", "LS"}, names); diff != "" {
		t.Errorf("tool_use deltas (-want +got):\n%s", diff)
	}
}

func TestMultiTurnWithToolResult(t *testing.T) {
	t.Parallel()
	srv := anthropictest.NewServer(t,
		anthropictest.Turn{ToolCalls: []anthropictest.ToolCall{
			{ID: "toolu_1", Name: "Read", Input: `{"file_path":"a.png"}`},
			{ID: "toolu_2", Name: "Read", Input: `{"file_path":"missing"}`},
		}},
		anthropictest.Turn{Text: "Done."},
	)
	p := newProvider(t, srv.URL(), Config{})
	tools := []model.ToolSpec{{Name: "Read", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	msgs := []model.Message{userText("look at a.png")}
	resp, err := p.Stream(context.Background(), &model.Request{Model: "claude-test", Messages: msgs, Tools: tools}, nil)
	if err != nil {
		t.Fatal(err)
	}
	png := []byte("\x89PNG\r\n\x1a\nfake")
	msgs = append(msgs,
		model.Message{Role: model.RoleAssistant, Content: resp.Content},
		model.Message{Role: model.RoleUser, Content: []model.Block{
			{Kind: model.KindToolResult, ID: "toolu_1", Content: []model.Block{
				model.TextBlock("image follows"),
				{Kind: model.KindImage, MediaType: "image/png", Data: png},
			}},
			{Kind: model.KindToolResult, ID: "toolu_2", IsError: true, Content: []model.Block{model.TextBlock("no such file")}},
		}},
	)
	resp, err = p.Stream(context.Background(), &model.Request{Model: "claude-test", Messages: msgs, Tools: tools}, nil)
	if err != nil {
		t.Fatalf("second turn: %v", err)
	}
	if resp.Text() != "Done." {
		t.Errorf("text = %q", resp.Text())
	}

	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type      string          `json:"type"`
				ID        string          `json:"id"`
				Input     json.RawMessage `json:"input"`
				ToolUseID string          `json:"tool_use_id"`
				IsError   *bool           `json:"is_error"`
				Content   []struct {
					Type   string `json:"type"`
					Text   string `json:"text"`
					Source struct {
						Type      string `json:"type"`
						MediaType string `json:"media_type"`
						Data      string `json:"data"`
					} `json:"source"`
				} `json:"content"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := srv.Requests()[1].Decode(&body); err != nil {
		t.Fatal(err)
	}
	if len(body.Messages) != 3 {
		t.Fatalf("%d messages sent, want 3", len(body.Messages))
	}
	asst := body.Messages[1]
	if asst.Role != "assistant" || len(asst.Content) != 2 || asst.Content[0].Type != "tool_use" || asst.Content[0].ID != "toolu_1" {
		t.Errorf("assistant message = %+v", asst)
	}
	if string(asst.Content[0].Input) != `{"file_path":"a.png"}` {
		t.Errorf("tool input sent back = %s", asst.Content[0].Input)
	}
	results := body.Messages[2].Content
	if len(results) != 2 {
		t.Fatalf("%d tool results, want 2", len(results))
	}
	if r := results[0]; r.Type != "tool_result" || r.ToolUseID != "toolu_1" || r.IsError != nil {
		t.Errorf("first result = %+v; want tool_result for toolu_1 without is_error", r)
	}
	if c := results[0].Content; len(c) != 2 || c[0].Text != "image follows" || c[1].Type != "image" ||
		c[1].Source.Type != "base64" || c[1].Source.MediaType != "image/png" || c[1].Source.Data != base64.StdEncoding.EncodeToString(png) {
		t.Errorf("first result content = %+v", c)
	}
	if r := results[1]; r.ToolUseID != "toolu_2" || r.IsError == nil || !*r.IsError {
		t.Errorf("second result = %+v; want is_error true for toolu_2", r)
	}
}

func TestPromptCaching(t *testing.T) {
	t.Parallel()
	srv := anthropictest.NewServer(t, anthropictest.Turn{Text: "ok"})
	p := newProvider(t, srv.URL(), Config{})
	_, err := p.Stream(context.Background(), &model.Request{
		Model:  "claude-test",
		System: "You are careful.",
		Messages: []model.Message{
			userText("first"),
			{Role: model.RoleAssistant, Content: []model.Block{model.TextBlock("reply")}},
			{Role: model.RoleUser, Content: []model.Block{model.TextBlock("second"), model.TextBlock("third")}},
		},
		Tools: []model.ToolSpec{
			{Name: "A", InputSchema: json.RawMessage(`{"type":"object"}`)},
			{Name: "B", InputSchema: json.RawMessage(`{"type":"object"}`)},
			{Name: "C", InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"$defs":{"x":{"type":"string"}}}`)},
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		System []struct {
			Type         string         `json:"type"`
			Text         string         `json:"text"`
			CacheControl map[string]any `json:"cache_control"`
		} `json:"system"`
		Tools []struct {
			Name         string          `json:"name"`
			InputSchema  json.RawMessage `json:"input_schema"`
			CacheControl map[string]any  `json:"cache_control"`
		} `json:"tools"`
		Messages []struct {
			Content []struct {
				CacheControl map[string]any `json:"cache_control"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := srv.Requests()[0].Decode(&body); err != nil {
		t.Fatal(err)
	}
	ephemeral := map[string]any{"type": "ephemeral"}
	if len(body.System) != 1 || body.System[0].Text != "You are careful." || !cmp.Equal(body.System[0].CacheControl, ephemeral) {
		t.Errorf("system = %+v; want one text block with cache_control ephemeral", body.System)
	}
	for i, tool := range body.Tools {
		want := map[string]any(nil)
		if i == len(body.Tools)-1 {
			want = ephemeral
		}
		if !cmp.Equal(tool.CacheControl, want) {
			t.Errorf("tool %s cache_control = %v, want %v", tool.Name, tool.CacheControl, want)
		}
	}
	if got := string(body.Tools[2].InputSchema); got != `{"type":"object","additionalProperties":false,"$defs":{"x":{"type":"string"}}}` {
		t.Errorf("schema sent as %s; want it unchanged", got)
	}
	var marked []int
	for i, m := range body.Messages {
		for j, b := range m.Content {
			if b.CacheControl != nil {
				marked = append(marked, i*10+j)
			}
		}
	}
	if diff := cmp.Diff([]int{21}, marked); diff != "" {
		t.Errorf("message blocks with cache_control (10*message+block) (-want +got):\n%s", diff)
	}
}

func TestUsageWithCache(t *testing.T) {
	t.Parallel()
	srv := anthropictest.NewServer(t,
		anthropictest.Turn{Text: "one", Usage: anthropictest.Usage{InputTokens: 5, OutputTokens: 7, CacheCreationInputTokens: 4000}},
		anthropictest.Turn{Text: "two", Usage: anthropictest.Usage{InputTokens: 9, OutputTokens: 11, CacheReadInputTokens: 4000, CacheCreationInputTokens: 20}},
	)
	p := newProvider(t, srv.URL(), Config{})
	var total model.Usage
	want := []model.Usage{
		{InputTokens: 5, OutputTokens: 7, CacheWriteTokens: 4000},
		{InputTokens: 9, OutputTokens: 11, CacheReadTokens: 4000, CacheWriteTokens: 20},
	}
	for i := range want {
		resp, err := p.Stream(context.Background(), &model.Request{Model: "claude-test", Messages: []model.Message{userText("q")}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want[i], resp.Usage); diff != "" {
			t.Errorf("turn %d usage (-want +got):\n%s", i, diff)
		}
		total = total.Add(resp.Usage)
	}
	if diff := cmp.Diff(model.Usage{InputTokens: 14, OutputTokens: 18, CacheReadTokens: 4000, CacheWriteTokens: 4020}, total); diff != "" {
		t.Errorf("total usage (-want +got):\n%s", diff)
	}
}

func TestRetries(t *testing.T) {
	t.Parallel()
	ok := anthropictest.Turn{Text: "fine"}
	tests := []struct {
		name       string
		maxRetries int
		turns      []anthropictest.Turn
		wantCode   string // "" means success
		wantCalls  int
	}{
		{"429 then success", 0, []anthropictest.Turn{{Status: 429}, ok}, "", 2},
		{"429 with retry-after-ms then success", 0, []anthropictest.Turn{{Status: 429, Header: http.Header{"Retry-After-Ms": {"1"}}}, ok}, "", 2},
		{"500 then 529 then success", 0, []anthropictest.Turn{{Status: 500, Header: http.Header{"Retry-After": {"0"}}}, {Status: 529}, ok}, "", 3},
		{"529 repeatedly", 2, []anthropictest.Turn{{Status: 529}, {Status: 529}, {Status: 529}}, model.CodeOverloaded, 3},
		{"429 repeatedly", 1, []anthropictest.Turn{{Status: 429}, {Status: 429}}, model.CodeRateLimited, 2},
		{"retries off", -1, []anthropictest.Turn{{Status: 529}}, model.CodeOverloaded, 1},
		{"401 is not retried", 0, []anthropictest.Turn{{Status: 401}}, model.CodeAuth, 1},
		{"403 is not retried", 0, []anthropictest.Turn{{Status: 403}}, model.CodeAuth, 1},
		{"404 is not retried", 0, []anthropictest.Turn{{Status: 404, ErrorMessage: "model: claude-nope"}}, model.CodeNotFound, 1},
		{"400 is not retried", 0, []anthropictest.Turn{{Status: 400, ErrorMessage: "messages.0.content: bad"}}, model.CodeBadRequest, 1},
		{"prompt too long", 0, []anthropictest.Turn{{Status: 400, ErrorMessage: "prompt is too long: 208000 tokens > 200000 maximum"}}, model.CodeContextTooLong, 1},
		{"413 request too large", 0, []anthropictest.Turn{{Status: 413}}, model.CodeContextTooLong, 1},
		{"error event before any delta is retried", 0, []anthropictest.Turn{{Fault: anthropictest.FaultErrorEvent}, ok}, "", 2},
		{"error event repeatedly", 1, []anthropictest.Turn{{Fault: anthropictest.FaultErrorEvent}, {Fault: anthropictest.FaultErrorEvent}}, model.CodeOverloaded, 2},
		{"rate limit error event", -1, []anthropictest.Turn{{Fault: anthropictest.FaultErrorEvent, ErrorType: "rate_limit_error"}}, model.CodeRateLimited, 1},
		{"invalid request error event", 0, []anthropictest.Turn{{Fault: anthropictest.FaultErrorEvent, ErrorType: "invalid_request_error"}}, model.CodeMalformedStream, 1},
		{"malformed stream is not retried", 0, []anthropictest.Turn{{Text: "x", Fault: anthropictest.FaultMalformed}}, model.CodeMalformedStream, 1},
		{"truncated stream is retried", 0, []anthropictest.Turn{{Text: "hello there", Fault: anthropictest.FaultTruncated}, ok}, "", 2},
		{"truncated stream repeatedly", 1, []anthropictest.Turn{{Text: "hello", Fault: anthropictest.FaultTruncated}, {Text: "hello", Fault: anthropictest.FaultTruncated}}, model.CodeMalformedStream, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := anthropictest.NewServer(t, tt.turns...)
			p := newProvider(t, srv.URL(), Config{MaxRetries: tt.maxRetries})
			resp, err := p.Stream(context.Background(), &model.Request{Model: "claude-test", Messages: []model.Message{userText("hi")}}, nil)
			if tt.wantCode == "" {
				if err != nil {
					t.Fatalf("Stream: %v", err)
				}
				if resp.Text() != "fine" {
					t.Errorf("text = %q", resp.Text())
				}
			} else {
				if err == nil {
					t.Fatalf("Stream succeeded with %+v; want %s", resp, tt.wantCode)
				}
				if code := codeOf(t, err); code != tt.wantCode {
					t.Errorf("code = %q (%v), want %q", code, err, tt.wantCode)
				}
			}
			if n := srv.RequestCount(); n != tt.wantCalls {
				t.Errorf("%d requests, want %d", n, tt.wantCalls)
			}
		})
	}
}

func TestErrorMessagesAreActionable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		turn anthropictest.Turn
		want []string
	}{
		{anthropictest.Turn{Status: 401, ErrorMessage: "invalid x-api-key"}, []string{"ANTHROPIC_API_KEY", "invalid x-api-key"}},
		{anthropictest.Turn{Status: 404, ErrorMessage: "model: claude-nope"}, []string{`"claude-nope"`, "model name", "claude-sonnet-4-5", "sonnet, opus, haiku"}},
		{anthropictest.Turn{Status: 400, ErrorMessage: "prompt is too long: 208000 tokens > 200000 maximum"}, []string{"208000 tokens", "shorten"}},
		{anthropictest.Turn{Status: 529}, []string{"overloaded", "try again"}},
	}
	for _, tt := range tests {
		srv := anthropictest.NewServer(t, tt.turn)
		p := newProvider(t, srv.URL(), Config{MaxRetries: -1})
		_, err := p.Stream(context.Background(), &model.Request{Model: "claude-nope", Messages: []model.Message{userText("hi")}}, nil)
		if err == nil {
			t.Fatalf("status %d: no error", tt.turn.Status)
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("status %d: message %q lacks %q", tt.turn.Status, err, w)
			}
		}
	}
}

func TestCancelStalledStream(t *testing.T) {
	t.Parallel()
	srv := anthropictest.NewServer(t, anthropictest.Turn{Fault: anthropictest.FaultStall})
	headers := make(chan struct{})
	base := testClient(t).Transport
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		res, err := base.RoundTrip(r)
		close(headers)
		return res, err
	})}
	p := newProvider(t, srv.URL(), Config{HTTPClient: hc})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-headers
		cancel()
	}()
	done := make(chan error, 1)
	go func() {
		_, err := p.Stream(ctx, &model.Request{Model: "claude-test", Messages: []model.Message{userText("hi")}}, nil)
		done <- err
	}()
	select {
	case err := <-done:
		if code := codeOf(t, err); code != model.CodeCancelled {
			t.Errorf("code = %q (%v), want %q", code, err, model.CodeCancelled)
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error %v does not wrap context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Stream did not return after its context was cancelled")
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestCancelledBeforeStart(t *testing.T) {
	t.Parallel()
	srv := anthropictest.NewServer(t)
	p := newProvider(t, srv.URL(), Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.Stream(ctx, &model.Request{Model: "claude-test", Messages: []model.Message{userText("hi")}}, nil)
	if code := codeOf(t, err); code != model.CodeCancelled || !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v; want model.cancelled wrapping context.Canceled", err)
	}
	if n := srv.RequestCount(); n != 0 {
		t.Errorf("%d requests sent for a cancelled call", n)
	}
}

func TestIdleStreamFails(t *testing.T) {
	t.Parallel()
	srv := anthropictest.NewServer(t, anthropictest.Turn{Fault: anthropictest.FaultStall})
	p := newProvider(t, srv.URL(), Config{MaxRetries: -1, IdleTimeout: 20 * time.Millisecond})
	_, err := p.Stream(context.Background(), &model.Request{Model: "claude-test", Messages: []model.Message{userText("hi")}}, nil)
	if code := codeOf(t, err); code != model.CodeNetwork {
		t.Errorf("code = %q (%v), want %q", code, err, model.CodeNetwork)
	}
}

func TestConnectionRefused(t *testing.T) {
	t.Parallel()
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close()
	p := newProvider(t, url, Config{MaxRetries: -1})
	_, err := p.Stream(context.Background(), &model.Request{Model: "claude-test", Messages: []model.Message{userText("hi")}}, nil)
	if code := codeOf(t, err); code != model.CodeNetwork {
		t.Errorf("code = %q (%v), want %q", code, err, model.CodeNetwork)
	}
	if !strings.Contains(err.Error(), "ANTHROPIC_BASE_URL") {
		t.Errorf("message %q does not point at ANTHROPIC_BASE_URL", err)
	}
}

func TestImageSentAsBase64(t *testing.T) {
	t.Parallel()
	srv := anthropictest.NewServer(t, anthropictest.Turn{Text: "a cat"})
	p := newProvider(t, srv.URL(), Config{})
	img := []byte{0xff, 0xd8, 0xff, 0xe0, 0, 1, 2, 3, 250}
	_, err := p.Stream(context.Background(), &model.Request{Model: "claude-test", Messages: []model.Message{{
		Role: model.RoleUser,
		Content: []model.Block{
			{Kind: model.KindImage, MediaType: "image/jpeg", Data: img},
			model.TextBlock("what is this?"),
		},
	}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Messages []struct {
			Content []struct {
				Type   string         `json:"type"`
				Source map[string]any `json:"source"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := srv.Requests()[0].Decode(&body); err != nil {
		t.Fatal(err)
	}
	got := body.Messages[0].Content[0]
	want := map[string]any{"type": "base64", "media_type": "image/jpeg", "data": base64.StdEncoding.EncodeToString(img)}
	if got.Type != "image" || !cmp.Equal(got.Source, want) {
		t.Errorf("image block = %+v; want source %v", got, want)
	}
}

func TestRequestTranslation(t *testing.T) {
	t.Parallel()
	srv := anthropictest.NewServer(t, anthropictest.Turn{Text: "ok"})
	p := newProvider(t, srv.URL(), Config{})
	_, err := p.Stream(context.Background(), &model.Request{
		Model:     "claude-test",
		MaxTokens: 123,
		Messages: []model.Message{
			userText("q"),
			{Role: model.RoleAssistant, Content: []model.Block{
				{Kind: model.KindThinking, Text: "hmm", Signature: "sig-1"},
				{Kind: model.KindThinking, Text: "unsigned, from elsewhere"},
				model.TextBlock(""),
				{Kind: model.KindToolUse, ID: "toolu_x", Name: "LS"},
			}},
			{Role: model.RoleUser, Content: []model.Block{{Kind: model.KindToolResult, ID: "toolu_x"}}},
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		MaxTokens int `json:"max_tokens"`
		Messages  []struct {
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	if err := srv.Requests()[0].Decode(&body); err != nil {
		t.Fatal(err)
	}
	if body.MaxTokens != 123 {
		t.Errorf("max_tokens = %d, want 123", body.MaxTokens)
	}
	want := []map[string]any{
		{"type": "thinking", "thinking": "hmm", "signature": "sig-1"},
		{"type": "tool_use", "id": "toolu_x", "name": "LS", "input": map[string]any{}},
	}
	if diff := cmp.Diff(want, body.Messages[1].Content); diff != "" {
		t.Errorf("assistant content (-want +got):\n%s", diff)
	}
	result := body.Messages[2].Content[0]
	if result["type"] != "tool_result" || result["tool_use_id"] != "toolu_x" || result["is_error"] != nil {
		t.Errorf("tool result = %v", result)
	}
}

func TestRequestRefusedBeforeSending(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  *model.Request
	}{
		{"nil request", nil},
		{"negative max tokens", &model.Request{Model: "m", MaxTokens: -1, Messages: []model.Message{userText("q")}}},
		{"unknown role", &model.Request{Model: "m", Messages: []model.Message{{Role: "system", Content: []model.Block{model.TextBlock("x")}}}}},
		{"unknown block kind", &model.Request{Model: "m", Messages: []model.Message{{Role: model.RoleUser, Content: []model.Block{{Kind: "audio"}}}}}},
		{"tool input not JSON", &model.Request{Model: "m", Messages: []model.Message{
			userText("q"),
			{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.KindToolUse, ID: "t", Name: "X", Input: json.RawMessage(`{"a":`)}}},
		}}},
		{"tool input not an object", &model.Request{Model: "m", Messages: []model.Message{
			userText("q"),
			{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.KindToolUse, ID: "t", Name: "X", Input: json.RawMessage(`[1]`)}}},
		}}},
		{"image without data", &model.Request{Model: "m", Messages: []model.Message{{Role: model.RoleUser, Content: []model.Block{{Kind: model.KindImage, MediaType: "image/png"}}}}}},
		{"tool result with a tool_use inside", &model.Request{Model: "m", Messages: []model.Message{{Role: model.RoleUser, Content: []model.Block{
			{Kind: model.KindToolResult, ID: "t", Content: []model.Block{{Kind: model.KindToolUse}}},
		}}}}},
		{"schema not JSON", &model.Request{Model: "m", Messages: []model.Message{userText("q")}, Tools: []model.ToolSpec{{Name: "X", InputSchema: json.RawMessage(`{`)}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := anthropictest.NewServer(t)
			p := newProvider(t, srv.URL(), Config{})
			_, err := p.Stream(context.Background(), tt.req, nil)
			if code := codeOf(t, err); code != model.CodeBadRequest {
				t.Errorf("code = %q (%v), want %q", code, err, model.CodeBadRequest)
			}
			if n := srv.RequestCount(); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}

// TestFakeServerCatchesBadConversation checks that a conversation the API would refuse
// fails as the API's 400, unretried, rather than passing silently.
func TestFakeServerCatchesBadConversation(t *testing.T) {
	t.Parallel()
	srv := anthropictest.NewServer(t)
	p := newProvider(t, srv.URL(), Config{})
	_, err := p.Stream(context.Background(), &model.Request{Model: "claude-test", Messages: []model.Message{
		userText("q"),
		{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.KindToolUse, ID: "toolu_lost", Name: "LS"}}},
		userText("forgot the result"),
	}}, nil)
	if code := codeOf(t, err); code != model.CodeBadRequest {
		t.Fatalf("code = %q (%v), want %q", code, err, model.CodeBadRequest)
	}
	if !strings.Contains(err.Error(), "toolu_lost") {
		t.Errorf("message %q does not name the unanswered tool_use", err)
	}
	if n := srv.RequestCount(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// Every retry is announced to the context's observer before its wait, with the status
// that caused it and the wait the SDK then keeps (the server's retry-after-ms here).
func TestRetriesAreObserved(t *testing.T) {
	t.Parallel()
	srv := anthropictest.NewServer(t,
		anthropictest.Turn{Status: 529, Header: http.Header{"Retry-After-Ms": {"20"}}},
		anthropictest.Turn{Status: 500},
		anthropictest.Turn{Text: "hello there", Fault: anthropictest.FaultTruncated},
		anthropictest.Turn{Text: "fine"})
	p := newProvider(t, srv.URL(), Config{})
	p.backoff = func(int) time.Duration { return 7 * time.Millisecond }
	var seen []model.Retry
	ctx := model.WithRetryObserver(context.Background(), func(r model.Retry) { seen = append(seen, r) })
	if _, err := p.Stream(ctx, &model.Request{Model: "claude-test", Messages: []model.Message{userText("hi")}}, nil); err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if len(seen) != 3 {
		t.Fatalf("observed %+v, want three retries", seen)
	}
	if r := seen[0]; r.Attempt != 1 || r.Status != 529 || r.Wait != 20*time.Millisecond {
		t.Errorf("first retry %+v, want attempt 1 after HTTP 529, waiting the advised 20ms", r)
	}
	if r := seen[1]; r.Attempt != 2 || r.Status != 500 || r.Wait != 7*time.Millisecond {
		t.Errorf("second retry %+v, want attempt 2 after HTTP 500, waiting the backoff", r)
	}
	if r := seen[2]; r.Attempt != 3 || r.Status != 0 || r.Reason != "the response broke off" {
		t.Errorf("third retry %+v, want the broken stream", r)
	}
}
