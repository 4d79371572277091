package server

import (
	"context"
	"net/http"
	"time"

	"github.com/sema-agent/sema/agent"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// tracerName names the service's instrumentation scope.
const tracerName = "github.com/sema-agent/sema/server"

func (s *Server) tracer() trace.Tracer {
	if s.cfg.TracerProvider == nil {
		return noop.NewTracerProvider().Tracer(tracerName)
	}
	return s.cfg.TracerProvider.Tracer(tracerName)
}

// serverSpan starts the span of one API request (an HTTP server span), as a child of the
// caller's trace when the request carries a W3C traceparent.
func (s *Server) serverSpan(r *http.Request, requestID string) (context.Context, trace.Span) {
	ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	return s.tracer().Start(ctx, "HTTP "+r.Method, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		attribute.String("http.request.method", r.Method),
		attribute.String("url.path", r.URL.Path),
		attribute.String("sema.request_id", requestID),
	))
}

// endServerSpan ends a request's span with its route (the pattern, never the ids in the
// path) and status; a 5xx is an error of the service.
func endServerSpan(span trace.Span, route string, code int) {
	if route != "other" {
		span.SetName(route) // "POST /v1/tasks": the method and the route
	}
	span.SetAttributes(attribute.String("http.route", route), attribute.Int("http.response.status_code", code))
	if code >= 500 {
		span.SetStatus(codes.Error, http.StatusText(code))
	}
	span.End()
}

// legTrace turns a leg's events into spans: one for the leg (sema.task: an attempt of
// the task's job), one per turn (sema.turn: from the leg's start or the previous turn's
// tool results to the model's response — the model's time) and one per tool call
// (sema.tool: from the call to its result), the turns and calls children of the leg.
type legTrace struct {
	tr    trace.Tracer
	ctx   context.Context // the leg span's
	leg   trace.Span
	tools map[string]trace.Span
	// since is when the next request went out: the leg's start, or the last tool
	// result of the turn before. A turn's span is made when its response arrives, so a
	// leg that stops between turns leaves no empty one.
	since time.Time
	// began is the leg's start; lat receives the model's and the leg's times.
	began time.Time
	lat   *latencies
	// observed is set once the leg's time is in its histogram (observe).
	observed bool
}

// A task is one trace, however many legs it takes (its first run, each resume after a
// decision, each continuation after a crash or a shutdown, on any node): its row keeps
// the W3C traceparent of the request that submitted it (the POST's server span, itself
// a child of the caller's traceparent when the request carried one), and every leg's
// span is a child of that span. Children rather than links, so that a tracing UI shows
// the task's legs in one tree under one trace id; the legs are told apart by their
// start and their sema.status. A decision's request has its own trace (its caller's)
// and links to the task's.

// traceparentOf is the W3C traceparent of ctx's span; "" when ctx has none (no tracer).
func traceparentOf(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	return carrier.Get("traceparent")
}

// taskSpanContext is the span context a task's row keeps (traceparent); invalid when
// it keeps none.
func taskSpanContext(traceparent string) trace.SpanContext {
	if traceparent == "" {
		return trace.SpanContext{}
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent})
	return trace.SpanContextFromContext(ctx)
}

// linkTaskTrace links the span of ctx (a decision's request) to the trace of the task
// whose row keeps traceparent.
func linkTaskTrace(ctx context.Context, traceparent, taskID string) {
	if sc := taskSpanContext(traceparent); sc.IsValid() {
		trace.SpanFromContext(ctx).AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("sema.task_id", taskID)}})
	}
}

func (s *Server) startLegTrace(ctx context.Context, t *taskRow) *legTrace {
	tr := s.tracer()
	parent := ctx
	if sc := taskSpanContext(t.trace); sc.IsValid() {
		parent = trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	ctx, leg := tr.Start(parent, "sema.task", trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
		attribute.String("sema.task_id", t.id),
		attribute.String("sema.session_id", t.sessionID),
		attribute.String("sema.tenant", t.tenant),
	))
	if t.trace == "" {
		// A task submitted without tracing (by a process that had none): its first traced
		// leg starts its trace, and the later legs join it.
		if tp := traceparentOf(ctx); tp != "" {
			if _, err := s.b.db().exec(ctx, `UPDATE sema_serve_tasks SET trace = ? WHERE id = ? AND trace = ''`, tp, t.id); err == nil {
				t.trace = tp
			}
		}
	}
	now := time.Now()
	return &legTrace{tr: tr, ctx: ctx, leg: leg, tools: map[string]trace.Span{}, since: now, began: now, lat: s.metrics.latency}
}

// event records ev.
func (lt *legTrace) event(ev agent.Event) {
	switch ev.Type {
	case agent.EventAssistant:
		lt.lat.model.Observe(time.Since(lt.since).Seconds())
		_, turn := lt.tr.Start(lt.ctx, "sema.turn", trace.WithTimestamp(lt.since),
			trace.WithAttributes(attribute.Int("sema.turn", ev.Turn)))
		if r := ev.Response; r != nil {
			turn.SetAttributes(
				attribute.Int64("gen_ai.usage.input_tokens", r.Usage.InputTokens),
				attribute.Int64("gen_ai.usage.output_tokens", r.Usage.OutputTokens),
				attribute.String("gen_ai.response.finish_reasons", string(r.StopReason)),
			)
		}
		turn.End()
	case agent.EventToolUse:
		if u := ev.ToolUse; u != nil {
			_, sp := lt.tr.Start(lt.ctx, "sema.tool", trace.WithAttributes(
				attribute.String("sema.tool.name", u.Name), attribute.String("sema.tool.call_id", u.ID), attribute.Int("sema.turn", ev.Turn)))
			lt.tools[u.ID] = sp
		}
	case agent.EventToolResult:
		if r := ev.ToolResult; r != nil {
			if sp, ok := lt.tools[r.ID]; ok {
				if r.IsError {
					sp.SetStatus(codes.Error, r.Code)
				}
				sp.End()
				delete(lt.tools, r.ID)
			}
			if len(lt.tools) == 0 {
				lt.since = time.Now() // the next request goes out when the last result is in
			}
		}
	}
}

// observe puts the leg's time into its histogram, by how it ended, once: when its
// result is known, before the task's status says so, so that a scrape after the task
// ended counts the leg.
func (lt *legTrace) observe(status string) {
	if lt.observed {
		return
	}
	lt.observed = true
	lt.lat.leg.WithLabelValues(status).Observe(time.Since(lt.began).Seconds())
}

// end closes the leg's spans with its final status.
func (lt *legTrace) end(status string, err error) {
	for _, sp := range lt.tools {
		sp.End()
	}
	lt.observe(status)
	lt.leg.SetAttributes(attribute.String("sema.status", status))
	if err != nil {
		lt.leg.RecordError(err)
		lt.leg.SetStatus(codes.Error, err.Error())
	}
	lt.leg.End()
}
