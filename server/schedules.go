package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/client"
)

// A tenant's schedules are recurring tasks: a cron expression (cron.go) and the body of
// POST /v1/tasks, checked as that endpoint checks it when the schedule is made, and
// again at each firing, which submits the task through the same path (so the tenant's
// policy, concurrency limit and daily tokens apply to it).
//
// Firing exactly once across processes does not use River's periodic jobs. River runs
// them on its elected leader from in-memory state only: a schedule made over the API on
// another process would have to reach the leader's client (PeriodicJobs().Add is local
// to it), a new leader starts every schedule over without regard for the last tick (a
// tick is lost, or with RunOnStart fired again), and the job River inserts is not the
// task row, which must be written with its job in one transaction. Instead each
// schedule is a row with the time of its next tick (next_ms), and every working
// process looks for due rows; a process claims a tick with a conditional update that
// moves next_ms on (WHERE next_ms = the tick it read), as the first statement of the
// transaction that stores the task and its job. Two processes that read the same tick
// both try; the second's update matches no row (Postgres re-reads the row after the
// first commits; SQLite has one writer) and it rolls back without a task. A refused
// firing moves next_ms on in the same conditional way and records the refusal on the
// schedule, which goes on.
//
// A tick more than a minute late (every process was down over it) fires once however
// many were missed, or not at all with Config.ScheduleCatchUp "skip"; either way the
// next tick is the first after now.

// The codes of a refused schedule.
const (
	// CodeScheduleLimit: the tenant has as many schedules as it may.
	CodeScheduleLimit = "schedule.limit"
	// CodeScheduleNotFound: no such schedule of the tenant.
	CodeScheduleNotFound = "schedule.not_found"
)

// maxSchedules bounds a tenant's schedules.
const maxSchedules = 50

// DefaultScheduleMinInterval is the shortest interval a schedule may fire at, unless
// Config.ScheduleMinInterval says otherwise.
const DefaultScheduleMinInterval = 10 * time.Second

// scheduleLate is how late a tick is before it counts as missed (Config.ScheduleCatchUp).
const scheduleLate = time.Minute

// The words of Config.ScheduleCatchUp.
const (
	catchUpOnce = "once"
	catchUpSkip = "skip"
)

func checkCatchUp(v string) error {
	switch v {
	case "", catchUpOnce, catchUpSkip:
		return nil
	}
	return sema.Errorf(CodeConfigInvalid, "Config.ScheduleCatchUp %q is not once or skip", v).With("field", "ScheduleCatchUp")
}

// scheduleRequest is the body of POST /v1/schedules.
type scheduleRequest struct {
	Cron string          `json:"cron"`
	Task client.TaskSpec `json:"task"`
}

// createSchedule is POST /v1/schedules.
func (s *Server) createSchedule(w http.ResponseWriter, r *http.Request, t *tenant) {
	var req scheduleRequest
	if !decode(w, r, &req) {
		return
	}
	sc, status, err := s.newSchedule(r.Context(), t, req.Cron, req.Task)
	if err != nil {
		s.refuse(w, r, status, err)
		return
	}
	writeJSON(w, http.StatusCreated, sc)
}

// listSchedules is GET /v1/schedules.
func (s *Server) listSchedules(w http.ResponseWriter, r *http.Request, t *tenant) {
	list, err := s.schedules(r.Context(), t.name)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"schedules": list})
}

// deleteSchedule is DELETE /v1/schedules/{id}.
func (s *Server) deleteSchedule(w http.ResponseWriter, r *http.Request, t *tenant) {
	if err := s.removeSchedule(r.Context(), t.name, r.PathValue("id")); err != nil {
		if sema.IsCode(err, CodeScheduleNotFound) {
			writeErr(w, r, http.StatusNotFound, err)
			return
		}
		s.internal(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// AddSchedule makes a schedule for tenant name, as POST /v1/schedules does: the task is
// checked against the tenant's base and policy as the tenant's own would be.
func (s *Server) AddSchedule(ctx context.Context, name, cron string, task client.TaskSpec) (*client.Schedule, error) {
	t, err := s.scheduleTenant(ctx, name)
	if err != nil {
		return nil, err
	}
	sc, _, err := s.newSchedule(ctx, t, cron, task)
	return sc, err
}

// Schedules lists tenant name's schedules, oldest first.
func (s *Server) Schedules(ctx context.Context, name string) ([]client.Schedule, error) {
	if err := tenantExists(ctx, s.b.db(), name); err != nil {
		return nil, err
	}
	return s.schedules(ctx, name)
}

// RemoveSchedule deletes tenant name's schedule id: it fires no more.
func (s *Server) RemoveSchedule(ctx context.Context, name, id string) error {
	return s.removeSchedule(ctx, name, id)
}

// scheduleTenant is tenant name as a schedule acts for it (tenantNamed); a deleted or
// unknown one is refused by name.
func (s *Server) scheduleTenant(ctx context.Context, name string) (*tenant, error) {
	t, err := s.tenantNamed(ctx, name)
	if errors.Is(err, errNoRow) {
		return nil, sema.Errorf(CodeTenantInvalid, "there is no tenant %q; create it with sema serve token create", name)
	}
	if err != nil {
		return nil, err
	}
	t.tokenID = "schedule"
	return t, nil
}

// parseSchedule reads a schedule's expression and refuses one the service does not run:
// one that never fires, or fires more often than Config.ScheduleMinInterval.
func (s *Server) parseSchedule(expr string, now time.Time) (*cronSchedule, time.Time, error) {
	c, err := parseCron(expr)
	if err != nil {
		return nil, time.Time{}, err
	}
	if c.shortest() < s.cfg.ScheduleMinInterval {
		return nil, time.Time{}, sema.Errorf(CodeCronInvalid, "cron %q fires every %s; a schedule may fire at most every %s", expr, c.shortest(), s.cfg.ScheduleMinInterval).With("field", "cron")
	}
	next := c.next(now)
	if next.IsZero() {
		return nil, time.Time{}, sema.Errorf(CodeCronInvalid, "cron %q names no time in the next %d years (a day that no month has?)", expr, cronHorizon).With("field", "cron")
	}
	return c, next, nil
}

// newSchedule checks and stores a schedule of tenant t; it returns the HTTP status of
// a refusal with the error.
func (s *Server) newSchedule(ctx context.Context, t *tenant, expr string, task client.TaskSpec) (*client.Schedule, int, error) {
	now := time.Now().UTC()
	_, next, err := s.parseSchedule(expr, now)
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	// The task is checked on a copy: check makes its roots canonical and fills in the
	// policy's bounds, and the schedule keeps the task as it was sent, so that each
	// firing is checked afresh against the policy of its day.
	probe := task
	probe.AddDirs, probe.AddReadDirs = append([]string(nil), task.AddDirs...), append([]string(nil), task.AddReadDirs...)
	if status, err := s.check(ctx, t, &probe); err != nil {
		return nil, status, err
	}
	data, err := json.Marshal(task)
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	sc := &client.Schedule{ID: newID(), Cron: expr, Task: task, NextAt: next, CreatedAt: time.UnixMilli(now.UnixMilli()).UTC()}
	status := http.StatusInternalServerError
	err = s.b.tx(ctx, func(c conn, _ enqueueFunc) error {
		// The tenant's row is held so that two requests at once do not both take the
		// last place.
		if err := lockTenant(ctx, c, t.name); err != nil {
			return err
		}
		var n int
		if err := queryRow(ctx, c, `SELECT COUNT(*) FROM sema_serve_schedules WHERE tenant = ?`, []any{t.name}, &n); err != nil {
			return err
		}
		if n >= maxSchedules {
			status = http.StatusConflict
			return sema.Errorf(CodeScheduleLimit, "the tenant has %d schedules, the most it may have; delete one first", n)
		}
		_, err := c.exec(ctx, `INSERT INTO sema_serve_schedules (id, tenant, cron, task, next_ms, created_ms) VALUES (?, ?, ?, ?, ?, ?)`,
			sc.ID, t.name, expr, string(data), next.UnixMilli(), now.UnixMilli())
		return err
	})
	if err != nil {
		return nil, status, err
	}
	return sc, http.StatusCreated, nil
}

// schedules reads tenant name's schedules, oldest first.
func (s *Server) schedules(ctx context.Context, name string) ([]client.Schedule, error) {
	rs, err := s.b.db().query(ctx, `SELECT id, cron, task, next_ms, fired, last_task_id, last_fired_ms, refused, last_refusal, created_ms
		FROM sema_serve_schedules WHERE tenant = ? ORDER BY created_ms, id`, name)
	list, err := collect(rs, err, func(rs rows) (client.Schedule, error) {
		var sc client.Schedule
		var task, refusal string
		var next, fired, created int64
		if err := rs.Scan(&sc.ID, &sc.Cron, &task, &next, &sc.Fired, &sc.LastTaskID, &fired, &sc.Refused, &refusal, &created); err != nil {
			return sc, err
		}
		if err := json.Unmarshal([]byte(task), &sc.Task); err != nil {
			return sc, err
		}
		if refusal != "" {
			sc.LastRefusal = new(client.ScheduleRefusal)
			if err := json.Unmarshal([]byte(refusal), sc.LastRefusal); err != nil {
				return sc, err
			}
		}
		sc.NextAt, sc.CreatedAt = time.UnixMilli(next).UTC(), time.UnixMilli(created).UTC()
		if fired > 0 {
			sc.LastFiredAt = time.UnixMilli(fired).UTC()
		}
		return sc, nil
	})
	if list == nil && err == nil {
		list = []client.Schedule{}
	}
	return list, err
}

func (s *Server) removeSchedule(ctx context.Context, name, id string) error {
	n, err := s.b.db().exec(ctx, `DELETE FROM sema_serve_schedules WHERE id = ? AND tenant = ?`, id, name)
	if err != nil {
		return err
	}
	if n == 0 {
		return sema.Errorf(CodeScheduleNotFound, "the tenant has no schedule %s; GET /v1/schedules lists them", id)
	}
	return nil
}

// firing is a schedule's tick being submitted: claim moves the schedule's next tick on
// in the submission's transaction, or fails with errTickTaken when another process did.
type firing struct {
	scheduleID string
	claim      func(ctx context.Context, c conn, taskID string) error
}

// errTickTaken: another process claimed the tick (or the schedule was deleted).
var errTickTaken = errors.New("the schedule's tick was claimed elsewhere")

// scheduleTick is how often a working process looks for due schedules: a second, or
// less when the shortest interval allowed is shorter (tests), never below Config.Poll.
func (s *Server) scheduleTick() time.Duration {
	return max(s.cfg.Poll, min(time.Second, s.cfg.ScheduleMinInterval/4))
}

// runSchedules fires the due schedules until ctx ends.
func (s *Server) runSchedules(ctx context.Context) {
	tick := time.NewTicker(s.scheduleTick())
	defer tick.Stop()
	for {
		s.fireDue(ctx)
		select {
		case <-ctx.Done():
			return
		case <-s.stopping:
			return
		case <-tick.C:
		}
	}
}

// dueSchedule is a schedule whose tick has come, as fireDue read it.
type dueSchedule struct {
	id, tenant, cron, task string
	due                    int64
}

// fireDue fires every schedule whose tick has come.
func (s *Server) fireDue(ctx context.Context) {
	now := time.Now()
	rs, err := s.b.db().query(ctx, `SELECT id, tenant, cron, task, next_ms FROM sema_serve_schedules WHERE next_ms <= ? ORDER BY next_ms LIMIT 100`, now.UnixMilli())
	due, err := collect(rs, err, func(rs rows) (d dueSchedule, err error) {
		return d, rs.Scan(&d.id, &d.tenant, &d.cron, &d.task, &d.due)
	})
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("schedules: reading the due ones failed", "error", err.Error())
		}
		return
	}
	for _, d := range due {
		if ctx.Err() != nil {
			return
		}
		s.fire(ctx, d, time.Now())
	}
}

// fire submits one schedule's due tick, or records why it did not.
func (s *Server) fire(ctx context.Context, d dueSchedule, now time.Time) {
	log := s.log.With("schedule_id", d.id, "tenant", d.tenant)
	c, err := parseCron(d.cron)
	if err != nil {
		// A stored expression that no longer parses: recorded, and tried again in an
		// hour rather than at every look.
		s.refuseTick(ctx, log, d, now.Add(time.Hour), err)
		return
	}
	due := time.UnixMilli(d.due)
	next := c.next(due)
	if !next.After(now) {
		next = c.next(now) // ticks were missed: the next is the first after now
	}
	if next.IsZero() {
		next = now.Add(24 * time.Hour)
	}
	if s.cfg.ScheduleCatchUp == catchUpSkip && now.Sub(due) > scheduleLate {
		n, err := s.b.db().exec(ctx, `UPDATE sema_serve_schedules SET next_ms = ? WHERE id = ? AND next_ms = ?`, next.UnixMilli(), d.id, d.due)
		if err != nil {
			log.Error("schedules: skipping a missed tick failed", "error", err.Error())
		} else if n > 0 {
			log.Info("schedule tick skipped", "due", due.UTC(), "next", next.UTC())
		}
		return
	}
	t, err := s.scheduleTenant(ctx, d.tenant)
	if err != nil {
		if sema.IsCode(err, CodeTenantInvalid) {
			s.refuseTick(ctx, log, d, next, sema.Errorf(CodeTenantInvalid, "the tenant was deleted; delete the schedule"))
			return
		}
		log.Error("schedules: reading the tenant failed", "error", err.Error())
		return
	}
	var spec client.TaskSpec
	if err := json.Unmarshal([]byte(d.task), &spec); err != nil {
		s.refuseTick(ctx, log, d, next, sema.Errorf(CodeBadRequest, "the schedule's stored task does not read: %v; make the schedule again", err))
		return
	}
	f := &firing{scheduleID: d.id, claim: func(ctx context.Context, c conn, taskID string) error {
		n, err := c.exec(ctx, `UPDATE sema_serve_schedules SET next_ms = ?, fired = fired + 1, last_task_id = ?, last_fired_ms = ? WHERE id = ? AND next_ms = ?`,
			next.UnixMilli(), taskID, now.UnixMilli(), d.id, d.due)
		if err == nil && n == 0 {
			err = errTickTaken
		}
		return err
	}}
	task, status, err := s.submitFiring(ctx, t, storedSpec{TaskSpec: spec}, kindRun, f)
	switch {
	case err == nil:
		log.Info("schedule fired", "task_id", task.TaskID, "due", due.UTC(), "next", next.UTC())
	case errors.Is(err, errTickTaken), sema.IsCode(err, CodeShuttingDown):
		// Another process fired it, or this one stops: the tick is not this process's.
	case status == http.StatusInternalServerError:
		// The store failed: the tick stays due, and the next look tries again.
		if ctx.Err() == nil {
			log.Error("schedules: firing failed", "error", err.Error())
		}
	default:
		s.refuseTick(ctx, log, d, next, err)
	}
}

// refuseTick records that tick d was refused with err and moves the schedule to next,
// unless another process handled the tick first.
func (s *Server) refuseTick(ctx context.Context, log interface {
	Warn(msg string, args ...any)
	Error(msg string, args ...any)
}, d dueSchedule, next time.Time, refusal error) {
	rec, err := json.Marshal(client.ScheduleRefusal{Code: cmpOr(sema.CodeOf(refusal), "serve.error"), Message: sema.MessageOf(refusal), At: time.Now().UTC()})
	if err != nil {
		return
	}
	n, err := s.b.db().exec(ctx, `UPDATE sema_serve_schedules SET next_ms = ?, refused = refused + 1, last_refusal = ? WHERE id = ? AND next_ms = ?`,
		next.UnixMilli(), string(rec), d.id, d.due)
	if err != nil {
		log.Error("schedules: recording a refused firing failed", "error", err.Error())
		return
	}
	if n > 0 {
		log.Warn("schedule firing refused", "code", sema.CodeOf(refusal), "error", sema.MessageOf(refusal))
	}
}
