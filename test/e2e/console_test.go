package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/model/anthropic/anthropictest"
)

// chromium finds the headless browser the console test drives: skipped, with the
// reason, when the machine has none — except under CI, where the test must run.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("SEMA_CI") != "" {
		t.Fatal("no chromium on PATH under SEMA_CI: .ci/run installs the Debian package chromium")
	}
	t.Skip("no chromium on PATH: install it (apt-get install -y chromium) to run the console's browser test")
	return ""
}

// TestConsoleInABrowser drives the web console of the real `sema serve` binary in
// headless Chromium: sign-in (a wrong token, then the right one), a task that parks
// appears under "Needs you" without a reload, its page shows the edit as a diff,
// Approve runs it once and the task moves to Done; a second question is decided
// through a link in a fresh browser with no cookie, which then says "already used";
// another tenant sees none of it; the CSP header is there and a cross-site form is
// refused; at a phone's 390×844 no page scrolls sideways. With -update it rewrites the
// screenshots docs/console.md shows.
func TestConsoleInABrowser(t *testing.T) {
	exe := chromium(t)
	base, _ := filepath.EvalSymlinks(t.TempDir())
	target := filepath.Join(base, "config.txt")
	if err := os.WriteFile(target, []byte("name = sema\nretries = 1\ncolour = blue\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	marks := filepath.Join(base, "marks.txt")
	longCmd := "printf 'deployed\\n' >> " + marks + " && echo " + strings.Repeat("a-long-argument-that-must-wrap-on-a-phone-", 3)
	srv := anthropictest.NewServer(t,
		anthropictest.Turn{ToolCalls: []anthropictest.ToolCall{{Name: "Read", Input: fmt.Sprintf(`{"file_path":%q}`, target)}}},
		anthropictest.Turn{Text: "Raising the retries.", ToolCalls: []anthropictest.ToolCall{{Name: "Edit", Input: fmt.Sprintf(`{"file_path":%q,"old_string":"retries = 1","new_string":"retries = 3"}`, target)}}},
		anthropictest.Turn{Text: "Retries are 3 now."},
		anthropictest.Turn{ToolCalls: []anthropictest.ToolCall{{Name: "Bash", Input: fmt.Sprintf(`{"command":%q,"description":"Record the deploy"}`, longCmd)}}},
		anthropictest.Turn{Text: "Recorded."},
	)
	env := append(anthropicEnv(srv), "SEMA_HOME="+t.TempDir())
	tok := serveToken(t, env, "acme", base)
	otherBase, _ := filepath.EvalSymlinks(t.TempDir())
	otherTok := serveToken(t, env, "globex", otherBase)
	p := startServe(t, env, "--model", "anthropic/claude-sonnet-4-5")
	api := client.New(p.url, tok)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.WindowSize(1100, 900))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	root, cancelRoot := chromedp.NewContext(alloc)
	defer cancelRoot()
	if err := chromedp.Do(root, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	// Each browser is its own browser context: its own cookies, as another device.
	browser := func() context.Context {
		ctx, cancel := chromedp.NewContext(root, chromedp.WithNewBrowserContext())
		t.Cleanup(cancel)
		ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
		t.Cleanup(cancel)
		return ctx
	}
	must := func(ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			loc, _ := chromedp.Run(ctx, chromedp.Location())
			html, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
			t.Fatalf("%s: %v\nat %s:\n%s\nserve's logs:\n%s", what, err, loc, html, p.logs.String())
		}
	}
	text := func(ctx context.Context, sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	shots := t.TempDir()
	screenshot := func(ctx context.Context, name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		// The documentation's copies are rewritten with -update (they differ on every
		// run: the paths are temporary); otherwise the shot is only checked to be taken.
		dir := shots
		if *update {
			dir = filepath.Join("..", "..", "docs", "img")
		}
		if err := os.WriteFile(filepath.Join(dir, "console-"+name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	noSideScroll := func(ctx context.Context, what string) {
		t.Helper()
		must(ctx, "phone size", chromedp.EmulateViewport(390, 844))
		time.Sleep(200 * time.Millisecond)
		w, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
		if err != nil || w > 390 {
			wide, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll("*")).filter(e => e.scrollWidth > e.clientWidth + 1 || e.getBoundingClientRect().right > 390).map(e => e.tagName + "." + e.className + " " + e.scrollWidth + "/" + e.clientWidth).join("\n")`))
			t.Logf("wider than 390:\n%s", wide)
			t.Errorf("%s at 390×844: scrollWidth %d (%v), want at most 390", what, w, err)
		}
		must(ctx, "desktop size", chromedp.EmulateViewport(1100, 900))
	}

	// Sign in: a wrong token is refused with a message, the right one signs in.
	a := browser()
	resp, err := chromedp.RunResponse(a, chromedp.Navigate(p.url+"/"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(resp.URL, "/signin") {
		t.Fatalf("signed out, / went to %s", resp.URL)
	}
	csp := header(resp.Headers, "Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Fatalf("the sign-in page's CSP: %q", csp)
	}
	must(a, "wrong token",
		chromedp.SendKeys(chromedp.CSS("#token"), "sema_not-a-real-token"),
		chromedp.Click(chromedp.CSS("#signin")),
		chromedp.WaitVisible(chromedp.CSS("#error")),
	)
	if msg := text(a, "#error"); !strings.Contains(msg, "not accepted") {
		t.Fatalf("wrong token message: %q", msg)
	}
	must(a, "right token",
		chromedp.SendKeys(chromedp.CSS("#token"), tok),
		chromedp.Click(chromedp.CSS("#signin")),
		chromedp.WaitVisible(chromedp.CSS("#g-needs")),
	)
	if html, _ := chromedp.Run(a, chromedp.Evaluate[string](`document.documentElement.outerHTML`)); strings.Contains(html, strings.TrimPrefix(tok, "sema_")) {
		t.Fatal("the page holds the token")
	}

	// A task submitted elsewhere parks and appears under "Needs you" without a reload.
	ctx := context.Background()
	task, err := api.SubmitTask(ctx, client.TaskSpec{Prompt: "Raise the retries in config.txt to 3\nThey fail too often.", Cwd: base})
	if err != nil {
		t.Fatal(err)
	}
	must(a, "the parked task appears", chromedp.WaitVisible(chromedp.CSS(`#g-needs a[href="/tasks/`+task.TaskID+`"]`)))
	if got := text(a, "#g-needs"); !strings.Contains(got, "Raise the retries in config.txt to 3") || strings.Contains(got, "They fail too often") {
		t.Fatalf("the task's title under Needs you: %q", got)
	}
	screenshot(a, "home")
	noSideScroll(a, "home")

	// Its page shows the edit as a diff; Approve runs it once.
	must(a, "open the task",
		chromedp.Click(chromedp.CSS(`#g-needs a[href="/tasks/`+task.TaskID+`"]`)),
		chromedp.WaitVisible(chromedp.CSS("pre.diff")),
		chromedp.WaitVisible(chromedp.CSS("#log li")),
	)
	diff := text(a, "pre.diff")
	if !strings.Contains(diff, "- retries = 1") || !strings.Contains(diff, "+ retries = 3") {
		t.Fatalf("the diff: %q", diff)
	}
	screenshot(a, "task")
	noSideScroll(a, "task")
	must(a, "approve",
		chromedp.SendKeys(chromedp.CSS("#message"), "go ahead"),
		chromedp.Click(chromedp.CSS("#approve")),
		chromedp.WaitVisible(chromedp.CSS("#notice")),
	)
	waitTask(t, api, task.TaskID, "completed", 30*time.Second)
	if b, err := os.ReadFile(target); err != nil || string(b) != "name = sema\nretries = 3\ncolour = blue\n" {
		t.Fatalf("the edited file: %q, %v", b, err)
	}
	must(a, "the page follows the task to its end", chromedp.WaitVisible(chromedp.CSS(`#status.s-completed`)))
	must(a, "home", chromedp.Navigate(p.url+"/"), chromedp.WaitVisible(chromedp.CSS(`#g-done a[href="/tasks/`+task.TaskID+`"]`)))

	// A second question, decided through a link in a browser with no cookie.
	second, err := api.SubmitTask(ctx, client.TaskSpec{Prompt: "Record the deploy", Cwd: base})
	if err != nil {
		t.Fatal(err)
	}
	parked := waitTask(t, api, second.TaskID, client.StatusAwaitingApproval, 30*time.Second)
	link, err := api.CreateLink(ctx, parked.CheckpointID, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(link.URL, p.url+"/approve/") {
		t.Fatalf("the link %q is not on %s", link.URL, p.url)
	}
	l := browser()
	must(l, "open the link", chromedp.Navigate(link.URL), chromedp.WaitVisible(chromedp.CSS("pre.cmd")))
	if cmd := text(l, "pre.cmd"); !strings.Contains(cmd, "deployed") {
		t.Fatalf("the link page's command: %q", cmd)
	}
	noSideScroll(l, "link")
	must(l, "phone size for the screenshot", chromedp.EmulateViewport(390, 844))
	screenshot(l, "link")
	must(l, "approve by link", chromedp.Click(chromedp.CSS("#approve")), chromedp.WaitVisible(chromedp.CSS("#notice")))
	waitTask(t, api, second.TaskID, "completed", 30*time.Second)
	if b, err := os.ReadFile(marks); err != nil || string(b) != "deployed\n" {
		t.Fatalf("the command ran: %q, %v", b, err)
	}
	must(l, "reopen the link", chromedp.Navigate(link.URL), chromedp.WaitVisible(chromedp.CSS("#link-state")))
	if s := text(l, "#link-state"); !strings.Contains(s, "already used") {
		t.Fatalf("the reopened link says %q", s)
	}
	if n, _ := chromedp.Run(l, chromedp.Evaluate[int](`document.querySelectorAll("#approve").length`)); n != 0 {
		t.Fatal("a used link still offers Approve")
	}

	// Another tenant sees none of the first's tasks.
	g := browser()
	must(g, "other tenant signs in",
		chromedp.Navigate(p.url+"/signin"),
		chromedp.SendKeys(chromedp.CSS("#token"), otherTok),
		chromedp.Click(chromedp.CSS("#signin")),
		chromedp.WaitVisible(chromedp.CSS("#g-done")),
	)
	time.Sleep(2500 * time.Millisecond) // one poll of the lists
	body, _ := chromedp.Run(g, chromedp.Evaluate[string](`document.body.innerText`))
	if strings.Contains(body, "Raise the retries") || strings.Contains(body, "Record the deploy") {
		t.Fatalf("another tenant's home shows acme's tasks:\n%s", body)
	}
	must(g, "another tenant opens acme's task", chromedp.Navigate(p.url+"/tasks/"+task.TaskID), chromedp.WaitVisible(chromedp.CSS("#error")))
	if body, _ := chromedp.Run(g, chromedp.Evaluate[string](`document.body.innerText`)); strings.Contains(body, "retries") {
		t.Fatalf("another tenant reads acme's task:\n%s", body)
	}

	// A form on another site that posts to the console is refused, cookie or not.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/go.js" {
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, `document.getElementById("f").submit();`)
			return
		}
		fmt.Fprintf(w, `<!doctype html><form id="f" method="post" action="%s/tasks"><input name="prompt" value="planted"><input name="mode" value="default"></form><script src="/go.js"></script>`, p.url)
	}))
	defer evil.Close()
	evilURL := strings.Replace(evil.URL, "127.0.0.1", "localhost", 1) // another site than the console's host
	must(a, "cross-site post", chromedp.Navigate(evilURL), chromedp.WaitVisible(chromedp.CSS("#error")))
	if msg := text(a, "#error"); !strings.Contains(msg, "another site") {
		t.Fatalf("cross-site post: %q", msg)
	}
	list, err := api.Tasks(ctx, client.TaskFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range list.Tasks {
		if x.Prompt == "planted" {
			t.Fatal("the cross-site form submitted a task")
		}
	}
	if len(list.Tasks) != 2 {
		t.Fatalf("acme has %d tasks, want 2", len(list.Tasks))
	}
	// The same from any client that says where it comes from.
	req, _ := http.NewRequest(http.MethodPost, p.url+"/tasks", strings.NewReader(url.Values{"prompt": {"x"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin post: %v %v", r, err)
	} else {
		r.Body.Close()
	}
	if strings.Contains(p.logs.String(), strings.TrimPrefix(tok, "sema_")) {
		t.Fatal("serve's logs hold the token")
	}
	if strings.Contains(p.logs.String(), strings.TrimPrefix(link.URL, p.url+"/approve/")) {
		t.Fatal("serve's logs hold the link's token")
	}
}

// header is a response header by name, whatever its case.
func header(h network.Headers, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			s, _ := v.(string)
			return s
		}
	}
	return ""
}
