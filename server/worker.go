package server

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/riverqueue/river"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/streamjson"
)

// runArgs is River's job for a task: it names the task only; everything else is in the
// task's row, read afresh at each attempt.
type runArgs struct {
	TaskID string `json:"task_id"`
}

// Kind names the job kind in River's tables.
func (runArgs) Kind() string { return "sema_task" }

// taskWorker runs the service's jobs.
type taskWorker struct {
	river.WorkerDefaults[runArgs]
	s *Server
}

// Timeout is River's mark for a stuck job, not a limit on the task: River rescues a
// job (hands it to another worker) only once it has run longer than its timeout, so the
// timeout is the service's RescueAfter. The leg itself ignores the deadline (Work runs
// it on a context River cannot end; only a cancel request or the process's shutdown
// ends it), and a job rescued while its leg is alive finds the session's lease held and
// waits (session.busy snoozes it) until the leg ends.
func (w *taskWorker) Timeout(*river.Job[runArgs]) time.Duration { return w.s.cfg.RescueAfter }

// Work runs one attempt of a task's job.
func (w *taskWorker) Work(ctx context.Context, job *river.Job[runArgs]) error {
	w.s.metrics.latency.queueWait.Observe(max(0, time.Since(job.ScheduledAt).Seconds()))
	defer w.s.rec.legStarted(ctx, job)()
	return w.s.work(context.WithoutCancel(ctx), job.Args.TaskID)
}

// task kinds: how the task's leg starts.
const (
	kindRun  = "run"  // a new session, or --resume
	kindFork = "fork" // --resume with --fork-session
)

// storedSpec is a task's spec as its row keeps it: the wire spec and what only the
// session endpoints can ask for.
type storedSpec struct {
	client.TaskSpec
	// ForkAt is the entry a fork (POST /v1/sessions/{id}/fork with at) is cut at.
	ForkAt string `json:"fork_at,omitempty"`
}

// taskRow is a task as its row stores it.
type taskRow struct {
	id, tenant, sessionID, kind, status string
	spec                                storedSpec
	decision                            string
	headAtStart                         string
	began                               bool
	cancelRequested                     bool
	// trace is the W3C traceparent of the request that submitted the task: every leg's
	// span is its child, so a task is one trace (see trace.go). "" without tracing.
	trace string
	// modeRequested is the permission mode asked for while the task ran or waited
	// (POST /v1/tasks/{id}/mode); "" when none was (taskmode.go).
	modeRequested string
	// recorded is what this leg's model responses added to the tenant's spend so far
	// (legSpend); the leg's end adds the rest of its result's total.
	recorded int64
}

func (s *Server) loadTask(ctx context.Context, c conn, id string) (*taskRow, error) {
	var t taskRow
	var spec string
	var began, cancel int
	err := queryRow(ctx, c, `SELECT id, tenant, session_id, kind, status, spec, decision, head_at_start, began, cancel_requested, trace, mode_requested
		FROM sema_serve_tasks WHERE id = ?`, []any{id},
		&t.id, &t.tenant, &t.sessionID, &t.kind, &t.status, &spec, &t.decision, &t.headAtStart, &began, &cancel, &t.trace, &t.modeRequested)
	if err != nil {
		return nil, err
	}
	t.began, t.cancelRequested = began != 0, cancel != 0
	if err := json.Unmarshal([]byte(spec), &t.spec); err != nil {
		return nil, err
	}
	return &t, nil
}

// errCancelRequested is the cause of a leg's cancellation by a cancel request (rather
// than by the process stopping: errShutdown).
var (
	errCancelRequested = errors.New("the task was cancelled over the API")
	errShutdown        = errors.New("the process is shutting down")
)

// work runs (or goes on with) a task: a new leg, the resume of a decided question, or —
// after a crash or a shutdown left it unfinished — the continuation of its session from
// the transcript. Everything it learns it writes to the store before the next step, so
// any process can take over after any step.
func (s *Server) work(ctx context.Context, id string) error {
	t, err := s.loadTask(ctx, s.b.db(), id)
	if errors.Is(err, errNoRow) {
		return nil // nothing to run: a job whose task is gone
	}
	if err != nil {
		return err
	}
	if t.status != client.StatusQueued && t.status != client.StatusRunning {
		return nil // finished, or parked and not yet decided: a stale or duplicate job
	}
	if t.cancelRequested {
		return s.finish(ctx, t, cancelledResult(t.sessionID), nil)
	}
	legs := newLegStream(s, t)
	p, err := s.planLeg(ctx, t, legs)
	if p == nil {
		return err
	}
	defer s.settleLeg(legs)
	spec, runner, answer, spend, announced := p.spec, p.runner, p.answer, p.spend, p.announced
	legCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s.track(t.id, cancel)
	ctl := &agent.Control{}
	spec.Control = ctl
	defer s.startLegMode(t.id, ctl, legs)()
	defer s.untrack(t.id)
	s.metrics.running.Inc()
	defer s.metrics.running.Dec()

	lt := s.startLegTrace(ctx, t)
	traceStatus, traceErr := "interrupted", error(nil)
	defer func() { lt.end(traceStatus, traceErr) }()

	events := runner.Events(legCtx, spec)
	if answer != nil {
		events = runner.ResumeEvents(legCtx, spec, *answer)
	}
	var res *agent.TaskResult
	for ev, err := range events {
		if err != nil {
			traceErr = err
			return s.legFailed(ctx, legCtx, t, answer, err, legs)
		}
		if ev.Type == agent.EventInit && ev.ParentToolUseID == "" && ev.Manifest != nil {
			s.legStarted(legCtx, t, ev.Manifest.Mode.Effective)
		}
		if ev.Type == agent.EventInit && t.kind == kindFork && t.sessionID == "" {
			if err := s.adoptFork(ctx, t, ev.Manifest.SessionID); err != nil {
				return err
			}
		}
		lt.event(ev)
		if ev.Type == agent.EventText {
			// The text follows the last event numbered; one still held is committed now,
			// so the text is not held back behind the turn's next commit.
			legs.kick()
			s.live.publish(t.id, legs.last(), ev)
			continue
		}
		if ev.Type == agent.EventAssistant && ev.Response != nil {
			// A store that cannot say leaves the leg to its own token bound (set from
			// what was left of the day when it started), and the leg's end records the
			// tokens it could not.
			if spent, err := spend.add(ctx, ev.Response.Usage); err == nil && spent {
				cancel(errDayExhausted)
			}
		}
		if ev.Type == agent.EventResult {
			res = ev.Result
			traceStatus = string(res.Status)
			lt.observe(traceStatus)
			continue // written with the task's status, below
		}
		if ev.Type == agent.EventToolUse {
			key := callKey(ev.ParentToolUseID, ev.Turn, ev.ToolUse.ID)
			if announced[key] {
				continue
			}
			announced[key] = true
		}
		obj := streamjson.Event(ev)
		if obj == nil {
			continue
		}
		data, err := json.Marshal(obj)
		if err != nil {
			continue
		}
		legs.hold(data) // committed with the leg's next transcript write (heldwrites.go)
	}
	return s.legEnded(ctx, legCtx, t, res, spend, legs)
}

func (s *Server) track(id string, cancel context.CancelCauseFunc) {
	s.mu.Lock()
	s.running[id] = cancel
	s.mu.Unlock()
}

func (s *Server) untrack(id string) {
	s.mu.Lock()
	delete(s.running, id)
	s.mu.Unlock()
}

// watchCancels polls the store for cancel requests that reached another process, for
// the legs this one runs: one query for all of them each interval, however many run.
func (s *Server) watchCancels(ctx context.Context) {
	tick := time.NewTicker(5 * s.cfg.Poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		s.mu.Lock()
		idle := len(s.running) == 0
		s.mu.Unlock()
		if idle {
			continue
		}
		rs, err := s.b.db().query(ctx, `SELECT id FROM sema_serve_tasks WHERE cancel_requested = 1 AND status IN (?, ?)`,
			client.StatusQueued, client.StatusRunning)
		ids, err := collect(rs, err, scanString)
		if err != nil {
			continue // the store is down for now; the next tick asks again
		}
		s.mu.Lock()
		for _, id := range ids {
			if cancel := s.running[id]; cancel != nil {
				cancel(errCancelRequested)
			}
		}
		s.mu.Unlock()
		s.applyRequestedModes(ctx)
	}
}
