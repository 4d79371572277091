package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/session"
)

// Handler serves the API.
func (s *Server) Handler() http.Handler { return s.withRequest(s.mux) }

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("POST /v1/tasks", s.authed(s.submitTask))
	m.HandleFunc("GET /v1/tasks/{id}", s.authed(s.getTask))
	m.HandleFunc("GET /v1/tasks/{id}/events", s.authed(s.taskEvents))
	m.HandleFunc("POST /v1/tasks/{id}/cancel", s.authed(s.cancelTask))
	m.HandleFunc("GET /v1/sessions", s.authed(s.listSessions))
	m.HandleFunc("GET /v1/sessions/{id}", s.authed(s.getSession))
	m.HandleFunc("POST /v1/sessions/{id}/messages", s.authed(s.sessionMessage))
	m.HandleFunc("POST /v1/sessions/{id}/rewind", s.authed(s.rewindSession))
	m.HandleFunc("POST /v1/sessions/{id}/fork", s.authed(s.forkSession))
	m.HandleFunc("GET /v1/checkpoints", s.authed(s.listCheckpoints))
	m.HandleFunc("POST /v1/checkpoints/{id}/decision", s.authed(s.decide))
	m.HandleFunc("GET /v1/openapi.json", serveOpenAPI)
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	m.HandleFunc("GET /readyz", s.ready)
	m.Handle("GET /metrics", s.metrics.handler())
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeErr(w, r, http.StatusNotFound, sema.Errorf(CodeNotFound, "no such endpoint: %s %s (see /v1/openapi.json)", r.Method, r.URL.Path))
	})
	s.mux = m
}

type ctxKey int

const requestIDKey ctxKey = 1

// withRequest gives every request an id (the caller's X-Request-Id when it is a sane
// one), logs it and counts it.
func (s *Server) withRequest(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !saneRequestID(id) {
			id = newID()
		}
		w.Header().Set("X-Request-Id", id)
		r = r.WithContext(context.WithValue(r.Context(), requestIDKey, id))
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		start := time.Now()
		h.ServeHTTP(rec, r)
		route := r.Pattern
		if route == "" || route == "/" {
			route = "other"
		}
		s.metrics.requests.WithLabelValues(route, strconv.Itoa(rec.code)).Inc()
		s.log.Info("request", "request_id", id, "method", r.Method, "path", r.URL.Path, "status", rec.code, "ms", time.Since(start).Milliseconds())
	})
}

func saneRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

// Flush lets an event stream through the recorder.
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (s *Server) authed(h func(http.ResponseWriter, *http.Request, *tenant)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		t, err := s.authenticate(r.Context(), r.Header.Get("Authorization"))
		if err != nil {
			if sema.IsCode(err, CodeUnauthorized) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="sema"`)
				writeErr(w, r, http.StatusUnauthorized, err)
				return
			}
			s.internal(w, r, err)
			return
		}
		h(w, r, t)
	}
}

func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	select {
	case <-s.stopping:
		writeErr(w, r, http.StatusServiceUnavailable, sema.Errorf(CodeShuttingDown, "the process is shutting down"))
		return
	default:
	}
	var n int
	if err := queryRow(r.Context(), s.b.db(), `SELECT 1`, nil, &n); err != nil {
		writeErr(w, r, http.StatusServiceUnavailable, sema.Errorf(CodeStoreFailed, "the store does not answer"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// internal answers a failure of the service itself: logged in full, answered without
// detail (a store error may name paths or another tenant's rows).
func (s *Server) internal(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Error("request failed", "request_id", requestID(r), "error", err.Error())
	writeErr(w, r, http.StatusInternalServerError, sema.Errorf("serve.internal", "the service failed to answer; the request id is in the logs"))
}

func requestID(r *http.Request) string {
	id, _ := r.Context().Value(requestIDKey).(string)
	return id
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

func writeErr(w http.ResponseWriter, r *http.Request, status int, err error) {
	writeJSON(w, status, client.Error{Code: cmpOr(sema.CodeOf(err), "serve.error"), Message: sema.MessageOf(err), RequestID: requestID(r)})
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// maxBody bounds a request body: a task spec is small.
const maxBody = 1 << 20

// decode reads r's body into v strictly: one JSON object, no unknown field (named in
// the answer), nothing after it.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeErr(w, r, http.StatusRequestEntityTooLarge, sema.Errorf(CodeBadRequest, "the body is larger than %d bytes", maxBody))
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			writeErr(w, r, http.StatusBadRequest, sema.Errorf(CodeUnknownField, "unknown field %s; see /v1/openapi.json for the fields this endpoint takes", name).With("field", strings.Trim(name, `"`)))
			return false
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			writeErr(w, r, http.StatusBadRequest, sema.Errorf(CodeBadRequest, "field %s must be a JSON %s", te.Field, te.Type.Kind()).With("field", te.Field))
			return false
		}
		writeErr(w, r, http.StatusBadRequest, sema.Errorf(CodeBadRequest, "the body is not a JSON object of this endpoint: %v", err))
		return false
	}
	if dec.More() {
		writeErr(w, r, http.StatusBadRequest, sema.Errorf(CodeBadRequest, "the body holds more than one JSON value"))
		return false
	}
	return true
}

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
	now := nowMS()
	status := http.StatusInternalServerError
	err = s.b.tx(ctx, func(c conn, enqueue enqueueFunc) error {
		if t.maxConcurrent > 0 {
			var n int
			if err := queryRow(ctx, c, `SELECT COUNT(*) FROM sema_serve_tasks WHERE tenant = ? AND status IN (?, ?)`,
				[]any{t.name, client.StatusQueued, client.StatusRunning}, &n); err != nil {
				return err
			}
			if n >= t.maxConcurrent {
				status = http.StatusTooManyRequests
				return sema.Errorf(CodeConcurrencyLimit, "the tenant has %d tasks queued or running, its limit; wait for one to end", n)
			}
		}
		if t.tokensPerDay > 0 {
			var used int64
			if err := queryRow(ctx, c, `SELECT CAST(COALESCE(SUM(tokens), 0) AS BIGINT) FROM sema_serve_tasks WHERE tenant = ? AND updated_ms > ?`,
				[]any{t.name, now - 24*time.Hour.Milliseconds()}, &used); err != nil {
				return err
			}
			if used >= t.tokensPerDay {
				status = http.StatusTooManyRequests
				return sema.Errorf(CodeTokenLimit, "the tenant spent %d of its %d tokens in the last 24 hours; try again later", used, t.tokensPerDay)
			}
		}
		if _, err := c.exec(ctx, `INSERT INTO sema_serve_tasks (id, tenant, session_id, kind, spec, status, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			task.TaskID, t.name, sessionID, kind, string(data), client.StatusQueued, now, now); err != nil {
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
	if _, _, err := s.cfg.OpenProvider(spec.Model); err != nil {
		return bad(err)
	}
	root, ok := t.inside(ctx, cmpOr(spec.Cwd, t.base))
	if !ok {
		return bad(sema.Errorf(CodeRootOutsideBase, "cwd must be an existing directory inside the tenant's base directory"))
	}
	spec.Cwd = root
	for _, dirs := range []*[]string{&spec.AddDirs, &spec.AddReadDirs} {
		for i, d := range *dirs {
			c, ok := t.inside(ctx, d)
			if !ok {
				return bad(sema.Errorf(CodeRootOutsideBase, "add_dirs and add_read_dirs must be existing directories inside the tenant's base directory (entry %d is not)", i))
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
	var result string
	var created, updated int64
	err := queryRow(ctx, s.b.db(), `SELECT id, session_id, status, checkpoint_id, result, created_ms, updated_ms
		FROM sema_serve_tasks WHERE id = ? AND tenant = ?`, []any{id, t.name},
		&task.TaskID, &task.SessionID, &task.Status, &task.CheckpointID, &result, &created, &updated)
	if err != nil {
		return nil, err
	}
	if task.Status != client.StatusAwaitingApproval {
		task.CheckpointID = ""
	}
	if result != "" {
		task.Result = json.RawMessage(result)
	}
	task.CreatedAt, task.UpdatedAt = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	return &task, nil
}

// cancelTask is POST /v1/tasks/{id}/cancel: the flag is stored (any process running the
// task sees it) and this process's leg, if it runs here, is cancelled at once.
func (s *Server) cancelTask(w http.ResponseWriter, r *http.Request, t *tenant) {
	ctx := r.Context()
	id := r.PathValue("id")
	task, err := s.task(ctx, t, id)
	if errors.Is(err, errNoRow) {
		writeErr(w, r, http.StatusNotFound, taskNotFound())
		return
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	if task.Terminal() {
		writeErr(w, r, http.StatusConflict, sema.Errorf(CodeNotRunnable, "the task has ended (%s); there is nothing to cancel", task.Status))
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
	task, err = s.task(ctx, t, id)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, task)
}

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
	limit := intParam(r, "limit", 100, 1000)
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

func wireSession(s session.Session) client.Session {
	return client.Session{ID: s.ID, ParentID: s.ParentID, Root: s.Root, Title: s.Title, Model: s.Model, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
}

func intParam(r *http.Request, name string, def, max int) int {
	n, err := strconv.Atoi(r.URL.Query().Get(name))
	if err != nil || n <= 0 {
		return def
	}
	return min(n, max)
}

// getSession is GET /v1/sessions/{id}: the session and a page of its transcript
// (?offset=N&limit=M, oldest first).
func (s *Server) getSession(w http.ResponseWriter, r *http.Request, t *tenant) {
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
	offset, _ := strconv.Atoi(r.URL.Query().Get("offset"))
	offset = max(0, min(offset, len(chain)))
	limit := intParam(r, "limit", 100, 1000)
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

// listCheckpoints is GET /v1/checkpoints?status=open|answered|all (default open).
func (s *Server) listCheckpoints(w http.ResponseWriter, r *http.Request, t *tenant) {
	ctx := r.Context()
	q := `SELECT c.id, c.task_id, c.session_id, c.decided_ms, t.result FROM sema_serve_checkpoints c
		JOIN sema_serve_tasks t ON t.id = c.task_id WHERE c.tenant = ?`
	switch st := r.URL.Query().Get("status"); st {
	case "", "open":
		q += ` AND c.decided_ms = 0`
	case "answered":
		q += ` AND c.decided_ms <> 0`
	case "all":
	default:
		writeErr(w, r, http.StatusBadRequest, sema.Errorf(CodeBadRequest, "unknown status %q; use open, answered or all", st))
		return
	}
	type row struct {
		id, task, sess, result string
		decided                int64
	}
	rs, err := s.b.db().query(ctx, q+` ORDER BY c.created_ms LIMIT ?`, t.name, intParam(r, "limit", 100, 1000))
	list, err := collect(rs, err, func(rs rows) (x row, err error) {
		return x, rs.Scan(&x.id, &x.task, &x.sess, &x.decided, &x.result)
	})
	if err != nil {
		s.internal(w, r, err)
		return
	}
	out := []client.Checkpoint{}
	for _, x := range list {
		cp, err := s.b.sessions().Checkpoint(ctx, x.id)
		if err != nil {
			s.internal(w, r, err)
			return
		}
		status := "open"
		if x.decided != 0 || cp.Decision != nil {
			status = "answered"
		}
		out = append(out, client.Checkpoint{
			ID: cp.ID, TaskID: x.task, SessionID: x.sess, Tool: cp.Tool, Input: cp.Args, InputSHA256: cp.ArgsSHA256,
			Gate: string(cp.Gate), Message: questionOf(x.result, cp.ID), Status: status, CreatedAt: cp.CreatedAt,
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"checkpoints": out})
}

// decide is POST /v1/checkpoints/{id}/decision: one-shot. The claim is one row-level
// atomic update (decided_ms from 0 to now), in the transaction that queues the task's
// resume; a second decision — through this process or any other — finds the row taken
// and is answered 409 checkpoint.already_claimed.
func (s *Server) decide(w http.ResponseWriter, r *http.Request, t *tenant) {
	ctx := r.Context()
	var d client.Decision
	if !decode(w, r, &d) {
		return
	}
	answer := agent.Answer{CheckpointID: r.PathValue("id"), Reason: d.Message}
	switch d.Decision {
	case "allow":
		answer.Allow = true
		if len(d.Input) > 0 && string(d.Input) != "null" {
			var obj map[string]any
			if json.Unmarshal(d.Input, &obj) != nil {
				writeErr(w, r, http.StatusBadRequest, sema.Errorf(CodeBadRequest, "input must be a JSON object: the call's edited arguments"))
				return
			}
			answer.UpdatedInput = d.Input
		}
	case "deny":
		if len(d.Input) > 0 {
			writeErr(w, r, http.StatusBadRequest, sema.Errorf(CodeBadRequest, "a deny carries no input"))
			return
		}
	default:
		writeErr(w, r, http.StatusBadRequest, sema.Errorf(CodeBadRequest, "decision must be allow or deny, not %q", d.Decision))
		return
	}
	data, err := json.Marshal(answer)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	var taskID string
	status := http.StatusInternalServerError
	err = s.b.tx(ctx, func(c conn, enqueue enqueueFunc) error {
		var decided int64
		err := queryRow(ctx, c, `SELECT task_id, decided_ms FROM sema_serve_checkpoints WHERE id = ? AND tenant = ?`, []any{answer.CheckpointID, t.name}, &taskID, &decided)
		if errors.Is(err, errNoRow) {
			status = http.StatusNotFound
			return sema.Errorf(CodeNotFound, "no such checkpoint")
		}
		if err != nil {
			return err
		}
		n, err := c.exec(ctx, `UPDATE sema_serve_checkpoints SET decided_ms = ?, decision = ? WHERE id = ? AND tenant = ? AND decided_ms = 0`,
			nowMS(), string(data), answer.CheckpointID, t.name)
		if err != nil {
			return err
		}
		if n == 0 {
			status = http.StatusConflict
			return sema.Errorf(session.CodeAlreadyClaimed, "the checkpoint was answered already; a decision is one-shot")
		}
		n, err = c.exec(ctx, `UPDATE sema_serve_tasks SET status = ?, decision = ?, updated_ms = ? WHERE id = ? AND status = ? AND checkpoint_id = ?`,
			client.StatusQueued, string(data), nowMS(), taskID, client.StatusAwaitingApproval, answer.CheckpointID)
		if err != nil {
			return err
		}
		if n == 0 {
			status = http.StatusConflict
			return sema.Errorf(session.CodeAlreadyClaimed, "the task no longer waits at this checkpoint (it was cancelled or answered)")
		}
		return enqueue(taskID, t.queue)
	})
	if err != nil {
		s.metrics.decisions.WithLabelValues(fmt.Sprint(status)).Inc()
		s.refuse(w, r, status, err)
		return
	}
	s.metrics.decisions.WithLabelValues(d.Decision).Inc()
	task, err := s.task(ctx, t, taskID)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, task)
}

// questionOf is the question's sentence from the result of the leg that parked at
// checkpoint id (the store keeps the call, the result its wording); "" when the task has
// moved on.
func questionOf(result, id string) string {
	var r struct {
		Checkpoint struct {
			ID      string `json:"id"`
			Message string `json:"message"`
		} `json:"checkpoint"`
	}
	if json.Unmarshal([]byte(result), &r) != nil || r.Checkpoint.ID != id {
		return ""
	}
	return r.Checkpoint.Message
}
