package providertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
)

// request is the call every check sends: a user prompt and two tools to call.
func request() *model.Request {
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)
	return &model.Request{
		Model:    "conformance-model",
		System:   "You are tested.",
		Messages: []model.Message{{Role: model.RoleUser, Content: []model.Block{model.TextBlock("Which files are there?")}}},
		Tools: []model.ToolSpec{
			{Name: "Read", Description: "Reads a file.", InputSchema: schema},
			{Name: "Glob", Description: "Lists files.", InputSchema: schema},
		},
	}
}

// recorded is what one Stream call gave: its deltas, response and error.
type recorded struct {
	deltas []model.Delta
	resp   *model.Response
	err    error
}

func stream(ctx context.Context, p model.Provider) recorded {
	var r recorded
	var mu sync.Mutex
	r.resp, r.err = p.Stream(ctx, request(), func(d model.Delta) {
		mu.Lock()
		defer mu.Unlock()
		r.deltas = append(r.deltas, d)
	})
	return r
}

// ok fails t unless the call returned a response and no error.
func (r recorded) ok(t *testing.T) *model.Response {
	t.Helper()
	if r.err != nil {
		t.Fatalf("Stream: %v", r.err)
	}
	if r.resp == nil {
		t.Fatal("Stream returned neither a response nor an error")
	}
	return r.resp
}

// text is the concatenated text of the text deltas.
func (r recorded) text() string {
	var b strings.Builder
	for _, d := range r.deltas {
		if d.Kind == model.DeltaText {
			b.WriteString(d.Text)
		}
	}
	return b.String()
}

// wantCode fails t unless err is a *sema.Error with code and a message.
func wantCode(t *testing.T, err error, code string) *sema.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("the call succeeded, want an error with code %s", code)
	}
	var se *sema.Error
	if !errors.As(err, &se) {
		t.Fatalf("error = %v (%T), want a *sema.Error with code %s", err, err, code)
	}
	if se.Code != code {
		t.Fatalf("error = %v, want code %s", err, code)
	}
	if strings.TrimSpace(se.Message) == "" {
		t.Fatalf("%s error has no message", code)
	}
	return se
}

func testTextStreams(t *testing.T, h Harness) {
	const text = "Two files: main.go and go.mod, both small — ünïcode too."
	p := h.New(t, Turn{Text: text})
	r := stream(context.Background(), p)
	resp := r.ok(t)
	if got := resp.Text(); got != text {
		t.Errorf("response text = %q, want %q", got, text)
	}
	if got := r.text(); got != text {
		t.Errorf("text deltas join to %q, want %q (each delta carries the new piece only)", got, text)
	}
	if resp.StopReason != model.StopEndTurn {
		t.Errorf("stop reason = %q, want %q", resp.StopReason, model.StopEndTurn)
	}
	if len(resp.ToolCalls()) != 0 {
		t.Errorf("tool calls = %+v, want none", resp.ToolCalls())
	}
	if resp.Model == "" {
		t.Error("the response names no model")
	}
	if p.Name() == "" {
		t.Error("the provider has no name")
	}
}

func testToolCalls(t *testing.T, h Harness) {
	calls := []ToolCall{
		{ID: "call_read_1", Name: "Read", Input: `{"path":"main.go"}`},
		{ID: "call_glob_2", Name: "Glob", Input: `{"path":"**/*.go","nested":{"deep":[1,2,"x"]}}`},
	}
	p := h.New(t, Turn{Text: "Let me look.", ToolCalls: calls})
	r := stream(context.Background(), p)
	resp := r.ok(t)
	if resp.StopReason != model.StopToolUse {
		t.Errorf("stop reason = %q, want %q", resp.StopReason, model.StopToolUse)
	}
	if resp.Text() != "Let me look." {
		t.Errorf("text = %q, want the text before the calls", resp.Text())
	}
	if k := resp.Content[0].Kind; k != model.KindText {
		t.Errorf("first block is %s, want the text the model wrote first", k)
	}
	got := resp.ToolCalls()
	if len(got) != len(calls) {
		t.Fatalf("tool calls = %+v, want %d", got, len(calls))
	}
	for i, want := range calls {
		if got[i].ID != want.ID || got[i].Name != want.Name {
			t.Errorf("call %d = %s %s, want %s %s", i+1, got[i].ID, got[i].Name, want.ID, want.Name)
		}
		if !sameJSON(got[i].Input, want.Input) {
			t.Errorf("call %d input = %s, want %s", i+1, got[i].Input, want.Input)
		}
	}
	var announced []string
	for _, d := range r.deltas {
		if d.Kind == model.DeltaToolUse {
			announced = append(announced, d.Name)
		}
	}
	if !slices.Equal(announced, []string{"Read", "Glob"}) {
		t.Errorf("tool_use deltas announce %q, want each call's name in order", announced)
	}
}

// testToolCallIDsMadeUp: a call the server sent without an ID (or the fake's own) still
// gets one, distinct from the others, since a tool_result must name the call it answers;
// and a call without input reads as the empty object.
func testToolCallIDsMadeUp(t *testing.T, h Harness) {
	p := h.New(t, Turn{ToolCalls: []ToolCall{{Name: "Glob", Input: `{"path":"*"}`}, {Name: "Glob"}}})
	resp := stream(context.Background(), p).ok(t)
	got := resp.ToolCalls()
	if len(got) != 2 {
		t.Fatalf("tool calls = %+v, want 2", got)
	}
	if got[0].ID == "" || got[1].ID == "" || got[0].ID == got[1].ID {
		t.Errorf("call IDs %q and %q, want two distinct, non-empty IDs", got[0].ID, got[1].ID)
	}
	if !sameJSON(got[1].Input, `{}`) {
		t.Errorf("input of a call without one = %s, want {}", got[1].Input)
	}
}

func testEmptyResponse(t *testing.T, h Harness) {
	p := h.New(t, Turn{})
	resp := stream(context.Background(), p).ok(t)
	if resp.Text() != "" || len(resp.ToolCalls()) != 0 {
		t.Errorf("an empty answer became %+v", resp.Content)
	}
	for _, b := range resp.Content {
		if b.Kind == model.KindText && b.Text == "" {
			t.Error("the response holds an empty text block, which the API refuses when it is sent back")
		}
	}
	if resp.StopReason != model.StopEndTurn {
		t.Errorf("stop reason = %q, want %q", resp.StopReason, model.StopEndTurn)
	}
}

func testMaxTokens(t *testing.T, h Harness) {
	p := h.New(t, Turn{Text: "The answer is cut", StopReason: model.StopMaxTokens})
	resp := stream(context.Background(), p).ok(t)
	if resp.StopReason != model.StopMaxTokens || resp.Text() != "The answer is cut" {
		t.Errorf("got %q stopping for %q, want the cut text stopping for %q", resp.Text(), resp.StopReason, model.StopMaxTokens)
	}
}

func testUsage(t *testing.T, h Harness) {
	want := model.Usage{InputTokens: 1200, OutputTokens: 37, CacheReadTokens: 9000, CacheWriteTokens: 400}
	p := h.New(t, Turn{Text: "Counted.", Usage: want})
	if got := stream(context.Background(), p).ok(t).Usage; got != want {
		t.Errorf("usage = %+v, want %+v", got, want)
	}
}

// testCancelledBeforeTheCall: a call whose context has already ended does not reach the
// server, so the answer it would have consumed is the next call's.
func testCancelledBeforeTheCall(t *testing.T, h Harness) {
	p := h.New(t, Turn{Text: "kept for the next call"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := stream(ctx, p)
	wantCode(t, r.err, model.CodeCancelled)
	if !errors.Is(r.err, context.Canceled) {
		t.Errorf("error %v does not wrap context.Canceled", r.err)
	}
	if resp := stream(context.Background(), p).ok(t); resp.Text() != "kept for the next call" {
		t.Errorf("the next call got %q", resp.Text())
	}
}

// testCancelledMidStream: a response that stalls ends when its context does, with the
// context's error; the call is cancelled on its first delta or, when the stall comes
// before any, a moment after it starts (either way it must end).
func testCancelledMidStream(t *testing.T, h Harness) {
	p := h.New(t, Turn{Text: "This answer never finishes", Failure: FailStall})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	timer := time.AfterFunc(20*time.Millisecond, cancel)
	defer timer.Stop()
	resp, err := p.Stream(ctx, request(), func(model.Delta) { cancel() })
	if err == nil {
		t.Fatalf("a stalled response ended with %+v, want %s", resp, model.CodeCancelled)
	}
	wantCode(t, err, model.CodeCancelled)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v does not wrap context.Canceled", err)
	}
}

// testCancelledOnDelta: a call cancelled while its response streams ends with the
// context's error, not with the rest of the response.
func testCancelledOnDelta(t *testing.T, h Harness) {
	p := h.New(t, Turn{Text: strings.Repeat("A long answer streamed in many pieces. ", 200)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := p.Stream(ctx, request(), func(model.Delta) { cancel() })
	if err == nil {
		t.Fatalf("a call cancelled on its first delta returned %d bytes of text", len(resp.Text()))
	}
	wantCode(t, err, model.CodeCancelled)
}

// testFinalErrors: a failure no retry can mend ends the call at once with its code; the
// answer scripted after it is left alone.
func testFinalErrors(t *testing.T, h Harness) {
	for _, tc := range []struct {
		failure Failure
		code    string
	}{
		{FailBadRequest, model.CodeBadRequest},
		{FailAuth, model.CodeAuth},
	} {
		t.Run(tc.code, func(t *testing.T) {
			p := h.New(t, Turn{Failure: tc.failure}, Turn{Text: "not reached: the failure is final"})
			wantCode(t, stream(context.Background(), p).err, tc.code)
		})
	}
}

var transient = []struct {
	failure Failure
	code    string
}{
	{FailRateLimited, model.CodeRateLimited},
	{FailOverloaded, model.CodeOverloaded},
}

// testTransientErrorsRetried: a provider that retries rides out one transient failure,
// telling the context's retry observer, and answers with the next attempt's response.
func testTransientErrorsRetried(t *testing.T, h Harness) {
	if h.Retries == 0 {
		t.Skip("the provider does not retry")
	}
	for _, tc := range transient {
		t.Run(tc.code, func(t *testing.T) {
			p := h.New(t, Turn{Failure: tc.failure}, Turn{Text: "after the retry"})
			var retries []model.Retry
			var mu sync.Mutex
			ctx := model.WithRetryObserver(context.Background(), func(r model.Retry) {
				mu.Lock()
				defer mu.Unlock()
				retries = append(retries, r)
			})
			resp := stream(ctx, p).ok(t)
			if resp.Text() != "after the retry" {
				t.Errorf("text = %q, want the second attempt's", resp.Text())
			}
			mu.Lock()
			defer mu.Unlock()
			if len(retries) != 1 || retries[0].Attempt != 1 {
				t.Errorf("retry observer saw %+v, want one retry after attempt 1", retries)
			}
		})
	}
}

// testTransientErrorsExhausted: once its retries are spent, a provider ends the call
// with the transient failure's code, and sends no request more than it may.
func testTransientErrorsExhausted(t *testing.T, h Harness) {
	for _, tc := range transient {
		t.Run(tc.code, func(t *testing.T) {
			turns := slices.Repeat([]Turn{{Failure: tc.failure}}, h.Retries+1)
			turns = append(turns, Turn{Text: fmt.Sprintf("not reached: %d retries are spent", h.Retries)})
			wantCode(t, stream(context.Background(), h.New(t, turns...)).err, tc.code)
		})
	}
}

// testTruncatedStream: a stream cut before its end is never passed off as a whole
// response: it is retried, and once the retries are spent it is refused.
func testTruncatedStream(t *testing.T, h Harness) {
	cut := Turn{Text: "This answer is cut before", Failure: FailTruncated}
	if h.Retries > 0 {
		p := h.New(t, cut, Turn{Text: "whole"})
		if resp := stream(context.Background(), p).ok(t); resp.Text() != "whole" {
			t.Errorf("text = %q, want the retried attempt's", resp.Text())
		}
	}
	turns := append(slices.Repeat([]Turn{cut}, h.Retries+1), Turn{Text: "not reached"})
	r := stream(context.Background(), h.New(t, turns...))
	if r.err == nil {
		t.Fatalf("a truncated stream became a response with the text %q", r.resp.Text())
	}
	wantCode(t, r.err, model.CodeMalformedStream)
}

// testConcurrent: one provider serves calls from several goroutines at once, each
// answer going to exactly one call (run it with -race).
func testConcurrent(t *testing.T, h Harness) {
	const n = 4
	var turns []Turn
	var want []string
	for i := range n {
		turns = append(turns, Turn{Text: fmt.Sprintf("answer %d", i+1)})
		want = append(want, fmt.Sprintf("answer %d", i+1))
	}
	p := h.New(t, turns...)
	got := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := stream(context.Background(), p)
			if r.err != nil {
				got[i] = r.err.Error()
				return
			}
			got[i] = r.resp.Text()
		})
	}
	wg.Wait()
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("concurrent calls got %q, want each of %q once", got, want)
	}
}

// sameJSON reports whether a and b hold equal JSON values.
func sameJSON(a json.RawMessage, b string) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
