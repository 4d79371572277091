package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/client"
)

// CodeRootNotDirectory refuses a task root (cwd, add_dirs, add_read_dirs) inside the
// tenant's base that is not a directory.
const CodeRootNotDirectory = "tenant.root_not_directory"

// Handler serves the API.
func (s *Server) Handler() http.Handler { return s.withRequest(s.mux) }

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("POST /v1/tasks", s.authed(s.submitTask))
	m.HandleFunc("GET /v1/tasks", s.authed(s.listTasks))
	m.HandleFunc("GET /v1/tasks/{id}", s.authed(s.getTask))
	m.HandleFunc("GET /v1/tasks/{id}/events", s.authed(s.taskEvents))
	m.HandleFunc("POST /v1/tasks/{id}/cancel", s.authed(s.cancelTask))
	m.HandleFunc("POST /v1/tasks/{id}/mode", s.authed(s.setTaskMode))
	m.HandleFunc("GET /v1/sessions", s.authed(s.listSessions))
	m.HandleFunc("GET /v1/sessions/{id}", s.authed(s.getSession))
	m.HandleFunc("POST /v1/sessions/{id}/messages", s.authed(s.sessionMessage))
	m.HandleFunc("POST /v1/sessions/{id}/rewind", s.authed(s.rewindSession))
	m.HandleFunc("POST /v1/sessions/{id}/fork", s.authed(s.forkSession))
	m.HandleFunc("GET /v1/checkpoints", s.authed(s.listCheckpoints))
	m.HandleFunc("POST /v1/checkpoints/{id}/decision", s.authed(s.decide))
	m.HandleFunc("POST /v1/webhooks", s.authed(s.createWebhook))
	m.HandleFunc("GET /v1/webhooks", s.authed(s.listWebhooks))
	m.HandleFunc("DELETE /v1/webhooks/{id}", s.authed(s.deleteWebhook))
	m.HandleFunc("GET /v1/webhooks/{id}/deliveries", s.authed(s.listDeliveries))
	m.HandleFunc("POST /v1/schedules", s.authed(s.createSchedule))
	m.HandleFunc("GET /v1/schedules", s.authed(s.listSchedules))
	m.HandleFunc("DELETE /v1/schedules/{id}", s.authed(s.deleteSchedule))
	m.HandleFunc("POST /v1/checkpoints/{id}/link", s.authed(s.createLink))
	m.HandleFunc("GET /v1/links/{token}", s.openLink)
	m.HandleFunc("POST /v1/links/{token}/decision", s.decideLink)
	m.HandleFunc("GET /v1/openapi.json", serveOpenAPI)
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	m.HandleFunc("GET /readyz", s.ready)
	m.Handle("GET /metrics", s.metrics.handler())
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if s.console != nil && !strings.HasPrefix(r.URL.Path, "/v1/") {
			if r.Method == http.MethodPost && r.URL.Path == "/signin" && !s.signinRate.allow(remoteIP(r), time.Now()) {
				// Tokens cannot be guessed, but tries cost the store a lookup each.
				w.Header().Set("Retry-After", "10")
				http.Error(w, "Too many sign-in attempts from this address; wait a minute and try again.", http.StatusTooManyRequests)
				return
			}
			s.console.ServeHTTP(w, r) // the console's pages (console.go)
			return
		}
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
		ctx, span := s.serverSpan(r, id)
		r = r.WithContext(context.WithValue(ctx, requestIDKey, id))
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		start := time.Now()
		h.ServeHTTP(rec, r)
		route := r.Pattern
		if route == "" || route == "/" {
			route = "other"
		}
		endServerSpan(span, route, rec.code)
		s.metrics.requests.WithLabelValues(route, strconv.Itoa(rec.code)).Inc()
		s.log.Info("request", "request_id", id, "method", r.Method, "path", redactPath(r.URL.Path), "status", rec.code, "ms", time.Since(start).Milliseconds())
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
				// The body is not read: closing after the answer sends it at once, where
				// keeping the connection would first wait for the rest of the body.
				w.Header().Set("Connection", "close")
				writeErr(w, r, http.StatusUnauthorized, err)
				return
			}
			s.internal(w, r, err)
			return
		}
		release, ok := tenantSlot(w, r, t.name)
		if !ok {
			return
		}
		defer release()
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
	if err != nil && bodyTimedOut(w, r, err) {
		return false
	}
	if err != nil {
		writeErr(w, r, http.StatusRequestEntityTooLarge, sema.Errorf(CodeBadRequest, "the body is larger than %d bytes", maxBody))
		return false
	}
	// encoding/json matches a known field's name without regard to case, even with
	// DisallowUnknownFields ("Permission_Mode" would set permission_mode): the keys are
	// checked first, against the exact names.
	if name, ok := unknownKey(body, v); ok {
		writeErr(w, r, http.StatusBadRequest, sema.Errorf(CodeUnknownField, "unknown field %q (field names are exact and case-sensitive); see /v1/openapi.json for the fields this endpoint takes", name).With("field", name))
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

// unknownKey returns the first key of the JSON object body, in sorted order, that is
// not exactly the JSON name of a field of the struct v points to. A body that is not an
// object is left to the decoder, which names what is wrong with it.
func unknownKey(body []byte, v any) (string, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil {
		return "", false
	}
	known := map[string]bool{}
	st := reflect.TypeOf(v).Elem()
	for i := range st.NumField() {
		f := st.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case name == "":
			known[f.Name] = true
		default:
			known[name] = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if !known[k] {
			return k, true
		}
	}
	return "", false
}

// intParam reads the query parameter name as a whole number from lo to hi; def when it
// is absent. Anything else is answered 400 naming the parameter, and ok is false.
func intParam(w http.ResponseWriter, r *http.Request, name string, def, lo, hi int) (n int, ok bool) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		writeErr(w, r, http.StatusBadRequest, sema.Errorf(CodeBadRequest, "%s must be a whole number from %d to %d, not %q", name, lo, hi, v).With("field", name))
		return 0, false
	}
	return n, true
}
