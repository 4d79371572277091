package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sema-agent/sema/client"
)

// taskStream serves one task's events as the service does (after Last-Event-ID), and
// misbehaves on the connections the test names: drop mid-event, close cleanly before
// the end, or answer 503.
type taskStream struct {
	events []string // data of events 1..n
	status string   // what GET /v1/tasks/{id} answers

	mu      sync.Mutex
	conns   int
	lastIDs []string // Last-Event-ID of each connection
	// per connection (from 1): after how many events it drops ("drop"), closes
	// ("close"), or "503".
	faults map[int]fault
}

type fault struct {
	kind  string
	after int
}

func (s *taskStream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/tasks/t1" {
		fmt.Fprintf(w, `{"task_id":"t1","session_id":"s1","status":%q}`, s.status)
		return
	}
	if r.URL.Path != "/v1/tasks/t1/events" {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"code":"request.not_found","message":"no such task"}`)
		return
	}
	s.mu.Lock()
	s.conns++
	n := s.conns
	s.lastIDs = append(s.lastIDs, r.Header.Get("Last-Event-ID"))
	f, faulty := s.faults[n]
	s.mu.Unlock()
	if f.kind == "503" {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"code":"serve.shutting_down","message":"stopping"}`)
		return
	}
	after, _ := strconv.Atoi(r.Header.Get("Last-Event-ID"))
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	fmt.Fprint(w, ": keep-alive\n\n")
	sent := 0
	for i := after; i < len(s.events); i++ {
		if faulty && sent == f.after {
			switch f.kind {
			case "drop":
				// Half an event, then the connection breaks.
				fmt.Fprintf(w, "id: %d\ndata: %s", i+1, s.events[i][:len(s.events[i])/2])
				fl.Flush()
				panic(http.ErrAbortHandler)
			case "close":
				return
			}
		}
		fmt.Fprintf(w, "id: %d\ndata: %s\n\n", i+1, s.events[i])
		fl.Flush()
		sent++
	}
}

func script(n int) []string {
	var out []string
	out = append(out, `{"type":"system","subtype":"init","session_id":"s1","manifest":{}}`)
	for i := 1; len(out) < n-1; i++ {
		out = append(out, fmt.Sprintf(`{"type":"tool_use","turn":%d,"id":"call_%d","name":"Bash","input":{"command":"echo %d"}}`, i, i, i))
		out = append(out, fmt.Sprintf(`{"type":"tool_result","turn":%d,"tool_use_id":"call_%d","name":"Bash","is_error":false,"content":"%d"}`, i, i, i))
	}
	return append(out[:n-1], `{"type":"result","session_id":"s1","status":"completed","result":"done","num_turns":3}`)
}

func collect(t *testing.T, c *client.Client, after int64) ([]client.Event, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []client.Event
	for ev, err := range c.Events(ctx, "t1", after) {
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
	return out, ctx.Err()
}

func quick(url string) *client.Client {
	c := client.New(url, "tok")
	c.Backoff = client.Backoff{Min: time.Millisecond, Max: 5 * time.Millisecond, Attempts: 3}
	return c
}

// TestEventsReconnectWithoutLossOrRepeat: connections that break mid-event, close
// before the end, or answer 503 are reopened from the last event received; every event
// arrives once, in order, and the stream ends at the task's result.
func TestEventsReconnectWithoutLossOrRepeat(t *testing.T) {
	s := &taskStream{events: script(25), status: "completed", faults: map[int]fault{
		1: {"drop", 4}, 2: {"drop", 0}, 3: {"close", 5}, 4: {"503", 0}, 5: {"drop", 7},
	}}
	hs := httptest.NewServer(s)
	defer hs.Close()
	evs, err := collect(t, quick(hs.URL), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != len(s.events) {
		t.Fatalf("%d events, want %d", len(evs), len(s.events))
	}
	for i, ev := range evs {
		if ev.ID != int64(i+1) || string(ev.Data) != s.events[i] {
			t.Fatalf("event %d: id %d data %s, want id %d data %s", i, ev.ID, ev.Data, i+1, s.events[i])
		}
	}
	// Each reconnection quoted the last event received before it.
	want := []string{"", "4", "4", "9", "9", "16"}
	if strings.Join(s.lastIDs, ",") != strings.Join(want, ",") {
		t.Fatalf("Last-Event-ID per connection %q, want %q", s.lastIDs, want)
	}
}

// TestEventsEndWithoutReconnecting: a stream that ends with the task's result is not
// reopened; resuming after the last event ends at once (the task has ended); a parked
// leg's result does not end the stream.
func TestEventsEndWithoutReconnecting(t *testing.T) {
	s := &taskStream{events: script(9), status: "completed"}
	hs := httptest.NewServer(s)
	defer hs.Close()
	c := quick(hs.URL)
	if evs, err := collect(t, c, 0); err != nil || len(evs) != 9 || s.conns != 1 {
		t.Fatalf("%d events, %v, after %d connections; want 9 after 1", len(evs), err, s.conns)
	}
	if evs, err := collect(t, c, 9); err != nil || len(evs) != 0 || s.conns != 2 {
		t.Fatalf("after the last: %d events, %v, after %d connections; want none after 2", len(evs), err, s.conns)
	}
	// Parked: the stream closes after awaiting_approval while the task still waits; the
	// client keeps following, then gives up after its attempts with an error.
	parked := &taskStream{events: append(script(5)[:4], `{"type":"result","status":"awaiting_approval","checkpoint":{"id":"cp1","tool":"Write"}}`), status: "awaiting_approval"}
	hp := httptest.NewServer(parked)
	defer hp.Close()
	evs, err := collect(t, quick(hp.URL), 0)
	if err == nil || len(evs) != 5 || parked.conns != 5 {
		t.Fatalf("parked: %d events, %v, after %d connections; want 5 events, an error after 1+1+3 connections", len(evs), err, parked.conns)
	}
}

// TestEventsRefusedIsNotRetried: a 4xx answer ends the stream with its coded error at
// once; a service that keeps answering 503 is given up on after the attempts.
func TestEventsRefusedIsNotRetried(t *testing.T) {
	s := &taskStream{events: script(3), status: "completed"}
	hs := httptest.NewServer(s)
	defer hs.Close()
	c := quick(hs.URL)
	var e *client.Error
	for _, err := range c.Events(context.Background(), "other", 0) {
		var ok bool
		if e, ok = err.(*client.Error); !ok {
			t.Fatalf("unknown task: %v", err)
		}
	}
	if e == nil || e.Code != "request.not_found" || s.conns != 0 {
		t.Fatalf("unknown task: %v after %d connections", e, s.conns)
	}
	down := &taskStream{events: script(3), status: "running", faults: map[int]fault{}}
	for i := 1; i <= 10; i++ {
		down.faults[i] = fault{"503", 0}
	}
	hd := httptest.NewServer(down)
	defer hd.Close()
	start := time.Now()
	evs, err := collect(t, quick(hd.URL), 0)
	if err == nil || !strings.Contains(err.Error(), "serve.shutting_down") || len(evs) != 0 || down.conns != 4 {
		t.Fatalf("always 503: %d events, %v, %d connections (want an error after 4)", len(evs), err, down.conns)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("giving up took %v with a 5ms bound", d)
	}
}

// TestTypedEvents: each event carries its type and turn, and its payload decodes to
// the type's struct; Data stays the line as sent.
func TestTypedEvents(t *testing.T) {
	s := &taskStream{events: script(5), status: "completed"}
	hs := httptest.NewServer(s)
	defer hs.Close()
	evs, err := collect(t, quick(hs.URL), 0)
	if err != nil || len(evs) != 5 {
		t.Fatalf("%d events, %v", len(evs), err)
	}
	if evs[0].Type != client.EventSystem || evs[0].Subtype != "init" {
		t.Fatalf("first: %+v", evs[0])
	}
	if p, err := evs[0].Payload(); err != nil || p.(*client.InitEvent).SessionID != "s1" {
		t.Fatalf("init payload %#v, %v", p, err)
	}
	use, ok := evs[1].ToolUse()
	if !ok || evs[1].Type != client.EventToolUse || evs[1].Turn != 1 || use.ID != "call_1" || use.Name != "Bash" || string(use.Input) != `{"command":"echo 1"}` {
		t.Fatalf("tool_use: %+v %+v %v", evs[1], use, ok)
	}
	res, ok := evs[2].ToolResult()
	if !ok || res.ToolUseID != "call_1" || res.Content != "1" || res.IsError {
		t.Fatalf("tool_result: %+v %v", res, ok)
	}
	if _, ok := evs[2].ToolUse(); ok {
		t.Fatal("a tool_result reads as a tool_use")
	}
	end, ok := evs[4].Result()
	if !ok || end.Status != "completed" || end.Result != "done" || end.NumTurns != 3 || !end.Ends() {
		t.Fatalf("result: %+v %v", end, ok)
	}
	if string(evs[4].Data) != s.events[4] {
		t.Fatalf("data changed: %s", evs[4].Data)
	}
}
