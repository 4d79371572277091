package server

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"time"

	"github.com/riverqueue/river"
	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/settings"
	"github.com/sema-agent/sema/streamjson"
	"github.com/sema-agent/sema/worktree"
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

// legStart is what a leg reads as it starts: its tenant's managed settings, policy (the
// stored JSON; empty when none) and daily token budget (0 when none), and the task's
// last stored event, which the leg's own events follow.
type legStart struct {
	settings []settings.File
	policy   string
	perDay   int64
	lastSeq  int64
}

// qLegStart reads a leg's start in one statement, where four were four round trips on
// Postgres. Each is read as it was on its own: a missing row is NULL. Nothing writes the
// task's events between this read and the leg's first event but the leg itself (another
// attempt of the task stops at the session's lease before it emits any).
const qLegStart = `SELECT
	(SELECT data FROM sema_serve_tenant_settings WHERE tenant = ?),
	(SELECT policy FROM sema_serve_policies WHERE tenant = ?),
	(SELECT tokens_per_day FROM sema_serve_tenants WHERE name = ?),
	(SELECT COALESCE(MAX(seq), 0) FROM sema_serve_events WHERE task_id = ?)`

// readLegStart reads what task t's leg starts with. A store failure is returned as it is
// (the leg is tried again); settings that no longer parse are their settings code.
func (s *Server) readLegStart(ctx context.Context, t *taskRow) (*legStart, error) {
	var data, policy sql.NullString
	var perDay, lastSeq sql.NullInt64
	if err := queryRow(ctx, s.b.db(), qLegStart, []any{t.tenant, t.tenant, t.tenant, t.id}, &data, &policy, &perDay, &lastSeq); err != nil {
		return nil, err
	}
	files, err := parseTenantSettings(t.tenant, []byte(data.String))
	if err != nil {
		return nil, err
	}
	return &legStart{settings: files, policy: policy.String, perDay: perDay.Int64, lastSeq: lastSeq.Int64}, nil
}

// legPlan is what a leg runs with: its spec and runner, the answer it resumes with (if
// any), the tenant's spend it counts against, and the calls already announced on the
// task's stream by an earlier attempt.
type legPlan struct {
	spec      agent.TaskSpec
	runner    *agent.Runner
	answer    *agent.Answer
	spend     *legSpend
	announced map[string]bool
}

// planLeg readies t's next leg and marks the task running. A nil plan means the leg does
// not run: the error is then the job's answer — nil or finish's when the task ended
// here (a refused spec, policy or decision), the store's when River should try again.
func (s *Server) planLeg(ctx context.Context, t *taskRow, legs *legStream) (*legPlan, error) {
	start, err := s.readLegStart(ctx, t)
	if err != nil && sema.CodeOf(err) == "" {
		return nil, err // the store is down for now; River tries again
	}
	if err != nil {
		return nil, s.finish(ctx, t, errorResult(t.sessionID, err), nil)
	}
	spec, runner, err := s.prepare(t, legs, start.settings)
	if err != nil {
		return nil, s.finish(ctx, t, errorResult(t.sessionID, err), nil)
	}
	var answer *agent.Answer
	if t.decision != "" {
		answer = new(agent.Answer)
		if err := json.Unmarshal([]byte(t.decision), answer); err != nil {
			return nil, s.finish(ctx, t, errorResult(t.sessionID, err), nil)
		}
		s.observeApprovalWait(ctx, answer.CheckpointID)
	}
	beganNow, err := s.place(ctx, t, &spec, answer != nil)
	if err != nil {
		return nil, err
	}
	spend, err := s.applyPolicy(ctx, t, start, &spec)
	if err != nil {
		if sema.CodeOf(err) == "" {
			return nil, err // the store is down for now; River tries again
		}
		return nil, s.finish(ctx, t, errorResult(t.sessionID, err), nil)
	}
	spend.legs = legs
	if err := s.markRunning(ctx, t, beganNow); err != nil {
		return nil, err
	}
	legs.seq = start.lastSeq
	p := &legPlan{spec: spec, runner: runner, answer: answer, spend: spend, announced: map[string]bool{}}
	if legs.seq > 0 {
		if p.announced, err = s.announcedCalls(ctx, t.id); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// legFailed answers a leg whose run stopped with err before its result: a busy session
// or a stopping leg is tried again later, a decision an earlier attempt claimed goes on
// from the transcript, a refused edit reopens the question; anything else ends the task.
func (s *Server) legFailed(ctx, legCtx context.Context, t *taskRow, answer *agent.Answer, err error, legs *legStream) error {
	switch {
	case sema.IsCode(err, session.CodeBusy):
		// Another leg runs in the session (a task still finishing, or a worker
		// whose job River rescued too early): try again when it may be done.
		return handBack(ctx, legs, func() error { return river.JobSnooze(max(5*s.cfg.Poll, s.cfg.RescueAfter/4)) })
	case answer != nil && sema.IsCode(err, session.CodeAlreadyClaimed):
		// The decision was claimed by an earlier attempt that then stopped (or by
		// `sema approve`): the transcript holds what it did; go on from there.
		return handBack(ctx, legs, func() error {
			if _, err := s.b.db().exec(ctx, `UPDATE sema_serve_tasks SET decision = '' WHERE id = ?`, t.id); err != nil {
				return err
			}
			return river.JobSnooze(0)
		})
	case answer != nil && refusedAnswer(err):
		// The decision's edit was refused before anything was claimed: the question
		// is open again, and the decision's request answers with the refusal.
		return handBack(ctx, legs, func() error { return s.reopen(ctx, t.id, answer.CheckpointID, err) })
	case legCtx.Err() != nil:
		return handBack(ctx, legs, func() error { return river.JobSnooze(0) })
	}
	return s.finishLeg(ctx, t, errorResult(t.sessionID, err), nil, legs)
}

// legEnded records how a leg that reached its result ended: the task finished, stopped
// by the tenant's day, or queued again when the process is stopping.
func (s *Server) legEnded(ctx, legCtx context.Context, t *taskRow, res *agent.TaskResult, spend *legSpend, legs *legStream) error {
	if res == nil {
		return handBack(ctx, legs, func() error { return river.JobSnooze(0) })
	}
	if res.Status == sema.StatusCancelled && context.Cause(legCtx) == errDayExhausted {
		// As a leg that reached its own token budget ends, with what it did and spent,
		// and why.
		obj := streamjson.Result(res)
		obj["status"] = sema.StatusBudgetExceeded
		obj["error"] = errObject(sema.Errorf(CodeTokenLimit, "the leg stopped: the tenant's %d tokens for the last 24 hours are spent; try again later", spend.perDay))
		return s.finishLeg(ctx, t, obj, res, legs)
	}
	if res.Status == sema.StatusCancelled && context.Cause(legCtx) != errCancelRequested {
		// The process is stopping (or its worker was cancelled): the leg's finished turns
		// are in the transcript; another attempt continues from them.
		return handBack(ctx, legs, func() error {
			if _, err := s.b.db().exec(ctx, `UPDATE sema_serve_tasks SET status = ?, updated_ms = ? WHERE id = ? AND status = ?`,
				client.StatusQueued, nowMS(), t.id, client.StatusRunning); err != nil {
				return err
			}
			return river.JobSnooze(0)
		})
	}
	return s.finishLeg(ctx, t, streamjson.Result(res), res, legs)
}

// handBack commits what legs holds, then does next: a leg that ends without its result
// (its job snoozed for another attempt, its question reopened) stores its events before
// another attempt can start and number events after them.
func handBack(ctx context.Context, legs *legStream, next func() error) error {
	if err := legs.flush(ctx); err != nil {
		return err
	}
	return next()
}

// settleLeg commits what a leg still holds as work returns — nothing, unless it
// returned early on a store's error — and stops its timer.
func (s *Server) settleLeg(legs *legStream) {
	if err := legs.flush(context.Background()); err != nil {
		s.log.Warn("a leg's last events not written", "task_id", legs.taskID, "error", err.Error())
	}
	legs.stop()
}

// prepare turns a stored task into the runner's spec and a runner for its model, whose
// calls wait out a model outage with notices in the leg's stream, under the server's
// managed settings and its tenant's (tenantFiles).
func (s *Server) prepare(t *taskRow, legs *legStream, tenantFiles []settings.File) (agent.TaskSpec, *agent.Runner, error) {
	if !s.operatorModel(t.spec.Model) {
		// Queued under another process's models: still only the operator's are opened.
		return agent.TaskSpec{}, nil, sema.Errorf(CodePolicyModel, "the model %q is not one of the service's models", t.spec.Model)
	}
	provider, modelName, err := s.cfg.OpenProvider(t.spec.Model)
	if err != nil {
		return agent.TaskSpec{}, nil, err
	}
	onAsk := agent.OnAskPark
	if t.spec.OnAsk == "deny" {
		onAsk = agent.OnAskDeny
	}
	spec := agent.TaskSpec{
		Prompt:                    t.spec.Prompt,
		Root:                      t.spec.Cwd,
		Model:                     modelName,
		PermissionMode:            permission.Mode(t.spec.PermissionMode),
		AllowedTools:              t.spec.AllowedTools,
		DisallowedTools:           t.spec.DisallowedTools,
		AdditionalDirectories:     t.spec.AddDirs,
		AdditionalReadDirectories: t.spec.AddReadDirs,
		MaxTurns:                  t.spec.MaxTurns,
		MaxBudgetUSD:              t.spec.MaxBudgetUSD,
		OnAsk:                     onAsk,
		Worktree:                  worktreeRef(t.spec.TaskSpec),
	}
	store, err := s.newTurnStore(legs)
	if err != nil {
		return agent.TaskSpec{}, nil, err
	}
	deps := agent.Deps{
		Provider: s.patient(provider, legs), Prices: s.cfg.Prices, Store: store, History: s.b.history(),
		SessionLease: s.cfg.SessionLease,
		Settings:     &agent.SettingsOptions{Managed: s.cfg.ManagedSettings, Tenant: tenantFiles},
	}
	if d, ok := s.b.(interface{ stateDir() string }); ok {
		deps.StateDir = d.stateDir()
	}
	return spec, agent.New(deps), nil
}

// markRunning marks the task running as its leg starts; beganNow also records where
// in the session its first leg began (t.headAtStart), in the same statement.
func (s *Server) markRunning(ctx context.Context, t *taskRow, beganNow bool) error {
	if beganNow {
		_, err := s.b.db().exec(ctx, `UPDATE sema_serve_tasks SET status = ?, updated_ms = ?, began = 1, head_at_start = ? WHERE id = ? AND status IN (?, ?)`,
			client.StatusRunning, nowMS(), t.headAtStart, t.id, client.StatusQueued, client.StatusRunning)
		return err
	}
	_, err := s.b.db().exec(ctx, `UPDATE sema_serve_tasks SET status = ?, updated_ms = ? WHERE id = ? AND status IN (?, ?)`,
		client.StatusRunning, nowMS(), t.id, client.StatusQueued, client.StatusRunning)
	return err
}

// place says where in its session the task's leg starts: a new session, a resume with
// the prompt, a fork, the resume of a decision, or — when an earlier attempt already
// recorded the prompt — a continuation without it. It reports whether this is the
// task's first leg (beganNow): its start (the session's head now) is then recorded as
// the task is marked running, before the leg writes anything.
func (s *Server) place(ctx context.Context, t *taskRow, spec *agent.TaskSpec, answering bool) (beganNow bool, err error) {
	if t.kind == kindFork && t.sessionID == "" {
		spec.Resume = &agent.Resume{SessionID: t.spec.Resume, Fork: true, At: t.spec.ForkAt}
		return false, nil
	}
	exists, head, err := s.sessionHead(ctx, t.sessionID)
	if err != nil {
		return false, err
	}
	if !t.began {
		t.began, t.headAtStart, beganNow = true, head, true
	}
	switch {
	case answering:
		spec.Prompt = ""
		spec.Resume = &agent.Resume{SessionID: t.sessionID}
	case !exists:
		spec.SessionID = t.sessionID
	case head == t.headAtStart:
		spec.Resume = &agent.Resume{SessionID: t.sessionID}
	default:
		spec.Prompt = ""
		spec.Resume = &agent.Resume{SessionID: t.sessionID, Continue: true}
	}
	if spec.Resume != nil {
		spec.Resume.Wait = false
		// A resumed session keeps the mode its last leg recorded unless the task names one.
	}
	return beganNow, nil
}

func (s *Server) sessionHead(ctx context.Context, id string) (bool, string, error) {
	if id == "" {
		return false, "", nil
	}
	sess, err := s.b.sessions().Get(ctx, id)
	if sema.IsCode(err, session.CodeNotFound) {
		return false, "", nil
	}
	if err != nil {
		return false, "", err
	}
	return true, sess.Head, nil
}

// adoptFork records the session a fork task's leg created: the task runs in it from now
// on, and the tenant owns it.
func (s *Server) adoptFork(ctx context.Context, t *taskRow, sessionID string) error {
	exists, head, err := s.sessionHead(ctx, sessionID)
	if err != nil || !exists {
		return err
	}
	err = s.b.tx(ctx, func(c conn, _ enqueueFunc) error {
		if _, err := c.exec(ctx, `UPDATE sema_serve_tasks SET session_id = ?, began = 1, head_at_start = ? WHERE id = ?`, sessionID, head, t.id); err != nil {
			return err
		}
		_, err := c.exec(ctx, `INSERT INTO sema_serve_sessions (id, tenant, created_ms) VALUES (?, ?, ?)`, sessionID, t.tenant, nowMS())
		return err
	})
	if err == nil {
		t.sessionID = sessionID
	}
	return err
}

func (s *Server) lastSeq(ctx context.Context, id string) (int64, error) {
	var n int64
	err := queryRow(ctx, s.b.db(), `SELECT COALESCE(MAX(seq), 0) FROM sema_serve_events WHERE task_id = ?`, []any{id}, &n)
	return n, err
}

// finish writes a leg's end: the task's status and result, the result event that ends
// the leg's stream, and for a parked leg the checkpoint a decision names — in one
// transaction, so a reader that sees the result event sees the status too.
func (s *Server) finish(ctx context.Context, t *taskRow, obj map[string]any, res *agent.TaskResult) error {
	return s.finishLeg(ctx, t, obj, res, nil)
}

// finishLeg is finish for a leg that ran: what legs holds is written in the same
// transaction, before the result event.
func (s *Server) finishLeg(ctx context.Context, t *taskRow, obj map[string]any, res *agent.TaskResult, legs *legStream) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	status, _ := obj["status"].(sema.Status)
	if status == "" {
		status = sema.StatusError
	}
	var tokens int64
	checkpoint := ""
	if res != nil {
		tokens = usageTokens(res.Usage)
		if cp, parked := res.Parked(); parked {
			checkpoint = cp.ID
		}
	}
	deliveries := 0
	if legs == nil {
		seq, serr := s.lastSeq(ctx, t.id)
		if serr != nil {
			return serr
		}
		err = s.b.tx(ctx, func(c conn, _ enqueueFunc) error {
			var err error
			deliveries, err = s.writeEnd(ctx, c, t, status, data, checkpoint, tokens, res, obj, seq+1)
			return err
		})
	} else {
		err = legs.commit(func(h *heldWrites) error {
			return s.b.tx(ctx, func(c conn, _ enqueueFunc) error {
				if err := writeHeld(ctx, c, h); err != nil {
					return err
				}
				var err error
				deliveries, err = s.writeEnd(ctx, c, t, status, data, checkpoint, tokens, res, obj, legs.next())
				return err
			})
		})
	}
	if err != nil {
		return err
	}
	if deliveries > 0 && s.hooks != nil {
		s.hooks.poke()
	}
	s.wake.notify(t.id)
	s.metrics.finished.WithLabelValues(string(status)).Inc()
	attrs := []any{"task_id", t.id, "tenant", t.tenant, "session_id", t.sessionID, "status", string(status), "checkpoint_id", checkpoint}
	if e, ok := obj["error"].(*sema.Error); ok && e != nil {
		// A failed leg's log line carries the code an operator alerts and filters on.
		attrs = append(attrs, "code", e.Code, "error", e.Message)
		s.log.Warn("task leg ended", attrs...)
		return nil
	}
	s.log.Info("task leg ended", attrs...)
	return nil
}

// writeEnd writes a leg's end in c (see finish) and returns how many webhook deliveries
// it queued; seq is the result event's.
func (s *Server) writeEnd(ctx context.Context, c conn, t *taskRow, status sema.Status, data []byte, checkpoint string, tokens int64,
	res *agent.TaskResult, obj map[string]any, seq int64) (int, error) {
	if _, err := c.exec(ctx, `UPDATE sema_serve_tasks SET status = ?, result = ?, checkpoint_id = ?, decision = '', tokens = tokens + ?, updated_ms = ? WHERE id = ?`,
		string(status), string(data), checkpoint, tokens, nowMS(), t.id); err != nil {
		return 0, err
	}
	// The leg's model calls that sent no response event (compaction's, fetches'),
	// and the responses whose record failed.
	if err := recordSpend(ctx, c, t.tenant, tokens-t.recorded, nowMS()); err != nil {
		return 0, err
	}
	if checkpoint != "" {
		if _, err := c.exec(ctx, `INSERT INTO sema_serve_checkpoints (id, tenant, task_id, session_id, created_ms) VALUES (?, ?, ?, ?, ?)`,
			checkpoint, t.tenant, t.id, res.SessionID, nowMS()); err != nil {
			return 0, err
		}
	}
	// The webhooks' calls are as durable as the status they announce.
	deliveries, err := s.queueDeliveries(ctx, c, t, status, res, obj)
	if err != nil {
		return 0, err
	}
	if err := insertEvent(ctx, c, t.id, seq, string(data)); err != nil {
		return 0, err
	}
	return deliveries, s.notifyIn(ctx, c, []string{t.id})
}

func errorResult(sessionID string, err error) map[string]any {
	return map[string]any{"type": "result", "session_id": sessionID, "status": sema.StatusError, "error": errObject(err)}
}

func cancelledResult(sessionID string) map[string]any {
	return map[string]any{"type": "result", "session_id": sessionID, "status": sema.StatusCancelled}
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

// errObject is err as the result's error object: its code (serve.error when it has
// none) and its sentence.
func errObject(err error) *sema.Error {
	return &sema.Error{Code: cmp.Or(sema.CodeOf(err), "serve.error"), Message: sema.MessageOf(err)}
}

// worktreeRef is the manifest's word on the worktree a task runs in: its root is
// .sema/worktrees/NAME of the repository (check made it so).
func worktreeRef(spec client.TaskSpec) *agent.WorktreeRef {
	if spec.Worktree == "" {
		return nil
	}
	repo := filepath.Dir(filepath.Dir(filepath.Dir(spec.Cwd)))
	return &agent.WorktreeRef{Name: spec.Worktree, Branch: worktree.BranchPrefix + spec.Worktree, Repo: repo}
}
