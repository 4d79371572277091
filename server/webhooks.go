package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/client"
)

// A tenant's webhooks are the addresses the service calls when one of its tasks needs a
// person (it parked at a question) and when a task ends. Registering one is the API's
// POST /v1/webhooks or the operator's `sema serve webhook add`; the answer carries the
// secret the service signs each body with, once. The calls themselves are deliveries
// (webhookdelivery.go): rows written in the same transaction as the task's status, so a
// status that changed is never without its calls, retried with backoff by whichever
// working process claims them.

// The codes of a refused webhook.
const (
	// CodeWebhookURL: the address is not an absolute http(s) URL without credentials.
	CodeWebhookURL = "webhook.url_invalid"
	// CodeWebhookPrivate: the address is on this machine or a private network, which a
	// tenant may not make the service call (an operator may: --allow-private).
	CodeWebhookPrivate = "webhook.url_private"
	// CodeWebhookEvent: an event the service does not send.
	CodeWebhookEvent = "webhook.event_invalid"
	// CodeWebhookFormat: a body format other than json or slack.
	CodeWebhookFormat = "webhook.format_invalid"
	// CodeWebhookLimit: the tenant has as many webhooks as it may.
	CodeWebhookLimit = "webhook.limit"
	// CodeWebhookNotFound: no such webhook of the tenant.
	CodeWebhookNotFound = "webhook.not_found"
)

// The events a webhook can ask for.
const (
	// EventNeedsPerson: a task parked at a question only a person may answer.
	EventNeedsPerson = "task.needs_person"
	// EventTaskEnded: a task ended for good (completed, error, cancelled, a budget).
	EventTaskEnded = "task.ended"
)

// maxWebhooks bounds a tenant's webhooks: each task's change writes a delivery per one.
const maxWebhooks = 10

// WebhookOptions are the operator's words on a webhook added with `sema serve webhook
// add`, beyond what a tenant may send.
type WebhookOptions struct {
	// AllowPrivate lets the webhook's address be on this machine or a private network.
	AllowPrivate bool
}

// AddWebhook registers a webhook for tenant name and returns it with its secret, which
// is not shown again.
func (s *Server) AddWebhook(ctx context.Context, name string, w client.Webhook, o WebhookOptions) (*client.Webhook, error) {
	if err := tenantExists(ctx, s.b.db(), name); err != nil {
		return nil, err
	}
	return s.addWebhook(ctx, name, w, o.AllowPrivate)
}

// Webhooks lists tenant name's webhooks, oldest first, without their secrets.
func (s *Server) Webhooks(ctx context.Context, name string) ([]client.Webhook, error) {
	rs, err := s.b.db().query(ctx, `SELECT id, url, events, format, created_ms FROM sema_serve_webhooks WHERE tenant = ? ORDER BY created_ms, id`, name)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	out := []client.Webhook{}
	for rs.Next() {
		var w client.Webhook
		var events string
		var created int64
		if err := rs.Scan(&w.ID, &w.URL, &events, &w.Format, &created); err != nil {
			return nil, err
		}
		w.Events, w.CreatedAt = strings.Split(events, ","), time.UnixMilli(created).UTC()
		out = append(out, w)
	}
	return out, rs.Err()
}

// RemoveWebhook deletes tenant name's webhook id: its pending deliveries are not sent.
func (s *Server) RemoveWebhook(ctx context.Context, name, id string) error {
	n, err := s.b.db().exec(ctx, `DELETE FROM sema_serve_webhooks WHERE id = ? AND tenant = ?`, id, name)
	if err != nil {
		return err
	}
	if n == 0 {
		return sema.Errorf(CodeWebhookNotFound, "the tenant has no webhook %s; `GET /v1/webhooks` lists them", id)
	}
	_, err = s.b.db().exec(ctx, `DELETE FROM sema_serve_deliveries WHERE webhook_id = ? AND status = ?`, id, deliveryPending)
	return err
}

func (s *Server) addWebhook(ctx context.Context, tenant string, w client.Webhook, allowPrivate bool) (*client.Webhook, error) {
	if err := checkWebhook(ctx, &w, allowPrivate || s.cfg.WebhooksPrivate); err != nil {
		return nil, err
	}
	var n int
	if err := queryRow(ctx, s.b.db(), `SELECT COUNT(*) FROM sema_serve_webhooks WHERE tenant = ?`, []any{tenant}, &n); err != nil {
		return nil, err
	}
	if n >= maxWebhooks {
		return nil, sema.Errorf(CodeWebhookLimit, "the tenant has %d webhooks, the most it may have; remove one first", n)
	}
	secret := make([]byte, 32)
	rand.Read(secret)
	w.ID, w.Secret, w.CreatedAt = newID(), "whsec_"+base64.RawURLEncoding.EncodeToString(secret), time.Now().UTC()
	private := 0
	if allowPrivate {
		private = 1
	}
	_, err := s.b.db().exec(ctx, `INSERT INTO sema_serve_webhooks (id, tenant, url, events, format, secret, private_ok, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		w.ID, tenant, w.URL, strings.Join(w.Events, ","), w.Format, w.Secret, private, w.CreatedAt.UnixMilli())
	if err != nil {
		return nil, err
	}
	return &w, nil
}

// checkWebhook refuses a webhook by name and fills in its defaults: both events, the
// json format.
func checkWebhook(ctx context.Context, w *client.Webhook, allowPrivate bool) error {
	u, err := url.Parse(w.URL)
	switch {
	case err != nil || !u.IsAbs() || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "":
		return sema.Errorf(CodeWebhookURL, "url %q is not an absolute http:// or https:// address", w.URL)
	case u.User != nil:
		return sema.Errorf(CodeWebhookURL, "url must not carry credentials (user:password@); the body is signed with the webhook's secret instead")
	case u.Fragment != "":
		return sema.Errorf(CodeWebhookURL, "url must not have a #fragment")
	}
	if !allowPrivate {
		if err := publicHost(ctx, u.Hostname()); err != nil {
			return err
		}
	}
	if len(w.Events) == 0 {
		w.Events = []string{EventNeedsPerson, EventTaskEnded}
	}
	seen := map[string]bool{}
	for _, e := range w.Events {
		if e != EventNeedsPerson && e != EventTaskEnded {
			return sema.Errorf(CodeWebhookEvent, "event %q is not one the service sends; use %s and/or %s", e, EventNeedsPerson, EventTaskEnded)
		}
		if seen[e] {
			return sema.Errorf(CodeWebhookEvent, "event %q is named twice", e)
		}
		seen[e] = true
	}
	slices.Sort(w.Events)
	switch w.Format {
	case "":
		w.Format = "json"
	case "json", "slack":
	default:
		return sema.Errorf(CodeWebhookFormat, "format %q is not json (the event as JSON) or slack (a {\"text\"} message)", w.Format)
	}
	return nil
}

// publicHost refuses a host that is, or resolves to, an address of this machine or of a
// private network. The check is repeated when each delivery connects (publicDialer), so
// a name that resolves elsewhere later is refused then.
func publicHost(ctx context.Context, host string) error {
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return sema.Errorf(CodeWebhookURL, "the host %s does not resolve: %v", host, err)
	}
	for _, ip := range ips {
		if !publicAddr(ip) {
			return sema.Errorf(CodeWebhookPrivate, "the host %s is %s, an address of this machine or a private network; a tenant's webhook must be public (the operator may allow it: sema serve webhook add --allow-private)", host, ip)
		}
	}
	return nil
}

// publicAddr reports whether ip is a public unicast address.
func publicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsGlobalUnicast() && !ip.IsPrivate() && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() &&
		!ip.IsMulticast() && !ip.IsUnspecified() && !sharedAddressSpace.Contains(ip)
}

// sharedAddressSpace is carrier-grade NAT (RFC 6598), private in practice.
var sharedAddressSpace = netip.MustParsePrefix("100.64.0.0/10")

// errPrivateDial is a delivery's connection refused because it reached a private address.
var errPrivateDial = errors.New("the webhook's address resolved to this machine or a private network")

// webhookClient is the HTTP client of deliveries: a private address is refused when the
// connection is made, whatever the name resolved to at registration.
func webhookClient(allowPrivate bool) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second}
	if !allowPrivate {
		d.ControlContext = func(_ context.Context, _, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			ip, err := netip.ParseAddr(host)
			if err != nil || !publicAddr(ip) {
				return errPrivateDial
			}
			return nil
		}
	}
	t := &http.Transport{DialContext: d.DialContext, Proxy: nil, TLSHandshakeTimeout: 10 * time.Second,
		ResponseHeaderTimeout: 10 * time.Second, MaxIdleConns: 16, IdleConnTimeout: 30 * time.Second}
	return &http.Client{Transport: t, Timeout: 15 * time.Second,
		// A redirect could lead anywhere: a delivery follows none.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// The API.

// createWebhook is POST /v1/webhooks.
func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request, t *tenant) {
	var body client.Webhook
	if !decode(w, r, &body) {
		return
	}
	if body.ID != "" || body.Secret != "" || !body.CreatedAt.IsZero() {
		writeErr(w, r, http.StatusBadRequest, sema.Errorf(CodeBadRequest, "id, secret and created_at are the service's to choose; send url, events and format"))
		return
	}
	out, err := s.addWebhook(r.Context(), t.name, body, false)
	if err != nil {
		if sema.CodeOf(err) != "" && strings.HasPrefix(sema.CodeOf(err), "webhook.") {
			writeErr(w, r, http.StatusBadRequest, err)
			return
		}
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, out)
}

// listWebhooks is GET /v1/webhooks.
func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request, t *tenant) {
	hooks, err := s.Webhooks(r.Context(), t.name)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"webhooks": hooks})
}

// deleteWebhook is DELETE /v1/webhooks/{id}.
func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request, t *tenant) {
	err := s.RemoveWebhook(r.Context(), t.name, r.PathValue("id"))
	switch {
	case sema.IsCode(err, CodeWebhookNotFound):
		writeErr(w, r, http.StatusNotFound, err)
	case err != nil:
		s.internal(w, r, err)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// listDeliveries is GET /v1/webhooks/{id}/deliveries: the webhook's last 50 deliveries,
// newest first, with their tries and the last error.
func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request, t *tenant) {
	ctx := r.Context()
	id := r.PathValue("id")
	var n int
	if err := queryRow(ctx, s.b.db(), `SELECT COUNT(*) FROM sema_serve_webhooks WHERE id = ? AND tenant = ?`, []any{id, t.name}, &n); err != nil {
		s.internal(w, r, err)
		return
	}
	if n == 0 {
		writeErr(w, r, http.StatusNotFound, sema.Errorf(CodeWebhookNotFound, "the tenant has no webhook %s; `GET /v1/webhooks` lists them", id))
		return
	}
	ds, err := s.deliveriesOf(ctx, id, 50)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	if ds == nil {
		ds = []client.WebhookDelivery{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"deliveries": ds})
}
