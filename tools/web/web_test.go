package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sema-agent/sema/tools"
)

// No test leaves a connection or a server goroutine behind: the transport keeps no
// idle connection, and every server is closed by its test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// site is a loopback test server that counts the requests it answered.
type site struct {
	*httptest.Server
	hits atomic.Int64
	mu   sync.Mutex
	ua   []string
}

func serve(t *testing.T, h http.HandlerFunc) *site {
	t.Helper()
	s := &site{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.mu.Lock()
		s.ua = append(s.ua, r.UserAgent())
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// loopback is the configuration of a test that fetches from its own server: plain
// HTTP, and private addresses allowed, as the server listens on 127.0.0.1.
func loopback() Config { return Config{PlainHTTP: true, AllowPrivate: true} }

func call(t *testing.T, tool tools.Tool, url, prompt string) tools.Result {
	t.Helper()
	in, err := json.Marshal(map[string]string{"url": url, "prompt": prompt})
	if err != nil {
		t.Fatal(err)
	}
	return tool.Run(context.Background(), in)
}

func body(contentType, text string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		} else {
			w.Header()["Content-Type"] = nil // keep net/http from sniffing one
		}
		fmt.Fprint(w, text)
	}
}

func wantOK(t *testing.T, r tools.Result) string {
	t.Helper()
	if r.IsError {
		t.Fatalf("the call failed: %s (%s)", r.TextOf(), r.Code)
	}
	return r.TextOf()
}

func wantCode(t *testing.T, r tools.Result, code string) {
	t.Helper()
	if !r.IsError || r.Code != code {
		t.Fatalf("got IsError=%v code %q (%s), want the code %q", r.IsError, r.Code, r.TextOf(), code)
	}
}

func TestSpecIsReadAndPassthrough(t *testing.T) {
	t.Parallel()
	s := New(Config{}).Spec()
	if s.Name != "WebFetch" || s.Effect != tools.EffectRead || s.PermissionSeat != tools.SeatPassthrough {
		t.Fatalf("spec %s effect %q seat %q", s.Name, s.Effect, s.PermissionSeat)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(s.InputSchema, &schema); err != nil || strings.Join(schema.Required, ",") != "url,prompt" {
		t.Fatalf("schema %s: %v", s.InputSchema, err)
	}
}

const article = `<!doctype html>
<html><head><title>Ignored title</title><style>body{color:red}</style></head>
<body>
<script>document.write("SCRIPT-TEXT")</script>
<h1>Release notes</h1>
<p>Version <strong>2.0</strong> drops the <code>--legacy</code> flag. See <a href="/docs/flags">the flags</a>.</p>
<table><thead><tr><th>flag</th><th>status</th></tr></thead>
<tbody><tr><td>--frozen</td><td>kept</td></tr><tr><td>--legacy</td><td>removed</td></tr></tbody></table>
<pre><code class="language-go">func main() {
	fmt.Println("hi")
}</code></pre>
<ul><li>one</li><li>two</li></ul>
<p><del>old</del> new</p>
</body></html>`

// The description states what holds under the configuration, nothing more.
func TestDescriptionFollowsTheConfig(t *testing.T) {
	t.Parallel()
	summarize := func(context.Context, string, string, string) (string, error) { return "", nil }
	for _, tc := range []struct {
		cfg        Config
		has, lacks []string
	}{
		{Config{Summarize: summarize}, []string{"fetched as https://", "Private and local network addresses are refused", "answered from the page"}, []string{"returned as Markdown"}},
		{Config{AllowPrivate: true, PlainHTTP: true}, []string{"returned as Markdown"}, []string{"https://", "refused", "answered from the page"}},
	} {
		d := New(tc.cfg).Spec().Description
		for _, w := range tc.has {
			if !strings.Contains(d, w) {
				t.Errorf("%+v: the description lacks %q:\n%s", tc.cfg, w, d)
			}
		}
		for _, w := range tc.lacks {
			if strings.Contains(d, w) {
				t.Errorf("%+v: the description says %q:\n%s", tc.cfg, w, d)
			}
		}
	}
}

func TestHTMLBecomesMarkdown(t *testing.T) {
	t.Parallel()
	srv := serve(t, body("text/html; charset=utf-8", article))
	got := wantOK(t, call(t, New(loopback()), srv.URL+"/notes", "what changed?"))
	for _, want := range []string{
		"# Release notes",
		"**2.0**",
		"`--legacy`",
		"[the flags](" + srv.URL + "/docs/flags)", // made absolute against the page
		"| flag", "| --frozen | kept", "| --legacy | removed",
		"```go\nfunc main() {",
		"- one\n- two",
		"~~old~~ new",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the Markdown lacks %q:\n%s", want, got)
		}
	}
	for _, gone := range []string{"SCRIPT-TEXT", "color:red", "Ignored title", "<h1>"} {
		if strings.Contains(got, gone) {
			t.Errorf("the Markdown still holds %q:\n%s", gone, got)
		}
	}
}

func TestContentTypes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, contentType, body string
		want, code              string
	}{
		{"plain text passes as it is", "text/plain", "# not a heading\n<b>kept</b>", "# not a heading\n<b>kept</b>", ""},
		{"markdown passes", "text/markdown; charset=utf-8", "## Title\n", "## Title\n", ""},
		{"json passes", "application/json", `{"a": 1}`, `{"a": 1}`, ""},
		{"a +json type passes", "application/problem+json", `{"title": "x"}`, `{"title": "x"}`, ""},
		{"xhtml is converted", "application/xhtml+xml", "<html><body><h2>X</h2></body></html>", "## X", ""},
		{"latin-1 is decoded", "text/plain; charset=iso-8859-1", "caf\xe9", "café", ""},
		{"a meta charset is read", "text/html", "<html><head><meta charset=\"windows-1252\"></head><body><p>na\xefve</p></body></html>", "naïve", ""},
		{"no type, html sniffed", "", "<!DOCTYPE html><html><body><p>sniffed</p></body></html>", "sniffed", ""},
		{"octet-stream holding text is sniffed", "application/octet-stream", "just text\n", "just text\n", ""},
		{"png refused", "image/png", "\x89PNG\r\n\x1a\n\x00\x00", "image/png", CodeContentBinary},
		{"pdf refused", "application/pdf", "%PDF-1.7\n", "application/pdf", CodeContentBinary},
		{"octet-stream holding binary refused", "application/octet-stream", "\x00\x01\x02\x03binary", "application/octet-stream", CodeContentBinary},
		{"zip refused", "application/zip", "PK\x03\x04", "application/zip", CodeContentBinary},
		{"nesting too deep for the parser falls back to text", "text/html", "<style>x{}</style>" + strings.Repeat("<div>", 600) + "deep <b>text</b>", "deep text", ""},
		{"text holding NUL refused", "text/plain", "a\x00b", "text/plain", CodeContentBinary},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := serve(t, body(tc.contentType, tc.body))
			r := call(t, New(loopback()), srv.URL, "read it")
			if tc.code != "" {
				wantCode(t, r, tc.code)
			} else {
				wantOK(t, r)
			}
			if !strings.Contains(r.TextOf(), tc.want) {
				t.Fatalf("the answer lacks %q:\n%s", tc.want, r.TextOf())
			}
		})
	}
}

func TestSizeCap(t *testing.T) {
	t.Parallel()
	srv := serve(t, body("text/plain", strings.Repeat("a", 600)+strings.Repeat("Z", 600)))
	cfg := loopback()
	cfg.MaxBytes = 600
	got := wantOK(t, call(t, New(cfg), srv.URL, "read it"))
	if strings.Contains(got, "Z") || !strings.HasSuffix(got, "\n\n"+strings.Repeat("a", 600)) {
		t.Fatalf("the answer is not the first 600 bytes:\n%s", got)
	}
	if !strings.Contains(got, "larger than 600 bytes") {
		t.Fatalf("the answer does not say the page was cut:\n%s", got)
	}
}

func TestMarkdownCapWithoutSummarizer(t *testing.T) {
	t.Parallel()
	srv := serve(t, body("text/plain", strings.Repeat("é", 50)))
	cfg := loopback()
	cfg.MaxMarkdown = 10
	got := wantOK(t, call(t, New(cfg), srv.URL, "read it"))
	if !strings.HasSuffix(got, "\n\n"+strings.Repeat("é", 10)) || !strings.Contains(got, "40 more") {
		t.Fatalf("the answer is not cut at 10 characters with a note:\n%s", got)
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "start")
		w.(http.Flusher).Flush()
		select { // a body that never ends
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) })
	cfg := loopback()
	cfg.Timeout = 150 * time.Millisecond
	start := time.Now()
	r := call(t, New(cfg), srv.URL, "read it")
	wantCode(t, r, CodeTimeout)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the call took %s with a timeout of 150ms", d)
	}
}

func TestCancelled(t *testing.T) {
	t.Parallel()
	srv := serve(t, body("text/plain", "x"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := New(loopback()).Run(ctx, json.RawMessage(fmt.Sprintf(`{"url":%q,"prompt":"p"}`, srv.URL)))
	wantCode(t, r, tools.CodeCancelled)
	if srv.hits.Load() != 0 {
		t.Fatal("a cancelled call reached the server")
	}
}

func TestHTTPStatusFails(t *testing.T) {
	t.Parallel()
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	r := call(t, New(loopback()), srv.URL+"/missing", "read it")
	wantCode(t, r, CodeHTTPStatus)
	if !strings.Contains(r.TextOf(), "404") {
		t.Fatalf("the answer does not name the status: %s", r.TextOf())
	}
}

func TestUserAgentNamesSema(t *testing.T) {
	t.Parallel()
	srv := serve(t, body("text/plain", "x"))
	wantOK(t, call(t, New(loopback()), srv.URL, "read it"))
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.ua) != 1 || !strings.Contains(srv.ua[0], "sema") {
		t.Fatalf("User-Agent %q", srv.ua)
	}
}

func TestInputChecked(t *testing.T) {
	t.Parallel()
	tool := New(loopback())
	for _, in := range []string{`{"prompt":"p"}`, `{"url":"https://example.com"}`, `{"url":"","prompt":"p"}`, `{"url":"https://example.com","prompt":" "}`,
		`{"url":"https://example.com","prompt":"p","extra":1}`, `[]`, `{"url":3,"prompt":"p"}`} {
		wantCode(t, tool.Run(context.Background(), json.RawMessage(in)), tools.CodeInputInvalid)
	}
}

func TestRedirects(t *testing.T) {
	t.Parallel()
	type redirectCase struct {
		name   string
		route  func(srv *site) http.HandlerFunc
		path   string
		check  func(t *testing.T, srv *site, r tools.Result)
		noHits bool
	}
	to := func(status int, where func(srv *site) string) func(srv *site) http.HandlerFunc {
		return func(srv *site) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/final" {
					body("text/plain", "the final page")(w, r)
					return
				}
				w.Header().Set("Location", where(srv))
				w.WriteHeader(status)
			}
		}
	}
	for _, tc := range []redirectCase{
		{name: "same host, relative Location, followed", route: to(http.StatusFound, func(*site) string { return "/final" }),
			check: func(t *testing.T, srv *site, r tools.Result) {
				got := wantOK(t, r)
				if !strings.Contains(got, "the final page") || !strings.Contains(got, srv.URL+"/final") || srv.hits.Load() != 2 {
					t.Fatalf("hits %d, answer:\n%s", srv.hits.Load(), got)
				}
			}},
		{name: "same host, absolute Location, 308, followed", route: to(http.StatusPermanentRedirect, func(s *site) string { return s.URL + "/final" }),
			check: func(t *testing.T, srv *site, r tools.Result) {
				if got := wantOK(t, r); !strings.Contains(got, "the final page") {
					t.Fatalf("answer:\n%s", got)
				}
			}},
		{name: "another host, reported not followed", route: to(http.StatusMovedPermanently, func(*site) string { return "https://other.example/next?q=1" }),
			check: func(t *testing.T, srv *site, r tools.Result) {
				got := wantOK(t, r)
				for _, want := range []string{"Redirect URL: https://other.example/next?q=1", "Status: 301", "Original URL: " + srv.URL + "/start", `url: "https://other.example/next?q=1"`, `prompt: "what is it?"`} {
					if !strings.Contains(got, want) {
						t.Errorf("the answer lacks %q:\n%s", want, got)
					}
				}
				if srv.hits.Load() != 1 {
					t.Fatalf("hits %d", srv.hits.Load())
				}
			}},
		{name: "same host, another port, reported", route: to(http.StatusFound, func(s *site) string { return "http://127.0.0.1:1/final" }),
			check: func(t *testing.T, srv *site, r tools.Result) {
				if got := wantOK(t, r); !strings.Contains(got, "Redirect URL: http://127.0.0.1:1/final") {
					t.Fatalf("answer:\n%s", got)
				}
			}},
		{name: "a loop stops after ten", route: to(http.StatusFound, func(*site) string { return "/again" }),
			check: func(t *testing.T, srv *site, r tools.Result) {
				wantCode(t, r, CodeTooManyRedirects)
				if srv.hits.Load() != MaxRedirects+1 {
					t.Fatalf("hits %d, want %d", srv.hits.Load(), MaxRedirects+1)
				}
			}},
		{name: "same host with credentials refused", route: to(http.StatusFound, func(s *site) string {
			return strings.Replace(s.URL, "http://", "http://user:secret@", 1) + "/final"
		}),
			check: func(t *testing.T, srv *site, r tools.Result) {
				wantCode(t, r, CodeCredentialsRefused)
				if srv.hits.Load() != 1 {
					t.Fatalf("hits %d", srv.hits.Load())
				}
			}},
		{name: "no Location fails", route: func(*site) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusFound) }
		},
			check: func(t *testing.T, srv *site, r tools.Result) { wantCode(t, r, CodeFetchFailed) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var srv *site
			var h http.HandlerFunc
			srv = serve(t, func(w http.ResponseWriter, r *http.Request) { h(w, r) })
			h = tc.route(srv)
			tc.check(t, srv, call(t, New(loopback()), srv.URL+"/start", "what is it?"))
		})
	}
}

func TestSummarizerSeam(t *testing.T) {
	t.Parallel()
	srv := serve(t, body("text/html", "<h1>Flags</h1><p>--frozen keeps the lock file.</p>"))
	type seen struct{ markdown, prompt, url string }
	for _, tc := range []struct {
		name  string
		fn    func(ctx context.Context, markdown, prompt, url string) (string, error)
		want  string
		code  string
		calls int
	}{
		{name: "the answer is the result", fn: func(_ context.Context, md, prompt, url string) (string, error) {
			return "It keeps the lock file.", nil
		}, want: "It keeps the lock file.", calls: 1},
		{name: "an error fails the call", fn: func(context.Context, string, string, string) (string, error) {
			return "", errors.New("model overloaded")
		}, want: "model overloaded", code: CodeSummaryFailed, calls: 1},
		{name: "an empty answer fails the call", fn: func(context.Context, string, string, string) (string, error) {
			return "  ", nil
		}, want: "empty answer", code: CodeSummaryFailed, calls: 1},
		{name: "a panic is contained", fn: func(context.Context, string, string, string) (string, error) {
			panic("boom")
		}, want: "panicked", code: CodeSummaryFailed, calls: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got []seen
			cfg := loopback()
			cfg.Summarize = func(ctx context.Context, md, prompt, url string) (string, error) {
				got = append(got, seen{md, prompt, url})
				return tc.fn(ctx, md, prompt, url)
			}
			r := call(t, New(cfg), srv.URL+"/flags", "what does --frozen do?")
			if tc.code != "" {
				wantCode(t, r, tc.code)
			} else {
				wantOK(t, r)
			}
			if !strings.Contains(r.TextOf(), tc.want) {
				t.Fatalf("the answer lacks %q: %s", tc.want, r.TextOf())
			}
			if len(got) != tc.calls {
				t.Fatalf("the summarizer was called %d times", len(got))
			}
			if s := got[0]; !strings.Contains(s.markdown, "# Flags") || !strings.Contains(s.markdown, "--frozen keeps the lock file.") ||
				s.prompt != "what does --frozen do?" || s.url != srv.URL+"/flags" {
				t.Fatalf("the summarizer saw %+v", s)
			}
		})
	}
}

func TestSummarizerNotCalledForARedirect(t *testing.T) {
	t.Parallel()
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://elsewhere.example/", http.StatusFound)
	})
	cfg := loopback()
	cfg.Summarize = func(context.Context, string, string, string) (string, error) {
		t.Error("the summarizer was called for a redirect")
		return "x", nil
	}
	if got := wantOK(t, call(t, New(cfg), srv.URL, "p")); !strings.Contains(got, "https://elsewhere.example/") {
		t.Fatalf("answer: %s", got)
	}
}

// An http URL is fetched as https unless the deployment keeps plain HTTP: the TLS
// server only answers the upgraded request.
func TestHTTPUpgradedToHTTPS(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		body("text/plain", "over TLS")(w, r)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the plain request below is logged otherwise
	srv.StartTLS()
	t.Cleanup(srv.Close)
	tool := New(Config{AllowPrivate: true}).(*tool)
	tool.client.Transport.(*http.Transport).TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
	plain := strings.Replace(srv.URL, "https://", "http://", 1)
	if got := wantOK(t, call(t, tool, plain, "read it")); !strings.Contains(got, "over TLS") {
		t.Fatalf("answer: %s", got)
	}
	if hits.Load() != 1 {
		t.Fatalf("hits %d", hits.Load())
	}
	// Kept plain, the same URL speaks HTTP to a TLS server, which fails.
	keep := New(Config{AllowPrivate: true, PlainHTTP: true})
	wantCode(t, call(t, keep, plain, "read it"), CodeHTTPStatus)
}
