// Package client is the Go client of `sema serve`'s API (its OpenAPI document is
// server/openapi.json, served at /v1/openapi.json). Its types are the API's JSON.
//
//	c := client.New("http://127.0.0.1:7777", token)
//	task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "fix the failing test", Cwd: dir})
//	for ev, err := range c.Events(ctx, task.TaskID, 0) { … }
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client calls one service with one bearer token.
type Client struct {
	base  string
	token string
	// HTTP is the client requests go through (http.DefaultClient when nil).
	HTTP *http.Client
	// Backoff bounds an event stream's reconnections (see Events).
	Backoff Backoff
}

// New returns a client of the service at base ("http://127.0.0.1:7777") acting with
// token.
func New(base, token string) *Client {
	return &Client{base: strings.TrimRight(base, "/"), token: token}
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

// do sends one request and decodes a 2xx answer into out; any other answer is an
// *Error with the service's code.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return errorOf(resp)
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func errorOf(resp *http.Response) error {
	e := &Error{Status: resp.StatusCode}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if json.Unmarshal(b, e) != nil || e.Code == "" {
		e.Code, e.Message = "http."+strconv.Itoa(resp.StatusCode), strings.TrimSpace(string(b))
	}
	return e
}

// SubmitTask submits a task (POST /v1/tasks) and returns its ids and status.
func (c *Client) SubmitTask(ctx context.Context, spec TaskSpec) (*Task, error) {
	var t Task
	return &t, c.do(ctx, http.MethodPost, "/v1/tasks", spec, &t)
}

// Task returns a task's status and, once a leg ended, its result (GET /v1/tasks/{id}).
func (c *Client) Task(ctx context.Context, id string) (*Task, error) {
	var t Task
	return &t, c.do(ctx, http.MethodGet, "/v1/tasks/"+url.PathEscape(id), nil, &t)
}

// Cancel asks for a task's cancellation (POST /v1/tasks/{id}/cancel).
func (c *Client) Cancel(ctx context.Context, id string) (*Task, error) {
	var t Task
	return &t, c.do(ctx, http.MethodPost, "/v1/tasks/"+url.PathEscape(id)+"/cancel", nil, &t)
}

// ModeChange is the body and the answer of POST /v1/tasks/{id}/mode.
type ModeChange struct {
	// PermissionMode is the mode asked for; in the answer, the mode in force when the
	// change was applied at once (Applied), else the word stored for the leg.
	PermissionMode string `json:"permission_mode"`
	// Applied reports that the running leg took the change before the answer; false
	// when another process runs it, or no leg runs yet (queued, parked): the leg that
	// runs applies it, and its stream says so (a serve.mode_changed notice).
	Applied bool `json:"applied,omitempty"`
}

// SetMode changes the permission mode of a task that has not ended: of its running leg
// and of its later legs. A word the tenant's policy does not allow is an *Error with
// tenant.policy_mode; an ended task, one with task.conflict.
func (c *Client) SetMode(ctx context.Context, id, mode string) (*ModeChange, error) {
	var out ModeChange
	return &out, c.do(ctx, http.MethodPost, "/v1/tasks/"+url.PathEscape(id)+"/mode", ModeChange{PermissionMode: mode}, &out)
}

// Checkpoints lists the tenant's checkpoints with status open, answered or all.
func (c *Client) Checkpoints(ctx context.Context, status string) ([]Checkpoint, error) {
	var out struct {
		Checkpoints []Checkpoint `json:"checkpoints"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/checkpoints?status="+url.QueryEscape(status), nil, &out)
	return out.Checkpoints, err
}

// Decide answers a checkpoint, once (POST /v1/checkpoints/{id}/decision); a second
// decision is an *Error with the code checkpoint.already_claimed.
func (c *Client) Decide(ctx context.Context, checkpointID string, d Decision) (*Task, error) {
	var t Task
	return &t, c.do(ctx, http.MethodPost, "/v1/checkpoints/"+url.PathEscape(checkpointID)+"/decision", d, &t)
}

// Sessions lists the tenant's sessions, newest first.
func (c *Client) Sessions(ctx context.Context) ([]Session, error) {
	var out struct {
		Sessions []Session `json:"sessions"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/sessions", nil, &out)
	return out.Sessions, err
}

// Session returns a session and the page of its transcript from offset.
func (c *Client) Session(ctx context.Context, id string, offset int) (*Transcript, error) {
	var t Transcript
	return &t, c.do(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id)+"?offset="+strconv.Itoa(offset), nil, &t)
}

// Message continues a session with a new prompt, as a new task.
func (c *Client) Message(ctx context.Context, sessionID string, m Message) (*Task, error) {
	var t Task
	return &t, c.do(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(sessionID)+"/messages", m, &t)
}

// Fork continues a session in a new one, as a new task.
func (c *Client) Fork(ctx context.Context, sessionID string, f Fork) (*Task, error) {
	var t Task
	return &t, c.do(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(sessionID)+"/fork", f, &t)
}

// Rewind rewinds a session's files and/or conversation; the answer is the rewind's
// ledger and head, as `sema rewind --output-format json` prints them.
func (c *Client) Rewind(ctx context.Context, sessionID string, r Rewind) (json.RawMessage, error) {
	var out json.RawMessage
	return out, c.do(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(sessionID)+"/rewind", r, &out)
}

// Webhook is an address the service calls when one of the tenant's tasks needs a person
// and when one ends (POST /v1/webhooks).
type Webhook struct {
	// ID names the webhook; the service chooses it.
	ID string `json:"id,omitempty"`
	// URL is the http(s) address called, with a POST of the event.
	URL string `json:"url"`
	// Events are the events it is called for: task.needs_person, task.ended (empty:
	// both).
	Events []string `json:"events,omitempty"`
	// Format is json (the event) or slack (a {"text"} message); empty: json.
	Format string `json:"format,omitempty"`
	// Secret signs each body (X-Sema-Signature); only the answer to the webhook's
	// creation carries it.
	Secret string `json:"secret,omitempty"`
	// CreatedAt is when it was registered.
	CreatedAt time.Time `json:"created_at,omitzero"`
}

// WebhookDelivery is one call of a webhook for one event, over its tries.
type WebhookDelivery struct {
	// ID names the delivery: X-Sema-Delivery on each of its tries.
	ID string `json:"id"`
	// Event is the event it announces.
	Event string `json:"event"`
	// Status is pending (tried again later), delivered or failed (out of tries).
	Status string `json:"status"`
	// Attempts counts its tries so far.
	Attempts int `json:"attempts"`
	// LastError is why the last try failed; "" once delivered.
	LastError string `json:"last_error,omitempty"`
	// CreatedAt is when the task's status it announces changed.
	CreatedAt time.Time `json:"created_at"`
}

// AddWebhook registers a webhook; the answer carries its secret, once.
func (c *Client) AddWebhook(ctx context.Context, w Webhook) (*Webhook, error) {
	var out Webhook
	return &out, c.do(ctx, http.MethodPost, "/v1/webhooks", w, &out)
}

// Webhooks lists the tenant's webhooks, without their secrets.
func (c *Client) Webhooks(ctx context.Context) ([]Webhook, error) {
	var out struct {
		Webhooks []Webhook `json:"webhooks"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/webhooks", nil, &out)
	return out.Webhooks, err
}

// RemoveWebhook deletes a webhook; its pending deliveries are not sent.
func (c *Client) RemoveWebhook(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/v1/webhooks/"+url.PathEscape(id), nil, nil)
}

// WebhookDeliveries lists a webhook's last deliveries, newest first.
func (c *Client) WebhookDeliveries(ctx context.Context, id string) ([]WebhookDelivery, error) {
	var out struct {
		Deliveries []WebhookDelivery `json:"deliveries"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/webhooks/"+url.PathEscape(id)+"/deliveries", nil, &out)
	return out.Deliveries, err
}
