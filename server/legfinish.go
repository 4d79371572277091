package server

import (
	"cmp"
	"context"
	"encoding/json"

	"github.com/riverqueue/river"
	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/streamjson"
)

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

// errObject is err as the result's error object: its code (serve.error when it has
// none) and its sentence.
func errObject(err error) *sema.Error {
	return &sema.Error{Code: cmp.Or(sema.CodeOf(err), "serve.error"), Message: sema.MessageOf(err)}
}
