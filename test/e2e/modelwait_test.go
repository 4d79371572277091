package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/model/anthropic/anthropictest"
)

// TestServeTaskOutlivesModelOutage: with the service's defaults, the model answers 503
// for 15 seconds — longer than the provider's own retries (about 7 s) — while a task
// runs; the task waits, its stream says so (the error's code, the next try's time), and
// it completes once the model is back.
func TestServeTaskOutlivesModelOutage(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	behind := anthropictest.NewServer(t, anthropictest.Turn{Text: "answered after the outage"})
	u, _ := url.Parse(behind.URL())
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.FlushInterval = -1
	var until atomic.Int64
	until.Store(time.Now().Add(time.Hour).UnixNano())
	var refused atomic.Int64
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if time.Now().UnixNano() < until.Load() {
			refused.Add(1)
			w.Header().Set("content-type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"type":"error","error":{"type":"api_error","message":"Service Unavailable"},"request_id":"req_outage"}`)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	env := []string{"ANTHROPIC_API_KEY=test-key", "ANTHROPIC_BASE_URL=" + front.URL, "SEMA_HOME=" + t.TempDir()}
	tok := serveToken(t, env, "acme", base)
	p := startServe(t, env, "--model", "anthropic/claude-sonnet-4-5")
	c := client.New(p.url, tok)
	until.Store(time.Now().Add(15 * time.Second).UnixNano())
	began := time.Now()
	task, err := c.SubmitTask(context.Background(), client.TaskSpec{Prompt: "hello", Cwd: base})
	if err != nil {
		t.Fatal(err)
	}
	done := waitTask(t, c, task.TaskID, "completed", 90*time.Second)
	t.Logf("completed %s after submission, through a 15 s outage (%d refused requests)", time.Since(began).Round(time.Millisecond), refused.Load())
	var res map[string]any
	json.Unmarshal(done.Result, &res)
	if res["result"] != "answered after the outage" {
		t.Fatalf("result: %s", done.Result)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	waiting := 0
	for ev, err := range c.Events(ctx, task.TaskID, 0) {
		if err != nil {
			t.Fatal(err)
		}
		var n struct {
			Type, Code string
			Detail     struct {
				ErrorCode string `json:"error_code"`
				RetryAt   string `json:"retry_at"`
			}
		}
		json.Unmarshal(ev.Data, &n)
		if n.Code != "serve.model_waiting" {
			continue
		}
		if _, err := time.Parse(time.RFC3339Nano, n.Detail.RetryAt); err != nil || n.Detail.ErrorCode != "model.overloaded" {
			t.Fatalf("a waiting notice: %s", ev.Data)
		}
		waiting++
	}
	if waiting == 0 {
		t.Fatal("the stream does not say the task waited")
	}
	if behind.RequestCount() != 1 {
		t.Fatalf("%d requests reached the model after the outage, want 1", behind.RequestCount())
	}
}
