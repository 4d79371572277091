package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/server"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// The operator's view of a park → decide → complete task on /metrics: every timing
// histogram saw it (queue wait for both legs, the model's turns, the legs by how they
// ended, the person's wait), and the tasks' states are read from the store per tenant —
// a queue depth of 0 once it is done, and one completed task of this tenant.
func TestMetricsOfATask(t *testing.T) { eachStore(t, testMetricsOfATask) }

func testMetricsOfATask(t *testing.T, st store) {
	f := newFixture(t, st, func(base string) []scripted.Turn {
		return []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{writeCall(filepath.Join(base, "out.txt"), "approved\n")}},
			{Text: "wrote it"},
		}
	})
	ctx := context.Background()
	c := f.client(t, "observed", f.base)
	task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "write the file", Cwd: f.base})
	if err != nil {
		t.Fatal(err)
	}
	parked := waitStatus(t, c, task.TaskID, client.StatusAwaitingApproval)
	text := scrape(t, f)
	if got := sample(t, text, `sema_tasks{status="awaiting_approval",tenant="observed"}`); got != 1 {
		t.Fatalf("tasks awaiting approval: %v\n%s", got, text)
	}
	if _, err := c.Decide(ctx, parked.CheckpointID, client.Decision{Decision: "allow"}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, task.TaskID, "completed")
	text = scrape(t, f)
	for metric, atLeast := range map[string]float64{
		`sema_task_queue_wait_seconds_count`:                      2, // the first leg and the resumed one
		`sema_model_turn_seconds_count`:                           2,
		`sema_task_leg_seconds_count{status="awaiting_approval"}`: 1,
		`sema_task_leg_seconds_count{status="completed"}`:         1,
		`sema_approval_wait_seconds_count`:                        1,
		`sema_tasks{status="completed",tenant="observed"}`:        1,
	} {
		if got := sample(t, text, metric); got < atLeast {
			t.Errorf("%s = %v, want at least %v", metric, got, atLeast)
		}
	}
	if regexp.MustCompile(`sema_tasks\{status="(queued|awaiting_approval)",tenant="observed"\} [1-9]`).MatchString(text) {
		t.Errorf("a finished tenant still has queued or waiting tasks:\n%s", text)
	}
}

func scrape(t *testing.T, f *fixture) string {
	t.Helper()
	resp, err := http.Get(f.http.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d, %v", resp.StatusCode, err)
	}
	return string(b)
}

// sample returns the value of the sample named exactly name (with its labels), or -1.
func sample(t *testing.T, text, name string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(text)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Every API request is a server span named by its route (never by the ids in the path),
// a child of the caller's trace when it sends a W3C traceparent, with its status; and a
// decision's log line names the token that made it (an id derived from the stored hash),
// never the token.
func TestRequestSpansAndDecisionAudit(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx := context.Background()
	var logs logLines
	f := newFixtureWith(t, "sqlite", func(base string) []scripted.Turn {
		return []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{writeCall(filepath.Join(base, "out.txt"), "x\n")}},
			{Text: "done"},
		}
	}, func(cfg *server.Config) {
		cfg.TracerProvider = tp
		cfg.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	tok, err := f.srv.CreateToken(ctx, "audited", f.base, server.TenantConfig{})
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(f.http.URL, tok)
	task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "write", Cwd: f.base})
	if err != nil {
		t.Fatal(err)
	}
	parked := waitStatus(t, c, task.TaskID, client.StatusAwaitingApproval)

	// A request that carries the caller's trace.
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	req, _ := http.NewRequest("GET", f.http.URL+"/v1/tasks/"+task.TaskID, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var found bool
	for _, sp := range rec.Ended() {
		if strings.Contains(sp.Name(), task.TaskID) {
			t.Errorf("a span is named by an id: %s", sp.Name())
		}
		if sp.SpanContext().TraceID().String() != traceID {
			continue // the client's own polls, which carry no trace
		}
		found = true
		if sp.Name() != "GET /v1/tasks/{id}" || sp.SpanKind() != oteltrace.SpanKindServer || attrOf(sp.Attributes(), "http.route") != "GET /v1/tasks/{id}" ||
			attrOf(sp.Attributes(), "http.response.status_code") != "200" {
			t.Errorf("request span %q (%v): %v; want a server span named by its route, with its status", sp.Name(), sp.SpanKind(), sp.Attributes())
		}
	}
	if !found {
		t.Fatal("no span in the caller's trace")
	}

	if _, err := c.Decide(ctx, parked.CheckpointID, client.Decision{Decision: "allow"}); err != nil {
		t.Fatal(err)
	}
	line := logs.find(`"msg":"checkpoint decided"`)
	if line == "" || !strings.Contains(line, `"token_id":"`) || !strings.Contains(line, parked.CheckpointID) || strings.Contains(line, tok) || strings.Contains(line, strings.TrimPrefix(tok, "sema_")) {
		t.Fatalf("decision log line %q: want the checkpoint and a token id, never the token", line)
	}
}

// logLines collects a JSON logger's lines.
type logLines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logLines) find(substr string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for line := range strings.SplitSeq(l.b.String(), "\n") {
		if strings.Contains(line, substr) {
			return line
		}
	}
	return ""
}
