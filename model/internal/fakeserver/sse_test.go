package fakeserver

import (
	"net/http/httptest"
	"testing"
)

// The stream's headers and the framing of named and unnamed events.
func TestSSEFraming(t *testing.T) {
	rec := httptest.NewRecorder()
	s := StartSSE(rec)
	s.Event("message_start", `{"type":"message_start"}`)
	s.Event("", `[DONE]`)
	if rec.Code != 200 || rec.Header().Get("content-type") != "text/event-stream; charset=utf-8" || rec.Header().Get("cache-control") != "no-cache" {
		t.Fatalf("status %d, headers %v", rec.Code, rec.Header())
	}
	want := "event: message_start\ndata: {\"type\":\"message_start\"}\n\ndata: [DONE]\n\n"
	if got := rec.Body.String(); got != want {
		t.Fatalf("body %q, want %q", got, want)
	}
	if !rec.Flushed {
		t.Fatal("the events were not flushed")
	}
}
