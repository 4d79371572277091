package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/internal/pgtest"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/anthropic"
	"github.com/sema-agent/sema/model/anthropic/anthropictest"
	"github.com/sema-agent/sema/server"
)

// outage is a model server on the Anthropic wire: it answers 503 (an Anthropic error
// body) until its outage ends, then passes requests to the scripted server behind it.
type outage struct {
	srv     *httptest.Server
	until   atomic.Int64 // unix nanoseconds
	refused atomic.Int64
}

func newOutage(t *testing.T, behind *anthropictest.Server, lasts time.Duration) *outage {
	t.Helper()
	u, _ := url.Parse(behind.URL())
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.FlushInterval = -1 // SSE: each event as it comes
	o := &outage{}
	o.until.Store(time.Now().Add(lasts).UnixNano())
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if time.Now().UnixNano() < o.until.Load() {
			o.refused.Add(1)
			w.Header().Set("content-type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"type":"error","error":{"type":"api_error","message":"Service Unavailable"},"request_id":"req_outage"}`)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(o.srv.Close)
	return o
}

// outageService is a service on st whose tasks' model is the Anthropic provider at o,
// with its own retries off (they would only lengthen each try) and the given bound.
func outageService(t *testing.T, st store, o *outage, wait, backoff time.Duration) (*client.Client, string) {
	t.Helper()
	ctx := context.Background()
	p, err := anthropic.New(anthropic.Config{APIKey: "test-key", BaseURL: o.srv.URL, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.Config{
		Home: t.TempDir(), Poll: 20 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OpenProvider: func(string) (model.Provider, string, error) { return p, "claude-sonnet-4-5", nil },
		ModelWait:    wait, ModelBackoff: backoff,
	}
	if st == "postgres" {
		cfg.Postgres = pgtest.Schema(t)
	}
	srv, err := server.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		srv.Close()
	})
	base, _ := filepath.EvalSymlinks(t.TempDir())
	tok, err := srv.CreateToken(ctx, "acme", base, server.TenantConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return client.New(hs.URL, tok), base
}

// waitingNotice is a notice of a task waiting for its model.
type waitingNotice struct {
	Type, Code string
	Detail     struct {
		ErrorCode string `json:"error_code"`
		RetryAt   string `json:"retry_at"`
		RetryInMS int64  `json:"retry_in_ms"`
	}
}

// waitingNotices checks the stream's ids run 1, 2, 3, … and returns its waiting
// notices, each with the error's code and a retry time that parses.
func waitingNotices(t *testing.T, events []client.Event) []waitingNotice {
	t.Helper()
	var out []waitingNotice
	for i, ev := range events {
		if ev.ID != int64(i+1) {
			t.Fatalf("event %d has id %d: a gap or a repeat", i+1, ev.ID)
		}
		var n waitingNotice
		json.Unmarshal(ev.Data, &n)
		if n.Type != "notice" || n.Code != server.CodeModelWaiting {
			continue
		}
		if n.Detail.ErrorCode != model.CodeOverloaded || n.Detail.RetryInMS <= 0 {
			t.Fatalf("a waiting notice without the error's code or the wait: %s", ev.Data)
		}
		if _, err := time.Parse(time.RFC3339Nano, n.Detail.RetryAt); err != nil {
			t.Fatalf("a waiting notice's retry_at: %v (%s)", err, ev.Data)
		}
		out = append(out, n)
	}
	return out
}

// TestServeTaskWaitsOutModelOutage: the model answers 503 for three seconds, longer
// than a provider's own retries; the task waits (its stream says so, with the error's
// code and the next try's time) and completes once the model is back.
func TestServeTaskWaitsOutModelOutage(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		behind := anthropictest.NewServer(t, anthropictest.Turn{Text: "answered after the outage"})
		o := newOutage(t, behind, 3*time.Second)
		c, base := outageService(t, st, o, time.Minute, 2*time.Second)
		task, err := c.SubmitTask(context.Background(), client.TaskSpec{Prompt: "hello", Cwd: base})
		if err != nil {
			t.Fatal(err)
		}
		done := waitStatus(t, c, task.TaskID, "completed")
		var res map[string]any
		json.Unmarshal(done.Result, &res)
		if res["result"] != "answered after the outage" {
			t.Fatalf("result: %s", done.Result)
		}
		notices := waitingNotices(t, follow(t, c, task.TaskID, 0))
		if len(notices) == 0 || int64(len(notices)) != o.refused.Load() {
			t.Fatalf("%d waiting notices for %d refused calls", len(notices), o.refused.Load())
		}
		if behind.RequestCount() != 1 {
			t.Fatalf("%d requests reached the model after the outage, want 1", behind.RequestCount())
		}
	})
}

// TestServeModelOutagePastTheBoundFails: an outage longer than ModelWait fails the task
// with the model's code and a message saying how long it waited, after waiting about
// that long and saying so in the stream.
func TestServeModelOutagePastTheBoundFails(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		behind := anthropictest.NewServer(t, anthropictest.Turn{Text: "never reached"})
		o := newOutage(t, behind, time.Hour)
		const bound = 2 * time.Second
		c, base := outageService(t, st, o, bound, 500*time.Millisecond)
		began := time.Now()
		task, err := c.SubmitTask(context.Background(), client.TaskSpec{Prompt: "hello", Cwd: base})
		if err != nil {
			t.Fatal(err)
		}
		done := waitStatus(t, c, task.TaskID, "error")
		took := time.Since(began)
		var res struct {
			Error struct {
				Code, Message string
				Detail        struct {
					WaitedMS int64 `json:"waited_ms"`
				}
			}
		}
		json.Unmarshal(done.Result, &res)
		if res.Error.Code != model.CodeOverloaded || !strings.Contains(res.Error.Message, "stayed unavailable") || res.Error.Detail.WaitedMS < bound.Milliseconds()-100 {
			t.Fatalf("result: %s", done.Result)
		}
		if took < bound || took > bound+10*time.Second {
			t.Fatalf("the task failed %s after submission, want about %s", took, bound)
		}
		if n := waitingNotices(t, follow(t, c, task.TaskID, 0)); len(n) < 3 {
			t.Fatalf("%d waiting notices, want one per wait (at least 3 within %s)", len(n), bound)
		}
		if behind.RequestCount() != 0 {
			t.Fatal("a request passed the outage")
		}
	})
}

// TestServeCancelEndsTheWait: a task waiting for its model ends at once when it is
// cancelled over the API, not when its wait would have.
func TestServeCancelEndsTheWait(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		behind := anthropictest.NewServer(t, anthropictest.Turn{Text: "never reached"})
		o := newOutage(t, behind, time.Hour)
		c, base := outageService(t, st, o, time.Hour, time.Hour)
		ctx := context.Background()
		task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "hello", Cwd: base})
		if err != nil {
			t.Fatal(err)
		}
		// Wait until the task waits longer than the test would (its third wait is 4 s).
		for o.refused.Load() < 3 {
			time.Sleep(20 * time.Millisecond)
		}
		began := time.Now()
		if _, err := c.Cancel(ctx, task.TaskID); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, c, task.TaskID, "cancelled")
		if took := time.Since(began); took > 2*time.Second {
			t.Fatalf("the cancelled task ended %s after the cancel", took)
		}
		if n := o.refused.Load(); n != 3 {
			t.Fatalf("%d calls after the cancel, want none (3 before)", n)
		}
	})
}
