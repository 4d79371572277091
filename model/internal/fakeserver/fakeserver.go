// Package fakeserver holds the scaffolding the fake model APIs in anthropictest and
// openaitest share: a script of turns consumed in order, a recorder of the requests
// received, a testing.TB that collects the complaints a server makes, the server-sent
// events framing both APIs stream in ([SSE]), and a watch on a server's connections
// ([Conns]). The wire formats (paths, validation, error bodies, the events' contents,
// faults) stay in those packages; nothing here knows about one.
//
// Invariants:
//   - A [Script] hands out each turn exactly once, in the order it was enqueued; when
//     none is left, [Script.Next] reports it and consumes nothing.
//   - A [Recorder] keeps every request it is given, in arrival order, whatever its
//     body; [Recorder.Requests] returns a copy the caller may keep.
//   - Every method is safe for concurrent use.
package fakeserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
)

// Script is a queue of scripted turns, consumed in order. Its zero value is an empty
// script ready to use.
type Script[T any] struct {
	mu    sync.Mutex
	turns []T
	next  int
}

// Enqueue appends turns to the script.
func (s *Script[T]) Enqueue(turns ...T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns = append(s.turns, turns...)
}

// Next consumes the next turn and returns it with its position in the script,
// counting from 1. When every turn has been consumed it returns an error naming
// request (the ordinal of the request that asked, for the message) and the number of
// turns scripted, and consumes nothing.
func (s *Script[T]) Next(request int) (turn T, n int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next >= len(s.turns) {
		return turn, 0, fmt.Errorf("request %d arrived but only %d turns were scripted", request, len(s.turns))
	}
	turn = s.turns[s.next]
	s.next++
	return turn, s.next, nil
}

// Remaining is the number of scripted turns not consumed yet.
func (s *Script[T]) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.turns) - s.next
}

// Request is one request a server received.
type Request struct {
	Method string
	Path   string
	Header http.Header
	// Body is the decoded JSON body (nil when the body was not a JSON object).
	Body map[string]any
	// Raw is the body as sent.
	Raw []byte
}

// Decode unmarshals the raw body into v, for tests that prefer a typed view.
func (r Request) Decode(v any) error { return json.Unmarshal(r.Raw, v) }

// Recorder keeps the requests a server received. Its zero value is empty and ready
// to use.
type Recorder struct {
	mu       sync.Mutex
	requests []Request
}

// Record reads the body of r and keeps the request, with a copy of its headers and
// its body decoded when it is a JSON object. It returns the record and how many
// requests have been recorded, this one included. A body that cannot be read (the
// client went away) is an error, and nothing is recorded.
func (rc *Recorder) Record(r *http.Request) (rec Request, n int, err error) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return Request{}, 0, err
	}
	rec = Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw}
	var body map[string]any
	if json.Unmarshal(raw, &body) == nil {
		rec.Body = body
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.requests = append(rc.requests, rec)
	return rec, len(rc.requests), nil
}

// Requests returns a copy of every request recorded so far, in arrival order.
func (rc *Recorder) Requests() []Request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]Request(nil), rc.requests...)
}

// RequestCount is the number of requests recorded so far.
func (rc *Recorder) RequestCount() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.requests)
}

// ErrorsTB is a testing.TB whose Errorf records the message instead of failing the
// test, so that a test can check the complaint a server makes about its script. Every
// other method is the wrapped TB's.
type ErrorsTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

// Errorf records the formatted message.
func (e *ErrorsTB) Errorf(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.errs = append(e.errs, fmt.Sprintf(format, args...))
}

// Errors returns a copy of the messages recorded so far, in order.
func (e *ErrorsTB) Errors() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.errs...)
}
