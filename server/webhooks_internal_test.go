package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sema-agent/sema/client"
)

// A delivery's connection to an address of this machine is refused when it is made,
// whatever the name resolved to when the webhook was registered (a name rebound to
// 127.0.0.1 later). Calibrated: the client that allows private addresses reaches the
// same receiver.
func TestDeliveryRefusesAPrivateAddressAtConnect(t *testing.T) {
	hits := 0
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	defer hs.Close()
	d := &deliverer{s: &Server{cfg: Config{}}}
	err := d.call(context.Background(), webhookClient(false), hs.URL, "whsec_x", "d1", EventTaskEnded, []byte(`{}`))
	if !errors.Is(err, errPrivateDial) || hits != 0 {
		t.Fatalf("the public client reached 127.0.0.1: %v, %d calls", err, hits)
	}
	if err := d.call(context.Background(), webhookClient(true), hs.URL, "whsec_x", "d1", EventTaskEnded, []byte(`{}`)); err != nil || hits != 1 {
		t.Fatalf("the private-allowed client: %v, %d calls", err, hits)
	}
}

// A delivery follows no redirect: a 3xx is a failed try, not a call elsewhere.
func TestDeliveryFollowsNoRedirect(t *testing.T) {
	target := 0
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { target++ }))
	defer elsewhere.Close()
	hs := httptest.NewServer(http.RedirectHandler(elsewhere.URL, http.StatusTemporaryRedirect))
	defer hs.Close()
	d := &deliverer{s: &Server{cfg: Config{}}}
	err := d.call(context.Background(), webhookClient(true), hs.URL, "whsec_x", "d1", EventTaskEnded, []byte(`{}`))
	if err == nil || target != 0 {
		t.Fatalf("a redirect: %v, %d calls elsewhere", err, target)
	}
}

// The slack form is one {"text"} line naming the task, the tool and the command.
func TestSlackBody(t *testing.T) {
	ev := WebhookEvent{Event: EventNeedsPerson, Tenant: "acme", At: time.Now(),
		Task:       WebhookTask{ID: "t1", Prompt: "run the tests"},
		Checkpoint: &WebhookCheckpoint{ID: "cp1", Tool: "Bash", Input: json.RawMessage(`{"command":"go test ./...\nrm -rf x"}`)}}
	b, err := deliveryBody(ev, "slack")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]string
	if json.Unmarshal(b, &m) != nil || len(m) != 1 || !strings.Contains(m["text"], "needs you: Bash `go test ./...`") || !strings.Contains(m["text"], "cp1") {
		t.Errorf("slack body %s", b)
	}
}

// The backoff doubles from the base and stops at ten minutes.
func TestDeliveryBackoff(t *testing.T) {
	d := &deliverer{s: &Server{cfg: Config{WebhookBackoff: time.Second}}}
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 4: 8 * time.Second, 30: 10 * time.Minute} {
		if got := d.backoff(n); got != want {
			t.Errorf("backoff(%d) = %v, want %v", n, got, want)
		}
	}
}

func FuzzWebhookURL(f *testing.F) {
	for _, s := range []string{"https://example.com/x", "http://127.0.0.1/", "ftp://x", "http://[::1]/", "https://u:p@h/", "http://h/#f", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		w := webhookFor(raw)
		err := checkWebhook(context.Background(), &w, true)
		if u := strings.ToLower(w.URL); err == nil && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			t.Errorf("%q was taken", raw)
		}
	})
}

func webhookFor(raw string) client.Webhook { return client.Webhook{URL: raw} }

// The slack form links the approval link when the call has one.
func TestSlackBodyLinksTheApproval(t *testing.T) {
	ev := WebhookEvent{Event: EventNeedsPerson, Tenant: "acme", Task: WebhookTask{ID: "t1"}, ApproveURL: "https://sema.example.com/approve/tok",
		Checkpoint: &WebhookCheckpoint{ID: "cp1", Tool: "Write", Input: json.RawMessage(`{"file_path":"a.txt"}`)}}
	b, _ := deliveryBody(ev, "slack")
	if !strings.Contains(string(b), "<https://sema.example.com/approve/tok|approve or deny>") || !strings.Contains(string(b), "`a.txt`") {
		t.Errorf("slack body %s", b)
	}
}
