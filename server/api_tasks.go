package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/worktree"
)

// The task endpoints: submit, status, cancel (the event stream is in events.go).

// submitTask is POST /v1/tasks.
func (s *Server) submitTask(w http.ResponseWriter, r *http.Request, t *tenant) {
	var spec client.TaskSpec
	if !decode(w, r, &spec) {
		return
	}
	task, status, err := s.submit(r.Context(), t, storedSpec{TaskSpec: spec}, kindRun)
	if err != nil {
		s.refuse(w, r, status, err)
		return
	}
	writeJSON(w, http.StatusAccepted, task)
}

// refuse answers a refusal with its status, or an internal failure.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, status int, err error) {
	if status == http.StatusInternalServerError {
		s.internal(w, r, err)
		return
	}
	writeErr(w, r, status, err)
}

// submit checks a task spec for tenant t and stores it with its job. It returns the
// HTTP status of a refusal with the error.
func (s *Server) submit(ctx context.Context, t *tenant, spec storedSpec, kind string) (*client.Task, int, error) {
	return s.submitFiring(ctx, t, spec, kind, nil)
}

// submitFiring is submit for a schedule's firing f (nil: none): f's claim runs first in
// the transaction that stores the task, so the task exists only if this process claimed
// the tick (schedules.go).
func (s *Server) submitFiring(ctx context.Context, t *tenant, spec storedSpec, kind string, f *firing) (*client.Task, int, error) {
	select {
	case <-s.stopping:
		return nil, http.StatusServiceUnavailable, sema.Errorf(CodeShuttingDown, "the process is shutting down; send the task to another")
	default:
	}
	if status, err := s.check(ctx, t, &spec.TaskSpec); err != nil {
		return nil, status, err
	}
	if spec.ForkAt != "" {
		if status, err := s.checkForkAt(ctx, spec.Resume, spec.ForkAt); err != nil {
			return nil, status, err
		}
	}
	sessionID := newID()
	switch {
	case spec.ForkSession:
		kind, sessionID = kindFork, ""
	case spec.Resume != "":
		sessionID = spec.Resume
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	task := &client.Task{TaskID: newID(), SessionID: sessionID, Status: client.StatusQueued}
	if f != nil {
		task.ScheduleID = f.scheduleID
	}
	now := nowMS()
	status := http.StatusInternalServerError
	err = s.b.tx(ctx, func(c conn, enqueue enqueueFunc) error {
		if f != nil {
			if err := f.claim(ctx, c, task.TaskID); err != nil {
				return err
			}
		}
		if err := admitRun(ctx, c, t); err != nil {
			if sema.IsCode(err, CodeConcurrencyLimit) {
				status = http.StatusTooManyRequests
			}
			return err
		}
		if t.tokensPerDay > 0 {
			used, err := tokensToday(ctx, c, t.name, now)
			if err != nil {
				return err
			}
			if used >= t.tokensPerDay {
				status = http.StatusTooManyRequests
				return sema.Errorf(CodeTokenLimit, "the tenant spent %d of its %d tokens in the last 24 hours; try again later", used, t.tokensPerDay)
			}
		}
		if _, err := c.exec(ctx, `INSERT INTO sema_serve_tasks (id, tenant, session_id, kind, spec, status, trace, schedule_id, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			task.TaskID, t.name, sessionID, kind, string(data), client.StatusQueued, traceparentOf(ctx), task.ScheduleID, now, now); err != nil {
			return err
		}
		if spec.Resume == "" {
			if _, err := c.exec(ctx, `INSERT INTO sema_serve_sessions (id, tenant, created_ms) VALUES (?, ?, ?)`, sessionID, t.name, now); err != nil {
				return err
			}
		}
		return enqueue(task.TaskID, t.queue)
	})
	if err != nil {
		return nil, status, err
	}
	s.metrics.submitted.Inc()
	return task, http.StatusAccepted, nil
}

// check refuses a spec by name before it is stored, and makes its roots canonical.
func (s *Server) check(ctx context.Context, t *tenant, spec *client.TaskSpec) (int, error) {
	bad := func(err error) (int, error) { return http.StatusBadRequest, err }
	if strings.TrimSpace(spec.Prompt) == "" {
		return bad(sema.Errorf(agent.CodePromptMissing, "the task has no prompt; give one"))
	}
	if spec.PermissionMode != "" {
		if _, err := permission.ParseMode(spec.PermissionMode); err != nil {
			return bad(err)
		}
	}
	switch spec.OnAsk {
	case "", "park", "deny":
	default:
		return bad(sema.Errorf(agent.CodeOnAskInvalid, "unknown on_ask %q; the service takes park (the default: a question waits for a decision over the API) or deny", spec.OnAsk))
	}
	if spec.MaxTurns < 0 {
		return bad(sema.Errorf(agent.CodeMaxTurnsInvalid, "max_turns cannot be negative"))
	}
	if spec.MaxBudgetUSD < 0 || math.IsNaN(spec.MaxBudgetUSD) || math.IsInf(spec.MaxBudgetUSD, 0) {
		return bad(sema.Errorf("config.max_budget_invalid", "max_budget_usd must be a non-negative number"))
	}
	if spec.ForkSession && spec.Resume == "" {
		return bad(sema.Errorf(agent.CodeResumeInvalid, "fork_session needs resume: the session to fork"))
	}
	p, err := s.tenantPolicy(ctx, t)
	if err != nil {
		return http.StatusInternalServerError, err
	}
	if err := s.checkPolicy(p, spec); err != nil {
		return bad(err)
	}
	if _, _, err := s.cfg.OpenProvider(spec.Model); err != nil {
		return bad(err)
	}
	root, err := t.dir(ctx, "cwd", cmpOr(spec.Cwd, t.base))
	if err != nil {
		return bad(err)
	}
	if spec.Worktree != "" {
		// Made now, as the root is checked now: the task runs in it, and commits in it
		// write to the repository's .git, a write root (both inside the base).
		// git runs here, as the service and outside any sandbox, in a repository the
		// tenant controls: none of the programs its configuration names may run.
		wt, err := worktree.OpenUntrusted(ctx, root, spec.Worktree, t.base)
		if err != nil {
			return bad(err)
		}
		if root, err = t.dir(ctx, "worktree", wt.Path); err != nil {
			return bad(err)
		}
		spec.AddDirs = append(spec.AddDirs, wt.GitDir)
	}
	spec.Cwd = root
	for j, dirs := range []*[]string{&spec.AddDirs, &spec.AddReadDirs} {
		for i, d := range *dirs {
			c, err := t.dir(ctx, fmt.Sprintf("%s[%d]", []string{"add_dirs", "add_read_dirs"}[j], i), d)
			if err != nil {
				return bad(err)
			}
			(*dirs)[i] = c
		}
	}
	if spec.Resume != "" {
		if owned, err := s.ownsSession(ctx, t, spec.Resume); err != nil {
			return http.StatusInternalServerError, err
		} else if !owned {
			return http.StatusNotFound, sessionNotFound()
		}
	}
	return 0, nil
}

// dir is the canonical form of the root dir that field names, when it is an existing
// directory inside the tenant's base; else the refusal, by name. A root that is a file
// or is missing would otherwise be accepted and fail later, in a worker.
func (t *tenant) dir(ctx context.Context, field, dir string) (string, error) {
	canon, ok := t.inside(ctx, dir)
	if !ok {
		// The path is not quoted back: it may name something outside the tenant's base.
		return "", sema.Errorf(CodeRootOutsideBase, "%s must be an existing directory inside the tenant's base directory", field).With("field", field)
	}
	fi, err := os.Stat(canon)
	if err != nil || !fi.IsDir() {
		return "", sema.Errorf(CodeRootNotDirectory, "%s must be a directory; %q is not one", field, dir).With("field", field)
	}
	return canon, nil
}

func (s *Server) ownsSession(ctx context.Context, t *tenant, id string) (bool, error) {
	var n int
	err := queryRow(ctx, s.b.db(), `SELECT 1 FROM sema_serve_sessions WHERE id = ? AND tenant = ?`, []any{id, t.name}, &n)
	if errors.Is(err, errNoRow) {
		return false, nil
	}
	return err == nil, err
}

func sessionNotFound() error { return sema.Errorf(CodeNotFound, "no such session") }
func taskNotFound() error    { return sema.Errorf(CodeNotFound, "no such task") }

// getTask is GET /v1/tasks/{id}.
func (s *Server) getTask(w http.ResponseWriter, r *http.Request, t *tenant) {
	task, err := s.task(r.Context(), t, r.PathValue("id"))
	if errors.Is(err, errNoRow) {
		writeErr(w, r, http.StatusNotFound, taskNotFound())
		return
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, task)
}

func (s *Server) task(ctx context.Context, t *tenant, id string) (*client.Task, error) {
	var task client.Task
	var result, spec string
	var created, updated int64
	err := queryRow(ctx, s.b.db(), `SELECT id, session_id, status, checkpoint_id, result, created_ms, updated_ms, spec, schedule_id
		FROM sema_serve_tasks WHERE id = ? AND tenant = ?`, []any{id, t.name},
		&task.TaskID, &task.SessionID, &task.Status, &task.CheckpointID, &result, &created, &updated, &spec, &task.ScheduleID)
	if err != nil {
		return nil, err
	}
	fillTask(&task, result, spec, created, updated)
	return &task, nil
}

// liveTask is task id of tenant t when it has not ended. Otherwise it answers — 404 for
// a task the tenant does not have, 409 for one that ended, with then, the sentence of
// what the request cannot do — and reports false.
func (s *Server) liveTask(w http.ResponseWriter, r *http.Request, t *tenant, id, then string) (*client.Task, bool) {
	task, err := s.task(r.Context(), t, id)
	switch {
	case errors.Is(err, errNoRow):
		writeErr(w, r, http.StatusNotFound, taskNotFound())
	case err != nil:
		s.internal(w, r, err)
	case task.Terminal():
		writeErr(w, r, http.StatusConflict, sema.Errorf(CodeNotRunnable, "the task has ended (%s); %s", task.Status, then))
	default:
		return task, true
	}
	return nil, false
}

// cancelTask is POST /v1/tasks/{id}/cancel: the flag is stored (any process running the
// task sees it) and this process's leg, if it runs here, is cancelled at once.
func (s *Server) cancelTask(w http.ResponseWriter, r *http.Request, t *tenant) {
	ctx := r.Context()
	id := r.PathValue("id")
	task, ok := s.liveTask(w, r, t, id, "there is nothing to cancel")
	if !ok {
		return
	}
	if _, err := s.b.db().exec(ctx, `UPDATE sema_serve_tasks SET cancel_requested = 1, updated_ms = ? WHERE id = ? AND tenant = ?`, nowMS(), id, t.name); err != nil {
		s.internal(w, r, err)
		return
	}
	if task.Status == client.StatusAwaitingApproval {
		// No leg runs: the parked task ends here, its question unanswered and closed.
		_, err := s.b.db().exec(ctx, `UPDATE sema_serve_checkpoints SET decided_ms = ?, decision = 'cancelled' WHERE task_id = ? AND decided_ms = 0`, nowMS(), id)
		if err != nil {
			s.internal(w, r, err)
			return
		}
		row, err := s.loadTask(ctx, s.b.db(), id)
		if err == nil {
			err = s.finish(ctx, row, cancelledResult(row.sessionID), nil)
		}
		if err != nil {
			s.internal(w, r, err)
			return
		}
	}
	s.mu.Lock()
	cancel := s.running[id]
	s.mu.Unlock()
	if cancel != nil {
		cancel(errCancelRequested)
	}
	task, err := s.task(ctx, t, id)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, task)
}
