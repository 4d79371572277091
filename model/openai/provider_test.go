package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/openai"
	"github.com/sema-agent/sema/model/openai/openaitest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newProvider returns a provider for a compatible server at base, with no key.
func newProvider(t *testing.T, base string, mod ...func(*openai.Config)) *openai.Provider {
	t.Helper()
	cfg := openai.Config{BaseURL: base}
	for _, f := range mod {
		f(&cfg)
	}
	p, err := openai.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	openai.SetBackoff(p, func(int) time.Duration { return 0 })
	return p
}

func userText(s string) model.Message {
	return model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock(s)}}
}

func simpleRequest() *model.Request {
	return &model.Request{Model: "gpt-test", System: "Be brief.", Messages: []model.Message{userText("hello")}}
}

// recorder collects deltas; onDelta may be called from the Stream goroutine only, but
// the lock keeps the race detector honest if that ever changes.
type recorder struct {
	mu     sync.Mutex
	deltas []model.Delta
}

func (r *recorder) on(d model.Delta) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deltas = append(r.deltas, d)
}

func (r *recorder) text(kind model.DeltaKind) (string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	n := 0
	for _, d := range r.deltas {
		if d.Kind == kind {
			b.WriteString(d.Text)
			n++
		}
	}
	return b.String(), n
}

func (r *recorder) toolNames() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var names []string
	for _, d := range r.deltas {
		if d.Kind == model.DeltaToolUse {
			names = append(names, d.Name)
		}
	}
	return names
}

func wantCode(t *testing.T, err error, code string) *sema.Error {
	t.Helper()
	var se *sema.Error
	if !errors.As(err, &se) {
		t.Fatalf("error = %v (%T), want a *sema.Error with code %s", err, err, code)
	}
	if se.Code != code {
		t.Fatalf("code = %s (%s), want %s", se.Code, se.Message, code)
	}
	if se.Message == "" || strings.Contains(se.Message, "\n") {
		t.Errorf("message %q is not one line", se.Message)
	}
	return se
}

func TestStreamText(t *testing.T) {
	t.Parallel()
	const text = "Hello there, this answer arrives in many small pieces — ünïcödé too."
	s := openaitest.NewServer(t, openaitest.Turn{Text: text, Model: "gpt-test-2025"})
	p := newProvider(t, s.URL())
	var rec recorder
	resp, err := p.Stream(context.Background(), simpleRequest(), rec.on)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Text(); got != text {
		t.Errorf("text = %q, want %q", got, text)
	}
	if resp.StopReason != model.StopEndTurn {
		t.Errorf("stop = %s, want end_turn", resp.StopReason)
	}
	if resp.Model != "gpt-test-2025" {
		t.Errorf("model = %q, want the model the server named", resp.Model)
	}
	if len(resp.ToolCalls()) != 0 {
		t.Errorf("unexpected tool calls %v", resp.ToolCalls())
	}
	streamed, n := rec.text(model.DeltaText)
	if streamed != text || n < 2 {
		t.Errorf("deltas = %q in %d pieces, want the text in several pieces", streamed, n)
	}

	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("requests = %d, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Path != "/v1/chat/completions" {
		t.Errorf("path = %s", r.Path)
	}
	if h := r.Header.Get("Authorization"); h != "" {
		t.Errorf("Authorization = %q, want none for a compatible server without a key", h)
	}
	chat := r.Chat()
	if !chat.Stream || chat.StreamOptions == nil || !chat.StreamOptions.IncludeUsage {
		t.Errorf("stream = %v, stream_options = %+v; want streaming with usage", chat.Stream, chat.StreamOptions)
	}
	if chat.MaxTokens == nil || *chat.MaxTokens != openai.DefaultMaxTokens || chat.MaxCompletionTokens != nil {
		t.Errorf("max_tokens = %v, max_completion_tokens = %v; want max_tokens %d for a compatible server", chat.MaxTokens, chat.MaxCompletionTokens, openai.DefaultMaxTokens)
	}
	if len(chat.Messages) != 2 || chat.Messages[0].Role != "system" || chat.Messages[0].Text() != "Be brief." ||
		chat.Messages[1].Role != "user" || !chat.Messages[1].IsString() || chat.Messages[1].Text() != "hello" {
		t.Errorf("messages = %+v", chat.Messages)
	}
	if chat.Model != "gpt-test" {
		t.Errorf("model = %q", chat.Model)
	}
}

func TestToolCalls(t *testing.T) {
	t.Parallel()
	readCall := openaitest.ToolCall{ID: "call_read", Name: "Read", Arguments: `{"file_path":"/tmp/ä.txt","limit":20}`}
	globCall := openaitest.ToolCall{ID: "call_glob", Name: "Glob", Arguments: `{"pattern":"**/*.go"}`}
	want := []model.Block{
		{Kind: model.KindToolUse, ID: "call_read", Name: "Read", Input: json.RawMessage(readCall.Arguments)},
		{Kind: model.KindToolUse, ID: "call_glob", Name: "Glob", Input: json.RawMessage(globCall.Arguments)},
	}
	tests := []struct {
		name string
		turn openaitest.Turn
		want []model.Block
		// generatedIDs: the server sent no ids; compare without them.
		generatedIDs bool
	}{
		{"one call, split arguments", openaitest.Turn{ToolCalls: []openaitest.ToolCall{readCall}}, want[:1], false},
		{"text then two parallel calls", openaitest.Turn{Text: "Let me look.", ToolCalls: []openaitest.ToolCall{readCall, globCall}}, want, false},
		{"whole calls in one chunk", openaitest.Turn{WholeToolCalls: true, ToolCalls: []openaitest.ToolCall{readCall, globCall}}, want, false},
		{"whole calls without index", openaitest.Turn{WholeToolCalls: true, OmitToolCallIndex: true, ToolCalls: []openaitest.ToolCall{readCall, globCall}}, want, false},
		{"split calls without index", openaitest.Turn{OmitToolCallIndex: true, ToolCalls: []openaitest.ToolCall{readCall, globCall}}, want, false},
		{"id repeated on every delta", openaitest.Turn{RepeatToolCallID: true, ToolCalls: []openaitest.ToolCall{readCall, globCall}}, want, false},
		{"no ids", openaitest.Turn{OmitToolCallID: true, ToolCalls: []openaitest.ToolCall{readCall, globCall}}, want, true},
		{"no ids, no index, whole", openaitest.Turn{OmitToolCallID: true, OmitToolCallIndex: true, WholeToolCalls: true, ToolCalls: []openaitest.ToolCall{readCall, globCall}}, want, true},
		{"finish_reason stop with calls", openaitest.Turn{FinishReason: "stop", ToolCalls: []openaitest.ToolCall{readCall}}, want[:1], false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := openaitest.NewServer(t, tt.turn)
			p := newProvider(t, s.URL())
			var rec recorder
			resp, err := p.Stream(context.Background(), simpleRequest(), rec.on)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StopReason != model.StopToolUse {
				t.Errorf("stop = %s, want tool_use", resp.StopReason)
			}
			got := resp.ToolCalls()
			opts := []cmp.Option{}
			if tt.generatedIDs {
				seen := map[string]bool{}
				for _, c := range got {
					if !strings.HasPrefix(c.ID, "call_") || len(c.ID) < 10 || seen[c.ID] {
						t.Errorf("generated id %q is not a fresh call_ id", c.ID)
					}
					seen[c.ID] = true
				}
				opts = append(opts, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".ID" }, cmp.Ignore()))
			}
			if d := cmp.Diff(tt.want, got, opts...); d != "" {
				t.Errorf("tool calls (-want +got):\n%s", d)
			}
			var wantNames []string
			for _, c := range tt.want {
				wantNames = append(wantNames, c.Name)
			}
			if d := cmp.Diff(wantNames, rec.toolNames()); d != "" {
				t.Errorf("tool_use deltas (-want +got):\n%s", d)
			}
			if tt.turn.Text != "" && resp.Text() != tt.turn.Text {
				t.Errorf("text = %q, want %q", resp.Text(), tt.turn.Text)
			}
		})
	}
}

func TestToolArguments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args string
		want string
	}{
		{"empty", "", `{}`},
		{"blank", "  ", `{}`},
		{"object", `{"a":[1,2]}`, `{"a":[1,2]}`},
		{"not an object but JSON", `[1,2]`, `[1,2]`},
		{"invalid JSON", `{"file_path": "/x`, `"{\"file_path\": \"/x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := openaitest.NewServer(t, openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "Read", Arguments: tt.args}}})
			resp, err := newProvider(t, s.URL()).Stream(context.Background(), simpleRequest(), nil)
			if err != nil {
				t.Fatal(err)
			}
			calls := resp.ToolCalls()
			if len(calls) != 1 {
				t.Fatalf("calls = %v", calls)
			}
			if string(calls[0].Input) != tt.want {
				t.Errorf("input = %s, want %s", calls[0].Input, tt.want)
			}
			if !json.Valid(calls[0].Input) {
				t.Errorf("input %s is not valid JSON", calls[0].Input)
			}
			// The transcript must survive a JSON round trip.
			if _, err := json.Marshal(resp); err != nil {
				t.Errorf("response does not marshal: %v", err)
			}
		})
	}
}

func TestMultiTurnToolResults(t *testing.T) {
	t.Parallel()
	s := openaitest.NewServer(t, openaitest.Turn{Text: "Both files are small."})
	p := newProvider(t, s.URL())
	png := []byte{0x89, 'P', 'N', 'G', 1, 2, 3}
	req := &model.Request{
		Model:  "gpt-test",
		System: "sys",
		Tools: []model.ToolSpec{{Name: "Read", Description: "Reads a file.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"},"limit":{"type":"integer","maximum":9007199254740993}},"required":["file_path"]}`)}},
		Messages: []model.Message{
			{Role: model.RoleUser, Content: []model.Block{
				model.TextBlock("Look at these"),
				{Kind: model.KindImage, MediaType: "image/png", Data: png},
			}},
			{Role: model.RoleAssistant, Content: []model.Block{
				{Kind: model.KindThinking, Text: "private", Signature: "sig"},
				model.TextBlock("Reading both."),
				{Kind: model.KindToolUse, ID: "call_1", Name: "Read", Input: json.RawMessage(`{"file_path":"a"}`)},
				{Kind: model.KindToolUse, ID: "call_2", Name: "Read", Input: json.RawMessage(`{"file_path":"b"}`)},
			}},
			{Role: model.RoleUser, Content: []model.Block{
				model.TextBlock("and then summarize"),
				{Kind: model.KindToolResult, ID: "call_1", Content: []model.Block{model.TextBlock("1\tpackage a"), {Kind: model.KindImage, MediaType: "image/png", Data: png}}},
				{Kind: model.KindToolResult, ID: "call_2", IsError: true, Content: []model.Block{model.TextBlock("no such file")}},
			}},
			{Role: model.RoleAssistant, Content: []model.Block{
				{Kind: model.KindToolUse, ID: "call_3", Name: "Read", Input: nil},
			}},
			{Role: model.RoleUser, Content: []model.Block{
				{Kind: model.KindToolResult, ID: "call_3", Content: []model.Block{model.TextBlock("ok")}},
			}},
		},
	}
	resp, err := p.Stream(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text() != "Both files are small." {
		t.Errorf("text = %q", resp.Text())
	}
	chat := s.Requests()[0].Chat()
	type msg struct {
		Role, Text, ToolCallID string
		Calls                  []string
	}
	var got []msg
	for _, m := range chat.Messages {
		g := msg{Role: m.Role, Text: m.Text(), ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			g.Calls = append(g.Calls, c.ID+" "+c.Type+" "+c.Function.Name+" "+c.Function.Arguments)
		}
		got = append(got, g)
	}
	want := []msg{
		{Role: "system", Text: "sys"},
		{Role: "user", Text: "Look at these"},
		{Role: "assistant", Text: "Reading both.", Calls: []string{`call_1 function Read {"file_path":"a"}`, `call_2 function Read {"file_path":"b"}`}},
		{Role: "tool", ToolCallID: "call_1", Text: "1\tpackage a\n[image omitted]"},
		{Role: "tool", ToolCallID: "call_2", Text: "Error: no such file"},
		{Role: "user", Text: "and then summarize"},
		{Role: "assistant", Calls: []string{`call_3 function Read {}`}},
		{Role: "tool", ToolCallID: "call_3", Text: "ok"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("messages (-want +got):\n%s", d)
	}
	parts := chat.Messages[1].Parts()
	if len(parts) != 2 || parts[1].Type != "image_url" || parts[1].ImageURL.URL != "data:image/png;base64,iVBORwECAw==" {
		t.Errorf("user parts = %+v, want text and a PNG data URL", parts)
	}
	if strings.Contains(string(s.Requests()[0].Raw), "private") {
		t.Error("a thinking block was sent")
	}
	if c := chat.Messages[6].Content; len(c) != 0 && string(c) != "null" {
		t.Errorf("assistant content with only tool calls = %s, want absent", c)
	}
	if len(chat.Tools) != 1 || chat.Tools[0].Type != "function" || chat.Tools[0].Function.Name != "Read" ||
		chat.Tools[0].Function.Description != "Reads a file." {
		t.Fatalf("tools = %+v", chat.Tools)
	}
	// The schema reaches the server unchanged, big integers included.
	var gotSchema, wantSchema any
	dec := json.NewDecoder(strings.NewReader(string(chat.Tools[0].Function.Parameters)))
	dec.UseNumber()
	_ = dec.Decode(&gotSchema)
	dec = json.NewDecoder(strings.NewReader(string(req.Tools[0].InputSchema)))
	dec.UseNumber()
	_ = dec.Decode(&wantSchema)
	if d := cmp.Diff(wantSchema, gotSchema); d != "" {
		t.Errorf("schema (-want +got):\n%s", d)
	}
}

func TestUnansweredToolCallIsRefused(t *testing.T) {
	t.Parallel()
	s := openaitest.NewServer(t, openaitest.Turn{Text: "unused"})
	req := &model.Request{Model: "gpt-test", Messages: []model.Message{
		userText("hi"),
		{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.KindToolUse, ID: "call_9", Name: "LS", Input: json.RawMessage(`{}`)}}},
		userText("never mind"),
	}}
	_, err := newProvider(t, s.URL()).Stream(context.Background(), req, nil)
	se := wantCode(t, err, model.CodeBadRequest)
	if !strings.Contains(se.Message, "call_9") {
		t.Errorf("message %q does not carry the server's reason", se.Message)
	}
	if n := s.RequestCount(); n != 1 {
		t.Errorf("requests = %d, want 1 (no retry of a 400)", n)
	}
	if s.Remaining() != 1 {
		t.Error("a refused request consumed a turn")
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		u    openaitest.Usage
		want model.Usage
	}{
		{"plain", openaitest.Usage{PromptTokens: 120, CompletionTokens: 7}, model.Usage{InputTokens: 120, OutputTokens: 7}},
		{"cached", openaitest.Usage{PromptTokens: 2006, CompletionTokens: 300, CachedTokens: 1920}, model.Usage{InputTokens: 86, OutputTokens: 300, CacheReadTokens: 1920}},
		{"cache write", openaitest.Usage{PromptTokens: 3000, CompletionTokens: 5, CachedTokens: 1024, CacheWriteTokens: 1500}, model.Usage{InputTokens: 476, OutputTokens: 5, CacheReadTokens: 1024, CacheWriteTokens: 1500}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := openaitest.NewServer(t, openaitest.Turn{Text: "ok", Usage: tt.u})
			resp, err := newProvider(t, s.URL()).Stream(context.Background(), simpleRequest(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, resp.Usage); d != "" {
				t.Errorf("usage (-want +got):\n%s", d)
			}
		})
	}
}

func TestStopReasons(t *testing.T) {
	t.Parallel()
	tests := []struct {
		finish string
		want   model.StopReason
	}{
		{"stop", model.StopEndTurn},
		{"length", model.StopMaxTokens},
		{"content_filter", model.StopRefusal},
		{"eos", model.StopEndTurn},
	}
	for _, tt := range tests {
		t.Run(tt.finish, func(t *testing.T) {
			t.Parallel()
			s := openaitest.NewServer(t, openaitest.Turn{Text: "partial answer", FinishReason: tt.finish})
			resp, err := newProvider(t, s.URL()).Stream(context.Background(), simpleRequest(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StopReason != tt.want {
				t.Errorf("stop = %s, want %s", resp.StopReason, tt.want)
			}
		})
	}
}

func TestReasoningBecomesThinking(t *testing.T) {
	t.Parallel()
	s := openaitest.NewServer(t, openaitest.Turn{Reasoning: "The user greets; answer briefly.", Text: "Hi!"})
	var rec recorder
	resp, err := newProvider(t, s.URL()).Stream(context.Background(), simpleRequest(), rec.on)
	if err != nil {
		t.Fatal(err)
	}
	want := []model.Block{{Kind: model.KindThinking, Text: "The user greets; answer briefly."}, model.TextBlock("Hi!")}
	if d := cmp.Diff(want, resp.Content); d != "" {
		t.Errorf("content (-want +got):\n%s", d)
	}
	if got, _ := rec.text(model.DeltaThinking); got != "The user greets; answer briefly." {
		t.Errorf("thinking deltas = %q", got)
	}
}

func TestRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		turns    []openaitest.Turn
		retries  int
		code     string // "" means success
		requests int
	}{
		{"429 then success", []openaitest.Turn{{Status: 429}, {Text: "ok"}}, 0, "", 2},
		{"500 then 503 then success", []openaitest.Turn{{Status: 500}, {Status: 503}, {Text: "ok"}}, 0, "", 3},
		{"429 until retries run out", []openaitest.Turn{{Status: 429}, {Status: 429}, {Status: 429}}, 0, model.CodeRateLimited, 3},
		{"502 until retries run out", []openaitest.Turn{{Status: 502}, {Status: 502}}, 1, model.CodeOverloaded, 2},
		{"no retries", []openaitest.Turn{{Status: 429}}, -1, model.CodeRateLimited, 1},
		{"quota exhausted", []openaitest.Turn{{Status: 429, ErrorType: "insufficient_quota", ErrorCode: "insufficient_quota", ErrorMessage: "You exceeded your current quota."}}, -1, model.CodeRateLimited, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := openaitest.NewServer(t, tt.turns...)
			p := newProvider(t, s.URL(), func(c *openai.Config) { c.MaxRetries = tt.retries })
			resp, err := p.Stream(context.Background(), simpleRequest(), nil)
			if tt.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				if resp.Text() != "ok" {
					t.Errorf("text = %q", resp.Text())
				}
			} else {
				se := wantCode(t, err, tt.code)
				if se.Detail["attempts"] != tt.requests {
					t.Errorf("detail attempts = %v, want %d", se.Detail["attempts"], tt.requests)
				}
			}
			if n := s.RequestCount(); n != tt.requests {
				t.Errorf("requests = %d, want %d", n, tt.requests)
			}
		})
	}
}

func TestHTTPErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		turn    openaitest.Turn
		code    string
		mention string
	}{
		{"401 invalid key", openaitest.Turn{Status: 401}, model.CodeAuth, "OPENAI_API_KEY"},
		{"403 forbidden", openaitest.Turn{Status: 403, ErrorType: "invalid_request_error", ErrorMessage: "Project does not have access."}, model.CodeAuth, "Project does not have access"},
		{"404 model not found", openaitest.Turn{Status: 404}, model.CodeNotFound, "gpt-test"},
		{"model_not_found with 400", openaitest.Turn{Status: 400, ErrorCode: "model_not_found", ErrorMessage: "The model `gpt-test` does not exist."}, model.CodeNotFound, "gpt-test"},
		{"context too long", openaitest.ContextTooLong(), model.CodeContextTooLong, "maximum context length"},
		{"vLLM context message", openaitest.Turn{Status: 400, ErrorType: "BadRequestError", ErrorMessage: "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens."}, model.CodeContextTooLong, "4096"},
		{"other 400", openaitest.Turn{Status: 400, ErrorMessage: "Invalid value for 'temperature'."}, model.CodeBadRequest, "temperature"},
		{"422", openaitest.Turn{Status: 422, ErrorMessage: "unprocessable"}, model.CodeBadRequest, "unprocessable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := openaitest.NewServer(t, tt.turn, openaitest.Turn{Text: "must not be reached"})
			_, err := newProvider(t, s.URL()).Stream(context.Background(), simpleRequest(), nil)
			se := wantCode(t, err, tt.code)
			if !strings.Contains(se.Message, tt.mention) {
				t.Errorf("message %q does not mention %q", se.Message, tt.mention)
			}
			if n := s.RequestCount(); n != 1 {
				t.Errorf("requests = %d, want exactly 1", n)
			}
		})
	}
}

func TestBrokenStreams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		turn openaitest.Turn
		code string
	}{
		{"garbage mid-stream", openaitest.Turn{Text: "Hello world", Fault: openaitest.FaultMalformed}, model.CodeMalformedStream},
		{"garbage before tool calls", openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "LS", Arguments: "{}"}}, Fault: openaitest.FaultMalformed}, model.CodeMalformedStream},
		{"quota spent mid-stream", openaitest.Turn{Text: "Hello", Fault: openaitest.FaultErrorEvent, ErrorType: "insufficient_quota", ErrorCode: "insufficient_quota", ErrorMessage: "You exceeded your current quota."}, model.CodeRateLimited},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := openaitest.NewServer(t, tt.turn, openaitest.Turn{Text: "must not be reached"})
			_, err := newProvider(t, s.URL()).Stream(context.Background(), simpleRequest(), nil)
			wantCode(t, err, tt.code)
			if n := s.RequestCount(); n != 1 {
				t.Errorf("requests = %d, want 1 (a stream that broke the format is not retried)", n)
			}
		})
	}
}

// TestCutStreamsAreRetried covers every way a started stream can stop short: each is
// sent again, the retried attempt's answer is the response, and once the budget is
// spent the last failure is the error.
func TestCutStreamsAreRetried(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		turn openaitest.Turn
		code string // of the failure once retries run out
	}{
		{"truncated", openaitest.Turn{Text: "Hello world", Fault: openaitest.FaultTruncated}, model.CodeMalformedStream},
		{"truncated tool call", openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "LS", Arguments: `{"path":"."}`}}, Fault: openaitest.FaultTruncated}, model.CodeMalformedStream},
		{"no [DONE]", openaitest.Turn{Text: "Hello world", Fault: openaitest.FaultNoDone}, model.CodeMalformedStream},
		{"error event", openaitest.Turn{Text: "Hello world", Fault: openaitest.FaultErrorEvent}, model.CodeOverloaded},
		{"rate limit event", openaitest.Turn{Text: "Hello", Fault: openaitest.FaultErrorEvent, ErrorType: "tokens", ErrorCode: "rate_limit_exceeded", ErrorMessage: "slow down"}, model.CodeRateLimited},
		{"connection reset", openaitest.Turn{Text: "Hello world", Fault: openaitest.FaultReset}, model.CodeNetwork},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := openaitest.NewServer(t, tt.turn, openaitest.Turn{Text: "second try"})
			resp, err := newProvider(t, s.URL()).Stream(context.Background(), simpleRequest(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text() != "second try" || s.RequestCount() != 2 {
				t.Errorf("text %q after %d requests, want the second attempt's after 2", resp.Text(), s.RequestCount())
			}

			s = openaitest.NewServer(t, tt.turn, tt.turn)
			_, err = newProvider(t, s.URL(), func(c *openai.Config) { c.MaxRetries = 1 }).Stream(context.Background(), simpleRequest(), nil)
			wantCode(t, err, tt.code)
			if n := s.RequestCount(); n != 2 {
				t.Errorf("requests = %d, want 2 (one retry)", n)
			}
		})
	}
}

// waitForRequest polls until the server has seen n requests.
func waitForRequest(t *testing.T, s *openaitest.Server, n int) {
	t.Helper()
	for s.RequestCount() < n {
		time.Sleep(time.Millisecond)
	}
}

func TestCancelStalledStream(t *testing.T) {
	t.Parallel()
	s := openaitest.NewServer(t, openaitest.Turn{Text: "never sent", Fault: openaitest.FaultStall})
	p := newProvider(t, s.URL())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := p.Stream(ctx, simpleRequest(), nil)
		done <- err
	}()
	waitForRequest(t, s, 1)
	cancel()
	err := <-done
	wantCode(t, err, model.CodeCancelled)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v does not wrap context.Canceled", err)
	}
}

func TestDeadlineDuringStall(t *testing.T) {
	t.Parallel()
	s := openaitest.NewServer(t, openaitest.Turn{Fault: openaitest.FaultStall})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := newProvider(t, s.URL()).Stream(ctx, simpleRequest(), nil)
	wantCode(t, err, model.CodeCancelled)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v does not wrap context.DeadlineExceeded", err)
	}
}

func TestIdleTimeoutAbandonsStall(t *testing.T) {
	t.Parallel()
	stall := openaitest.Turn{Text: "x", Fault: openaitest.FaultStall}
	s := openaitest.NewServer(t, stall, stall, stall)
	p := newProvider(t, s.URL(), func(c *openai.Config) { c.StreamIdleTimeout = 300 * time.Millisecond }) // a stall is forever; the slack keeps a loaded machine's slow start from tripping it first
	_, err := p.Stream(context.Background(), simpleRequest(), nil)
	se := wantCode(t, err, model.CodeNetwork)
	if !strings.Contains(se.Message, "sent nothing") {
		t.Errorf("message %q does not explain the stall", se.Message)
	}
	if n := s.RequestCount(); n != 3 {
		t.Errorf("requests = %d, want 3 (a stall is retried like any transient failure)", n)
	}
}

func TestCancelledBeforeCall(t *testing.T) {
	t.Parallel()
	s := openaitest.NewServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := newProvider(t, s.URL()).Stream(ctx, simpleRequest(), nil)
	wantCode(t, err, model.CodeCancelled)
	if s.RequestCount() != 0 {
		t.Error("a cancelled call reached the server")
	}
}

func TestAuthorization(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, serverKey, clientKey string
		code                       string
	}{
		{"no key needed", "", "", ""},
		{"key sent", "sk-right", "sk-right", ""},
		{"wrong key", "sk-right", "sk-wrong", model.CodeAuth},
		{"missing key", "sk-right", "", model.CodeAuth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := openaitest.NewServer(t, openaitest.Turn{Text: "ok"})
			s.RequireAPIKey(tt.serverKey)
			p := newProvider(t, s.URL(), func(c *openai.Config) { c.APIKey = tt.clientKey })
			_, err := p.Stream(context.Background(), simpleRequest(), nil)
			if tt.code == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else {
				se := wantCode(t, err, tt.code)
				if !strings.Contains(se.Message, s.URL()) {
					t.Errorf("message %q does not name the server", se.Message)
				}
			}
			h := s.Requests()[0].Header.Get("Authorization")
			if want := map[bool]string{true: "", false: "Bearer " + tt.clientKey}[tt.clientKey == ""]; h != want {
				t.Errorf("Authorization = %q, want %q", h, want)
			}
			if s.RequestCount() != 1 {
				t.Errorf("requests = %d, want 1", s.RequestCount())
			}
		})
	}
}

func TestRootBaseURLAndHeaders(t *testing.T) {
	t.Parallel()
	s := openaitest.NewServer(t, openaitest.Turn{Text: "ok"})
	p := newProvider(t, s.RootURL()+"/", func(c *openai.Config) {
		c.Header = http.Header{"Http-Referer": {"https://example.test"}, "Authorization": {"Bearer smuggled"}}
	})
	if _, err := p.Stream(context.Background(), simpleRequest(), nil); err != nil {
		t.Fatal(err)
	}
	r := s.Requests()[0]
	if r.Path != "/chat/completions" {
		t.Errorf("path = %s, want /chat/completions under a root base URL", r.Path)
	}
	if r.Header.Get("Http-Referer") != "https://example.test" {
		t.Errorf("extra header not sent: %v", r.Header)
	}
	if r.Header.Get("Authorization") != "" {
		t.Error("Config.Header replaced Authorization")
	}
	if p.BaseURL() != s.RootURL() {
		t.Errorf("BaseURL = %q, want %q", p.BaseURL(), s.RootURL())
	}
}

// redirect sends every request to target, so the official endpoint can be tested.
type redirect struct{ target *url.URL }

func (r redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host = r.target.Scheme, r.target.Host
	return http.DefaultTransport.RoundTrip(req)
}

func TestOfficialEndpoint(t *testing.T) {
	t.Parallel()
	s := openaitest.NewServer(t, openaitest.Turn{Text: "ok"})
	s.RequireAPIKey("sk-official")
	target, _ := url.Parse(s.RootURL())
	p, err := openai.New(openai.Config{APIKey: "sk-official", HTTPClient: &http.Client{Transport: redirect{target}}})
	if err != nil {
		t.Fatal(err)
	}
	if p.BaseURL() != openai.DefaultBaseURL {
		t.Errorf("BaseURL = %q", p.BaseURL())
	}
	req := simpleRequest()
	req.MaxTokens = 1234
	if _, err := p.Stream(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	r := s.Requests()[0]
	if r.Path != "/v1/chat/completions" {
		t.Errorf("path = %s", r.Path)
	}
	chat := r.Chat()
	if chat.MaxCompletionTokens == nil || *chat.MaxCompletionTokens != 1234 || chat.MaxTokens != nil {
		t.Errorf("max_completion_tokens = %v, max_tokens = %v; want max_completion_tokens 1234 only", chat.MaxCompletionTokens, chat.MaxTokens)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     openai.Config
		mention string
	}{
		{"no key, official endpoint", openai.Config{}, "OPENAI_API_KEY"},
		{"no scheme", openai.Config{BaseURL: "localhost:11434/v1"}, "localhost:11434"},
		{"relative", openai.Config{BaseURL: "/v1"}, "/v1"},
		{"ftp", openai.Config{BaseURL: "ftp://example.test/v1"}, "ftp://"},
		{"no host", openai.Config{BaseURL: "http:///v1"}, "http:///v1"},
		{"unparsable", openai.Config{BaseURL: "http://[::1"}, "[::1"},
		{"query", openai.Config{BaseURL: "https://example.test/v1?x=1"}, "query"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := openai.New(tt.cfg)
			if p != nil {
				t.Error("a provider was returned with the error")
			}
			se := wantCode(t, err, model.CodeConfig)
			if !strings.Contains(se.Message, tt.mention) {
				t.Errorf("message %q does not mention %q", se.Message, tt.mention)
			}
		})
	}
	if _, err := openai.New(openai.Config{BaseURL: "https://openrouter.example/api/v1"}); err != nil {
		t.Errorf("a custom base URL without a key was refused: %v", err)
	}
}

func TestFromEnv(t *testing.T) {
	// t.Setenv forbids t.Parallel.
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	_, err := openai.FromEnv("")
	se := wantCode(t, err, model.CodeConfig)
	if se.Detail["env"] != "OPENAI_API_KEY" {
		t.Errorf("detail = %v, want env OPENAI_API_KEY", se.Detail)
	}

	t.Setenv("OPENAI_BASE_URL", "http://from-env.test/v1")
	p, err := openai.FromEnv("")
	if err != nil {
		t.Fatal(err)
	}
	if p.BaseURL() != "http://from-env.test/v1" {
		t.Errorf("BaseURL = %q, want OPENAI_BASE_URL", p.BaseURL())
	}
	p, err = openai.FromEnv("http://flag.test/v1")
	if err != nil {
		t.Fatal(err)
	}
	if p.BaseURL() != "http://flag.test/v1" {
		t.Errorf("BaseURL = %q, want the argument to win", p.BaseURL())
	}

	s := openaitest.NewServer(t, openaitest.Turn{Text: "ok"})
	t.Setenv("OPENAI_API_KEY", "sk-env")
	p, err = openai.FromEnv(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Stream(context.Background(), simpleRequest(), nil); err != nil {
		t.Fatal(err)
	}
	if h := s.Requests()[0].Header.Get("Authorization"); h != "Bearer sk-env" {
		t.Errorf("Authorization = %q, want the key from OPENAI_API_KEY", h)
	}
}

func TestConnectionRefused(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := newProvider(t, "http://"+addr+"/v1", func(c *openai.Config) { c.MaxRetries = -1 })
	_, err = p.Stream(context.Background(), simpleRequest(), nil)
	se := wantCode(t, err, model.CodeNetwork)
	if !strings.Contains(se.Message, addr) || !strings.Contains(se.Message, "connection refused") {
		t.Errorf("message %q does not name the server and the failure", se.Message)
	}
}

func TestNonStreamingAnswer(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"x","object":"chat.completion","choices":[]}`))
	}))
	defer srv.Close()
	_, err := newProvider(t, srv.URL).Stream(context.Background(), simpleRequest(), nil)
	wantCode(t, err, model.CodeMalformedStream)
}

func TestOddErrorBodies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		status     int
		code       string
		mention    string
	}{
		{"error as a string", `{"error":"model 'llama9' not found, try pulling it first"}`, 404, model.CodeNotFound, "try pulling it first"},
		{"vLLM top-level", `{"object":"error","message":"The model ` + "`x`" + ` does not exist.","type":"NotFoundError","param":null,"code":404}`, 404, model.CodeNotFound, "does not exist"},
		{"plain text", "upstream connect error", 400, model.CodeBadRequest, "upstream connect error"},
		{"FastAPI detail", `{"detail":"Not authenticated"}`, 401, model.CodeAuth, "Not authenticated"},
		{"empty body", ``, 403, model.CodeAuth, "Forbidden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			_, err := newProvider(t, srv.URL).Stream(context.Background(), simpleRequest(), nil)
			se := wantCode(t, err, tt.code)
			if !strings.Contains(se.Message, tt.mention) {
				t.Errorf("message %q does not mention %q", se.Message, tt.mention)
			}
		})
	}
}

func TestRequestRefusedBeforeSending(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  *model.Request
		code string
	}{
		{"no model", &model.Request{Messages: []model.Message{userText("hi")}}, model.CodeConfig},
		{"bad schema", &model.Request{Model: "m", Messages: []model.Message{userText("hi")},
			Tools: []model.ToolSpec{{Name: "X", InputSchema: json.RawMessage(`[1]`)}}}, model.CodeBadRequest},
		{"unknown role", &model.Request{Model: "m", Messages: []model.Message{{Role: "system", Content: []model.Block{model.TextBlock("x")}}}}, model.CodeBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := openaitest.NewServer(t)
			_, err := newProvider(t, s.URL()).Stream(context.Background(), tt.req, nil)
			wantCode(t, err, tt.code)
			if s.RequestCount() != 0 {
				t.Error("a refused request reached the server")
			}
		})
	}
}

func TestConcurrentCalls(t *testing.T) {
	t.Parallel()
	const n = 8
	turns := make([]openaitest.Turn, n)
	for i := range turns {
		turns[i] = openaitest.Turn{Text: "same answer", ToolCalls: []openaitest.ToolCall{{Name: "LS", Arguments: `{"path":"."}`}}}
	}
	s := openaitest.NewServer(t, turns...)
	p := newProvider(t, s.URL())
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			resp, err := p.Stream(context.Background(), simpleRequest(), nil)
			if err == nil && (resp.Text() != "same answer" || len(resp.ToolCalls()) != 1) {
				err = errors.New("wrong response " + resp.Text())
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestName(t *testing.T) {
	t.Parallel()
	var p model.Provider = newProvider(t, "http://localhost:1/v1")
	if p.Name() != "openai" {
		t.Errorf("Name = %q", p.Name())
	}
}

// TestShouldRetryHeader: the server's x-should-retry overrides what the status says.
func TestShouldRetryHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		turn     openaitest.Turn
		requests int
	}{
		{"500 marked final", openaitest.Turn{Status: 500, Header: http.Header{"X-Should-Retry": {"false"}}}, 1},
		{"409 retried", openaitest.Turn{Status: 409}, 2},
		{"400 marked transient", openaitest.Turn{Status: 400, Header: http.Header{"X-Should-Retry": {"true"}}}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := openaitest.NewServer(t, tt.turn, openaitest.Turn{Text: "ok"})
			resp, err := newProvider(t, s.URL()).Stream(context.Background(), simpleRequest(), nil)
			if n := s.RequestCount(); n != tt.requests {
				t.Errorf("requests = %d, want %d", n, tt.requests)
			}
			if tt.requests == 2 && (err != nil || resp.Text() != "ok") {
				t.Errorf("after a retry: %v", err)
			}
			if tt.requests == 1 && err == nil {
				t.Error("a response marked final was retried into success")
			}
		})
	}
}

// TestRedirectToAnotherOriginIsRefused: the request carries the API key and the
// conversation, so a server cannot send it anywhere else.
func TestRedirectToAnotherOriginIsRefused(t *testing.T) {
	t.Parallel()
	var elsewhere sync.Mutex
	var leaked []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Lock()
		leaked = append(leaked, r.Header.Get("Authorization"))
		elsewhere.Unlock()
		w.WriteHeader(http.StatusTeapot)
	}))
	defer other.Close()
	var hops atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hops.Add(1)
		if r.URL.Path == "/v1/chat/completions" {
			// A redirect within the origin is followed.
			http.Redirect(w, r, "/v2/chat/completions", http.StatusTemporaryRedirect)
			return
		}
		http.Redirect(w, r, other.URL+"/v1/chat/completions", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	p := newProvider(t, srv.URL+"/v1", func(c *openai.Config) { c.APIKey = "sk-secret" })
	_, err := p.Stream(context.Background(), simpleRequest(), nil)
	wantCode(t, err, model.CodeNetwork)
	if n := hops.Load(); n != 2 {
		t.Errorf("the server saw %d requests, want 2 (the same-origin redirect followed, the cross-origin one not retried)", n)
	}
	elsewhere.Lock()
	defer elsewhere.Unlock()
	if len(leaked) != 0 {
		t.Errorf("the other origin received %d requests (Authorization %q)", len(leaked), leaked)
	}
}

// Every retry is announced to the context's observer before its wait, with the status
// that caused it.
func TestRetriesAreObserved(t *testing.T) {
	t.Parallel()
	s := openaitest.NewServer(t, openaitest.Turn{Status: 429}, openaitest.Turn{Status: 503}, openaitest.Turn{Text: "ok"})
	p := newProvider(t, s.URL(), func(c *openai.Config) { c.MaxRetries = 3 })
	var seen []model.Retry
	ctx := model.WithRetryObserver(context.Background(), func(r model.Retry) { seen = append(seen, r) })
	if _, err := p.Stream(ctx, simpleRequest(), nil); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[0].Status != 429 || seen[0].Attempt != 1 || seen[1].Status != 503 || seen[1].Attempt != 2 {
		t.Fatalf("observed %+v, want retries after HTTP 429 and HTTP 503", seen)
	}
}
