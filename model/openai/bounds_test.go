package openai_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/openai"
	"github.com/sema-agent/sema/model/openai/openaitest"
)

func TestRetryAfterBeyondTheCapStopsTheCall(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		status int
		header http.Header
		code   string
	}{
		{429, http.Header{"Retry-After": {"3600"}}, model.CodeRateLimited},
		{429, http.Header{"Retry-After-Ms": {"90000"}}, model.CodeRateLimited},
		{429, http.Header{"Retry-After": {time.Now().Add(2 * time.Hour).UTC().Format(http.TimeFormat)}}, model.CodeRateLimited},
		{503, http.Header{"Retry-After": {"3600"}}, model.CodeOverloaded},
	} {
		s := openaitest.NewServer(t, openaitest.Turn{Status: tt.status, Header: tt.header}, openaitest.Turn{Text: "must not be reached"})
		start := time.Now()
		_, err := newProvider(t, s.URL()).Stream(context.Background(), simpleRequest(), nil)
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("%d %v: the call waited %s", tt.status, tt.header, d)
		}
		se := wantCode(t, err, tt.code)
		if secs, ok := se.Detail["retry_after_seconds"].(int64); !ok || secs <= 60 {
			t.Errorf("%d %v: detail %v lacks the advised wait", tt.status, tt.header, se.Detail)
		}
		if se.Detail["status"] != tt.status || !strings.Contains(se.Message, "asked to wait") {
			t.Errorf("%d %v: %s %v", tt.status, tt.header, se.Message, se.Detail)
		}
		if n := s.RequestCount(); n != 1 {
			t.Errorf("%d %v: %d requests, want 1", tt.status, tt.header, n)
		}
	}

	// Within a raised cap the wait is honoured and the call retried.
	s := openaitest.NewServer(t, openaitest.Turn{Status: 429, Header: http.Header{"Retry-After-Ms": {"50"}}}, openaitest.Turn{Text: "fine"})
	resp, err := newProvider(t, s.URL(), func(c *openai.Config) { c.MaxRetryAfter = time.Second }).Stream(context.Background(), simpleRequest(), nil)
	if err != nil || resp.Text() != "fine" {
		t.Fatalf("within the cap: %v", err)
	}

	// A cap below the advice stops even a short wait.
	s = openaitest.NewServer(t, openaitest.Turn{Status: 429, Header: http.Header{"Retry-After": {"2"}}})
	_, err = newProvider(t, s.URL(), func(c *openai.Config) { c.MaxRetryAfter = time.Second }).Stream(context.Background(), simpleRequest(), nil)
	if se := wantCode(t, err, model.CodeRateLimited); se.Detail["retry_after_seconds"] != int64(2) {
		t.Errorf("detail %v", se.Detail)
	}

	// A cap above two minutes (the official SDKs' own) is honoured too: the call waits, here
	// until the caller gives up, instead of failing at once.
	s = openaitest.NewServer(t, openaitest.Turn{Status: 429, Header: http.Header{"Retry-After": {"150"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = newProvider(t, s.URL(), func(c *openai.Config) { c.MaxRetryAfter = 3 * time.Minute }).Stream(ctx, simpleRequest(), nil)
	if wantCode(t, err, model.CodeCancelled); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v", err)
	}
}

func TestNoFirstByteTimesOutAndIsRetried(t *testing.T) {
	t.Parallel()
	hang := openaitest.Turn{Fault: openaitest.FaultNoAnswer}
	s := openaitest.NewServer(t, hang, openaitest.Turn{Text: "late but fine"})
	p := newProvider(t, s.URL(), func(c *openai.Config) { c.FirstByteTimeout = 100 * time.Millisecond })
	resp, err := p.Stream(context.Background(), simpleRequest(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text() != "late but fine" || s.RequestCount() != 2 {
		t.Fatalf("text %q after %d requests", resp.Text(), s.RequestCount())
	}

	// Never answering at all ends the call with model.network once the budget is spent.
	s = openaitest.NewServer(t, hang, hang)
	p = newProvider(t, s.URL(), func(c *openai.Config) { c.FirstByteTimeout = 50 * time.Millisecond; c.MaxRetries = 1 })
	_, err = p.Stream(context.Background(), simpleRequest(), nil)
	se := wantCode(t, err, model.CodeNetwork)
	if se.Detail["first_byte_timeout"] != "50ms" || !strings.Contains(se.Message, "sent nothing within 50ms") {
		t.Errorf("%s %v", se.Message, se.Detail)
	}
	if n := s.RequestCount(); n != 2 {
		t.Errorf("requests = %d, want 2", n)
	}

	// For a compatible server a zero FirstByteTimeout leaves the wait to the idle
	// timeout, which a local server loading a model needs; it is retried all the same.
	s = openaitest.NewServer(t, hang, hang, hang)
	p = newProvider(t, s.URL(), func(c *openai.Config) { c.StreamIdleTimeout = 50 * time.Millisecond })
	_, err = p.Stream(context.Background(), simpleRequest(), nil)
	if se := wantCode(t, err, model.CodeNetwork); se.Detail["idle_timeout"] != "50ms" {
		t.Errorf("%s %v", se.Message, se.Detail)
	}
	if n := s.RequestCount(); n != 3 {
		t.Errorf("requests = %d, want 3", n)
	}
}

func TestStreamCutMidResponseIsRetried(t *testing.T) {
	t.Parallel()
	s := openaitest.NewServer(t,
		openaitest.Turn{Text: "the first answer, cut short", Fault: openaitest.FaultReset},
		openaitest.Turn{Text: "the whole answer"})
	var rec recorder
	resp, err := newProvider(t, s.URL()).Stream(context.Background(), simpleRequest(), rec.on)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text() != "the whole answer" || s.RequestCount() != 2 {
		t.Fatalf("text %q after %d requests", resp.Text(), s.RequestCount())
	}
	// What was shown before the cut stays shown; the retried attempt shows nothing, so
	// no text is shown twice.
	shown, _ := rec.text(model.DeltaText)
	if shown == "" || !strings.HasPrefix("the first answer, cut short", shown) || shown == "the first answer, cut short" {
		t.Errorf("deltas %q, want the part of the first attempt sent before the cut", shown)
	}
}
