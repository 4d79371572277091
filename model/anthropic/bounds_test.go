package anthropic

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/anthropic/anthropictest"
)

func TestRetryAfterBeyondTheCapStopsTheCall(t *testing.T) {
	t.Parallel()
	for _, h := range []http.Header{
		{"Retry-After": {"3600"}},
		{"Retry-After-Ms": {"90000"}},
		{"Retry-After": {time.Now().Add(2 * time.Hour).UTC().Format(http.TimeFormat)}},
	} {
		srv := anthropictest.NewServer(t, anthropictest.Turn{Status: 429, Header: h})
		p := newProvider(t, srv.URL(), Config{})
		start := time.Now()
		_, err := p.Stream(context.Background(), &model.Request{Model: "claude-test", Messages: []model.Message{userText("hi")}}, nil)
		if time.Since(start) > 10*time.Second {
			t.Fatalf("%v: the call waited %s", h, time.Since(start))
		}
		var se *sema.Error
		if !errors.As(err, &se) || se.Code != model.CodeRateLimited {
			t.Fatalf("%v: err = %v, want %s", h, err, model.CodeRateLimited)
		}
		if secs, ok := se.Detail["retry_after_seconds"].(int64); !ok || secs < 60 {
			t.Errorf("%v: detail %v lacks the advised wait", h, se.Detail)
		}
		if n := srv.RequestCount(); n != 1 {
			t.Errorf("%v: %d requests, want 1", h, n)
		}
	}
	// Within a raised cap the wait is honoured and the call retried.
	srv := anthropictest.NewServer(t, anthropictest.Turn{Status: 429, Header: http.Header{"Retry-After-Ms": {"50"}}}, anthropictest.Turn{Text: "fine"})
	p := newProvider(t, srv.URL(), Config{MaxRetryAfter: time.Second})
	if _, err := p.Stream(context.Background(), &model.Request{Model: "claude-test", Messages: []model.Message{userText("hi")}}, nil); err != nil {
		t.Fatal(err)
	}
	// A cap below the advice stops even a short wait.
	srv = anthropictest.NewServer(t, anthropictest.Turn{Status: 429, Header: http.Header{"Retry-After": {"2"}}})
	p = newProvider(t, srv.URL(), Config{MaxRetryAfter: time.Second})
	if _, err := p.Stream(context.Background(), &model.Request{Model: "claude-test", Messages: []model.Message{userText("hi")}}, nil); sema.CodeOf(err) != model.CodeRateLimited {
		t.Fatalf("err = %v", err)
	}
}

// okStream is a whole, valid response in the API's SSE format.
func okStream(text string) string {
	return ev("message_start", msgStart) +
		ev("content_block_start", textStart(0)) + ev("content_block_delta", textDelta(0, text)) + ev("content_block_stop", blockStop(0)) +
		ev("message_delta", msgDelta("end_turn")) + ev("message_stop", msgStop)
}

func TestNoFirstByteTimesOutAndIsRetried(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			io.Copy(io.Discard, r.Body) // the server notices the client leave only after the body
			<-r.Context().Done()        // accepts the request, never answers
			return
		}
		w.Header().Set("content-type", "text/event-stream")
		w.Write([]byte(okStream("late but fine")))
	}))
	t.Cleanup(srv.Close)
	p := newProvider(t, srv.URL, Config{FirstByteTimeout: 100 * time.Millisecond})
	resp, err := p.Stream(context.Background(), &model.Request{Model: "m", Messages: []model.Message{userText("q")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text() != "late but fine" || n.Load() != 2 {
		t.Fatalf("text %q after %d requests", resp.Text(), n.Load())
	}

	// Never answering at all ends the call with model.network once the budget is spent.
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	t.Cleanup(silent.Close)
	p = newProvider(t, silent.URL, Config{FirstByteTimeout: 50 * time.Millisecond, MaxRetries: 1})
	_, err = p.Stream(context.Background(), &model.Request{Model: "m", Messages: []model.Message{userText("q")}}, nil)
	var se *sema.Error
	if !errors.As(err, &se) || se.Code != model.CodeNetwork || se.Detail["first_byte_timeout"] == nil {
		t.Fatalf("err = %#v", err)
	}
}

func TestStreamCutMidResponseIsRetried(t *testing.T) {
	t.Parallel()
	full := okStream("the whole answer")
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-type", "text/event-stream")
		if n.Add(1) == 1 {
			// Half the response, then the connection drops.
			w.Write([]byte(ev("message_start", msgStart) + ev("content_block_start", textStart(0)) + ev("content_block_delta", textDelta(0, "the wh"))))
			w.(http.Flusher).Flush()
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		w.Write([]byte(full))
	}))
	t.Cleanup(srv.Close)
	p := newProvider(t, srv.URL, Config{})
	var shown strings.Builder
	resp, err := p.Stream(context.Background(), &model.Request{Model: "m", Messages: []model.Message{userText("q")}}, func(d model.Delta) { shown.WriteString(d.Text) })
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text() != "the whole answer" || n.Load() != 2 {
		t.Fatalf("text %q after %d requests", resp.Text(), n.Load())
	}
	// What was shown before the cut stays; the retried attempt shows nothing twice.
	if shown.String() != "the wh" {
		t.Errorf("deltas %q", shown.String())
	}
}
