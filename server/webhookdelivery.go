package server

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/permission"
)

// A delivery is one call of one webhook for one event: a row written in the transaction
// that changes the task's status (finish), so the call is as durable as the change.
// Every working process runs a deliverer: it claims due rows (a lease on the row, so one
// process calls at a time), posts the body, and records the outcome — delivered, or
// tried again after a backoff that doubles (Config.WebhookBackoff, 1 s by default, up to
// 10 minutes between tries) until webhookAttempts tries have failed. A receiver may see
// a delivery more than once (a process that died after the call, before the record):
// X-Sema-Delivery names it, the same on every try.

const (
	deliveryPending   = "pending"
	deliveryDelivered = "delivered"
	deliveryFailed    = "failed"

	// webhookAttempts is how many tries a delivery gets.
	webhookAttempts = 8
	// deliveryLease is how long a claimed delivery is the claimer's: longer than a call
	// may take (webhookClient's timeout).
	deliveryLease = time.Minute
	// deliveryKeep is how long delivered and failed rows are kept.
	deliveryKeep = 48 * time.Hour
)

// The headers of a delivery.
const (
	// HeaderSignature is "v1=" and the hex HMAC-SHA256, keyed by the webhook's secret,
	// of the timestamp header's value, a ".", and the body.
	HeaderSignature = "X-Sema-Signature"
	// HeaderTimestamp is the Unix time of the try, in seconds.
	HeaderTimestamp = "X-Sema-Timestamp"
	// HeaderDelivery names the delivery: the same on every try of it.
	HeaderDelivery = "X-Sema-Delivery"
	// HeaderEvent is the event (task.needs_person, task.ended).
	HeaderEvent = "X-Sema-Event"
)

// Sign is the signature a delivery carries (HeaderSignature) for body sent at timestamp
// with secret: what a receiver computes to check it.
func Sign(secret, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(timestamp))
	m.Write([]byte("."))
	m.Write(body)
	return "v1=" + hex.EncodeToString(m.Sum(nil))
}

// WebhookEvent is the body of a json delivery.
type WebhookEvent struct {
	// ID names the delivery (as HeaderDelivery does).
	ID string `json:"id"`
	// Event is task.needs_person or task.ended.
	Event string `json:"event"`
	// Tenant is the task's tenant.
	Tenant string `json:"tenant"`
	// At is when the task's status changed.
	At time.Time `json:"at"`
	// Task is the task as it is now.
	Task WebhookTask `json:"task"`
	// Checkpoint is the question the task waits at (task.needs_person).
	Checkpoint *WebhookCheckpoint `json:"checkpoint,omitempty"`
	// ApproveURL is a single-use approval link to the question (task.needs_person),
	// made when the service knows where people reach it (Config.PublicURL); it works
	// for Config.WebhookLinkLife and stops working once the question is answered.
	ApproveURL string `json:"approve_url,omitempty"`
}

// WebhookTask is what a delivery says of its task.
type WebhookTask struct {
	// ID is the task's id.
	ID string `json:"task_id"`
	// SessionID is the session it runs in.
	SessionID string `json:"session_id"`
	// Status is its status: awaiting_approval, or how it ended.
	Status string `json:"status"`
	// Prompt is the task's prompt, its first line and at most 200 characters.
	Prompt string `json:"prompt"`
	// Result is the model's last text when the task ended (at most 500 characters).
	Result string `json:"result,omitempty"`
	// Error is the error's code when it ended in error.
	Error string `json:"error,omitempty"`
}

// WebhookCheckpoint is the question of a task.needs_person delivery: the exact action.
type WebhookCheckpoint struct {
	// ID names the checkpoint a decision answers (POST /v1/checkpoints/{id}/decision).
	ID string `json:"id"`
	// Tool is the tool whose call waits.
	Tool string `json:"tool"`
	// Input is the call's arguments exactly as they will run when allowed.
	Input json.RawMessage `json:"input"`
	// Message is the question, for a person.
	Message string `json:"message"`
	// Gate is the kind of question: tool_permission, plan_review or budget.
	Gate string `json:"gate,omitempty"`
}

// queueDeliveries writes the deliveries of the tenant's webhooks that ask for the event
// a leg's end is, in the transaction c that records the end.
func (s *Server) queueDeliveries(ctx context.Context, c conn, t *taskRow, status sema.Status, res *agent.TaskResult, obj map[string]any) (int, error) {
	event := ""
	var cp *WebhookCheckpoint
	switch {
	case status == sema.StatusAwaitingApproval && res != nil:
		if info, ok := res.Parked(); ok {
			event, cp = EventNeedsPerson, &WebhookCheckpoint{ID: info.ID, Tool: info.Tool, Input: info.Input, Message: info.Message, Gate: info.Gate}
		}
	case status != sema.StatusAwaitingApproval:
		event = EventTaskEnded
	}
	if event == "" {
		return 0, nil
	}
	rs, err := c.query(ctx, `SELECT id, events, format FROM sema_serve_webhooks WHERE tenant = ?`, t.tenant)
	if err != nil {
		return 0, err
	}
	type hook struct{ id, format string }
	var hooks []hook
	for rs.Next() {
		var h hook
		var events string
		if err := rs.Scan(&h.id, &events, &h.format); err != nil {
			rs.Close()
			return 0, err
		}
		if strings.Contains(","+events+",", ","+event+",") {
			hooks = append(hooks, h)
		}
	}
	rs.Close()
	if err := rs.Err(); err != nil || len(hooks) == 0 {
		return 0, err
	}
	now := time.Now().UTC()
	ev := WebhookEvent{Event: event, Tenant: t.tenant, At: now, Checkpoint: cp,
		Task: WebhookTask{ID: t.id, SessionID: t.sessionID, Status: string(status), Prompt: clip(firstLine(t.spec.Prompt), 200)}}
	if res != nil {
		ev.Task.SessionID = res.SessionID
		if status != sema.StatusAwaitingApproval {
			ev.Task.Result = clip(res.Result, 500)
		}
	}
	if e, ok := obj["error"].(*sema.Error); ok && e != nil {
		ev.Task.Error = e.Code
	}
	if cp != nil && s.cfg.PublicURL != "" && cp.Gate != permission.GateBudget {
		// A budget question is answered with a new limit, which a link cannot carry.
		// One link for the question, in every delivery of it: the first use decides.
		token, _, err := insertLink(ctx, c, t.tenant, cp.ID, s.webhookLinkLife())
		if err != nil {
			return 0, err
		}
		ev.ApproveURL = strings.TrimRight(s.cfg.PublicURL, "/") + "/approve/" + token
	}
	for _, h := range hooks {
		ev.ID = newID()
		body, err := deliveryBody(ev, h.format)
		if err != nil {
			return 0, err
		}
		if _, err := c.exec(ctx, `INSERT INTO sema_serve_deliveries (id, webhook_id, tenant, event, body, status, attempts, next_ms, claimed_until_ms, created_ms) VALUES (?, ?, ?, ?, ?, ?, 0, ?, 0, ?)`,
			ev.ID, h.id, t.tenant, event, string(body), deliveryPending, now.UnixMilli(), now.UnixMilli()); err != nil {
			return 0, err
		}
	}
	return len(hooks), nil
}

// webhookLinkLife is how long a webhook's approval link works.
func (s *Server) webhookLinkLife() time.Duration {
	if s.cfg.WebhookLinkLife > 0 {
		return s.cfg.WebhookLinkLife
	}
	return time.Hour
}

// deliveryBody is the event in the webhook's format: the event itself, or a Slack
// message ({"text"}) a Slack-compatible incoming webhook shows.
func deliveryBody(ev WebhookEvent, format string) ([]byte, error) {
	if format != "slack" {
		return marshalPlain(ev)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "sema · %s: task %s", ev.Tenant, ev.Task.ID)
	if ev.Task.Prompt != "" {
		fmt.Fprintf(&b, " (%q)", ev.Task.Prompt)
	}
	if ev.Checkpoint != nil {
		fmt.Fprintf(&b, " needs you: %s `%s` — checkpoint %s", ev.Checkpoint.Tool, clip(actionOf(ev.Checkpoint), 300), ev.Checkpoint.ID)
		if ev.ApproveURL != "" {
			fmt.Fprintf(&b, " — <%s|approve or deny>", ev.ApproveURL)
		}
	} else {
		fmt.Fprintf(&b, " ended: %s", ev.Task.Status)
		if ev.Task.Error != "" {
			fmt.Fprintf(&b, " (%s)", ev.Task.Error)
		}
	}
	return marshalPlain(map[string]string{"text": b.String()})
}

// marshalPlain is json.Marshal without escaping <, > and &, which a receiver (Slack's
// <url|text> links) reads as written.
func marshalPlain(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// actionOf is a checkpoint's action in a line: the command, the path, or the input.
func actionOf(cp *WebhookCheckpoint) string {
	var in map[string]any
	if json.Unmarshal(cp.Input, &in) == nil {
		for _, k := range []string{"command", "file_path", "path", "url"} {
			if v, ok := in[k].(string); ok {
				return firstLine(v)
			}
		}
	}
	return string(cp.Input)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// deliverer sends this process's share of the due deliveries.
type deliverer struct {
	s       *Server
	wake    chan struct{}
	clients map[bool]*http.Client // by allowPrivate
	busy    sync.WaitGroup
	pruned  time.Time
}

func newDeliverer(s *Server) *deliverer {
	return &deliverer{s: s, wake: make(chan struct{}, 1), clients: map[bool]*http.Client{false: webhookClient(false), true: webhookClient(true)}}
}

// poke makes the deliverer look for due deliveries now (a leg just wrote some).
func (d *deliverer) poke() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// run sends due deliveries until ctx ends, then waits for the calls in flight.
func (d *deliverer) run(ctx context.Context) {
	defer d.busy.Wait()
	tick := time.NewTicker(max(5*d.s.cfg.Poll, 100*time.Millisecond))
	defer tick.Stop()
	for {
		d.sendDue(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-d.wake:
		}
	}
}

// deliveryBatch is how many due deliveries one look claims, and calls at once.
const deliveryBatch = 8

// sendDue claims the due deliveries (up to deliveryBatch) and sends them, each on its
// own goroutine; and, hourly, forgets the delivered and failed ones older than
// deliveryKeep.
func (d *deliverer) sendDue(ctx context.Context) {
	db := d.s.b.db()
	now := time.Now()
	if now.Sub(d.pruned) > time.Hour {
		d.pruned = now
		db.exec(ctx, `DELETE FROM sema_serve_deliveries WHERE status <> ? AND created_ms < ?`, deliveryPending, now.Add(-deliveryKeep).UnixMilli())
	}
	rs, err := db.query(ctx, `SELECT id FROM sema_serve_deliveries WHERE status = ? AND next_ms <= ? AND claimed_until_ms <= ? ORDER BY next_ms LIMIT ?`,
		deliveryPending, now.UnixMilli(), now.UnixMilli(), deliveryBatch)
	ids, err := collect(rs, err, scanString)
	if err != nil {
		return // the store is down for now; the next look tries again
	}
	for _, id := range ids {
		n, err := db.exec(ctx, `UPDATE sema_serve_deliveries SET claimed_until_ms = ? WHERE id = ? AND status = ? AND claimed_until_ms <= ?`,
			now.Add(deliveryLease).UnixMilli(), id, deliveryPending, now.UnixMilli())
		if err != nil || n != 1 {
			continue // another process claimed it
		}
		d.busy.Add(1)
		go func() {
			defer d.busy.Done()
			d.send(context.WithoutCancel(ctx), id)
		}()
	}
}

// send makes one try of a claimed delivery and records its outcome.
func (d *deliverer) send(ctx context.Context, id string) {
	db := d.s.b.db()
	var hookID, event, body, url, secret string
	var attempts, private int
	err := queryRow(ctx, db, `SELECT d.webhook_id, d.event, d.body, d.attempts, w.url, w.secret, w.private_ok
		FROM sema_serve_deliveries d JOIN sema_serve_webhooks w ON w.id = d.webhook_id WHERE d.id = ?`, []any{id},
		&hookID, &event, &body, &attempts, &url, &secret, &private)
	if err != nil {
		if err == errNoRow { // the webhook was removed meanwhile
			db.exec(ctx, `UPDATE sema_serve_deliveries SET status = ?, last_error = ? WHERE id = ?`, deliveryFailed, "the webhook was removed", id)
		}
		return
	}
	attempts++
	callErr := d.call(ctx, d.clients[private == 1 || d.s.cfg.WebhooksPrivate], url, secret, id, event, []byte(body))
	switch {
	case callErr == nil:
		_, err = db.exec(ctx, `UPDATE sema_serve_deliveries SET status = ?, attempts = ?, last_error = '' WHERE id = ?`, deliveryDelivered, attempts, id)
		d.s.metrics.webhooks.WithLabelValues(deliveryDelivered).Inc()
	case attempts >= webhookAttempts:
		_, err = db.exec(ctx, `UPDATE sema_serve_deliveries SET status = ?, attempts = ?, last_error = ? WHERE id = ?`, deliveryFailed, attempts, callErr.Error(), id)
		d.s.metrics.webhooks.WithLabelValues(deliveryFailed).Inc()
		d.s.log.Warn("webhook delivery failed for good", "delivery", id, "webhook", hookID, "attempts", attempts, "error", callErr.Error())
	default:
		next := time.Now().Add(d.backoff(attempts))
		_, err = db.exec(ctx, `UPDATE sema_serve_deliveries SET attempts = ?, next_ms = ?, claimed_until_ms = 0, last_error = ? WHERE id = ?`, attempts, next.UnixMilli(), callErr.Error(), id)
		d.s.metrics.webhooks.WithLabelValues("retried").Inc()
	}
	if err != nil {
		d.s.log.Warn("webhook delivery not recorded", "delivery", id, "error", err.Error())
	}
}

// backoff is the wait after the n-th failed try: the base, doubled each time, at most
// ten minutes.
func (d *deliverer) backoff(n int) time.Duration {
	base := d.s.cfg.WebhookBackoff
	if base <= 0 {
		base = time.Second
	}
	wait := base << min(n-1, 20)
	return min(wait, 10*time.Minute)
}

// call posts body to url, signed; a 2xx answer delivers it.
func (d *deliverer) call(ctx context.Context, c *http.Client, url, secret, id, event string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "sema-webhook")
	req.Header.Set(HeaderDelivery, id)
	req.Header.Set(HeaderEvent, event)
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderSignature, Sign(secret, ts, body))
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("the receiver answered %s", resp.Status)
	}
	return nil
}

// deliveriesOf lists a webhook's deliveries, newest first (for the operator's view).
func (s *Server) deliveriesOf(ctx context.Context, hookID string, limit int) ([]client.WebhookDelivery, error) {
	rs, err := s.b.db().query(ctx, `SELECT id, event, status, attempts, last_error, created_ms FROM sema_serve_deliveries WHERE webhook_id = ? ORDER BY created_ms DESC LIMIT ?`, hookID, limit)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []client.WebhookDelivery
	for rs.Next() {
		var d client.WebhookDelivery
		var created int64
		if err := rs.Scan(&d.ID, &d.Event, &d.Status, &d.Attempts, &d.LastError, &created); err != nil {
			return nil, err
		}
		d.CreatedAt = time.UnixMilli(created).UTC()
		out = append(out, d)
	}
	return out, rs.Err()
}
