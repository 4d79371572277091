package server

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/session"
)

// The session endpoints: list, transcript pages, continue, fork and rewind.

// sessionMessage is POST /v1/sessions/{id}/messages: a new task that continues the
// session with a prompt.
func (s *Server) sessionMessage(w http.ResponseWriter, r *http.Request, t *tenant) {
	var m client.Message
	if !decode(w, r, &m) {
		return
	}
	s.continueSession(w, r, t, storedSpec{TaskSpec: client.TaskSpec{Prompt: m.Prompt, PermissionMode: m.PermissionMode, Model: m.Model, MaxTurns: m.MaxTurns, MaxBudgetUSD: m.MaxBudgetUSD}})
}

// forkSession is POST /v1/sessions/{id}/fork.
func (s *Server) forkSession(w http.ResponseWriter, r *http.Request, t *tenant) {
	var f client.Fork
	if !decode(w, r, &f) {
		return
	}
	s.continueSession(w, r, t, storedSpec{TaskSpec: client.TaskSpec{Prompt: f.Prompt, ForkSession: true}, ForkAt: f.At})
}

// checkForkAt refuses a fork point that is not an entry of the session's conversation
// as it stands (its head's chain): the leg would otherwise fail later, in a worker,
// where the caller sees it only as a failed task.
func (s *Server) checkForkAt(ctx context.Context, sessionID, at string) (int, error) {
	chain, err := s.b.sessions().Transcript(ctx, sessionID, "")
	if err != nil {
		return http.StatusInternalServerError, err
	}
	for _, e := range chain {
		if e.ID == at {
			return 0, nil
		}
	}
	return http.StatusBadRequest, sema.Errorf(CodeBadRequest, "at names no entry of the session's conversation; take an id from GET /v1/sessions/{id}, or leave at empty to fork at the head").With("field", "at")
}

func (s *Server) continueSession(w http.ResponseWriter, r *http.Request, t *tenant, spec storedSpec) {
	ctx := r.Context()
	id := r.PathValue("id")
	sess, err := s.ownedSession(ctx, t, id)
	if err != nil {
		s.sessionErr(w, r, err)
		return
	}
	spec.Resume, spec.Cwd = id, sess.Root
	task, status, err := s.submit(ctx, t, spec, kindRun)
	if err != nil {
		s.refuse(w, r, status, err)
		return
	}
	writeJSON(w, http.StatusAccepted, task)
}

func (s *Server) ownedSession(ctx context.Context, t *tenant, id string) (session.Session, error) {
	owned, err := s.ownsSession(ctx, t, id)
	if err != nil {
		return session.Session{}, err
	}
	if !owned {
		return session.Session{}, sessionNotFound()
	}
	sess, err := s.b.sessions().Get(ctx, id)
	if sema.IsCode(err, session.CodeNotFound) {
		return session.Session{}, sessionNotFound() // submitted, not yet started
	}
	return sess, err
}

func (s *Server) sessionErr(w http.ResponseWriter, r *http.Request, err error) {
	if sema.IsCode(err, CodeNotFound) {
		writeErr(w, r, http.StatusNotFound, err)
		return
	}
	s.internal(w, r, err)
}

// listSessions is GET /v1/sessions: the tenant's sessions, newest first.
func (s *Server) listSessions(w http.ResponseWriter, r *http.Request, t *tenant) {
	ctx := r.Context()
	limit, ok := intParam(w, r, "limit", 100, 1, 1000)
	if !ok {
		return
	}
	rs, err := s.b.db().query(ctx, `SELECT id FROM sema_serve_sessions WHERE tenant = ? ORDER BY created_ms DESC LIMIT ?`, t.name, limit)
	ids, err := collect(rs, err, scanString)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	out := []client.Session{}
	for _, id := range ids {
		sess, err := s.b.sessions().Get(ctx, id)
		if sema.IsCode(err, session.CodeNotFound) {
			continue // submitted, not yet started
		}
		if err != nil {
			s.internal(w, r, err)
			return
		}
		out = append(out, wireSession(sess))
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": out})
}

// wireSession is s as the API shows it. Its parent is the session it was forked from
// (ForkOf): a subagent's session, whose store parent is the delegating one, is not the
// tenant's to list.
func wireSession(s session.Session) client.Session {
	return client.Session{ID: s.ID, ParentID: s.ForkOf, ForkAt: s.ForkAt, Root: s.Root, Title: s.Title, Model: s.Model, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
}

// getSession is GET /v1/sessions/{id}: the session and a page of its transcript
// (?offset=N&limit=M, oldest first).
func (s *Server) getSession(w http.ResponseWriter, r *http.Request, t *tenant) {
	offset, ok := intParam(w, r, "offset", 0, 0, math.MaxInt32)
	if !ok {
		return
	}
	limit, ok := intParam(w, r, "limit", 100, 1, 1000)
	if !ok {
		return
	}
	ctx := r.Context()
	sess, err := s.ownedSession(ctx, t, r.PathValue("id"))
	if err != nil {
		s.sessionErr(w, r, err)
		return
	}
	chain, err := s.b.sessions().Transcript(ctx, sess.ID, "")
	if err != nil {
		s.internal(w, r, err)
		return
	}
	offset = min(offset, len(chain)) // past the end: an empty last page
	end := min(len(chain), offset+limit)
	page := client.Transcript{Session: wireSession(sess), Entries: []json.RawMessage{}}
	for _, e := range chain[offset:end] {
		b, err := json.Marshal(map[string]any{"id": e.ID, "seq": e.Seq, "parent_id": e.ParentID, "kind": e.Kind, "payload": e.Payload, "created_at": e.CreatedAt})
		if err != nil {
			s.internal(w, r, err)
			return
		}
		page.Entries = append(page.Entries, b)
	}
	if end < len(chain) {
		page.Next = end
	}
	writeJSON(w, http.StatusOK, page)
}

// rewindSession is POST /v1/sessions/{id}/rewind, as `sema rewind`.
func (s *Server) rewindSession(w http.ResponseWriter, r *http.Request, t *tenant) {
	ctx := r.Context()
	var rw client.Rewind
	if !decode(w, r, &rw) {
		return
	}
	if !rw.Files && !rw.Conversation && !rw.Undo {
		writeErr(w, r, http.StatusBadRequest, sema.Errorf("request.rewind_empty", "say what to rewind: files, conversation (or both), or undo"))
		return
	}
	sess, err := s.ownedSession(ctx, t, r.PathValue("id"))
	if err != nil {
		s.sessionErr(w, r, err)
		return
	}
	runner := agent.New(agent.Deps{Store: s.b.sessions(), History: s.b.history(), SessionLease: s.cfg.SessionLease})
	res, err := runner.Rewind(ctx, agent.RewindSpec{
		SessionID: sess.ID, ToTurn: rw.Turn, Files: rw.Files, Conversation: rw.Conversation,
		DryRun: rw.DryRun, AcceptPartialRestore: rw.AcceptPartial, Undo: rw.Undo,
	})
	if err != nil {
		if sema.IsCode(err, session.CodeBusy) {
			writeErr(w, r, http.StatusConflict, sema.Errorf(CodeNotRunnable, "a task is running in the session; rewind it when the task has ended"))
			return
		}
		if code := sema.CodeOf(err); code != "" && !strings.HasPrefix(code, "store.") {
			writeErr(w, r, http.StatusConflict, err)
			return
		}
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
