package fakeserver

import (
	"fmt"
	"net/http"
)

// SSE writes a response as server-sent events, framed as the model APIs frame them:
// an optional "event: NAME" line, one "data: …" line, a blank line, and a flush after
// each event so that the client reads it as it is sent.
type SSE struct {
	w http.ResponseWriter
	f http.Flusher
}

// StartSSE answers 200 with the headers of an event stream and returns its writer.
func StartSSE(w http.ResponseWriter) SSE {
	w.Header().Set("content-type", "text/event-stream; charset=utf-8")
	w.Header().Set("cache-control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return SSE{w: w, f: f}
}

// Event writes one event named name (no event line when name is empty) carrying data
// as it is, and flushes it.
func (s SSE) Event(name, data string) {
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", data)
	if s.f != nil {
		s.f.Flush()
	}
}
