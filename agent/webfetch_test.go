package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/tools"
	"github.com/sema-agent/sema/tools/web"
)

// pageMarker is in the test page only, so the scripted model tells the summary request
// (whose first message holds the page) from the task's own conversation.
const pageMarker = "ZEBRA-7431"

const summaryAnswer = "The page says --frozen keeps the lock file."

// webSite is a loopback server with one HTML page; hits counts its requests.
func webSite(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<html><body><h1>Flags</h1><p>%s: <code>--frozen</code> keeps the lock file.</p></body></html>", pageMarker)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// webScript calls WebFetch once, then ends; its thread answers the summary request.
func webScript(url string) scripted.Script {
	in, _ := json.Marshal(map[string]string{"url": url, "prompt": "what does --frozen do?"})
	return scripted.Script{
		Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{{Name: "WebFetch", Input: in}}},
			{Text: "done"},
		},
		Threads: []scripted.Thread{{Match: pageMarker, Turns: []scripted.Turn{
			{Text: summaryAnswer, Usage: &model.Usage{InputTokens: 100, OutputTokens: 10}},
		}}},
	}
}

// loopbackFetch is the deployment of a test whose page is on 127.0.0.1.
func loopbackFetch() *agent.WebFetchOptions {
	return &agent.WebFetchOptions{AllowPrivate: true, PlainHTTP: true}
}

func webFetchResult(t *testing.T, res *agent.TaskResult) model.Block {
	t.Helper()
	if res.Status != sema.StatusCompleted {
		t.Fatalf("status %s, error %v", res.Status, res.Error)
	}
	got := toolResults(t, res, 1)
	if len(got) != 1 || got[0].Kind != model.KindToolResult {
		t.Fatalf("results %+v", got)
	}
	return got[0]
}

func blockText(b model.Block) string {
	var s string
	for _, c := range b.Content {
		s += c.Text
	}
	return s
}

// The permission gate judges WebFetch as a passthrough read: a question in every mode
// but bypassPermissions unless a rule allows the host, never a write in plan mode, and a
// deny rule refuses it in every mode.
func TestWebFetchThroughTheGate(t *testing.T) {
	t.Parallel()
	const rule127 = "WebFetch(domain:127.0.0.1)"
	for _, tc := range []struct {
		name         string
		mode         permission.Mode
		allow, deny  []string
		opts         *agent.WebFetchOptions
		readOnly     bool
		runs         bool
		reasonHas    string
		wantInResult string
	}{
		{name: "default, no rule: a question nobody answers", mode: permission.ModeDefault, opts: loopbackFetch(),
			reasonHas: "states no permission of its own"},
		{name: "dontAsk, no rule: denied", mode: permission.ModeDontAsk, opts: loopbackFetch(), reasonHas: "WebFetch"},
		{name: "acceptEdits, no rule: a question", mode: permission.ModeAcceptEdits, opts: loopbackFetch(), reasonHas: "states no permission"},
		{name: "plan, no rule: the ordinary question, not the plan's", mode: permission.ModePlan, opts: loopbackFetch(), reasonHas: "states no permission"},
		{name: "default, allow rule for the host: runs and answers", mode: permission.ModeDefault, allow: []string{rule127}, opts: loopbackFetch(),
			runs: true, wantInResult: summaryAnswer},
		{name: "default, allow rule for another host: a question", mode: permission.ModeDefault, allow: []string{"WebFetch(domain:example.com)"}, opts: loopbackFetch(),
			reasonHas: "states no permission"},
		{name: "plan, allow rule: runs", mode: permission.ModePlan, allow: []string{rule127}, opts: loopbackFetch(),
			runs: true, wantInResult: summaryAnswer},
		{name: "read-only leg, allow rule: runs", mode: permission.ModeDefault, allow: []string{rule127}, opts: loopbackFetch(), readOnly: true,
			runs: true, wantInResult: summaryAnswer},
		{name: "bypassPermissions, no rule: runs", mode: permission.ModeBypassPermissions, opts: loopbackFetch(),
			runs: true, wantInResult: summaryAnswer},
		{name: "deny rule refuses, with an allow rule beside it", mode: permission.ModeDefault, allow: []string{rule127}, deny: []string{rule127}, opts: loopbackFetch(),
			reasonHas: "denied by the rule WebFetch(domain:127.0.0.1)"},
		{name: "deny rule refuses in bypassPermissions", mode: permission.ModeBypassPermissions, deny: []string{"WebFetch"}, opts: loopbackFetch(),
			reasonHas: "denied by the rule WebFetch"},
		{name: "allowed, but the deployment keeps private addresses refused", mode: permission.ModeDefault, allow: []string{rule127},
			opts: &agent.WebFetchOptions{PlainHTTP: true}, runs: true, wantInResult: "does not connect to 127.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, hits := webSite(t)
			p := scripted.New(webScript(srv.URL + "/flags"))
			r := agent.New(agent.Deps{Provider: p, WebFetch: tc.opts})
			s := spec(t)
			s.PermissionMode, s.AllowedTools, s.DisallowedTools, s.ReadOnly = tc.mode, tc.allow, tc.deny, tc.readOnly
			res, err := r.Run(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(res.Manifest.Tools, "WebFetch") {
				t.Fatalf("WebFetch is not mounted: %v", res.Manifest.Tools)
			}
			got := webFetchResult(t, res)
			text := blockText(got)
			if !tc.runs {
				if !got.IsError || len(res.PermissionDenials) != 1 || res.PermissionDenials[0].Tool != "WebFetch" {
					t.Fatalf("the call was not refused: %q, denials %+v", text, res.PermissionDenials)
				}
				if !strings.Contains(text, tc.reasonHas) {
					t.Fatalf("the refusal %q does not say %q", text, tc.reasonHas)
				}
				if hits.Load() != 0 {
					t.Fatal("a refused call reached the server")
				}
				return
			}
			if len(res.PermissionDenials) != 0 {
				t.Fatalf("denials %+v", res.PermissionDenials)
			}
			if !strings.Contains(text, tc.wantInResult) {
				t.Fatalf("the result %q lacks %q", text, tc.wantInResult)
			}
		})
	}
}

// The summary is a side request to the leg's own model: the page as the user message,
// the prompt after it, a short system prompt, no tools; its tokens count in the run.
func TestWebFetchSummaryRequest(t *testing.T) {
	t.Parallel()
	srv, hits := webSite(t)
	p := scripted.New(webScript(srv.URL + "/flags"))
	r := agent.New(agent.Deps{Provider: p, WebFetch: loopbackFetch()})
	s := spec(t)
	s.Model = "test-model"
	s.PermissionMode = permission.ModeBypassPermissions
	res, err := r.Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if got := blockText(webFetchResult(t, res)); got != summaryAnswer {
		t.Fatalf("result %q", got)
	}
	if hits.Load() != 1 {
		t.Fatalf("hits %d", hits.Load())
	}
	var side *model.Request
	for _, req := range p.Requests() {
		if len(req.Messages) > 0 && strings.Contains(blockText(model.Block{Content: req.Messages[0].Content}), pageMarker) {
			side = req
		}
	}
	if side == nil {
		t.Fatal("no summary request was made")
	}
	msg := blockText(model.Block{Content: side.Messages[0].Content})
	for _, want := range []string{"# Flags", "`--frozen` keeps the lock file.", srv.URL + "/flags", "what does --frozen do?"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the summary request lacks %q:\n%s", want, msg)
		}
	}
	if len(side.Messages) != 1 || len(side.Tools) != 0 || side.Model != "test-model" ||
		!strings.Contains(side.System, "page's content only") || !strings.Contains(side.System, "does not answer") {
		t.Fatalf("summary request: model %q, %d messages, %d tools, system %q", side.Model, len(side.Messages), len(side.Tools), side.System)
	}
	if res.Usage.InputTokens < 100 || res.Usage.OutputTokens < 10 {
		t.Fatalf("the summary's usage is not counted: %+v", res.Usage)
	}
}

// A long page is cut to the side request's budget, and the request says so.
func TestWebFetchSummaryBudget(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, pageMarker+strings.Repeat("x", 150_000))
	}))
	t.Cleanup(srv.Close)
	p := scripted.New(webScript(srv.URL))
	r := agent.New(agent.Deps{Provider: p, WebFetch: loopbackFetch()})
	s := spec(t)
	s.PermissionMode = permission.ModeBypassPermissions
	if _, err := r.Run(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	for _, req := range p.Requests() {
		msg := blockText(model.Block{Content: req.Messages[0].Content})
		if !strings.Contains(msg, pageMarker) {
			continue
		}
		if n := strings.Count(msg, "x"); n > 100_000 || n < 99_000 {
			t.Fatalf("the summary request holds %d characters of the page", n)
		}
		if !strings.Contains(msg, "goes on for") {
			t.Fatalf("the summary request does not say the page was cut")
		}
		return
	}
	t.Fatal("no summary request was made")
}

func TestWebFetchOptions(t *testing.T) {
	t.Parallel()
	srv, _ := webSite(t)
	t.Run("raw returns the Markdown without asking the model", func(t *testing.T) {
		t.Parallel()
		opts := loopbackFetch()
		opts.Raw = true
		p := scripted.New(webScript(srv.URL))
		r := agent.New(agent.Deps{Provider: p, WebFetch: opts})
		s := spec(t)
		s.PermissionMode = permission.ModeBypassPermissions
		res, err := r.Run(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if got := blockText(webFetchResult(t, res)); !strings.Contains(got, "# Flags") || !strings.Contains(got, pageMarker) {
			t.Fatalf("result %q", got)
		}
		if n := len(p.Requests()); n != 2 {
			t.Fatalf("%d model requests, want the two turns only", n)
		}
	})
	t.Run("off leaves it unmounted", func(t *testing.T) {
		t.Parallel()
		r := agent.New(agent.Deps{Provider: scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "ok"}}}), WebFetch: &agent.WebFetchOptions{Off: true}})
		res, err := r.Run(context.Background(), spec(t))
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(res.Manifest.Tools, "WebFetch") {
			t.Fatalf("tools %v", res.Manifest.Tools)
		}
	})
	t.Run("a deployment's own WebFetch replaces the runner's", func(t *testing.T) {
		t.Parallel()
		own := tools.Func(tools.Spec{Name: web.Name, Description: "mine", InputSchema: json.RawMessage(`{"type":"object"}`), Effect: tools.EffectRead},
			func(context.Context, json.RawMessage) tools.Result { return tools.Text("the deployment's fetch") })
		p := scripted.New(webScript(srv.URL))
		r := agent.New(agent.Deps{Provider: p, Tools: []tools.Tool{own}})
		s := spec(t)
		s.PermissionMode = permission.ModeBypassPermissions
		res, err := r.Run(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if n := slices.Index(res.Manifest.Tools, "WebFetch"); n < 0 || slices.Index(res.Manifest.Tools[n+1:], "WebFetch") >= 0 {
			t.Fatalf("tools %v", res.Manifest.Tools)
		}
		if got := blockText(webFetchResult(t, res)); got != "the deployment's fetch" {
			t.Fatalf("result %q", got)
		}
	})
	for _, o := range []agent.WebFetchOptions{{MaxBytes: -1}, {Timeout: -time.Second}} {
		r := agent.New(agent.Deps{Provider: scripted.New(scripted.Script{}), WebFetch: &o})
		_, err := r.Run(context.Background(), spec(t))
		if sema.CodeOf(err) != agent.CodeWebFetchInvalid {
			t.Errorf("options %+v: got %v, want %s", o, err, agent.CodeWebFetchInvalid)
		}
	}
}
