package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/pricing"
	"github.com/sema-agent/sema/server"
)

// svc is a real service on SQLite with a scripted model, its console included.
type svc struct {
	srv  *server.Server
	http *httptest.Server
	base string
	logs *bytes.Buffer
	mu   *sync.Mutex
}

type lockedBuffer struct {
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (b lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func service(t *testing.T, script func(base string) []scripted.Turn) *svc {
	t.Helper()
	return serviceWith(t, script, nil)
}

// serviceWith is service with tune changing the service's config before it starts.
func serviceWith(t *testing.T, script func(base string) []scripted.Turn, tune func(*server.Config)) *svc {
	t.Helper()
	ctx := context.Background()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := scripted.New(scripted.Script{Turns: script(base)})
	s := &svc{base: base, logs: &bytes.Buffer{}, mu: &sync.Mutex{}}
	cfg := server.Config{Home: t.TempDir(), Poll: 20 * time.Millisecond,
		Logger:       slog.New(slog.NewTextHandler(lockedBuffer{s.mu, s.logs}, nil)),
		OpenProvider: func(string) (model.Provider, string, error) { return p, "scripted", nil }}
	if tune != nil {
		tune(&cfg)
	}
	srv, err := server.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	s.srv = srv
	s.http = httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		s.http.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		srv.Close()
	})
	return s
}

func (s *svc) token(t *testing.T, tenant string) string {
	t.Helper()
	tok, err := s.srv.CreateToken(context.Background(), tenant, s.base, server.TenantConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (s *svc) logText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.String()
}

// browser is a cookie-keeping client that does not follow redirects, so each answer
// is seen as the browser gets it; its POSTs say they come from the console's origin,
// as a browser's same-origin form does.
type browser struct {
	t    *testing.T
	c    *http.Client
	base string
}

func newBrowser(t *testing.T, s *svc) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: s.http.URL, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browser) get(path string) (*http.Response, string) {
	b.t.Helper()
	resp, err := b.c.Get(b.base + path)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func (b *browser) post(path string, form url.Values, header map[string]string) (*http.Response, string) {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("Origin", b.base)
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF field in the page:\n%s", page)
	}
	return m[1]
}

// signIn signs b in with token and returns the home page.
func (b *browser) signIn(token string) string {
	b.t.Helper()
	_, page := b.get("/signin")
	resp, body := b.post("/signin", url.Values{"csrf": {csrfOf(b.t, page)}, "token": {token}}, nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		b.t.Fatalf("sign-in: %d %s", resp.StatusCode, body)
	}
	_, home := b.get("/")
	return home
}

func writeTurn(path, content string) scripted.Turn {
	in, _ := json.Marshal(map[string]string{"file_path": path, "content": content})
	return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "Write", Input: in}}}
}

func parkedWrite(base string) []scripted.Turn {
	return []scripted.Turn{writeTurn(filepath.Join(base, "out.txt"), "approved <b>\n"), {Text: "wrote it"}}
}

func waitStatus(t *testing.T, c *client.Client, id, want string) *client.Task {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		task, err := c.Task(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if task.Status == want {
			return task
		}
		if time.Now().After(deadline) {
			t.Fatalf("task is %s, want %s", task.Status, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestSignInRefusesAWrongTokenWithAMessage(t *testing.T) {
	s := service(t, parkedWrite)
	b := newBrowser(t, s)
	resp, _ := b.get("/")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/signin" {
		t.Fatalf("signed out home: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	_, page := b.get("/signin")
	for _, tok := range []string{"sema_wrong", "nonsense", ""} {
		resp, body := b.post("/signin", url.Values{"csrf": {csrfOf(t, page)}, "token": {tok}}, nil)
		if resp.StatusCode/100 != 4 || !strings.Contains(body, `role="alert"`) || resp.Header.Get("Set-Cookie") != "" && strings.Contains(resp.Header.Get("Set-Cookie"), "sema_console=") {
			t.Fatalf("token %q: %d, cookie %q\n%s", tok, resp.StatusCode, resp.Header.Get("Set-Cookie"), body)
		}
		if tok != "" && !strings.Contains(body, "That token was not accepted") {
			t.Fatalf("token %q: no message:\n%s", tok, body)
		}
	}
}

func TestSessionCookieIsSealedAndFlagged(t *testing.T) {
	s := service(t, parkedWrite)
	tok := s.token(t, "acme")
	b := newBrowser(t, s)
	_, page := b.get("/signin")
	resp, _ := b.post("/signin", url.Values{"csrf": {csrfOf(t, page)}, "token": {tok}}, nil)
	var ck *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "sema_console" {
			ck = c
		}
	}
	if ck == nil {
		t.Fatalf("no session cookie: %v", resp.Header["Set-Cookie"])
	}
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Secure {
		t.Fatalf("cookie flags (plain HTTP, so not Secure): %+v", ck)
	}
	secret := strings.TrimPrefix(tok, "sema_")
	if strings.Contains(ck.Value, secret) || strings.Contains(ck.Value, secret[:16]) {
		t.Fatal("the cookie holds the token in clear")
	}
	_, home := b.get("/")
	if !strings.Contains(home, "Needs you") || strings.Contains(home, secret) {
		t.Fatal("the page holds the token")
	}
	if strings.Contains(s.logText(), secret) {
		t.Fatal("the logs hold the token")
	}
	// A cookie changed by one byte opens nothing.
	bad := &http.Cookie{Name: "sema_console", Value: ck.Value[:len(ck.Value)-2] + "AA"}
	req, _ := http.NewRequest(http.MethodGet, s.http.URL+"/", nil)
	req.AddCookie(bad)
	r2, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != http.StatusSeeOther {
		t.Fatalf("a forged cookie: %d", r2.StatusCode)
	}
}

func TestSecurityHeadersOnEveryPage(t *testing.T) {
	s := service(t, parkedWrite)
	b := newBrowser(t, s)
	if resp, _ := b.get("/static/"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("/static/ lists the files: %d", resp.StatusCode)
	}
	for _, path := range []string{"/signin", "/approve/nope", "/nowhere", "/static/app.js"} {
		resp, _ := b.get(path)
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("%s: CSP %q", path, csp)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: headers %v", path, resp.Header)
		}
	}
	// No page has inline script: every <script> names a file.
	_, page := b.get("/signin")
	if regexp.MustCompile(`<script>|<script [^>]*>[^<]`).MatchString(page) || strings.Contains(page, " on") && regexp.MustCompile(`\son[a-z]+=`).MatchString(page) {
		t.Fatalf("inline script in the page:\n%s", page)
	}
	// The API's unknown paths still answer the API's 404 JSON.
	resp, body := b.get("/v1/nope")
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, `"request.not_found"`) {
		t.Fatalf("/v1/nope: %d %s", resp.StatusCode, body)
	}
}

func TestCrossSitePostsAreRefused(t *testing.T) {
	s := service(t, parkedWrite)
	tok := s.token(t, "acme")
	b := newBrowser(t, s)
	home := b.signIn(tok)
	csrf := csrfOf(t, home)
	form := url.Values{"csrf": {csrf}, "prompt": {"cross-site"}, "mode": {"default"}}
	for name, h := range map[string]map[string]string{
		"sec-fetch-site": {"Sec-Fetch-Site": "cross-site", "Origin": ""},
		"origin":         {"Sec-Fetch-Site": "", "Origin": "https://evil.example"},
	} {
		resp, body := b.post("/tasks", form, h)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "another site") {
			t.Fatalf("%s: %d\n%s", name, resp.StatusCode, body)
		}
	}
	// Same origin with a wrong or missing CSRF token: refused too.
	other := "x" + csrf[1:] // another token: its first character changed
	if csrf[0] == 'x' {
		other = "y" + csrf[1:]
	}
	for _, bad := range []string{"", other} {
		resp, _ := b.post("/tasks", url.Values{"csrf": {bad}, "prompt": {"no token"}, "mode": {"default"}}, nil)
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("csrf %q: %d", bad, resp.StatusCode)
		}
	}
	list, err := client.New(s.http.URL, tok).Tasks(context.Background(), client.TaskFilter{})
	if err != nil || len(list.Tasks) != 0 {
		t.Fatalf("a refused post submitted a task: %+v, %v", list, err)
	}
	// The right token submits.
	resp, body := b.post("/tasks", form, nil)
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/tasks/") {
		t.Fatalf("submit: %d %s", resp.StatusCode, body)
	}
}

func TestAnotherTenantSeesNothing(t *testing.T) {
	s := service(t, parkedWrite)
	acme, other := s.token(t, "acme"), s.token(t, "other")
	c := client.New(s.http.URL, acme)
	task, err := c.SubmitTask(context.Background(), client.TaskSpec{Prompt: "acme's secret task\nline two"})
	if err != nil {
		t.Fatal(err)
	}
	parked := waitStatus(t, c, task.TaskID, client.StatusAwaitingApproval)
	a := newBrowser(t, s)
	if home := a.signIn(acme); !strings.Contains(home, "acme&#39;s secret task") || !strings.Contains(home, "/tasks/"+task.TaskID) {
		t.Fatalf("acme's home lacks its task:\n%s", home)
	}
	b := newBrowser(t, s)
	home := b.signIn(other)
	if strings.Contains(home, "secret task") || strings.Contains(home, task.TaskID) {
		t.Fatal("another tenant's home shows acme's task")
	}
	for _, path := range []string{"/api/tasks", "/tasks/" + task.TaskID, "/tasks/" + task.TaskID + "/panel", "/api/tasks/" + task.TaskID, "/tasks/" + task.TaskID + "/events"} {
		resp, body := b.get(path)
		if strings.Contains(body, "secret task") || strings.Contains(body, "out.txt") || resp.StatusCode == http.StatusOK && path != "/api/tasks" {
			t.Fatalf("%s for another tenant: %d\n%s", path, resp.StatusCode, body)
		}
	}
	page := csrfOf(t, home)
	resp, _ := b.post("/tasks/"+task.TaskID+"/decision", url.Values{"csrf": {page}, "checkpoint": {parked.CheckpointID}, "decision": {"allow"}}, nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("another tenant's decision: %d", resp.StatusCode)
	}
	if got := waitStatus(t, c, task.TaskID, client.StatusAwaitingApproval); got.CheckpointID != parked.CheckpointID {
		t.Fatalf("the question moved: %+v", got)
	}
}

func TestTaskPageShowsTheActionAndDecidesOnce(t *testing.T) {
	s := service(t, parkedWrite)
	tok := s.token(t, "acme")
	c := client.New(s.http.URL, tok)
	task, err := c.SubmitTask(context.Background(), client.TaskSpec{Prompt: "write the file"})
	if err != nil {
		t.Fatal(err)
	}
	parked := waitStatus(t, c, task.TaskID, client.StatusAwaitingApproval)
	b := newBrowser(t, s)
	home := b.signIn(tok)
	if !strings.Contains(home, `id="g-needs"`) || !regexp.MustCompile(`(?s)id="g-needs".*/tasks/`+task.TaskID+`.*id="g-working"`).MatchString(home) {
		t.Fatalf("the parked task is not under Needs you:\n%s", home)
	}
	_, page := b.get("/tasks/" + task.TaskID)
	target := filepath.Join(s.base, "out.txt")
	if !strings.Contains(page, "Write <code class=\"path\">"+target+"</code>") || !strings.Contains(page, "approved &lt;b&gt;") || !strings.Contains(page, `value="allow"`) {
		t.Fatalf("the task page lacks the action:\n%s", page)
	}
	csrf := csrfOf(t, page)
	form := url.Values{"csrf": {csrf}, "checkpoint": {parked.CheckpointID}, "decision": {"allow"}}
	// Two decisions at once through the console: one wins, the other reads "already
	// decided"; the file is written once.
	var wg sync.WaitGroup
	codes := make([]int, 2)
	bodies := make([]string, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, body := b.post("/tasks/"+task.TaskID+"/decision", form, nil)
			codes[i], bodies[i] = resp.StatusCode, body
		}()
	}
	wg.Wait()
	wins := 0
	for i := range 2 {
		switch {
		case codes[i] == http.StatusSeeOther:
			wins++
		case codes[i] == http.StatusConflict && strings.Contains(bodies[i], "already decided"):
		default:
			t.Fatalf("decision %d: %d\n%s", i, codes[i], bodies[i])
		}
	}
	if wins != 1 {
		t.Fatalf("%d decisions won", wins)
	}
	waitStatus(t, c, task.TaskID, "completed")
	if got, err := os.ReadFile(target); err != nil || string(got) != "approved <b>\n" {
		t.Fatalf("the file: %q, %v", got, err)
	}
	_, home = b.get("/")
	if !regexp.MustCompile(`(?s)id="g-done".*/tasks/` + task.TaskID).MatchString(home) {
		t.Fatalf("the task is not under Done:\n%s", home)
	}
	// The event stream passes through, and resumes after an id.
	resp, err := b.c.Get(s.http.URL + "/tasks/" + task.TaskID + "/events")
	if err != nil {
		t.Fatal(err)
	}
	all, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream" || !strings.Contains(string(all), `"type":"tool_use"`) || !strings.Contains(string(all), "id: 1\n") {
		t.Fatalf("events: %s\n%s", resp.Header.Get("Content-Type"), all)
	}
	req, _ := http.NewRequest(http.MethodGet, s.http.URL+"/tasks/"+task.TaskID+"/events", nil)
	req.Header.Set("Last-Event-ID", "2")
	resp, err = b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(rest), "id: 1\n") || strings.Contains(string(rest), "id: 2\n") || !strings.Contains(string(rest), "id: 3\n") {
		t.Fatalf("resumed after 2:\n%s", rest)
	}
}

func linkFor(t *testing.T, s *svc, c *client.Client, cp string, life time.Duration) string {
	t.Helper()
	l, err := c.CreateLink(context.Background(), cp, life)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(l.URL)
	if err != nil || u.Scheme+"://"+u.Host != s.http.URL {
		t.Fatalf("link %s for %s", l.URL, s.http.URL)
	}
	return u.Path
}

func TestLinkPageUsedTwiceExpiredRevoked(t *testing.T) {
	s := service(t, parkedWrite)
	tok := s.token(t, "acme")
	c := client.New(s.http.URL, tok)
	task, err := c.SubmitTask(context.Background(), client.TaskSpec{Prompt: "write the file"})
	if err != nil {
		t.Fatal(err)
	}
	parked := waitStatus(t, c, task.TaskID, client.StatusAwaitingApproval)
	expired := linkFor(t, s, c, parked.CheckpointID, time.Second)
	good := linkFor(t, s, c, parked.CheckpointID, time.Hour)
	spare := linkFor(t, s, c, parked.CheckpointID, time.Hour)
	time.Sleep(1100 * time.Millisecond)

	b := newBrowser(t, s) // no session: a link needs none
	resp, page := b.get(expired)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "expired") || strings.Contains(page, `value="allow"`) {
		t.Fatalf("expired link page: %d\n%s", resp.StatusCode, page)
	}
	resp, page = b.get(good)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "out.txt") || !strings.Contains(page, `value="allow"`) {
		t.Fatalf("open link page: %d\n%s", resp.StatusCode, page)
	}
	// Opening decided nothing.
	if got, _ := c.Task(context.Background(), task.TaskID); got.Status != client.StatusAwaitingApproval {
		t.Fatalf("opening a link moved the task: %s", got.Status)
	}
	csrf := csrfOf(t, page)
	// Cross-site: refused before anything.
	if resp, _ := b.post(good, url.Values{"csrf": {csrf}, "decision": {"allow"}}, map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-site link post: %d", resp.StatusCode)
	}
	resp, page = b.post(good, url.Values{"csrf": {csrf}, "decision": {"allow"}}, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "Approved") || strings.Contains(page, `value="allow"`) {
		t.Fatalf("approve by link: %d\n%s", resp.StatusCode, page)
	}
	resp, page = b.post(good, url.Values{"csrf": {csrf}, "decision": {"deny"}}, nil)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(page, "already used") {
		t.Fatalf("second use: %d\n%s", resp.StatusCode, page)
	}
	if _, page = b.get(good); !strings.Contains(page, "already used") || strings.Contains(page, "out.txt") {
		t.Fatalf("reopened used link:\n%s", page)
	}
	// The spare link was revoked by the decision the first one made.
	if _, page = b.get(spare); !strings.Contains(page, "decided another way") {
		t.Fatalf("revoked link:\n%s", page)
	}
	waitStatus(t, c, task.TaskID, "completed")
	if got, err := os.ReadFile(filepath.Join(s.base, "out.txt")); err != nil || string(got) != "approved <b>\n" {
		t.Fatalf("the file: %q, %v", got, err)
	}
	if strings.Contains(s.logText(), strings.TrimPrefix(good, "/approve/")) {
		t.Fatal("a link's token is in the logs")
	}
	if resp, page := b.get("/approve/" + strings.Repeat("x", 43)); resp.StatusCode != http.StatusNotFound || !strings.Contains(page, "not valid") {
		t.Fatalf("unknown link: %d\n%s", resp.StatusCode, page)
	}
}

// TestRacingDecisionsRunTheActionOnce: a link and the task page decide at once; the
// Write runs once.
func TestRacingDecisionsRunTheActionOnce(t *testing.T) {
	s := service(t, func(base string) []scripted.Turn {
		in, _ := json.Marshal(map[string]string{"command": "echo ran >> " + filepath.Join(base, "ran.txt")})
		return []scripted.Turn{{ToolCalls: []scripted.ToolCall{{Name: "Bash", Input: in}}}, {Text: "done"}}
	})
	tok := s.token(t, "acme")
	c := client.New(s.http.URL, tok)
	task, err := c.SubmitTask(context.Background(), client.TaskSpec{Prompt: "run it"})
	if err != nil {
		t.Fatal(err)
	}
	parked := waitStatus(t, c, task.TaskID, client.StatusAwaitingApproval)
	link := linkFor(t, s, c, parked.CheckpointID, time.Hour)
	signed := newBrowser(t, s)
	signed.signIn(tok)
	_, page := signed.get("/tasks/" + task.TaskID)
	if !strings.Contains(page, `<pre class="cmd" id="action"><code>echo ran &gt;&gt; `) {
		t.Fatalf("the command is not shown:\n%s", page)
	}
	anon := newBrowser(t, s)
	_, lpage := anon.get(link)
	var wg sync.WaitGroup
	results := make([]int, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		resp, _ := signed.post("/tasks/"+task.TaskID+"/decision", url.Values{"csrf": {csrfOf(t, page)}, "checkpoint": {parked.CheckpointID}, "decision": {"allow"}}, nil)
		results[0] = resp.StatusCode
	}()
	go func() {
		defer wg.Done()
		resp, _ := anon.post(link, url.Values{"csrf": {csrfOf(t, lpage)}, "decision": {"allow"}}, nil)
		results[1] = resp.StatusCode
	}()
	wg.Wait()
	won := 0
	if results[0] == http.StatusSeeOther {
		won++
	}
	if results[1] == http.StatusOK {
		won++
	}
	if won != 1 {
		t.Fatalf("page %d, link %d: want exactly one decision", results[0], results[1])
	}
	waitStatus(t, c, task.TaskID, "completed")
	got, err := os.ReadFile(filepath.Join(s.base, "ran.txt"))
	if err != nil || string(got) != "ran\n" {
		t.Fatalf("the command ran: %q, %v", got, err)
	}
}

// TestTaskPageMakesALink: the task page makes an approval link for its question, which
// a browser with no session then uses.
func TestTaskPageMakesALink(t *testing.T) {
	s := service(t, parkedWrite)
	tok := s.token(t, "acme")
	c := client.New(s.http.URL, tok)
	task, err := c.SubmitTask(context.Background(), client.TaskSpec{Prompt: "write the file"})
	if err != nil {
		t.Fatal(err)
	}
	parked := waitStatus(t, c, task.TaskID, client.StatusAwaitingApproval)
	b := newBrowser(t, s)
	b.signIn(tok)
	_, page := b.get("/tasks/" + task.TaskID)
	form := url.Values{"csrf": {csrfOf(t, page)}, "checkpoint": {parked.CheckpointID}}
	resp, page := b.post("/tasks/"+task.TaskID+"/link", form, nil)
	m := regexp.MustCompile(`id="link-url" type="text" readonly value="([^"]+)"`).FindStringSubmatch(page)
	if resp.StatusCode != http.StatusOK || m == nil || !strings.HasPrefix(m[1], s.http.URL+"/approve/") {
		t.Fatalf("make a link: %d\n%s", resp.StatusCode, page)
	}
	anon := newBrowser(t, s)
	path := strings.TrimPrefix(m[1], s.http.URL)
	_, lpage := anon.get(path)
	if resp, lpage := anon.post(path, url.Values{"csrf": {csrfOf(t, lpage)}, "decision": {"deny"}, "message": {"not now"}}, nil); resp.StatusCode != http.StatusOK || !strings.Contains(lpage, "Denied") {
		t.Fatalf("deny by link: %d\n%s", resp.StatusCode, lpage)
	}
	waitStatus(t, c, task.TaskID, "completed")
	if _, err := os.Stat(filepath.Join(s.base, "out.txt")); err == nil {
		t.Fatal("a denied write was written")
	}
	// The question is decided: no link for it now.
	resp, page = b.post("/tasks/"+task.TaskID+"/link", form, nil)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(page, "No link was made") {
		t.Fatalf("a link for a decided question: %d\n%s", resp.StatusCode, page)
	}
}

// Sign-in tries are limited per address: after a burst of wrong tokens the next try is
// refused with 429 before the token is looked at, and a right token then waits too.
func TestSignInIsRateLimited(t *testing.T) {
	s := service(t, parkedWrite)
	b := newBrowser(t, s)
	_, page := b.get("/signin")
	csrf := csrfOf(t, page)
	limited := -1
	for i := range 20 {
		resp, _ := b.post("/signin", url.Values{"csrf": {csrf}, "token": {"sema_wrong"}}, nil)
		if resp.StatusCode == http.StatusTooManyRequests {
			limited = i
			break
		}
	}
	if limited < 5 || limited > 12 {
		t.Fatalf("the sign-in was limited at try %d; want after a burst of about ten", limited)
	}
}

// TestBudgetQuestionTakesANewLimit: a task parked at its budget shows what was spent and
// takes the new limit with Approve; a limit that is no number is refused on the page
// with nothing decided, and no approval link is offered (a link cannot carry a limit).
func TestBudgetQuestionTakesANewLimit(t *testing.T) {
	s := serviceWith(t, func(string) []scripted.Turn {
		return []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{{Name: "Glob", Input: json.RawMessage(`{"pattern":"*.txt"}`)}}, Usage: &model.Usage{InputTokens: 100_000}},
			{Text: "done", Usage: &model.Usage{InputTokens: 10}},
		}
	}, func(cfg *server.Config) {
		cfg.Prices = map[string]pricing.Price{"scripted": {Input: 10, Output: 10, CacheWrite: 10, CacheRead: 10}}
	})
	tok := s.token(t, "acme")
	c := client.New(s.http.URL, tok)
	task, err := c.SubmitTask(context.Background(), client.TaskSpec{Prompt: "look", Cwd: s.base, MaxBudgetUSD: 1.0001})
	if err != nil {
		t.Fatal(err)
	}
	parked := waitStatus(t, c, task.TaskID, client.StatusAwaitingApproval)
	b := newBrowser(t, s)
	b.signIn(tok)
	_, page := b.get("/tasks/" + task.TaskID)
	if !strings.Contains(page, "Spent $1.0000 of $1.0001") || !strings.Contains(page, `name="budget"`) || strings.Contains(page, "make-link") {
		t.Fatalf("the budget question's page:\n%s", page)
	}
	form := url.Values{"csrf": {csrfOf(t, page)}, "checkpoint": {parked.CheckpointID}, "decision": {"allow"}, "budget_kind": {"usd"}, "budget": {"lots"}}
	resp, body := b.post("/tasks/"+task.TaskID+"/decision", form, nil)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Give the new limit as a number") {
		t.Fatalf("a limit that is no number: %d\n%s", resp.StatusCode, body)
	}
	if open, _ := c.Checkpoints(context.Background(), "open"); len(open) != 1 {
		t.Fatalf("the refused answer closed the question: %+v", open)
	}
	form.Set("budget", "2")
	if resp, body := b.post("/tasks/"+task.TaskID+"/decision", form, nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the raise: %d\n%s", resp.StatusCode, body)
	}
	waitStatus(t, c, task.TaskID, "completed")
}
