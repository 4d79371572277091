package server

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// latencies are the service's timing histograms: what an operator asks of a queue of
// agent tasks — how long tasks wait to start, how long the model takes per turn, how long
// a leg runs, and how long a question waits for a person.
type latencies struct {
	queueWait    prometheus.Histogram
	model        prometheus.Histogram
	leg          *prometheus.HistogramVec
	approvalWait prometheus.Histogram
}

// Buckets from 5 ms to about an hour: a queue wait or a model turn is milliseconds to
// minutes, a leg seconds to an hour, a person's answer anything up to hours (the last
// bucket, +Inf, holds the rest).
var latencyBuckets = prometheus.ExponentialBucketsRange(0.005, 3600, 16)

func newLatencies() *latencies {
	return &latencies{
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "sema_task_queue_wait_seconds", Help: "From a task's job being due (submitted, or queued again after a decision) to a worker starting it.",
			Buckets: latencyBuckets,
		}),
		model: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "sema_model_turn_seconds", Help: "From a turn's request going out (the leg's start, or the previous turn's last tool result) to the model's response.",
			Buckets: latencyBuckets,
		}),
		leg: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "sema_task_leg_seconds", Help: "How long a leg ran, by how it ended.",
			Buckets: latencyBuckets,
		}, []string{"status"}),
		approvalWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "sema_approval_wait_seconds", Help: "From a question being parked to its decision, observed when the decided task resumes.",
			Buckets: latencyBuckets,
		}),
	}
}

func (l *latencies) collectors() []prometheus.Collector {
	return []prometheus.Collector{l.queueWait, l.model, l.leg, l.approvalWait}
}

// taskStates is a collector that reads, at each scrape, how many tasks each tenant has in
// each state and how long the oldest of them has been in it: the queue's depth and age
// (state queued), the questions waiting for a person (awaiting_approval), and the work
// under way. It reads the store, so every node reports the whole service; a scrape that
// cannot read it in time reports nothing for these rather than stale numbers.
type taskStates struct {
	s      *Server
	count  *prometheus.Desc
	oldest *prometheus.Desc
}

// taskStatesTimeout bounds the store read of one scrape.
const taskStatesTimeout = 2 * time.Second

func newTaskStates(s *Server) *taskStates {
	return &taskStates{
		s:      s,
		count:  prometheus.NewDesc("sema_tasks", "Tasks by tenant and state (queued: the queue's depth).", []string{"tenant", "status"}, nil),
		oldest: prometheus.NewDesc("sema_tasks_oldest_age_seconds", "How long the longest-waiting task of a tenant has been in its state (queued: the queue's age).", []string{"tenant", "status"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *taskStates) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.count
	ch <- c.oldest
}

// Collect implements prometheus.Collector. Finished tasks are counted too (their
// oldest age is how long ago the oldest finished), so a dashboard sees totals per state.
func (c *taskStates) Collect(ch chan<- prometheus.Metric) {
	if c.s.b == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), taskStatesTimeout)
	defer cancel()
	rows, err := c.s.b.db().query(ctx, `SELECT tenant, status, COUNT(*), MIN(updated_ms) FROM sema_serve_tasks GROUP BY tenant, status`)
	if err != nil {
		c.s.log.Warn("metrics: reading the tasks' states failed", "error", err.Error())
		return
	}
	defer rows.Close()
	now := nowMS()
	for rows.Next() {
		var tenant, status string
		var n, since int64
		if err := rows.Scan(&tenant, &status, &n, &since); err != nil {
			c.s.log.Warn("metrics: reading the tasks' states failed", "error", err.Error())
			return
		}
		ch <- prometheus.MustNewConstMetric(c.count, prometheus.GaugeValue, float64(n), tenant, status)
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, float64(max(0, now-since))/1000, tenant, status)
	}
}

// observeApprovalWait records how long the question a resumed leg answers waited for
// its decision.
func (s *Server) observeApprovalWait(ctx context.Context, checkpointID string) {
	var created, decided int64
	if err := queryRow(ctx, s.b.db(), `SELECT created_ms, decided_ms FROM sema_serve_checkpoints WHERE id = ?`, []any{checkpointID}, &created, &decided); err != nil || decided < created {
		return
	}
	s.metrics.latency.approvalWait.Observe(float64(decided-created) / 1000)
}
