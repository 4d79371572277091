package fakeserver

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestScript(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		initial   []string
		enqueued  []string
		calls     int
		wantTurns []string
		wantErr   string // of the last call; "" means every call succeeds
		remaining int
	}{
		{"empty script", nil, nil, 1, nil, "request 1 arrived but only 0 turns were scripted", 0},
		{"in order", []string{"a", "b"}, nil, 2, []string{"a", "b"}, "", 0},
		{"enqueued after", []string{"a"}, []string{"b", "c"}, 2, []string{"a", "b"}, "", 1},
		{"exhausted", []string{"a"}, []string{"b"}, 3, []string{"a", "b"}, "request 3 arrived but only 2 turns were scripted", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var s Script[string]
			s.Enqueue(tt.initial...)
			s.Enqueue(tt.enqueued...)
			var got []string
			var err error
			for i := 1; i <= tt.calls; i++ {
				var turn string
				var n int
				turn, n, err = s.Next(i)
				if err != nil {
					if n != 0 || turn != "" {
						t.Errorf("call %d failed but returned turn %q at %d", i, turn, n)
					}
					continue
				}
				if n != i {
					t.Errorf("call %d: position %d", i, n)
				}
				got = append(got, turn)
			}
			if diff := cmp.Diff(tt.wantTurns, got); diff != "" {
				t.Errorf("turns (-want +got):\n%s", diff)
			}
			if gotErr := errString(err); gotErr != tt.wantErr {
				t.Errorf("last error %q, want %q", gotErr, tt.wantErr)
			}
			if s.Remaining() != tt.remaining {
				t.Errorf("remaining %d, want %d", s.Remaining(), tt.remaining)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestScriptConcurrent checks that concurrent callers never share a turn.
func TestScriptConcurrent(t *testing.T) {
	t.Parallel()
	const turns = 50
	var s Script[int]
	for i := range turns {
		s.Enqueue(i)
	}
	var mu sync.Mutex
	seen := map[int]int{}
	var wg sync.WaitGroup
	for i := range turns + 10 {
		wg.Go(func() {
			turn, n, err := s.Next(i + 1)
			if err != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			seen[turn]++
			if n != turn+1 {
				t.Errorf("turn %d handed out at position %d", turn, n)
			}
		})
	}
	wg.Wait()
	if len(seen) != turns {
		t.Errorf("%d distinct turns handed out, want %d", len(seen), turns)
	}
	for turn, k := range seen {
		if k != 1 {
			t.Errorf("turn %d handed out %d times", turn, k)
		}
	}
}

func TestRecorder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		method   string
		path     string
		body     string
		wantBody map[string]any
	}{
		{"JSON object", http.MethodPost, "/v1/x", `{"model":"m","n":2}`, map[string]any{"model": "m", "n": 2.0}},
		{"not JSON", http.MethodPost, "/v1/x", `{`, nil},
		{"JSON array", http.MethodPost, "/v1/x", `[1]`, nil},
		{"no body", http.MethodGet, "/", ``, nil},
	}
	var rc Recorder
	for i, tt := range tests {
		r := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
		r.Header.Set("X-Test", tt.name)
		rec, n, err := rc.Record(r)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if n != i+1 || rc.RequestCount() != i+1 {
			t.Errorf("%s: n %d, count %d, want %d", tt.name, n, rc.RequestCount(), i+1)
		}
		r.Header.Set("X-Test", "changed after")
		if rec.Header.Get("X-Test") != tt.name {
			t.Errorf("%s: recorded header follows the request's: %q", tt.name, rec.Header.Get("X-Test"))
		}
		if rec.Method != tt.method || rec.Path != tt.path || string(rec.Raw) != tt.body {
			t.Errorf("%s: record %+v", tt.name, rec)
		}
		if diff := cmp.Diff(tt.wantBody, rec.Body); diff != "" {
			t.Errorf("%s: body (-want +got):\n%s", tt.name, diff)
		}
	}
	reqs := rc.Requests()
	if len(reqs) != len(tests) {
		t.Fatalf("%d requests, want %d", len(reqs), len(tests))
	}
	for i, tt := range tests {
		if reqs[i].Header.Get("X-Test") != tt.name {
			t.Errorf("request %d is %q, want %q (arrival order)", i, reqs[i].Header.Get("X-Test"), tt.name)
		}
	}
	reqs[0] = Request{}
	if rc.Requests()[0].Method != http.MethodPost {
		t.Error("Requests does not return a copy")
	}
	var typed struct {
		Model string `json:"model"`
	}
	if err := rc.Requests()[0].Decode(&typed); err != nil || typed.Model != "m" {
		t.Errorf("Decode = %+v, %v", typed, err)
	}
	if err := rc.Requests()[1].Decode(&typed); err == nil {
		t.Error("Decode of a body that is not JSON succeeded")
	}
}

type failingBody struct{}

func (failingBody) Read([]byte) (int, error) { return 0, errors.New("client went away") }
func (failingBody) Close() error             { return nil }

func TestRecorderUnreadableBody(t *testing.T) {
	t.Parallel()
	var rc Recorder
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.Body = failingBody{}
	if _, _, err := rc.Record(r); err == nil {
		t.Error("an unreadable body was not an error")
	}
	if rc.RequestCount() != 0 {
		t.Errorf("an unreadable request was recorded")
	}
}

func TestErrorsTB(t *testing.T) {
	t.Parallel()
	e := &ErrorsTB{TB: t}
	e.Errorf("request %d: %s", 2, "late")
	e.Errorf("second")
	got := e.Errors()
	if diff := cmp.Diff([]string{"request 2: late", "second"}, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	got[0] = "changed"
	if e.Errors()[0] != "request 2: late" {
		t.Error("Errors does not return a copy")
	}
}
