package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/server"
)

// receiver is a webhook's receiving end: it records every call and fails the first
// failFirst tries of each delivery with a 500.
type receiver struct {
	failFirst int
	mu        sync.Mutex
	calls     []call
	tries     map[string]int
}

type call struct {
	header http.Header
	body   []byte
	status int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.tries == nil {
		rc.tries = map[string]int{}
	}
	id := r.Header.Get(server.HeaderDelivery)
	rc.tries[id]++
	status := http.StatusNoContent
	if rc.tries[id] <= rc.failFirst {
		status = http.StatusInternalServerError
	}
	rc.calls = append(rc.calls, call{header: r.Header.Clone(), body: body, status: status})
	w.WriteHeader(status)
}

// delivered returns the bodies of the calls answered 2xx for event.
func (rc *receiver) delivered(event string) []call {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []call
	for _, c := range rc.calls {
		if c.status/100 == 2 && c.header.Get(server.HeaderEvent) == event {
			out = append(out, c)
		}
	}
	return out
}

func waitDelivered(t *testing.T, rc *receiver, event string) call {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if got := rc.delivered(event); len(got) > 0 {
			return got[0]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %s delivery in 20s", event)
	return call{}
}

// TestWebhooksAreSignedAndRetried: a task that parks calls the tenant's webhook with the
// exact action, signed with the webhook's secret; a receiver that fails twice gets the
// same delivery a third time; the decision's end calls it again (task.ended). Another
// tenant sees none of it.
func TestWebhooksAreSignedAndRetried(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		f := newFixtureWith(t, st, func(base string) []scripted.Turn {
			return []scripted.Turn{{ToolCalls: []scripted.ToolCall{writeCall(filepath.Join(base, "out.txt"), "hi\n")}}, {Text: "wrote it"}}
		}, func(c *server.Config) {
			c.WebhooksPrivate, c.WebhookBackoff, c.PublicURL = true, 20*time.Millisecond, "https://sema.example.com/"
		})
		rc := &receiver{failFirst: 2}
		hs := httptest.NewServer(rc)
		defer hs.Close()
		c := f.client(t, "acme", f.base)
		ctx := context.Background()
		hook, err := c.AddWebhook(ctx, client.Webhook{URL: hs.URL + "/hook"})
		if err != nil || hook.Secret == "" || hook.Format != "json" || len(hook.Events) != 2 {
			t.Fatalf("AddWebhook: %+v, %v", hook, err)
		}
		task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "write the file\nplease", Cwd: f.base})
		if err != nil {
			t.Fatal(err)
		}
		got := waitDelivered(t, rc, server.EventNeedsPerson)
		ts := got.header.Get(server.HeaderTimestamp)
		if sig := got.header.Get(server.HeaderSignature); sig != server.Sign(hook.Secret, ts, got.body) || sig == server.Sign("whsec_other", ts, got.body) {
			t.Errorf("signature %q does not check with the webhook's secret", sig)
		}
		var ev server.WebhookEvent
		if err := json.Unmarshal(got.body, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Task.ID != task.TaskID || ev.Task.Prompt != "write the file" || ev.Checkpoint == nil || ev.Checkpoint.Tool != "Write" ||
			ev.ID != got.header.Get(server.HeaderDelivery) || ev.Tenant != "acme" {
			t.Fatalf("the needs_person event: %s", got.body)
		}
		var input struct {
			FilePath string `json:"file_path"`
		}
		json.Unmarshal(ev.Checkpoint.Input, &input)
		if input.FilePath != filepath.Join(f.base, "out.txt") {
			t.Errorf("the event's action names %q, want the parked write's path", input.FilePath)
		}
		// The call carries a single-use link to the question, on the service's public
		// address; it opens the question, and the decision made another way revokes it.
		token, ok := strings.CutPrefix(ev.ApproveURL, "https://sema.example.com/approve/")
		if !ok || token == "" {
			t.Fatalf("approve_url %q is not a link on the public address", ev.ApproveURL)
		}
		if info, err := c.OpenLink(ctx, token); err != nil || info.State != "open" || info.Tool != "Write" || info.TaskID != task.TaskID {
			t.Fatalf("opening the call's link: %+v, %v", info, err)
		}
		rc.mu.Lock()
		tries := rc.tries[ev.ID]
		rc.mu.Unlock()
		if tries != 3 {
			t.Errorf("the delivery was tried %d times; want 2 failures then the delivery", tries)
		}
		if _, err := c.Decide(ctx, ev.Checkpoint.ID, client.Decision{Decision: "allow"}); err != nil {
			t.Fatal(err)
		}
		if info, err := c.OpenLink(ctx, token); err != nil || info.State != "revoked" {
			t.Errorf("the call's link after the question was answered another way: %+v, %v", info, err)
		}
		ended := waitDelivered(t, rc, server.EventTaskEnded)
		var end server.WebhookEvent
		json.Unmarshal(ended.body, &end)
		if end.Task.Status != "completed" || end.Task.Result != "wrote it" || end.Checkpoint != nil || end.ApproveURL != "" {
			t.Errorf("the task.ended event: %s", ended.body)
		}
		// The receiver answered before the outcome was recorded: wait for the record.
		var ds []client.WebhookDelivery
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			ds, err = c.WebhookDeliveries(ctx, hook.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) == 2 && ds[0].Status != "pending" && ds[1].Status != "pending" || time.Now().After(deadline) {
				break
			}
		}
		if len(ds) != 2 {
			t.Fatalf("deliveries: %+v", ds)
		}
		for _, d := range ds {
			if d.Status != "delivered" || d.Attempts != 3 {
				t.Errorf("delivery %+v; want delivered on the third try", d)
			}
		}
		other := f.client(t, "other", f.base)
		if hs, err := other.Webhooks(ctx); err != nil || len(hs) != 0 {
			t.Errorf("another tenant lists %+v, %v", hs, err)
		}
		if err := other.RemoveWebhook(ctx, hook.ID); codeOf(err) != server.CodeWebhookNotFound {
			t.Errorf("another tenant's removal: %v", err)
		}
		if _, err := other.WebhookDeliveries(ctx, hook.ID); codeOf(err) != server.CodeWebhookNotFound {
			t.Errorf("another tenant's deliveries: %v", err)
		}
		if err := c.RemoveWebhook(ctx, hook.ID); err != nil {
			t.Fatal(err)
		}
		if hs, err := c.Webhooks(ctx); err != nil || len(hs) != 0 {
			t.Errorf("after removal: %+v, %v", hs, err)
		}
	})
}

// A webhook is refused by name: not http(s), credentials in the address, an address of
// this machine or a private network (a tenant may not make the service call those), an
// event or format the service does not have, the eleventh one.
func TestWebhookRefusals(t *testing.T) {
	f := newFixture(t, "sqlite", noTurns)
	c := f.client(t, "acme", f.base)
	ctx := context.Background()
	for _, tc := range []struct {
		hook client.Webhook
		code string
	}{
		{client.Webhook{URL: "ftp://example.com/x"}, server.CodeWebhookURL},
		{client.Webhook{URL: "/relative"}, server.CodeWebhookURL},
		{client.Webhook{URL: "https://user:pw@example.com/x"}, server.CodeWebhookURL},
		{client.Webhook{URL: "http://127.0.0.1:9/x"}, server.CodeWebhookPrivate},
		{client.Webhook{URL: "http://localhost:9/x"}, server.CodeWebhookPrivate},
		{client.Webhook{URL: "http://10.1.2.3/x"}, server.CodeWebhookPrivate},
		{client.Webhook{URL: "http://169.254.169.254/latest/meta-data"}, server.CodeWebhookPrivate},
		{client.Webhook{URL: "http://[::1]:9/x"}, server.CodeWebhookPrivate},
		{client.Webhook{URL: "http://[::ffff:127.0.0.1]:9/x"}, server.CodeWebhookPrivate},
		{client.Webhook{URL: "http://100.64.0.1/x"}, server.CodeWebhookPrivate},
		{client.Webhook{URL: "https://203.0.113.7/x", Events: []string{"task.started"}}, server.CodeWebhookEvent},
		{client.Webhook{URL: "https://203.0.113.7/x", Events: []string{"task.ended", "task.ended"}}, server.CodeWebhookEvent},
		{client.Webhook{URL: "https://203.0.113.7/x", Format: "xml"}, server.CodeWebhookFormat},
		{client.Webhook{URL: "https://203.0.113.7/x", Secret: "mine"}, "request.invalid"},
	} {
		if _, err := c.AddWebhook(ctx, tc.hook); codeOf(err) != tc.code {
			t.Errorf("%+v: %v; want %s", tc.hook, err, tc.code)
		}
	}
	for i := range 10 {
		if _, err := c.AddWebhook(ctx, client.Webhook{URL: "https://203.0.113.7/x", Format: "slack"}); err != nil {
			t.Fatalf("webhook %d: %v", i+1, err)
		}
	}
	if _, err := c.AddWebhook(ctx, client.Webhook{URL: "https://203.0.113.7/x"}); codeOf(err) != server.CodeWebhookLimit {
		t.Errorf("the eleventh webhook: %v", err)
	}
}
