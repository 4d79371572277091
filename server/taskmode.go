package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/permission"
)

// A task's permission mode can change while it runs, as Shift+Tab changes a terminal
// session's: POST /v1/tasks/{id}/mode. The word is stored on the task (any process may
// run its next leg, or run it now), and the process running its leg applies it through
// the leg's agent.Control — at once when that is this process, within the cancel
// watch's interval otherwise, and at the start of each later leg of the task (a resume
// after a decision). Each change that lands is a notice on the task's stream
// (serve.mode_changed) with the mode in force, which may differ from the word asked for
// (the deployment's ceiling folds it). A later task of the same session keeps the mode
// the session recorded, so the change outlives the task unless that task names one.

// CodeModeChanged is the notice on a task's stream when its permission mode changed.
const CodeModeChanged = "serve.mode_changed"

// legModes are the mode controls of the legs this process runs, by task.
type legModes struct {
	mu   sync.Mutex
	legs map[string]*legMode
}

// legMode is one running leg's control, its stream (for the notice) and the last word
// applied to it.
type legMode struct {
	ctl    *agent.Control
	stream *legStream

	mu      sync.Mutex // one change at a time: the API's and the watch's may meet
	applied string
}

func (m *legModes) add(id string, l *legMode) {
	m.mu.Lock()
	if m.legs == nil {
		m.legs = map[string]*legMode{}
	}
	m.legs[id] = l
	m.mu.Unlock()
}

func (m *legModes) remove(id string) {
	m.mu.Lock()
	delete(m.legs, id)
	m.mu.Unlock()
}

// applyMode changes the mode of task id's leg if it runs here. It reports the receipt
// and whether the leg is here; a change that lands is a notice on the stream. again
// false leaves a leg that already took the word alone (the watch asks every interval).
func (s *Server) applyMode(ctx context.Context, id, mode string, again bool) (permission.Receipt, bool, error) {
	s.modes.mu.Lock()
	l := s.modes.legs[id]
	s.modes.mu.Unlock()
	if l == nil {
		return permission.Receipt{}, false, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !again && l.applied == mode {
		return permission.Receipt{}, true, nil
	}
	r, err := l.ctl.SetPermissionMode(ctx, permission.Mode(mode))
	if err != nil {
		if sema.IsCode(err, agent.CodeNotRunning) {
			return r, false, nil // between legs: the next one applies it
		}
		return r, true, err
	}
	if l.applied != mode {
		l.applied = mode
		msg := fmt.Sprintf("the permission mode is now %s", r.Effective)
		if string(r.Effective) != mode {
			msg += fmt.Sprintf(" (%s was asked; %s)", mode, r.FoldedBy)
		}
		data, _ := json.Marshal(map[string]any{"type": "notice", "code": CodeModeChanged, "message": msg,
			"detail": map[string]any{"requested": mode, "effective": r.Effective, "folded_by": r.FoldedBy}})
		if err := l.stream.append(data); err != nil {
			s.log.Warn("mode notice not written", "task_id", id, "error", err.Error())
		}
	}
	return r, true, nil
}

// startLegMode registers the running leg's control, and applies the word asked for
// while no leg ran (queued, parked) once the leg reports the mode it started in.
func (s *Server) startLegMode(id string, ctl *agent.Control, stream *legStream) func() {
	s.modes.add(id, &legMode{ctl: ctl, stream: stream})
	return func() { s.modes.remove(id) }
}

// legStarted is called with the leg's init event: a word asked for before the leg
// started, and not already the mode it runs in, is applied now.
func (s *Server) legStarted(ctx context.Context, t *taskRow, started string) {
	if t.modeRequested == "" {
		return
	}
	if started == t.modeRequested {
		s.modes.mu.Lock()
		if l := s.modes.legs[t.id]; l != nil {
			l.mu.Lock()
			l.applied = started
			l.mu.Unlock()
		}
		s.modes.mu.Unlock()
		return
	}
	s.applyAsked(ctx, t.id, t.tenant, t.modeRequested)
}

// applyAsked applies to task id's running leg the mode asked for while the task waited
// or ran in another process. It was judged by the tenant's policy when it was asked; it
// is judged again by the policy of now, which the operator may have tightened meanwhile.
func (s *Server) applyAsked(ctx context.Context, id, tenant, mode string) {
	p, err := s.policy(ctx, s.b.db(), tenant)
	if err == nil && !modeAllowed(p, mode) {
		err = sema.Errorf(CodePolicyMode, "the tenant's policy no longer allows permission_mode %s", mode)
	}
	if err == nil {
		_, _, err = s.applyMode(ctx, id, mode, false)
	}
	if err != nil {
		s.log.Warn("asked mode not applied", "task_id", id, "mode", mode, "error", err.Error())
	}
}

// modeChange is the body of POST /v1/tasks/{id}/mode, and its answer.
type modeChange = client.ModeChange

// setTaskMode is POST /v1/tasks/{id}/mode {"permission_mode": WORD}: checked as a task's
// permission_mode is (the word, then the tenant's policy), stored, and applied where the
// leg runs. 200 with the mode in force when the leg runs in this process; 202 with the
// word when another process runs it, or it waits (queued, parked at a question).
func (s *Server) setTaskMode(w http.ResponseWriter, r *http.Request, t *tenant) {
	ctx := r.Context()
	var body modeChange
	if !decode(w, r, &body) {
		return
	}
	if body.PermissionMode == "" {
		writeErr(w, r, http.StatusBadRequest, sema.Errorf(CodeBadRequest, "permission_mode is missing; give the mode the task should run in"))
		return
	}
	if _, err := permission.ParseMode(body.PermissionMode); err != nil {
		writeErr(w, r, http.StatusBadRequest, err)
		return
	}
	p, err := s.tenantPolicy(ctx, t)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	if !modeAllowed(p, body.PermissionMode) {
		writeErr(w, r, http.StatusBadRequest, sema.Errorf(CodePolicyMode, "the tenant's policy does not allow permission_mode %s; use one of %q", body.PermissionMode, allowedModes(p)))
		return
	}
	id := r.PathValue("id")
	if _, ok := s.liveTask(w, r, t, id, "give the next task its permission_mode instead"); !ok {
		return
	}
	if _, err := s.b.db().exec(ctx, `UPDATE sema_serve_tasks SET mode_requested = ?, updated_ms = ? WHERE id = ? AND tenant = ?`, body.PermissionMode, nowMS(), id, t.name); err != nil {
		s.internal(w, r, err)
		return
	}
	receipt, here, err := s.applyMode(ctx, id, body.PermissionMode, true)
	switch {
	case err != nil:
		// The leg refused the word (auto without a classifier): the stored word goes,
		// so no later leg takes it either.
		s.b.db().exec(ctx, `UPDATE sema_serve_tasks SET mode_requested = '' WHERE id = ? AND mode_requested = ?`, id, body.PermissionMode)
		writeErr(w, r, http.StatusConflict, err)
	case here:
		writeJSON(w, http.StatusOK, modeChange{PermissionMode: string(receipt.Effective), Applied: true})
	default:
		writeJSON(w, http.StatusAccepted, modeChange{PermissionMode: body.PermissionMode})
	}
}

// applyRequestedModes applies the modes asked for in other processes to the legs this
// one runs (called from the cancel watch).
func (s *Server) applyRequestedModes(ctx context.Context) {
	s.modes.mu.Lock()
	n := len(s.modes.legs)
	s.modes.mu.Unlock()
	if n == 0 {
		return
	}
	rs, err := s.b.db().query(ctx, `SELECT id, tenant, mode_requested FROM sema_serve_tasks WHERE mode_requested <> '' AND status = ?`, client.StatusRunning)
	if err != nil {
		return
	}
	type ask struct{ id, tenant, mode string }
	var asks []ask
	for rs.Next() {
		var a ask
		if rs.Scan(&a.id, &a.tenant, &a.mode) == nil {
			asks = append(asks, a)
		}
	}
	rs.Close()
	for _, a := range asks {
		s.applyAsked(ctx, a.id, a.tenant, a.mode)
	}
}
