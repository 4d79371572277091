package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/imagefit"
	"github.com/sema-agent/sema/mcp/internal/testserver"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/tools"
)

// TestMain lets the test binary double as the stdio test server, and checks that no
// goroutine outlives the tests but the starter thread's, which lives as long as the
// process by design.
func TestMain(m *testing.M) {
	testserver.RunFromEnv()
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/sema-agent/sema/env.startLoop"))
}

// stdioServer is a stdio server running the test server with flags (see
// testserver.EnvVar).
func stdioServer(t testing.TB, name, flags string) Server {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Server{Name: name, Type: TypeStdio, Command: exe, Args: []string{"-test.run=^$"}, Env: map[string]string{testserver.EnvVar: flags}, Source: "test"}
}

// httpServer is an http server serving the test server with the SDK's streamable
// handler.
func httpServer(t testing.TB, name string) Server {
	t.Helper()
	srv := testserver.New()
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return Server{Name: name, Type: TypeHTTP, URL: ts.URL, Source: "test"}
}

// sseServer is an sse server serving the test server with the SDK's SSE handler.
func sseServer(t testing.TB, name string) Server {
	t.Helper()
	srv := testserver.New()
	ts := httptest.NewServer(sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return Server{Name: name, Type: TypeSSE, URL: ts.URL, Source: "test"}
}

// notices records the notices of a mount and lets a test wait for one.
type notices struct {
	mu   sync.Mutex
	list []sema.Notice
}

func (n *notices) add(x sema.Notice) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.list = append(n.list, x)
}

// of returns the notices of a code.
func (n *notices) of(code string) []sema.Notice {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []sema.Notice
	for _, x := range n.list {
		if x.Code == code {
			out = append(out, x)
		}
	}
	return out
}

// await waits until a notice of code arrived, at most 10 s.
func (n *notices) await(t testing.TB, code string) sema.Notice {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if got := n.of(code); len(got) > 0 {
			return got[0]
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no notice %s arrived", code)
	return sema.Notice{}
}

// mount starts servers with opts, closes the mount when the test ends, and returns it
// with its notices.
func mount(t testing.TB, servers []Server, opts Options) (*Mount, *notices) {
	t.Helper()
	log := &notices{}
	opts.OnNotice = log.add
	m, err := Start(context.Background(), servers, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, log
}

// lookup returns the mounted tool of that name.
func lookup(t testing.TB, m *Mount, name string) tools.Tool {
	t.Helper()
	tl := tools.Roster(m.Tools()).Lookup(name)
	if tl == nil {
		t.Fatalf("no tool %s among %v", name, tools.Roster(m.Tools()).Names())
	}
	return tl
}

// call runs the named tool with input.
func call(t testing.TB, m *Mount, name, input string) tools.Result {
	t.Helper()
	return lookup(t, m, name).Run(context.Background(), json.RawMessage(input))
}

// wantText fails unless r is a success whose text is want.
func wantText(t testing.TB, r tools.Result, want string) {
	t.Helper()
	if r.IsError || r.TextOf() != want {
		t.Fatalf("result %q (code %q), want the text %q", clip(r.TextOf(), 300), r.Code, clip(want, 300))
	}
}

// wantFail fails unless r is an error Result of code whose text holds every fragment.
func wantFail(t testing.TB, r tools.Result, code string, fragments ...string) {
	t.Helper()
	if !r.IsError || r.Code != code {
		t.Fatalf("result %q (code %q, error %v), want code %s", clip(r.TextOf(), 300), r.Code, r.IsError, code)
	}
	for _, f := range fragments {
		if !strings.Contains(r.TextOf(), f) {
			t.Fatalf("result %q lacks %q", clip(r.TextOf(), 300), f)
		}
	}
}

// Over every transport the mount lists the server's tools under their mcp__ names,
// carries the server's claims as claims, and calls them.
func TestStartEveryTransport(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		server func(testing.TB, string) Server
	}{
		{"stdio", func(t testing.TB, n string) Server { return stdioServer(t, n, "") }},
		{"http", httpServer},
		{"sse", sseServer},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m, _ := mount(t, []Server{c.server(t, "x")}, Options{})
			st := m.Status()
			if len(st) != 1 || st[0].State != StateConnected || st[0].ServerName != "sema-testserver" || st[0].ServerVersion != "1.2.3" || st[0].Type != c.name {
				t.Fatalf("status %+v", st)
			}
			names := tools.Roster(m.Tools()).Names()
			if !slices.Equal(names, st[0].Tools) {
				t.Fatalf("Tools %v, Status lists %v", names, st[0].Tools)
			}
			for _, n := range []string{"mcp__x__echo", "mcp__x__write_note", "mcp__x__confirm", "mcp__x__Write", "mcp__x__Bash"} {
				if !slices.Contains(names, n) {
					t.Fatalf("%s not among %v", n, names)
				}
			}
			for _, n := range names {
				if !strings.HasPrefix(n, "mcp__x__") {
					t.Fatalf("%s is mounted outside the server's prefix", n)
				}
			}
			wantText(t, call(t, m, "mcp__x__echo", `{"text":"hi"}`), "hi")
			wantText(t, call(t, m, "mcp__x__Write", ``), "the server's Write")
		})
	}
}

// The spec of a tool: passthrough seat, no declared effect, the server's hints as
// claims, the server's schema and description.
func TestToolSpecs(t *testing.T) {
	t.Parallel()
	m, _ := mount(t, []Server{stdioServer(t, "x", "")}, Options{})
	cases := []struct {
		name          string
		readOnly, ask bool
		desc          string
	}{
		{"mcp__x__echo", true, false, "Answers the text it is given."},
		{"mcp__x__write_note", false, false, "Writes a note."},
		{"mcp__x__confirm", false, true, "Asks a person first."},
	}
	for _, c := range cases {
		tl := lookup(t, m, c.name)
		s := tl.Spec()
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		if s.Effect != "" || s.PermissionSeat != tools.SeatPassthrough || s.ReadOnlyHint != c.readOnly || s.RequiresUserInteraction != c.ask ||
			s.Description != c.desc || string(s.InputSchema) != `{"type":"object"}` {
			t.Errorf("%s: spec %+v", c.name, s)
		}
		if srv, ok := ServerOf(tl); !ok || srv != "x" {
			t.Errorf("ServerOf(%s) = %q, %v", c.name, srv, ok)
		}
	}
	if _, ok := ServerOf(tools.Func(tools.Spec{Name: "Read"}, func(context.Context, json.RawMessage) tools.Result { return tools.Result{} })); ok {
		t.Error("ServerOf claims an engine tool")
	}
}

func TestFailedServerIsANotice(t *testing.T) {
	t.Parallel()
	broken := stdioServer(t, "broken", "crash-on-start")
	missing := Server{Name: "missing", Type: TypeStdio, Command: "sema-no-such-program", Source: "test"}
	m, log := mount(t, []Server{stdioServer(t, "good", ""), broken, missing}, Options{})
	failed := log.of(CodeServerFailed)
	if len(failed) != 2 {
		t.Fatalf("notices %+v, want two failures", failed)
	}
	for _, n := range failed {
		if n.Detail["source"] != "test" || n.Detail["cause"] == "" {
			t.Errorf("notice %+v lacks its detail", n)
		}
	}
	if n := failed[0]; n.Detail["server"] != "broken" || !strings.Contains(n.Message, "refuses to start") || !strings.Contains(n.Message, "exit status 3") {
		t.Errorf("the notice of a server that died on start does not quote its stderr and exit: %+v", n)
	}
	if n := failed[1]; n.Detail["server"] != "missing" || !strings.Contains(n.Message, "not in the PATH") {
		t.Errorf("notice %+v", n)
	}
	st := m.Status()
	if st[0].State != StateConnected || st[1].State != StateFailed || st[2].State != StateFailed || st[1].Error == "" || len(st[1].Tools) != 0 {
		t.Fatalf("status %+v", st)
	}
	for _, name := range tools.Roster(m.Tools()).Names() {
		if !strings.HasPrefix(name, "mcp__good__") {
			t.Fatalf("a failed server's tool %s is mounted", name)
		}
	}
}

func TestRequiredServerRefusesStart(t *testing.T) {
	t.Parallel()
	broken := stdioServer(t, "broken", "crash-on-start")
	broken.Required = true
	slow := Server{Name: "slow", Type: TypeStdio, Command: "sleep", Args: []string{"60"}, Source: "test"}
	began := time.Now()
	m, err := Start(context.Background(), []Server{stdioServer(t, "good", ""), broken, slow}, Options{})
	if m != nil || sema.CodeOf(err) != CodeServerRequired {
		t.Fatalf("Start = %v, %v; want the code %s", m, err, CodeServerRequired)
	}
	var se *sema.Error
	errorsAs(err, &se)
	if se.Detail["server"] != "broken" || !strings.Contains(se.Message, "refuses to start") {
		t.Fatalf("error %+v", se)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Fatalf("Start took %v: it waited for the slow server instead of stopping it", took)
	}
}

func TestStartTimeout(t *testing.T) {
	t.Parallel()
	mute := Server{Name: "mute", Type: TypeStdio, Command: "sleep", Args: []string{"60"}, StartTimeout: 300 * time.Millisecond, Source: "test"}
	began := time.Now()
	m, log := mount(t, []Server{mute}, Options{})
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("Start took %v", took)
	}
	n := log.await(t, CodeServerFailed)
	if !strings.Contains(n.Message, "did not finish starting within 300ms") {
		t.Fatalf("notice %+v", n)
	}
	if st := m.Status(); st[0].State != StateFailed {
		t.Fatalf("status %+v", st)
	}
}

func TestStartCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	mute := Server{Name: "mute", Type: TypeStdio, Command: "sleep", Args: []string{"60"}, Source: "test"}
	m, err := Start(ctx, []Server{mute, stdioServer(t, "good", "")}, Options{})
	if m != nil || sema.CodeOf(err) != CodeStartCancelled || !errorsAs(err, new(*sema.Error)) || !isDeadline(err) {
		t.Fatalf("Start = %v, %v", m, err)
	}
}

func TestStartRefusesConfiguration(t *testing.T) {
	t.Parallel()
	good := Server{Name: "a", Command: "x", Source: "test"}
	cases := []struct {
		name    string
		servers []Server
		opts    Options
	}{
		{"bad name", []Server{{Name: "a.b", Command: "x"}}, Options{}},
		{"twice", []Server{good, good}, Options{}},
		{"no command, no url", []Server{{Name: "a"}}, Options{}},
		{"unexpanded url", []Server{{Name: "a", Type: TypeHTTP, URL: "${BASE}/mcp"}}, Options{}},
		{"header with a line break", []Server{{Name: "a", Type: TypeHTTP, URL: "https://x/", Headers: map[string]string{"A": "b\r\nC: d"}}}, Options{}},
		{"negative call timeout", []Server{{Name: "a", Command: "x", CallTimeout: -1}}, Options{}},
		{"negative options", []Server{good}, Options{CallTimeout: -time.Second}},
		{"negative output limit", []Server{good}, Options{OutputLimit: -1}},
		{"relative root", []Server{good}, Options{Roots: []string{"rel/dir"}}},
	}
	for _, c := range cases {
		m, err := Start(context.Background(), c.servers, c.opts)
		if m != nil || sema.CodeOf(err) != CodeConfigInvalid {
			t.Errorf("%s: Start = %v, %v", c.name, m, err)
		}
	}
}

func TestCallTimeout(t *testing.T) {
	t.Parallel()
	s := stdioServer(t, "x", "")
	s.CallTimeout = 200 * time.Millisecond
	m, _ := mount(t, []Server{s}, Options{CallTimeout: time.Hour})
	began := time.Now()
	wantFail(t, call(t, m, "mcp__x__slow", `{"ms":10000}`), CodeCallTimeout, "within 200ms", "callTimeoutMs")
	if took := time.Since(began); took > 3*time.Second {
		t.Fatalf("the call took %v", took)
	}
	wantText(t, call(t, m, "mcp__x__echo", `{"text":"still here"}`), "still here")
	wantText(t, call(t, m, "mcp__x__slow", `{"ms":1}`), "done")
}

func TestCallCancelled(t *testing.T) {
	t.Parallel()
	m, _ := mount(t, []Server{stdioServer(t, "x", "")}, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	r := lookup(t, m, "mcp__x__slow").Run(ctx, json.RawMessage(`{"ms":10000}`))
	wantFail(t, r, tools.CodeCancelled)
}

func TestToolErrors(t *testing.T) {
	t.Parallel()
	m, _ := mount(t, []Server{httpServer(t, "x")}, Options{})
	wantFail(t, call(t, m, "mcp__x__fail", `{}`), CodeToolError, "it failed on purpose")
	wantFail(t, call(t, m, "mcp__x__reject", `{}`), CodeCallFailed, "rejected on purpose")
	wantFail(t, call(t, m, "mcp__x__echo", `[1]`), tools.CodeInputInvalid)
	wantFail(t, call(t, m, "mcp__x__echo", `{"text":`), tools.CodeInputInvalid)
}

func TestContentKinds(t *testing.T) {
	t.Parallel()
	m, _ := mount(t, []Server{stdioServer(t, "x", "")}, Options{})
	r := call(t, m, "mcp__x__resources", `{}`)
	want := []string{
		"[Resource file:///notes.txt]\nthe notes",
		"[Resource file:///data.bin: binary content (application/octet-stream, 4 bytes), not shown.]",
		"[Resource link: https://example.com/report (report, text/html, 1.2 KB)]",
		"[Audio (audio/wav, 4 bytes) not shown: the model cannot hear it.]",
	}
	var got []string
	for _, b := range r.Content {
		got = append(got, b.Text)
	}
	if r.IsError || !slices.Equal(got, want) {
		t.Fatalf("content %q, want %q", got, want)
	}
	wantText(t, call(t, m, "mcp__x__structured", `{}`), `{"answer":42}`)
}

func TestImages(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		size  string
		opts  Options
		media string // "" = no image block
		note  string
	}{
		{name: "small image as is", size: "small", media: "image/png"},
		{name: "large image downsampled", size: "large", media: "image/jpeg", note: "shown downsampled to 2000x250 jpeg"},
		{name: "downsampling off", size: "large", opts: Options{Downsample: imagefit.NoDownsample}, note: "downsampling is off"},
	}
	m0, _ := mount(t, []Server{stdioServer(t, "x", "")}, Options{})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := m0
			if c.opts.Downsample != nil {
				m, _ = mount(t, []Server{stdioServer(t, "x", "")}, c.opts)
			}
			r := call(t, m, "mcp__x__image", `{"size":"`+c.size+`"}`)
			if r.IsError {
				t.Fatalf("result %+v", r)
			}
			var images []model.Block
			for _, b := range r.Content {
				if b.Kind == model.KindImage {
					images = append(images, b)
				}
			}
			switch {
			case c.media == "" && len(images) != 0:
				t.Fatalf("an image over the limits was sent: %d blocks", len(images))
			case c.media != "" && (len(images) != 1 || images[0].MediaType != c.media):
				t.Fatalf("images %d, want one %s: %q", len(images), c.media, r.TextOf())
			}
			if c.size == "small" && string(images[0].Data) != string(testserver.PNG(20, 10)) {
				t.Fatal("a small image was changed")
			}
			if !strings.Contains(r.TextOf(), c.note) {
				t.Fatalf("text %q lacks %q", r.TextOf(), c.note)
			}
		})
	}
}

func TestOutputLimit(t *testing.T) {
	t.Parallel()
	m, log := mount(t, []Server{stdioServer(t, "x", "")}, Options{OutputLimit: 100})
	r := call(t, m, "mcp__x__big", `{"bytes":1000}`)
	if r.IsError || len(r.Content) != 2 || r.Content[0].Text != strings.Repeat("x", 400) {
		t.Fatalf("result %+v", r)
	}
	if note := r.Content[1].Text; !strings.Contains(note, "400 of 1000 bytes") || !strings.Contains(note, "600 bytes (about 150 tokens) cut") {
		t.Fatalf("note %q", note)
	}
	n := log.await(t, CodeOutputTruncated)
	if n.Detail["tool"] != "mcp__x__big" || n.Detail["cut_bytes"] != 600 {
		t.Fatalf("notice %+v", n)
	}
	wantText(t, call(t, m, "mcp__x__big", `{"bytes":400}`), strings.Repeat("x", 400))
}

// An answer over the message limit fails its call with a code, and over stdio the
// server goes on serving.
func TestMessageLimit(t *testing.T) {
	t.Parallel()
	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		m, _ := mount(t, []Server{stdioServer(t, "x", "")}, Options{MessageLimit: 1 << 20})
		wantFail(t, call(t, m, "mcp__x__big", `{"bytes":5000000}`), CodeMessageTooLarge, "over the client's limit of 1048576 bytes")
		wantText(t, call(t, m, "mcp__x__echo", `{"text":"after"}`), "after")
		if st := m.Status(); st[0].State != StateConnected {
			t.Fatalf("status %+v", st)
		}
	})
	for _, s := range []func(testing.TB, string) Server{httpServer, sseServer} {
		srv := s(t, "x")
		t.Run(srv.Type, func(t *testing.T) {
			t.Parallel()
			m, log := mount(t, []Server{srv}, Options{MessageLimit: 1 << 20, CallTimeout: 10 * time.Second})
			if r := call(t, m, "mcp__x__big", `{"bytes":900000}`); r.IsError {
				t.Fatalf("a message under the limit failed: %s", r.Code)
			}
			wantFail(t, call(t, m, "mcp__x__big", `{"bytes":5000000}`), CodeMessageTooLarge, "limit of 1048576 bytes")
			n := log.await(t, CodeServerFailed)
			if !strings.Contains(n.Message, "a message over the limit") {
				t.Fatalf("notice %+v", n)
			}
		})
	}
}

// A 100 MB answer over stdio costs the client about the message limit in memory, not
// 100 MB, and the session survives it. (The test server writes it a piece at a time,
// see testserver's huge tool; the client reads every byte of it.)
func TestHugeAnswerStaysBounded(t *testing.T) {
	m, _ := mount(t, []Server{stdioServer(t, "x", "")}, Options{})
	before := heapAlloc()
	wantFail(t, call(t, m, "mcp__x__huge", `{"bytes":100000000}`), CodeMessageTooLarge)
	if grew := heapAlloc() - before; grew > 3*DefaultMessageLimit {
		t.Fatalf("the client allocated %d MB for one 100 MB answer", grew>>20)
	}
	wantText(t, call(t, m, "mcp__x__echo", `{"text":"after"}`), "after")
}

func TestListChanged(t *testing.T) {
	t.Parallel()
	for _, s := range []func(testing.TB, string) Server{func(t testing.TB, n string) Server { return stdioServer(t, n, "") }, httpServer, sseServer} {
		srv := s(t, "x")
		t.Run(srv.Type, func(t *testing.T) {
			t.Parallel()
			changed := make(chan struct{}, 10)
			m, log := mount(t, []Server{srv}, Options{OnChange: func() { changed <- struct{}{} }})
			before := len(m.Tools())
			wantText(t, call(t, m, "mcp__x__add_tool", `{"name":"fresh"}`), "added")
			select {
			case <-changed:
			case <-time.After(10 * time.Second):
				t.Fatal("OnChange was not called")
			}
			if got := len(m.Tools()); got != before+1 {
				t.Fatalf("%d tools after the change, want %d", got, before+1)
			}
			wantText(t, call(t, m, "mcp__x__fresh", `{}`), "added tool fresh")
			n := log.await(t, CodeToolsChanged)
			if added, _ := n.Detail["added"].([]string); !slices.Equal(added, []string{"mcp__x__fresh"}) {
				t.Fatalf("notice %+v", n)
			}
			if st := m.Status(); !slices.Contains(st[0].Tools, "mcp__x__fresh") {
				t.Fatalf("status %+v", st)
			}
		})
	}
}

// A server that sends list_changed thousands of times is re-listed a bounded number of
// times, and a list that did not change is not announced.
func TestListChangedFlood(t *testing.T) {
	t.Parallel()
	calls := 0
	var mu sync.Mutex
	m, log := mount(t, []Server{stdioServer(t, "x", "")}, Options{OnChange: func() { mu.Lock(); calls++; mu.Unlock() }})
	began := time.Now()
	wantText(t, call(t, m, "mcp__x__flood", `{"count":20000}`), "sent 20000")
	time.Sleep(500 * time.Millisecond)
	elapsed := time.Since(began)
	r := call(t, m, "mcp__x__lists", `{}`)
	var lists int
	if err := json.Unmarshal([]byte(r.TextOf()), &lists); err != nil {
		t.Fatal(r.TextOf())
	}
	if bound := 1 + int(elapsed/relistSpacing) + 2; lists > bound {
		t.Fatalf("%d listings in %v for 20000 notifications, want at most %d", lists, elapsed, bound)
	}
	if lists < 2 {
		t.Fatalf("%d listings: the flood was not noticed at all", lists)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 0 || len(log.of(CodeToolsChanged)) != 0 {
		t.Fatalf("OnChange called %d times, notices %v, for a list that did not change", calls, log.of(CodeToolsChanged))
	}
}

func TestCrashMidCall(t *testing.T) {
	t.Parallel()
	m, log := mount(t, []Server{stdioServer(t, "x", "")}, Options{})
	wantFail(t, call(t, m, "mcp__x__crash", `{}`), CodeServerGone, "went away", "crashing on purpose")
	n := log.await(t, CodeServerFailed)
	if n.Detail["server"] != "x" || !strings.Contains(n.Message, "ended while the run was using it") {
		t.Fatalf("notice %+v", n)
	}
	wantFail(t, call(t, m, "mcp__x__echo", `{}`), CodeServerGone, "is gone")
	if st := m.Status(); st[0].State != StateFailed || !strings.Contains(st[0].Error, "exit status 3") {
		t.Fatalf("status %+v", st)
	}
}

func TestRoots(t *testing.T) {
	t.Parallel()
	a, b := t.TempDir(), t.TempDir()
	m, _ := mount(t, []Server{stdioServer(t, "x", "")}, Options{Roots: []string{a, b}})
	wantText(t, call(t, m, "mcp__x__roots", `{}`), "file://"+a+"\nfile://"+b)
}

func TestCloseEndsEverything(t *testing.T) {
	t.Parallel()
	m, _ := mount(t, []Server{stdioServer(t, "x", ""), httpServer(t, "h")}, Options{})
	slow := lookup(t, m, "mcp__x__slow")
	done := make(chan tools.Result, 1)
	go func() { done <- slow.Run(context.Background(), json.RawMessage(`{"ms":60000}`)) }()
	time.Sleep(200 * time.Millisecond)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		wantFail(t, r, CodeServerGone)
	case <-time.After(10 * time.Second):
		t.Fatal("a call in flight outlived Close")
	}
	if err := m.Close(); err != nil {
		t.Fatal("a second Close:", err)
	}
	for _, st := range m.Status() {
		if st.State != StateClosed {
			t.Fatalf("status %+v", st)
		}
	}
	wantFail(t, call(t, m, "mcp__x__echo", `{}`), CodeServerGone, "closed")
	wantFail(t, call(t, m, "mcp__h__echo", `{}`), CodeServerGone, "closed")
}

// Two tools that ToolName would give one name both stay callable, the later one under
// the hashed name, and a name once given stays.
func TestNameCollisionsInOneMount(t *testing.T) {
	t.Parallel()
	changed := make(chan struct{}, 10)
	m, _ := mount(t, []Server{stdioServer(t, "a", ""), stdioServer(t, "a__b", "")}, Options{OnChange: func() { changed <- struct{}{} }})
	wantText(t, call(t, m, "mcp__a__add_tool", `{"name":"b__echo"}`), "added")
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("OnChange was not called")
	}
	hashed := hashedName(plainName("a", "b__echo"), "a", "b__echo")
	wantText(t, call(t, m, hashed, `{}`), "added tool b__echo")
	wantText(t, call(t, m, "mcp__a__b__echo", `{"text":"the other"}`), "the other")
	names := tools.Roster(m.Tools()).Names()
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Fatalf("%s is mounted twice", n)
		}
		seen[n] = true
	}
}

// isDeadline reports whether err wraps context.DeadlineExceeded.
func isDeadline(err error) bool { return errors.Is(err, context.DeadlineExceeded) }

// heapAlloc is the bytes this process has allocated so far.
func heapAlloc() int {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int(ms.TotalAlloc)
}
