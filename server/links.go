package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/session"
)

// Approval links: a single-use URL that decides one parked question without a token,
// for a person who has the link and not the tenant's credentials (a phone, a chat
// message). The link's token is 32 random bytes; the store keeps only its sha256, so
// neither the database nor its backups can open a link. A link decides through the
// same claim-once path as POST /v1/checkpoints/{id}/decision.

// The links' error codes.
const (
	// CodeLinkUsed: the link decided its question already; it is single-use.
	CodeLinkUsed = "link.used"
	// CodeLinkExpired: the link's time ran out.
	CodeLinkExpired = "link.expired"
	// CodeLinkRevoked: the question was decided another way, or its task cancelled.
	CodeLinkRevoked = "link.revoked"
	// CodeLinkRateLimited: this address opened or used too many links too fast.
	CodeLinkRateLimited = "link.rate_limited"
)

const (
	// defaultLinkLife is how long a link works when its maker does not say.
	defaultLinkLife = 600
	// maxLinkLife bounds a link's life to a year of seconds, far beyond any use, so
	// the expiry cannot overflow.
	maxLinkLife = 365 * 24 * 3600
)

// linkRequest is client.LinkRequest with the field's absence told apart from zero.
type linkRequest struct {
	ExpiresIn *int `json:"expires_in"`
}

// createLink is POST /v1/checkpoints/{id}/link.
func (s *Server) createLink(w http.ResponseWriter, r *http.Request, t *tenant) {
	ctx := r.Context()
	var in linkRequest
	if r.ContentLength != 0 {
		if !decode(w, r, &in) {
			return
		}
	}
	life := defaultLinkLife
	if in.ExpiresIn != nil {
		life = *in.ExpiresIn
		if life < 1 || life > maxLinkLife {
			writeErr(w, r, http.StatusBadRequest, sema.Errorf(CodeBadRequest, "expires_in must be a whole number of seconds from 1 to %d, not %d", maxLinkLife, life).With("field", "expires_in"))
			return
		}
	}
	id := r.PathValue("id")
	var decided int64
	err := queryRow(ctx, s.b.db(), `SELECT decided_ms FROM sema_serve_checkpoints WHERE id = ? AND tenant = ?`, []any{id, t.name}, &decided)
	if errors.Is(err, errNoRow) {
		writeErr(w, r, http.StatusNotFound, sema.Errorf(CodeNotFound, "no such checkpoint"))
		return
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	if decided != 0 {
		writeErr(w, r, http.StatusConflict, sema.Errorf(session.CodeAlreadyClaimed, "the checkpoint was answered already; a link can only be made for an open question"))
		return
	}
	token, expires, err := insertLink(ctx, s.b.db(), t.name, id, time.Duration(life)*time.Second)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	s.log.Info("link created", "request_id", requestID(r), "checkpoint_id", id, "tenant", t.name, "token_id", t.tokenID, "link_id", tokenID(linkHash(token)), "expires_in", life)
	writeJSON(w, http.StatusCreated, client.Link{URL: s.publicBase(r) + "/approve/" + token, ExpiresAt: expires.UTC().Truncate(time.Millisecond)})
}

// insertLink makes a link to checkpoint id of tenant that works for life, and returns
// its token (stored only as its hash) and when it expires.
func insertLink(ctx context.Context, c conn, tenant, id string, life time.Duration) (string, time.Time, error) {
	var raw [32]byte
	rand.Read(raw[:])
	token := base64.RawURLEncoding.EncodeToString(raw[:])
	now := time.Now()
	expires := now.Add(life)
	_, err := c.exec(ctx, `INSERT INTO sema_serve_links (hash, tenant, checkpoint_id, created_ms, expires_ms) VALUES (?, ?, ?, ?, ?)`,
		linkHash(token), tenant, id, now.UnixMilli(), expires.UnixMilli())
	return token, expires, err
}

// publicBase is where people reach the console: Config.PublicURL, else the scheme and
// host this request came to.
func (s *Server) publicBase(r *http.Request) string {
	if s.cfg.PublicURL != "" {
		return strings.TrimRight(s.cfg.PublicURL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func linkHash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// link is a link's row with its question's state.
type link struct {
	hash, tenant, checkpoint, taskID, sessionID, taskStatus, taskCheckpoint, result string
	expires, used, decided                                                          int64
}

func (l *link) state(now int64) string {
	switch {
	case l.used != 0:
		return client.LinkUsed
	case l.decided != 0 || l.taskStatus != client.StatusAwaitingApproval || l.taskCheckpoint != l.checkpoint:
		return client.LinkRevoked
	case now >= l.expires:
		return client.LinkExpired
	}
	return client.LinkOpen
}

func (s *Server) loadLink(ctx context.Context, c conn, token string) (*link, error) {
	l := link{hash: linkHash(token)}
	err := queryRow(ctx, c, `SELECT k.tenant, k.checkpoint_id, k.expires_ms, k.used_ms, c.task_id, c.session_id, c.decided_ms,
			COALESCE(t.status, ''), COALESCE(t.checkpoint_id, ''), COALESCE(t.result, '')
		FROM sema_serve_links k JOIN sema_serve_checkpoints c ON c.id = k.checkpoint_id AND c.tenant = k.tenant
		LEFT JOIN sema_serve_tasks t ON t.id = c.task_id
		WHERE k.hash = ?`, []any{l.hash},
		&l.tenant, &l.checkpoint, &l.expires, &l.used, &l.taskID, &l.sessionID, &l.decided, &l.taskStatus, &l.taskCheckpoint, &l.result)
	if err != nil {
		return nil, err
	}
	return &l, nil
}

// linkFromPath reads the link named by the request's token, answering an unknown one
// 404 and a caller over its rate 429 (ok false).
func (s *Server) linkFromPath(w http.ResponseWriter, r *http.Request) (*link, bool) {
	if !s.linkRate.allow(remoteIP(r), time.Now()) {
		w.Header().Set("Retry-After", "2")
		writeErr(w, r, http.StatusTooManyRequests, sema.Errorf(CodeLinkRateLimited, "this address has opened or used links too fast; wait a few seconds and retry"))
		return nil, false
	}
	token := r.PathValue("token")
	l, err := s.loadLink(r.Context(), s.b.db(), token)
	if errors.Is(err, errNoRow) || (err == nil && token == "") {
		writeErr(w, r, http.StatusNotFound, sema.Errorf(CodeNotFound, "no such link; check that it was copied whole"))
		return nil, false
	}
	if err != nil {
		s.internal(w, r, err)
		return nil, false
	}
	return l, true
}

// linkInfo is what the link tells its holder: the question only while the link can
// decide it, so a link that has done its work shows no more of the task.
func (s *Server) linkInfo(ctx context.Context, l *link, state string) (*client.LinkInfo, error) {
	info := &client.LinkInfo{State: state, TaskID: l.taskID, SessionID: l.sessionID, ExpiresAt: time.UnixMilli(l.expires).UTC()}
	if state != client.LinkOpen {
		return info, nil
	}
	cp, err := s.b.sessions().Checkpoint(ctx, l.checkpoint)
	if err != nil {
		return nil, err
	}
	info.Tool, info.Input, info.Gate, info.Message = cp.Tool, cp.Args, string(cp.Gate), questionOf(l.result, l.checkpoint)
	return info, nil
}

// openLink is GET /v1/links/{token}: no token needed, nothing decided.
func (s *Server) openLink(w http.ResponseWriter, r *http.Request) {
	l, ok := s.linkFromPath(w, r)
	if !ok {
		return
	}
	info, err := s.linkInfo(r.Context(), l, l.state(nowMS()))
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

// decideLink is POST /v1/links/{token}/decision. The link is claimed first, in one
// atomic update (used_ms from 0, unexpired), so of two uses of one link one goes on;
// the decision then takes the checkpoint's own claim-once path, so a link racing a
// decision made over the API (or another link) decides at most once. A decision that
// does not go through gives the link back, except when the question was decided
// another way: then the link reads revoked.
func (s *Server) decideLink(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	l, ok := s.linkFromPath(w, r)
	if !ok {
		return
	}
	var d client.LinkDecision
	if !decode(w, r, &d) {
		return
	}
	if d.Decision != "allow" && d.Decision != "deny" {
		writeErr(w, r, http.StatusBadRequest, sema.Errorf(CodeBadRequest, "decision must be allow or deny, not %q", d.Decision).With("field", "decision"))
		return
	}
	if st := l.state(nowMS()); st != client.LinkOpen {
		s.refuseLink(w, r, st)
		return
	}
	now := nowMS()
	n, err := s.b.db().exec(ctx, `UPDATE sema_serve_links SET used_ms = ? WHERE hash = ? AND used_ms = 0 AND expires_ms > ?`, now, l.hash, now)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	if n == 0 {
		if l, err = s.loadLink(ctx, s.b.db(), r.PathValue("token")); err != nil {
			s.internal(w, r, err)
			return
		}
		s.refuseLink(w, r, l.state(nowMS()))
		return
	}
	t, err := s.tenantNamed(ctx, l.tenant)
	if err != nil {
		s.giveBack(ctx, l)
		if errors.Is(err, errNoRow) {
			writeErr(w, r, http.StatusNotFound, sema.Errorf(CodeNotFound, "no such link; check that it was copied whole"))
			return
		}
		s.internal(w, r, err)
		return
	}
	// The decision's audit line names the link, not a token: no token made it.
	t.tokenID = "link:" + tokenID(l.hash)
	body, _ := json.Marshal(client.Decision{Decision: d.Decision, Message: d.Message})
	inner := r.Clone(ctx)
	inner.Body, inner.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	inner.SetPathValue("id", l.checkpoint)
	rec := &answer{header: http.Header{}}
	s.decide(rec, inner, t)
	if rec.code != http.StatusAccepted {
		s.giveBack(ctx, l)
		var e client.Error
		json.Unmarshal(rec.body.Bytes(), &e)
		if rec.code == http.StatusConflict && e.Code == session.CodeAlreadyClaimed {
			s.refuseLink(w, r, client.LinkRevoked)
			return
		}
		// Anything else (the tenant at its limit, a failure) is the decision's own
		// answer: the link stays open for another try.
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.code)
		w.Write(rec.body.Bytes())
		return
	}
	l.used = now
	info, _ := s.linkInfo(ctx, l, client.LinkUsed)
	writeJSON(w, http.StatusAccepted, info)
}

// giveBack reopens a link whose claim did not become a decision.
func (s *Server) giveBack(ctx context.Context, l *link) {
	if _, err := s.b.db().exec(context.WithoutCancel(ctx), `UPDATE sema_serve_links SET used_ms = 0 WHERE hash = ?`, l.hash); err != nil {
		s.log.Error("link not given back", "link_id", tokenID(l.hash), "error", err.Error())
	}
}

func (s *Server) refuseLink(w http.ResponseWriter, r *http.Request, state string) {
	switch state {
	case client.LinkUsed:
		writeErr(w, r, http.StatusConflict, sema.Errorf(CodeLinkUsed, "this link was used already; a link decides once"))
	case client.LinkExpired:
		writeErr(w, r, http.StatusGone, sema.Errorf(CodeLinkExpired, "this link has expired; ask for a new one"))
	default:
		writeErr(w, r, http.StatusConflict, sema.Errorf(CodeLinkRevoked, "the question was decided another way (or its task cancelled); this link decides nothing"))
	}
}

// tenantNamed is the tenant a link acts for; the token id in the logs names the link.
func (s *Server) tenantNamed(ctx context.Context, name string) (*tenant, error) {
	var t tenant
	var policy sql.NullString
	err := queryRow(ctx, s.b.db(), `SELECT t.name, t.base, t.max_concurrent, t.tokens_per_day, t.queue, `+qTenantPolicy+`
		FROM sema_serve_tenants t WHERE t.name = ? AND t.deleted_ms IS NULL`,
		[]any{name}, &t.name, &t.base, &t.maxConcurrent, &t.tokensPerDay, &t.queue, &policy)
	if err != nil {
		return nil, err
	}
	t.policy, t.policyRead = policy.String, true
	return &t, nil
}

// answer keeps a handler's answer for the link to judge before passing it on.
type answer struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (a *answer) Header() http.Header { return a.header }
func (a *answer) WriteHeader(code int) {
	if a.code == 0 {
		a.code = code
	}
}
func (a *answer) Write(b []byte) (int, error) {
	if a.code == 0 {
		a.code = http.StatusOK
	}
	return a.body.Write(b)
}

// remoteIP is the host of the request's remote address.
func remoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// rateLimit is a token bucket per client address for the link endpoints: a burst of
// linkBurst, then one every linkEvery. A link's token is 256 bits, out of reach of
// guessing at any rate; the limit keeps a client from hammering the store with tries.
type rateLimit struct {
	// burst and every override linkBurst and linkEvery (0: those).
	burst float64
	every time.Duration

	mu  sync.Mutex
	per map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

const (
	linkBurst = 20
	linkEvery = 500 * time.Millisecond
)

func (l *rateLimit) allow(ip string, now time.Time) bool {
	burst, every := float64(linkBurst), linkEvery
	if l.burst > 0 {
		burst, every = l.burst, l.every
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.per == nil {
		l.per = map[string]*bucket{}
	}
	if len(l.per) > 4096 {
		// Forget the addresses whose buckets are full again: they hold nothing.
		for k, b := range l.per {
			if now.Sub(b.last) > time.Duration(burst)*every {
				delete(l.per, k)
			}
		}
	}
	b := l.per[ip]
	if b == nil {
		b = &bucket{tokens: burst, last: now}
		l.per[ip] = b
	}
	b.tokens = min(burst, b.tokens+float64(now.Sub(b.last))/float64(every))
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// redactPath keeps a link's token out of the request log: whoever reads the logs
// could otherwise use an open link.
func redactPath(p string) string {
	for _, prefix := range []string{"/v1/links/", "/approve/"} {
		if rest, ok := strings.CutPrefix(p, prefix); ok {
			_, tail, _ := strings.Cut(rest, "/")
			if tail != "" {
				tail = "/" + tail
			}
			return prefix + "…" + tail
		}
	}
	return p
}

// consoleKey is the key the console seals its sessions with: made once, kept in the
// store, so every process of a deployment opens the cookies of the others.
func (s *Server) consoleKey(ctx context.Context) ([]byte, error) {
	var raw [32]byte
	rand.Read(raw[:])
	if _, err := s.b.db().exec(ctx, `INSERT INTO sema_serve_keys (name, key, created_ms) VALUES ('console', ?, ?) ON CONFLICT (name) DO NOTHING`,
		base64.StdEncoding.EncodeToString(raw[:]), nowMS()); err != nil {
		return nil, err
	}
	var stored string
	if err := queryRow(ctx, s.b.db(), `SELECT key FROM sema_serve_keys WHERE name = 'console'`, nil, &stored); err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(stored)
}
