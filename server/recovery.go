package server

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/riverqueue/river"
	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/internal/lease"
	"github.com/sema-agent/sema/session"
)

// The rescue of a dead worker's legs. River hands a job whose process died to another
// worker only once it has run longer than RescueAfter (a minute by default, since a
// live leg may run for a long time), and the leg's session lease blocks the new worker
// until it expires. A working process instead beats a heartbeat row in the store and
// records the legs it runs; a process whose heartbeat is older than DeadAfter (or, on
// its own machine, whose pid names no process or another one) is dead, and any live
// worker rescues its legs: it frees their session leases on the dead process's behalf
// and makes their jobs available at once.

// Defaults of Config.Heartbeat and Config.DeadAfter: a dead worker's legs run again
// within DeadAfter plus one Heartbeat.
const (
	DefaultHeartbeat = time.Second     // how often a working process writes its heartbeat
	DefaultDeadAfter = 5 * time.Second // a heartbeat older than this is a dead process's
)

func init() { schema = append(schema, recoverySchema...) }

// recoverySchema: a row per working process, its heartbeat by the database's clock
// (process is its name as its legs' lease holders carry it: lease.Process), and
// the leg each one runs, with the River job and attempt it runs it in.
var recoverySchema = []string{
	`CREATE TABLE IF NOT EXISTS sema_serve_workers (
		id TEXT PRIMARY KEY,
		host TEXT NOT NULL,
		process TEXT NOT NULL,
		beat_ms BIGINT NOT NULL
	)`,
	`CREATE TABLE IF NOT EXISTS sema_serve_legs (
		task_id TEXT PRIMARY KEY,
		worker_id TEXT NOT NULL,
		job_id BIGINT NOT NULL,
		attempt INTEGER NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS sema_serve_legs_worker ON sema_serve_legs (worker_id)`,
}

// recovery is a working process's heartbeat and rescuer.
type recovery struct {
	s       *Server
	id      string
	host    string
	process string
	// now is the database's clock in unix milliseconds, as SQL: heartbeats of processes
	// on several machines are compared on one clock.
	now string
	// pruned is when the process last deleted old spend rows (pruneSpend).
	pruned time.Time
}

func newRecovery(s *Server) *recovery {
	host, _ := os.Hostname()
	r := &recovery{s: s, id: newID(), host: host, process: lease.Process(),
		now: `CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)`}
	if _, ok := s.b.(*pgBackend); ok {
		r.now = `CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)`
	}
	return r
}

// beat writes the process's heartbeat (and its row, the first time or after a rescuer
// took it for dead and removed it).
func (r *recovery) beat(ctx context.Context) error {
	_, err := r.s.b.db().exec(ctx, `INSERT INTO sema_serve_workers (id, host, process, beat_ms) VALUES (?, ?, ?, `+r.now+`)
		ON CONFLICT (id) DO UPDATE SET beat_ms = excluded.beat_ms`, r.id, r.host, r.process)
	return err
}

// run beats and rescues every Heartbeat until ctx ends, then removes the process's row:
// a process that stops in order has handed its legs back already.
func (r *recovery) run(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(r.s.cfg.Heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			r.s.b.db().exec(dctx, `DELETE FROM sema_serve_workers WHERE id = ?`, r.id)
			return
		case <-tick.C:
		}
		if err := r.beat(ctx); err != nil && ctx.Err() == nil {
			r.s.log.Warn("heartbeat not written", "worker_id", r.id, "error", err.Error())
		}
		if err := r.rescueDead(ctx); err != nil && ctx.Err() == nil {
			r.s.log.Warn("rescue of dead workers failed", "worker_id", r.id, "error", err.Error())
		}
		if time.Since(r.pruned) >= spendPruneEvery {
			r.pruneSpend(ctx)
		}
	}
}

// pruneSpend deletes the spend rows no budget reads any more. Every working process
// does, each about hourly: a delete that finds nothing costs little, and no process
// has to be the one that does it.
func (r *recovery) pruneSpend(ctx context.Context) {
	r.pruned = time.Now()
	n, err := r.s.pruneSpend(ctx, nowMS())
	switch {
	case err != nil && ctx.Err() == nil:
		r.s.log.Warn("old spend rows not deleted", "worker_id", r.id, "error", err.Error())
	case n > 0:
		r.s.log.Info("old spend rows deleted", "worker_id", r.id, "rows", n)
	}
}

// deadWorker is a heartbeat row of a process judged dead.
type deadWorker struct {
	id, process string
	beat        int64
}

// rescueDead rescues the legs of every process that is dead: its heartbeat is older
// than DeadAfter, or it ran on this machine and its process is gone (a restarted
// process so takes its predecessor's legs back at once).
func (r *recovery) rescueDead(ctx context.Context) error {
	type row struct {
		deadWorker
		host  string
		stale bool
	}
	rs, err := r.s.b.db().query(ctx, `SELECT id, host, process, beat_ms, beat_ms < `+r.now+` - ? FROM sema_serve_workers WHERE id <> ?`,
		r.s.cfg.DeadAfter.Milliseconds(), r.id)
	workers, err := collect(rs, err, func(rs rows) (row, error) {
		var w row
		err := rs.Scan(&w.id, &w.host, &w.process, &w.beat, &w.stale)
		return w, err
	})
	if err != nil {
		return err
	}
	for _, w := range workers {
		if !w.stale && !(w.host == r.host && lease.ProcessGone(w.process)) {
			continue
		}
		if err := r.rescue(ctx, w.deadWorker); err != nil {
			return err
		}
	}
	return nil
}

// rescue frees the legs of a dead process: for each, its session's lease if the dead
// process still holds it, then its job, made available again if it is still in the
// attempt the dead process ran (so a rescue racing another rescuer, or River's own,
// never hands out a job a live worker runs). Its heartbeat row goes last, unless it
// beat meanwhile (it was not dead: a stall longer than DeadAfter; its leases are gone,
// so its legs can write nothing more and end).
func (r *recovery) rescue(ctx context.Context, w deadWorker) error {
	type leg struct {
		taskID, sessionID string
		jobID             int64
		attempt           int
	}
	rs, err := r.s.b.db().query(ctx, `SELECT l.task_id, COALESCE(t.session_id, ''), l.job_id, l.attempt
		FROM sema_serve_legs l LEFT JOIN sema_serve_tasks t ON t.id = l.task_id WHERE l.worker_id = ?`, w.id)
	legs, err := collect(rs, err, func(rs rows) (leg, error) {
		var l leg
		err := rs.Scan(&l.taskID, &l.sessionID, &l.jobID, &l.attempt)
		return l, err
	})
	if err != nil {
		return err
	}
	for _, l := range legs {
		if l.sessionID != "" {
			if err := r.freeLease(ctx, l.sessionID, w.process); err != nil {
				return err
			}
		}
		rescued := false
		err := r.s.b.tx(ctx, func(c conn, _ enqueueFunc) error {
			n, err := c.exec(ctx, `DELETE FROM sema_serve_legs WHERE task_id = ? AND worker_id = ?`, l.taskID, w.id)
			if err != nil || n == 0 {
				return err // another rescuer took it
			}
			n, err = c.exec(ctx, `UPDATE river_job SET state = 'available' WHERE id = ? AND state = 'running' AND attempt = ?`, l.jobID, l.attempt)
			rescued = n == 1
			return err
		})
		if err != nil {
			return err
		}
		if rescued {
			r.s.log.Info("task leg rescued from a dead worker", "task_id", l.taskID, "session_id", l.sessionID,
				"dead_worker_id", w.id, "dead_process", w.process, "worker_id", r.id)
		}
	}
	_, err = r.s.b.db().exec(ctx, `DELETE FROM sema_serve_workers WHERE id = ? AND beat_ms = ?`, w.id, w.beat)
	return err
}

// freeLease releases a session's lease on behalf of the dead process, only if a leg of
// that process holds it (a release names its holder, so a lease another leg took since
// is left alone). The holder is learnt from the store's refusal of a probe's claim; a
// free session the probe so claims is free again a millisecond later.
func (r *recovery) freeLease(ctx context.Context, sessionID, process string) error {
	_, err := r.s.b.sessions().AcquireLease(ctx, sessionID, "sema serve rescuer "+r.id, time.Millisecond)
	if err == nil || sema.IsCode(err, session.CodeNotFound) {
		return nil
	}
	var se *sema.Error
	if !sema.IsCode(err, session.CodeBusy) || !errors.As(err, &se) {
		return err
	}
	holder, _ := se.Detail["holder"].(string)
	if holder == "" || lease.HolderProcess(holder) != process {
		return nil
	}
	return r.s.b.sessions().ReleaseLease(ctx, sessionID, holder)
}

// legStarted records that this process runs job's leg; the returned func removes the
// record when the attempt ends. A record that cannot be written leaves the leg to
// River's own rescue (RescueAfter).
func (r *recovery) legStarted(ctx context.Context, job *river.Job[runArgs]) func() {
	_, err := r.s.b.db().exec(ctx, `INSERT INTO sema_serve_legs (task_id, worker_id, job_id, attempt) VALUES (?, ?, ?, ?)
		ON CONFLICT (task_id) DO UPDATE SET worker_id = excluded.worker_id, job_id = excluded.job_id, attempt = excluded.attempt`,
		job.Args.TaskID, r.id, job.ID, job.Attempt)
	if err != nil {
		r.s.log.Warn("leg not recorded for rescue", "task_id", job.Args.TaskID, "error", err.Error())
		return func() {}
	}
	return func() {
		r.s.b.db().exec(context.WithoutCancel(ctx), `DELETE FROM sema_serve_legs WHERE task_id = ? AND worker_id = ?`, job.Args.TaskID, r.id)
	}
}
