package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/server"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestOneTracePerTask: a task submitted in the caller's trace parks at a question, is
// approved and resumes; both its legs are spans of the caller's trace, children of the
// submitting request's span, and the decision's request (in a trace of its own) links
// to it. Calibrated: before the task kept its trace, each leg was a trace of its own.
func TestOneTracePerTask(t *testing.T) { eachStore(t, testOneTracePerTask) }

func testOneTracePerTask(t *testing.T, st store) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx := context.Background()
	f := newFixtureWith(t, st, func(base string) []scripted.Turn {
		return []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{writeCall(filepath.Join(base, "out.txt"), "x\n")}},
			{Text: "done"},
		}
	}, func(cfg *server.Config) { cfg.TracerProvider = tp })
	tok, err := f.srv.CreateToken(ctx, "traced", f.base, server.TenantConfig{})
	if err != nil {
		t.Fatal(err)
	}
	const callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	body, _ := json.Marshal(client.TaskSpec{Prompt: "write", Cwd: f.base})
	req, _ := http.NewRequest("POST", f.http.URL+"/v1/tasks", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("traceparent", "00-"+callerTrace+"-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var task client.Task
	decodeJSON(t, resp, &task)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("submit: %d", resp.StatusCode)
	}
	c := client.New(f.http.URL, tok)
	parked := waitStatus(t, c, task.TaskID, client.StatusAwaitingApproval)
	if _, err := c.Decide(ctx, parked.CheckpointID, client.Decision{Decision: "allow"}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, task.TaskID, "completed")

	var submit, decision sdktrace.ReadOnlySpan
	var legs []sdktrace.ReadOnlySpan
	for deadline := time.Now().Add(5 * time.Second); len(legs) < 2 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		legs = legs[:0]
		for _, sp := range rec.Ended() {
			switch sp.Name() {
			case "POST /v1/tasks":
				submit = sp
			case "POST /v1/checkpoints/{id}/decision":
				decision = sp
			case "sema.task":
				legs = append(legs, sp)
			}
		}
	}
	if submit == nil || decision == nil || len(legs) != 2 {
		t.Fatalf("spans: submit %v, decision %v, %d legs; want both requests and 2 legs", submit != nil, decision != nil, len(legs))
	}
	if got := submit.SpanContext().TraceID().String(); got != callerTrace {
		t.Fatalf("the submitting request's span is in trace %s, not the caller's", got)
	}
	for i, leg := range legs {
		if leg.SpanContext().TraceID() != submit.SpanContext().TraceID() || leg.Parent().SpanID() != submit.SpanContext().SpanID() {
			t.Errorf("leg %d (%s) is in trace %s under span %s; want trace %s under the submitting request's span %s", i+1,
				attrOf(leg.Attributes(), "sema.status"), leg.SpanContext().TraceID(), leg.Parent().SpanID(), callerTrace, submit.SpanContext().SpanID())
		}
	}
	if decision.SpanContext().TraceID() == submit.SpanContext().TraceID() {
		t.Fatal("the decision's request is in the task's trace; it carried no traceparent, so it should have its own")
	}
	linked := false
	for _, l := range decision.Links() {
		linked = linked || l.SpanContext.SpanID() == submit.SpanContext().SpanID() && l.SpanContext.TraceID() == submit.SpanContext().TraceID()
	}
	if !linked {
		t.Fatalf("the decision's span links to %v; want the task's trace (%s)", decision.Links(), callerTrace)
	}
}

// TestOneTraceAcrossProcesses: a task whose process stops mid-leg and whose next leg
// runs in another process is one trace: both legs' spans share the trace of the
// request that submitted it. Calibrated: before the task kept its trace, the second
// process's leg began a trace of its own.
func TestOneTraceAcrossProcesses(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		c, task := restartMidTool(t, st, 0, func(cfg *server.Config) { cfg.TracerProvider = tp })
		waitStatus(t, c, task, "completed")
		var submit sdktrace.ReadOnlySpan
		var legs []sdktrace.ReadOnlySpan
		for deadline := time.Now().Add(5 * time.Second); len(legs) < 2 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			legs = legs[:0]
			for _, sp := range rec.Ended() {
				switch {
				case sp.Name() == "POST /v1/tasks":
					submit = sp
				case sp.Name() == "sema.task" && attrOf(sp.Attributes(), "sema.task_id") == task:
					legs = append(legs, sp)
				}
			}
		}
		if submit == nil || len(legs) != 2 {
			t.Fatalf("spans: submit %v, %d legs of the task; want the request and 2 legs", submit != nil, len(legs))
		}
		for i, leg := range legs {
			if leg.SpanContext().TraceID() != submit.SpanContext().TraceID() || leg.Parent().SpanID() != submit.SpanContext().SpanID() {
				t.Errorf("leg %d (%s) is in trace %s; want the submitting request's %s", i+1, attrOf(leg.Attributes(), "sema.status"),
					leg.SpanContext().TraceID(), submit.SpanContext().TraceID())
			}
		}
	})
}
