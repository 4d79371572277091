package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/sema-agent/sema/model"
)

func TestSSEReader(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100<<10) // longer than the reader's buffer
	tests := []struct {
		name, body string
		want       []string // name, then data, per event
	}{
		{"plain", "event: a\ndata: 1\n\nevent: b\ndata: 2\n\n", []string{"a", "1\n", "b", "2\n"}},
		{"CRLF line endings", "event: a\r\ndata: 1\r\n\r\n", []string{"a", "1\n"}},
		{"no space after the colon", "event:a\ndata:1\n\n", []string{"a", "1\n"}},
		{"data over several lines", "event: a\ndata: {\ndata: }\n\n", []string{"a", "{\n}\n"}},
		{"comments, other fields and extra blank lines", "\n\n: hi\nid: 7\nretry: 10\nevent: a\ndata: 1\n\n\n", []string{"a", "1\n"}},
		{"data without a name", "data: 1\n\n", []string{"", "1\n"}},
		{"a name without data", "event: a\n\n", []string{"a", ""}},
		{"an event the body ends in is dropped", "event: a\ndata: 1\n\nevent: b\ndata: 2\n", []string{"a", "1\n"}},
		{"a line longer than the buffer", "event: a\ndata: " + long + "\n\n", []string{"a", long + "\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newSSEReader(strings.NewReader(tt.body))
			var got []string
			for {
				name, data, err := r.next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("next: %v", err)
				}
				got = append(got, string(name), string(data))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSSEReaderRefusesTooLongALine(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("reads 32 MiB")
	}
	for _, body := range []string{
		"event: a\ndata: " + strings.Repeat("x", maxLine+1) + "\n\n",
		"event: a\n" + strings.Repeat("data: "+strings.Repeat("x", 1<<20)+"\n", 33) + "\n",
	} {
		_, _, err := newSSEReader(strings.NewReader(body)).next()
		if !isFormatError(err) {
			t.Errorf("next = %v, want a format error", err)
		}
	}
}

func TestSSEReaderPassesReadErrors(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	r := newSSEReader(io.MultiReader(strings.NewReader("event: a\ndata: 1\n\nevent: b\n"), errReader{boom}))
	if _, _, err := r.next(); err != nil {
		t.Fatalf("first event: %v", err)
	}
	if _, _, err := r.next(); !errors.Is(err, boom) {
		t.Errorf("next = %v, want %v", err, boom)
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// TestStreamFraming runs whole responses framed in the ways the SSE format allows.
func TestStreamFraming(t *testing.T) {
	t.Parallel()
	events := []string{
		ev("message_start", msgStart), ev("content_block_start", textStart(0)),
		ev("content_block_delta", textDelta(0, "Hi")), ev("content_block_stop", blockStop(0)),
		ev("message_delta", msgDelta("end_turn")), ev("message_stop", msgStop),
	}
	plain := strings.Join(events, "")
	tests := []struct{ name, body string }{
		{"CRLF", strings.ReplaceAll(plain, "\n", "\r\n")},
		{"data split over lines", strings.ReplaceAll(plain, `,"`, ",\ndata: \"")},
		{"comments and pings between events", strings.ReplaceAll(plain, "\n\n", "\n\n: keep-alive\n\nevent: ping\ndata: {\"type\": \"ping\"}\n\n")},
		{"nothing after message_stop is read", plain + "event: content_block_delta\ndata: not JSON\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, _ := sseServer(t, tt.body)
			p := newProvider(t, srv.URL, Config{})
			resp, err := p.Stream(context.Background(), &model.Request{Model: "m", Messages: []model.Message{userText("q")}}, nil)
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			want := &model.Response{Model: "claude-x", Content: []model.Block{model.TextBlock("Hi")}, StopReason: model.StopEndTurn,
				Usage: model.Usage{InputTokens: 10, OutputTokens: 25, CacheReadTokens: 2, CacheWriteTokens: 3}}
			if diff := cmp.Diff(want, resp); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzStream feeds raw event streams to the decoder and the accumulator. Nothing may
// panic, and a stream they accept must give a response that is consistent in itself
// and with the deltas delivered on the way.
func FuzzStream(f *testing.F) {
	f.Add(ev("message_start", msgStart) + ev("content_block_start", textStart(0)) + ev("content_block_delta", textDelta(0, "Hi")) +
		ev("content_block_stop", blockStop(0)) + ev("message_delta", msgDelta("end_turn")) + ev("message_stop", msgStop))
	f.Add(ev("message_start", msgStart) + ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`) +
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}`) +
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQ"}}`) +
		ev("content_block_stop", blockStop(0)) + ev("content_block_start", toolStart(1, "toolu_1", "Bash")) +
		ev("content_block_delta", inputDelta(1, `{"command": "ls"}`)) + ev("content_block_stop", blockStop(1)) +
		ev("message_delta", msgDelta("tool_use")) + ev("message_stop", msgStop))
	f.Add(ev("message_start", msgStart) + ev("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	f.Add(strings.ReplaceAll(ev("message_start", msgStart)+ev("message_delta", msgDelta("refusal"))+ev("message_stop", msgStop), "\n", "\r\n"))
	f.Fuzz(func(t *testing.T, raw string) {
		res := &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(raw))}
		var deltas []model.Delta
		acc := newAccumulator(func(d model.Delta) { deltas = append(deltas, d) })
		if err := assemble(res, acc); err != nil || !acc.stopped {
			return
		}
		resp, err := acc.response()
		if err != nil {
			return
		}
		switch resp.StopReason {
		case model.StopEndTurn, model.StopToolUse, model.StopMaxTokens, model.StopSequence, model.StopRefusal:
		default:
			t.Fatalf("stop reason %q", resp.StopReason)
		}
		var text, thinking, tools int
		for _, b := range resp.Content {
			switch b.Kind {
			case model.KindText:
				if b.Text == "" {
					t.Fatal("an empty text block")
				}
				text += len(b.Text)
			case model.KindThinking:
				thinking += len(b.Text)
			case model.KindToolUse:
				tools++
				if b.ID == "" || b.Name == "" || !json.Valid(b.Input) || strings.TrimLeft(string(b.Input), " \t\r\n")[0] != '{' {
					t.Fatalf("tool call %+v", b)
				}
			default:
				t.Fatalf("block kind %q", b.Kind)
			}
			if !utf8.ValidString(b.Text) {
				t.Fatalf("text %q is not UTF-8", b.Text)
			}
		}
		var gotText, gotThinking, gotTools int
		for _, d := range deltas {
			switch d.Kind {
			case model.DeltaText:
				gotText += len(d.Text)
			case model.DeltaThinking:
				gotThinking += len(d.Text)
			case model.DeltaToolUse:
				gotTools++
			}
		}
		if gotText != text || gotThinking != thinking || gotTools < tools {
			t.Fatalf("deltas carried %d bytes of text, %d of thinking and %d tool calls; the response has %d, %d and %d",
				gotText, gotThinking, gotTools, text, thinking, tools)
		}
	})
}

// TestAssembleAllocatesNothingPerEvent pins the package doc's promise: with no onDelta,
// more events cost no more allocations than the growth of the buffers that hold the
// text and the tool input.
func TestAssembleAllocatesNothingPerEvent(t *testing.T) {
	stream := func(n int) string {
		var b strings.Builder
		b.WriteString(ev("message_start", msgStart) + ev("content_block_start", textStart(0)))
		for range n {
			b.WriteString(ev("content_block_delta", textDelta(0, "word ")))
		}
		b.WriteString(ev("content_block_stop", blockStop(0)) + ev("content_block_start", toolStart(1, "toolu_1", "Write")))
		b.WriteString(ev("content_block_delta", inputDelta(1, `{"content": "`)))
		for range n {
			b.WriteString(ev("content_block_delta", inputDelta(1, `\u00e9\n`)))
		}
		b.WriteString(ev("content_block_delta", inputDelta(1, `"}`)) + ev("content_block_stop", blockStop(1)))
		b.WriteString(ev("message_delta", msgDelta("tool_use")) + ev("message_stop", msgStop))
		return b.String()
	}
	allocs := func(raw string) float64 {
		body := strings.NewReader(raw)
		res := &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(body)}
		return testing.AllocsPerRun(20, func() {
			body.Reset(raw)
			acc := newAccumulator(nil)
			if err := assemble(res, acc); err != nil || !acc.stopped {
				t.Fatalf("assemble: %v", err)
			}
		})
	}
	small, large := allocs(stream(1000)), allocs(stream(2000))
	// The 2000 more events may only grow the two buffers, a few times each.
	if large-small > 2000/100 {
		t.Errorf("%v allocations for 1000 deltas of each kind, %v for 2000; want less than one per hundred events more", small, large)
	}
}
