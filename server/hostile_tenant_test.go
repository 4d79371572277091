package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/server"
)

// TestHostileTenant is the service's promise to an operator, tried by a tenant that
// wants more than it was given — each item of the issue that asked for tenant
// containment, on SQLite and (with SEMA_TEST_POSTGRES) on Postgres. Every attempt is
// refused by its stable code, or contained: the leg stops at its bound, the connection
// is closed. Where a refusal could be the test's own mistake, a calibration shows the
// same request goes through for a tenant whose policy allows it. Two tenants on one node
// cannot reach each other's work through the API (TestTenantsCannotReachEachOther) nor
// through approved commands (TestTenantsCommandsCannotReachEachOther).
func TestHostileTenant(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		h := newHostile(t, st)
		for _, tc := range []struct {
			item string // the item the attempt belongs to
			name string
			try  func(*testing.T, *hostile)
		}{
			{"policy", "bypassPermissions without the policy allowing it", tryBypass},
			{"models", "a model or provider the operator did not list", tryUnlistedModel},
			{"limits", "more turns than the policy's bound", tryMaxTurns},
			{"limits", "more tokens than the policy's bound", tryMaxTokens},
			{"limits", "more concurrent tasks, submitted at once", func(t *testing.T, _ *hostile) { tryConcurrentTasks(t, st) }},
			{"api", "a field name in another case", tryCaseVariantKeys},
			{"api", "a cwd outside the base or a file", tryRootsOutside},
			{"http", "a slow body, with and without a token", trySlowBody},
			{"http", "more connections than one address may hold", tryConnections},
		} {
			t.Run(tc.item+"/"+tc.name, func(t *testing.T) { tc.try(t, h) })
		}
	})
}

// hostile is one service whose tenants attack it: its API over a plain test server and
// over its own hardened HTTP server (short timeouts, three connections per address),
// and a scripted model whose threads the attacks run.
type hostile struct {
	f      *fixture
	wire   string // the hardened server's address
	root   string // the tenants' bases are directories under it
	opened *openLog
}

// The hardened server's limits: short enough that a slow client is cut off while the
// test waits.
const (
	hostileHeaderTimeout = 400 * time.Millisecond
	hostileReadTimeout   = 1200 * time.Millisecond
	hostileConnsPerIP    = 3
)

// openLog records the model names the service opened a provider for.
type openLog struct {
	mu    sync.Mutex
	names []string
}

func (o *openLog) add(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.names = append(o.names, name)
}

func (o *openLog) list() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.names...)
}

func newHostile(t *testing.T, st store) *hostile {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := scripted.New(scripted.Script{
		Threads: []scripted.Thread{
			{Match: "five reads", Turns: costlyReads(5, 0)},
			{Match: "bounded spender", Turns: costlyReads(5, 7000)},
			{Match: "free spender", Turns: costlyReads(5, 7000)},
			{Match: "a plain task", Turns: []scripted.Turn{{Text: "done"}}},
			{Match: "a bypassing task", Turns: []scripted.Turn{{Text: "done"}}},
		},
	})
	opened := &openLog{}
	f := newFixtureWith(t, st, func(string) []scripted.Turn { return nil }, func(cfg *server.Config) {
		cfg.OpenProvider = func(name string) (model.Provider, string, error) {
			opened.add(name)
			return p, "scripted", nil
		}
	})
	wire := listenHardened(t, f.srv, server.HTTPOptions{
		ReadHeaderTimeout: hostileHeaderTimeout, ReadTimeout: hostileReadTimeout, MaxConnsPerIP: hostileConnsPerIP,
	})
	return &hostile{f: f, wire: wire, root: root, opened: opened}
}

// listenHardened serves srv's API through its own HTTP server with o's limits on a
// loopback port, until the test ends, and returns the address.
func listenHardened(t *testing.T, srv *server.Server, o server.HTTPOptions) string {
	t.Helper()
	hs, err := srv.HTTPServer(o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().String()
}

// costlyReads is a thread of n Reads of a file that does not exist (each an answered
// tool call, so each a turn) and an answer, every response reporting tokens tokens.
func costlyReads(n int, tokens int64) []scripted.Turn {
	var usage *model.Usage
	if tokens > 0 {
		usage = &model.Usage{InputTokens: tokens - 1000, OutputTokens: 1000}
	}
	var turns []scripted.Turn
	for i := range n {
		in, _ := json.Marshal(map[string]string{"file_path": fmt.Sprintf("/nonexistent/sema-hostile/%d", i)})
		turns = append(turns, scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "Read", Input: in}}, Usage: usage})
	}
	return append(turns, scripted.Turn{Text: "done", Usage: usage})
}

// tenant creates tenant name with a base of its own under h.root, policy p and limits,
// and returns its client and its base.
func (h *hostile) tenant(t *testing.T, name string, p server.Policy, limits server.TenantConfig) (*client.Client, string) {
	t.Helper()
	ctx := context.Background()
	base := filepath.Join(h.root, name)
	if err := os.Mkdir(base, 0o755); err != nil {
		t.Fatal(err)
	}
	tok, err := h.f.srv.CreateToken(ctx, name, base, limits)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.f.srv.SetPolicy(ctx, name, p); err != nil {
		t.Fatal(err)
	}
	return client.New(h.f.http.URL, tok), base
}

// refusedWith fails t unless err is the service's answer with status and code.
func refusedWith(t *testing.T, what string, err error, status int, code string) {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) || e.Status != status || e.Code != code {
		t.Errorf("%s: %v; want %d %s", what, err, status, code)
	}
}

// waitTerminal polls task id until it has ended, and returns it.
func waitTerminal(t *testing.T, c *client.Client, id string) *client.Task {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		task, err := c.Task(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if task.Terminal() {
			return task
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s is still %s", id, task.Status)
		}
	}
}

// noSessions fails t if the tenant owns a session: a refused task leaves nothing.
func noSessions(t *testing.T, c *client.Client) {
	t.Helper()
	if ss, err := c.Sessions(context.Background()); err != nil || len(ss) != 0 {
		t.Errorf("refused tasks left sessions behind: %+v (%v)", ss, err)
	}
}

// tryBypass: bypassPermissions, which the default policy does not list, is refused
// before it is queued, in a task and in a message; a policy that lists it lets it run.
func tryBypass(t *testing.T, h *hostile) {
	ctx := context.Background()
	c, base := h.tenant(t, "bypasser", server.Policy{}, server.TenantConfig{})
	_, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "p", Cwd: base, PermissionMode: "bypassPermissions"})
	refusedWith(t, "a task in bypassPermissions", err, http.StatusBadRequest, server.CodePolicyMode)
	noSessions(t, c)

	// Nor in a message into its own session.
	task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "a plain task", Cwd: base})
	if err != nil {
		t.Fatal(err)
	}
	done := waitStatus(t, c, task.TaskID, "completed")
	_, err = c.Message(ctx, done.SessionID, client.Message{Prompt: "p", PermissionMode: "bypassPermissions"})
	refusedWith(t, "a message in bypassPermissions", err, http.StatusBadRequest, server.CodePolicyMode)

	// Calibration: the same request, for a tenant whose policy lists the mode, runs.
	trusted, tbase := h.tenant(t, "bypass-allowed", server.Policy{PermissionModes: []string{"default", "bypassPermissions"}}, server.TenantConfig{})
	task, err = trusted.SubmitTask(ctx, client.TaskSpec{Prompt: "a bypassing task", Cwd: tbase, PermissionMode: "bypassPermissions"})
	if err != nil {
		t.Fatalf("bypassPermissions where the policy lists it: %v", err)
	}
	waitStatus(t, trusted, task.TaskID, "completed")
}

// tryUnlistedModel: a model the operator did not list — another provider's, or the
// scripted provider's, whose name is a server file it would read — is refused before a
// provider is opened, with the same answer whether the named file exists or not.
func tryUnlistedModel(t *testing.T, h *hostile) {
	ctx := context.Background()
	c, base := h.tenant(t, "model-picker", server.Policy{}, server.TenantConfig{})
	existing := filepath.Join(h.root, "server-secret.json")
	if err := os.WriteFile(existing, []byte(`{"turns":[{"text":"the secret"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	answers := map[string]string{}
	for _, m := range []string{"anthropic/claude-opus-4-1", "openai/gpt-4.1", "scripted/" + existing, "scripted/" + existing + ".missing", "scripted//etc/passwd"} {
		_, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "p", Cwd: base, Model: m})
		refusedWith(t, "model "+m, err, http.StatusBadRequest, server.CodePolicyModel)
		if err != nil {
			answers[m] = strings.ReplaceAll(err.Error(), m, "MODEL")
		}
	}
	if a, b := answers["scripted/"+existing], answers["scripted/"+existing+".missing"]; a != b {
		t.Errorf("the answer tells whether a server file exists:\n%s\n%s", a, b)
	}
	for _, name := range h.opened.list() {
		if name != "" {
			t.Errorf("a provider was opened for %q, which no tenant may name", name)
		}
	}
	noSessions(t, c)
}

// tryMaxTurns: a task asking for more turns than the policy's bound is refused; one
// asking for none gets the bound, and its leg stops there though its model wants more.
func tryMaxTurns(t *testing.T, h *hostile) {
	ctx := context.Background()
	c, base := h.tenant(t, "long-runner", server.Policy{MaxTurns: 2}, server.TenantConfig{})
	_, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "p", Cwd: base, MaxTurns: 3})
	refusedWith(t, "max_turns above the bound", err, http.StatusBadRequest, server.CodePolicyMaxTurns)
	noSessions(t, c)
	task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "five reads", Cwd: base, AllowedTools: []string{"Read"}})
	if err != nil {
		t.Fatal(err)
	}
	if done := waitTerminal(t, c, task.TaskID); done.Status != "max_turns" {
		t.Errorf("a six-turn leg under a two-turn bound ended %s, want max_turns: %s", done.Status, done.Result)
	}
}

// tryMaxTokens: a leg whose model spends 7,000 tokens a response stops once it passes
// the policy's 10,000 (budget_exceeded), overshooting by at most the response that
// crossed it; calibration: the same thread for a tenant without the bound spends all
// 42,000.
func tryMaxTokens(t *testing.T, h *hostile) {
	ctx := context.Background()
	const bound, perResponse = 10000, 7000
	bounded, bbase := h.tenant(t, "spender", server.Policy{MaxTokensPerTask: bound}, server.TenantConfig{})
	free, fbase := h.tenant(t, "free-spender", server.Policy{}, server.TenantConfig{})
	task, err := bounded.SubmitTask(ctx, client.TaskSpec{Prompt: "bounded spender", Cwd: bbase, AllowedTools: []string{"Read"}})
	if err != nil {
		t.Fatal(err)
	}
	done := waitTerminal(t, bounded, task.TaskID)
	if spent := spentBy(t, done); done.Status != "budget_exceeded" || spent > bound+perResponse {
		t.Errorf("under a %d-token bound the leg ended %s having spent %d", bound, done.Status, spent)
	}
	task, err = free.SubmitTask(ctx, client.TaskSpec{Prompt: "free spender", Cwd: fbase, AllowedTools: []string{"Read"}})
	if err != nil {
		t.Fatal(err)
	}
	done = waitTerminal(t, free, task.TaskID)
	if spent := spentBy(t, done); done.Status != "completed" || spent != 6*perResponse {
		t.Errorf("calibration: without a bound the leg ended %s having spent %d, want completed and %d", done.Status, spent, 6*perResponse)
	}
}

// tryConcurrentTasks: 24 submissions at the same instant, for a tenant that may have 3
// tasks queued or running, through two processes on Postgres (one on SQLite): exactly 3
// are accepted, every other is 429 tenant.concurrency_limit. Calibration: the same burst
// from a tenant without a limit is accepted whole. (TestConcurrencyLimitHoldsAcrossNodes
// repeats it.)
func tryConcurrentTasks(t *testing.T, st store) {
	nodes := 1
	if st == "postgres" {
		nodes = 2
	}
	const limit, n = 3, 24
	urls, srv, base := queueOnly(t, st, nodes)
	burst := func(tenant string, limits server.TenantConfig) (accepted int, others []string) {
		tok, err := srv.CreateToken(context.Background(), tenant, base, limits)
		if err != nil {
			t.Fatal(err)
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := client.New(urls[i%len(urls)], tok)
				<-start
				_, err := c.SubmitTask(context.Background(), client.TaskSpec{Prompt: "p", Cwd: base})
				var e *client.Error
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					accepted++
				case !errors.As(err, &e) || e.Status != http.StatusTooManyRequests || e.Code != server.CodeConcurrencyLimit:
					others = append(others, fmt.Sprint(err))
				}
			}()
		}
		close(start)
		wg.Wait()
		return accepted, others
	}
	if accepted, others := burst("greedy", server.TenantConfig{MaxConcurrent: limit}); accepted != limit || len(others) > 0 {
		t.Errorf("%d of %d submissions accepted with a limit of %d; other answers %q", accepted, n, limit, others)
	}
	if accepted, others := burst("unlimited", server.TenantConfig{}); accepted != n || len(others) > 0 {
		t.Errorf("calibration: %d of %d accepted without a limit; other answers %q", accepted, n, others)
	}
}

// tryCaseVariantKeys: a key that names a field in another case — the way a mode slipped
// past once — is refused by name, and nothing is queued.
func tryCaseVariantKeys(t *testing.T, h *hostile) {
	c, base := h.tenant(t, "case-bender", server.Policy{}, server.TenantConfig{})
	tok := tokenOf(t, h, "case-bender", base)
	for _, body := range []string{
		`{"prompt":"p","Permission_Mode":"bypassPermissions"}`,
		`{"prompt":"p","PERMISSION_MODE":"plan"}`,
		`{"Prompt":"p","cwd":"` + base + `"}`,
	} {
		status, e := post(t, h.f, tok, "/v1/tasks", body)
		if status != http.StatusBadRequest || e.Code != "request.unknown_field" {
			t.Errorf("POST %s: %d %+v, want 400 request.unknown_field", body, status, e)
		}
	}
	noSessions(t, c)
}

// tokenOf mints another token of an existing tenant (the client hides its own).
func tokenOf(t *testing.T, h *hostile, tenant, base string) string {
	t.Helper()
	tok, err := h.f.srv.CreateToken(context.Background(), tenant, base, server.TenantConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// tryRootsOutside: a cwd outside the tenant's base (another tenant's, through .., the
// root) is refused as outside, one that is a file as not a directory — at submission,
// not in a worker.
func tryRootsOutside(t *testing.T, h *hostile) {
	ctx := context.Background()
	c, base := h.tenant(t, "wanderer", server.Policy{}, server.TenantConfig{})
	_, neighbour := h.tenant(t, "neighbour", server.Policy{}, server.TenantConfig{})
	file := filepath.Join(base, "notes.txt")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cwd, code string
	}{
		{neighbour, "tenant.root_outside_base"},
		{filepath.Join(base, "..", "neighbour"), "tenant.root_outside_base"},
		{"/", "tenant.root_outside_base"},
		{file, "tenant.root_not_directory"},
	} {
		_, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "p", Cwd: tc.cwd})
		refusedWith(t, "cwd "+tc.cwd, err, http.StatusBadRequest, tc.code)
	}
	noSessions(t, c)
}

// trySlowBody: a client that sends its body a byte at a time is cut off — without a
// token it is answered 401 at once and the connection closed, with one it is answered
// 408 serve.request_timeout when the whole-request timeout passes — instead of holding
// the connection as long as it trickles. (TestSlowClientCutOff times each case.)
func trySlowBody(t *testing.T, h *hostile) {
	_, base := h.tenant(t, "trickler", server.Policy{}, server.TenantConfig{})
	tok := tokenOf(t, h, "trickler", base)
	body := strings.Repeat("x", 200)
	for _, tc := range []struct{ auth, status, code string }{
		{"", " 401 ", server.CodeUnauthorized},
		{"Bearer " + tok, " 408 ", server.CodeRequestTimeout},
	} {
		c, err := net.Dial("tcp", h.wire)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		head := "POST /v1/tasks HTTP/1.1\r\nHost: sema\r\nContent-Type: application/json\r\n"
		if tc.auth != "" {
			head += "Authorization: " + tc.auth + "\r\n"
		}
		fmt.Fprintf(c, "%sContent-Length: %d\r\n\r\n", head, len(body))
		go trickle(c, body, 50*time.Millisecond)
		// closedAfter fails the test if the server still holds the connection after the
		// limit: the trickle alone would take 10 s.
		_, _, got := closedAfter(t, c, start, 5*time.Second)
		c.Close()
		if line := strings.SplitN(got, "\r\n", 2)[0]; !strings.Contains(line, tc.status) || !strings.Contains(got, tc.code) {
			t.Errorf("a slow body (token %v): %q, want status%s and %s", tc.auth != "", got, tc.status, tc.code)
		}
	}
}

// tryConnections: one address may hold three connections to the hardened server; the
// fourth is answered 503 serve.too_many_connections and closed.
func tryConnections(t *testing.T, h *hostile) {
	get := func() (net.Conn, string) {
		t.Helper()
		c, err := net.Dial("tcp", h.wire)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprint(c, "GET /healthz HTTP/1.1\r\nHost: sema\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 4096)
		n, _ := c.Read(buf)
		return c, string(buf[:n])
	}
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	// The connections of the cases before are counted until the server has seen them
	// close, which may come a moment after the client has: each of the three is tried
	// until it is served.
	for len(held) < hostileConnsPerIP {
		deadline := time.Now().Add(5 * time.Second)
		c, got := get()
		for !strings.HasPrefix(got, "HTTP/1.1 200 ") && time.Now().Before(deadline) {
			c.Close()
			time.Sleep(20 * time.Millisecond)
			c, got = get()
		}
		held = append(held, c)
		if !strings.HasPrefix(got, "HTTP/1.1 200 ") {
			t.Fatalf("connection %d of %d: %q", len(held), hostileConnsPerIP, got)
		}
	}
	extra, got := get()
	held = append(held, extra)
	if !strings.HasPrefix(got, "HTTP/1.1 503 ") || !strings.Contains(got, server.CodeTooManyConnections) {
		t.Fatalf("connection %d, past the cap of %d: %q, want 503 %s", len(held), hostileConnsPerIP, got, server.CodeTooManyConnections)
	}
}
