package server

import (
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the process's Prometheus metrics, on a registry of its own (so two
// servers in one test process do not collide).
type metrics struct {
	reg       *prometheus.Registry
	submitted prometheus.Counter
	finished  *prometheus.CounterVec
	running   prometheus.Gauge
	events    prometheus.Counter
	requests  *prometheus.CounterVec
	decisions *prometheus.CounterVec
	webhooks  *prometheus.CounterVec
	latency   *latencies
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		submitted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sema_tasks_submitted_total", Help: "Tasks submitted through this process.",
		}),
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sema_task_legs_finished_total", Help: "Legs this process ran to an end, by result status.",
		}, []string{"status"}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sema_task_legs_running", Help: "Legs this process is running now.",
		}),
		events: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sema_task_events_total", Help: "Task events this process wrote to the store.",
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sema_http_requests_total", Help: "API requests, by route and status code.",
		}, []string{"route", "code"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sema_checkpoint_decisions_total", Help: "Checkpoint decisions, by outcome.",
		}, []string{"outcome"}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sema_webhook_deliveries_total", Help: "Webhook delivery tries this process made, by outcome (delivered, retried, failed).",
		}, []string{"outcome"}),
		latency: newLatencies(),
	}
	m.reg.MustRegister(m.submitted, m.finished, m.running, m.events, m.requests, m.decisions, m.webhooks,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reg.MustRegister(m.latency.collectors()...)
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// broadcaster wakes the event streams of a task when this process appends to it; a
// stream also polls the store, for events other processes write.
type broadcaster struct {
	mu      sync.Mutex
	waiters map[string][]chan struct{}
}

func newBroadcaster() *broadcaster { return &broadcaster{waiters: map[string][]chan struct{}{}} }

// wait returns a channel closed at the next notify of id.
func (b *broadcaster) wait(id string) chan struct{} {
	ch := make(chan struct{})
	b.mu.Lock()
	b.waiters[id] = append(b.waiters[id], ch)
	b.mu.Unlock()
	return ch
}

// forget drops ch from id's waiters (the stream stopped waiting for another reason).
func (b *broadcaster) forget(id string, ch chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ws := b.waiters[id]
	for i, w := range ws {
		if w == ch {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(b.waiters, id)
	} else {
		b.waiters[id] = ws
	}
}

func (b *broadcaster) notify(id string) {
	b.mu.Lock()
	ws := b.waiters[id]
	delete(b.waiters, id)
	b.mu.Unlock()
	for _, ch := range ws {
		close(ch)
	}
}
