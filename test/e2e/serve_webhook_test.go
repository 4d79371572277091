package e2e

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
	"github.com/sema-agent/sema/model/anthropic/anthropictest"
	"github.com/sema-agent/sema/server"
)

// TestServeWebhook: the operator registers a webhook on this machine for a tenant with
// `sema serve webhook add --allow-private` (a tenant could not: refused by name without
// the flag); a task of the tenant that parks calls it, signed with the secret the add
// printed; `webhook list` shows it without the secret, and `webhook remove` removes it.
func TestServeWebhook(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	srv := anthropictest.NewServer(t,
		anthropictest.Turn{ToolCalls: []anthropictest.ToolCall{{Name: "Bash", Input: `{"command":"touch ran"}`}}},
		anthropictest.Turn{Text: "done"},
	)
	env := append(anthropicEnv(srv), "SEMA_HOME="+t.TempDir())
	tok := serveToken(t, env, "acme", base)
	var mu sync.Mutex
	var got []*http.Request
	var bodies [][]byte
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, bodies = append(got, r), append(bodies, b)
		mu.Unlock()
	}))
	defer rc.Close()
	dir := t.TempDir()
	if r := sema(t, dir, env, "", "serve", "webhook", "add", "--tenant", "acme", "--url", rc.URL); r.code != 2 || !strings.Contains(r.stderr, server.CodeWebhookPrivate) {
		t.Fatalf("a webhook on this machine without --allow-private: exit %d\n%s", r.code, r.stderr)
	}
	r := sema(t, dir, env, "", "serve", "webhook", "add", "--tenant", "acme", "--url", rc.URL, "--allow-private", "--event", "task.needs_person")
	var hook client.Webhook
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &hook) != nil || hook.Secret == "" {
		t.Fatalf("webhook add: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	p := startServe(t, env, "--model", "anthropic/claude-sonnet-4-5")
	c := client.New(p.url, tok)
	task, err := c.SubmitTask(context.Background(), client.TaskSpec{Prompt: "touch it", Cwd: base})
	if err != nil {
		t.Fatal(err)
	}
	waitTask(t, c, task.TaskID, client.StatusAwaitingApproval, 30*time.Second)
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the webhook was not called in 20s:\n%s", p.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	req, body := got[0], bodies[0]
	mu.Unlock()
	if req.Header.Get(server.HeaderEvent) != server.EventNeedsPerson ||
		req.Header.Get(server.HeaderSignature) != server.Sign(hook.Secret, req.Header.Get(server.HeaderTimestamp), body) ||
		!strings.Contains(string(body), `"touch ran"`) {
		t.Fatalf("the call: %v\n%s", req.Header, body)
	}
	r = sema(t, dir, env, "", "serve", "webhook", "list", "--tenant", "acme")
	if r.code != 0 || !strings.Contains(r.stdout, hook.ID) || strings.Contains(r.stdout, hook.Secret) {
		t.Fatalf("webhook list: exit %d\n%s", r.code, r.stdout)
	}
	if r := sema(t, dir, env, "", "serve", "webhook", "remove", "--tenant", "acme", hook.ID); r.code != 0 {
		t.Fatalf("webhook remove: exit %d\n%s", r.code, r.stderr)
	}
	if r := sema(t, dir, env, "", "serve", "webhook", "remove", "--tenant", "acme", hook.ID); r.code != 2 || !strings.Contains(r.stderr, server.CodeWebhookNotFound) {
		t.Fatalf("removing it twice: exit %d\n%s", r.code, r.stderr)
	}
}
