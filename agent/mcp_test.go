package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/mcp"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/tools"
)

// mcpServer is a real MCP server (the official SDK's) over streamable HTTP: a
// read-only-hinted tool, a write tool, a tool that declares it needs a person, and a
// tool that adds another tool (a list change) when called.
type mcpServer struct {
	srv      *sdk.Server
	url      string
	mu       sync.Mutex
	calls    []string
	listings atomic.Int32
}

func newMCPServer(t *testing.T) *mcpServer {
	t.Helper()
	m := &mcpServer{srv: sdk.NewServer(&sdk.Implementation{Name: "test", Version: "1"}, nil)}
	obj := map[string]any{"type": "object"}
	add := func(tool *sdk.Tool, answer string) {
		tool.InputSchema = obj
		m.srv.AddTool(tool, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			m.mu.Lock()
			m.calls = append(m.calls, req.Params.Name)
			m.mu.Unlock()
			if req.Params.Name == "grow" {
				m.srv.AddTool(&sdk.Tool{Name: "grown", Description: "appeared later", InputSchema: obj}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
					m.mu.Lock()
					m.calls = append(m.calls, "grown")
					m.mu.Unlock()
					return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "grown answers"}}}, nil
				})
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: answer}}}, nil
		})
	}
	add(&sdk.Tool{Name: "lookup", Description: "reads", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, "looked up")
	add(&sdk.Tool{Name: "store", Description: "writes"}, "stored")
	add(&sdk.Tool{Name: "confirm", Description: "needs a person", Meta: sdk.Meta{"requiresUserInteraction": true}}, "confirmed")
	add(&sdk.Tool{Name: "grow", Description: "adds a tool"}, "grew")
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return m.srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Count the listings the client asks for, so a test can wait for a re-listing.
		if r.Body != nil {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"tools/list"`)) {
				m.listings.Add(1)
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	m.url = hs.URL
	return m
}

func (m *mcpServer) called() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.calls...)
}

func (m *mcpServer) config(name string) []mcp.Server {
	return []mcp.Server{{Name: name, Type: "http", URL: m.url, Source: "test"}}
}

// mcpRun runs one turn of calls to MCP tools and returns the results by call id.
func mcpRun(t *testing.T, deps agent.Deps, spec agent.TaskSpec, calls ...scripted.ToolCall) (*agent.TaskResult, map[string]string, map[string]bool) {
	t.Helper()
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{{ToolCalls: calls}, {Text: "done"}}})
	deps.Provider = p
	res, err := agent.New(deps).Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	texts, errs := map[string]string{}, map[string]bool{}
	for _, m := range res.Messages {
		for _, b := range m.Content {
			if b.Kind == "tool_result" {
				texts[b.ID], errs[b.ID] = tools.Result{Content: b.Content}.TextOf(), b.IsError
			}
		}
	}
	return res, texts, errs
}

func mcpCall(id, name string) scripted.ToolCall {
	return scripted.ToolCall{ID: id, Name: name, Input: json.RawMessage(`{}`)}
}

// An MCP tool states no permission of its own: its call is a question unless a rule
// answers it; an allow rule for the whole server runs it; bypassPermissions runs it.
func TestMCPToolsMeetTheGate(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	root := t.TempDir()
	deps := agent.Deps{MCP: &agent.MCPOptions{Servers: srv.config("srv")}}
	_, texts, errs := mcpRun(t, deps, agent.TaskSpec{Prompt: "x", Root: root, OnAsk: agent.OnAskDeny}, mcpCall("a", "mcp__srv__lookup"))
	if !errs["a"] || len(srv.called()) != 0 {
		t.Fatalf("without a rule: %q, server saw %v", texts["a"], srv.called())
	}
	res, texts, errs := mcpRun(t, deps, agent.TaskSpec{Prompt: "x", Root: root, OnAsk: agent.OnAskDeny, AllowedTools: []string{"mcp__srv"}},
		mcpCall("a", "mcp__srv__lookup"), mcpCall("b", "mcp__srv__store"))
	if errs["a"] || errs["b"] || texts["a"] != "looked up" || texts["b"] != "stored" {
		t.Fatalf("with an allow rule: %v %v", texts, errs)
	}
	if len(res.Manifest.MCPServers) != 1 || res.Manifest.MCPServers[0].State != "connected" {
		t.Fatalf("manifest %+v", res.Manifest.MCPServers)
	}
	_, _, errs = mcpRun(t, deps, agent.TaskSpec{Prompt: "x", Root: root, PermissionMode: permission.ModeBypassPermissions}, mcpCall("a", "mcp__srv__store"))
	if errs["a"] {
		t.Fatal("bypassPermissions refused an MCP tool")
	}
	// A deny rule for one tool wins over the server's allow.
	_, _, errs = mcpRun(t, deps, agent.TaskSpec{Prompt: "x", Root: root, AllowedTools: []string{"mcp__srv"}, DisallowedTools: []string{"mcp__srv__store"}},
		mcpCall("b", "mcp__srv__store"))
	if !errs["b"] {
		t.Fatal("a deny rule did not refuse the tool")
	}
}

// plan runs a read-only-hinted tool and asks for a write tool, even with an allow rule;
// a deployment's declared write effect outranks the server's hint.
func TestMCPToolsInPlanMode(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	root := t.TempDir()
	spec := agent.TaskSpec{Prompt: "x", Root: root, PermissionMode: permission.ModePlan, OnAsk: agent.OnAskDeny, AllowedTools: []string{"mcp__srv"}}
	_, texts, errs := mcpRun(t, agent.Deps{MCP: &agent.MCPOptions{Servers: srv.config("srv")}}, spec, mcpCall("r", "mcp__srv__lookup"), mcpCall("w", "mcp__srv__store"))
	if errs["r"] || !errs["w"] {
		t.Fatalf("plan: %v %v", texts, errs)
	}
	declared := agent.Deps{MCP: &agent.MCPOptions{Servers: srv.config("srv"), ToolEffects: map[string]tools.Effect{"mcp__srv__lookup": tools.EffectWrite}}}
	_, _, errs = mcpRun(t, declared, spec, mcpCall("r", "mcp__srv__lookup"))
	if !errs["r"] {
		t.Fatal("a declared write effect did not outrank the server's readOnlyHint")
	}
}

// A tool whose server says every call needs a person asks one, even in
// bypassPermissions with an allow rule.
func TestMCPRequiresUserInteraction(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	var asked []string
	approver := permission.ApproverFunc(func(_ context.Context, req permission.ApprovalRequest) (permission.ApprovalDecision, error) {
		asked = append(asked, req.Tool)
		return permission.ApprovalDecision{Behavior: permission.Deny, Reason: "no"}, nil
	})
	spec := agent.TaskSpec{Prompt: "x", Root: t.TempDir(), PermissionMode: permission.ModeBypassPermissions, AllowedTools: []string{"mcp__srv"}}
	_, _, errs := mcpRun(t, agent.Deps{MCP: &agent.MCPOptions{Servers: srv.config("srv")}, Approver: approver}, spec, mcpCall("c", "mcp__srv__confirm"))
	if !errs["c"] || len(asked) != 1 || asked[0] != "mcp__srv__confirm" {
		t.Fatalf("asked %v, refused %v", asked, errs["c"])
	}
}

// A server that fails to start is a notice and the run goes on; a required one refuses
// the run.
func TestMCPServerThatFailsToStart(t *testing.T) {
	t.Parallel()
	gone := []mcp.Server{{Name: "gone", Type: "http", URL: "http://127.0.0.1:1/mcp", Source: "test"}}
	res, _, _ := mcpRun(t, agent.Deps{MCP: &agent.MCPOptions{Servers: gone}}, agent.TaskSpec{Prompt: "x", Root: t.TempDir()})
	found := false
	for _, n := range res.Notices {
		found = found || n.Code == mcp.CodeServerFailed
	}
	if res.Status != sema.StatusCompleted || !found {
		t.Fatalf("%s, notices %+v", res.Status, res.Notices)
	}
	gone[0].Required = true
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "never"}}})
	_, err := agent.New(agent.Deps{Provider: p, MCP: &agent.MCPOptions{Servers: gone}}).Run(context.Background(), agent.TaskSpec{Prompt: "x", Root: t.TempDir()})
	if sema.CodeOf(err) != mcp.CodeServerRequired {
		t.Fatalf("a required server that failed: %v", err)
	}
}

// The workspace's .mcp.json starts only when the deployment trusts it.
func TestProjectMCPNeedsTrust(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	root := t.TempDir()
	cfg := `{"mcpServers": {"proj": {"type": "http", "url": "` + srv.url + `"}}}`
	if err := os.WriteFile(filepath.Join(root, ".mcp.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := agent.TaskSpec{Prompt: "x", Root: root, PermissionMode: permission.ModeBypassPermissions}
	res, _, errs := mcpRun(t, agent.Deps{}, spec, mcpCall("a", "mcp__proj__lookup"))
	untrusted := false
	for _, n := range res.Notices {
		untrusted = untrusted || n.Code == agent.CodeMCPProjectUntrusted
	}
	if !errs["a"] || !untrusted || len(res.Manifest.MCPServers) != 0 {
		t.Fatalf("untrusted: refused %v, notice %v, servers %+v", errs["a"], untrusted, res.Manifest.MCPServers)
	}
	_, texts, errs := mcpRun(t, agent.Deps{MCP: &agent.MCPOptions{TrustProject: true}}, spec, mcpCall("a", "mcp__proj__lookup"))
	if errs["a"] || texts["a"] != "looked up" {
		t.Fatalf("trusted: %v", texts)
	}
}

// A server's list change reaches the leg: the next request offers the new tool, and a
// call to it runs.
func TestMCPListChangedRefreshesTheRoster(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{mcpCall("g", "mcp__srv__grow")}},
		{ToolCalls: []scripted.ToolCall{{ID: "l", Name: "LS", Input: json.RawMessage(`{"path":"."}`)}}},
		{ToolCalls: []scripted.ToolCall{mcpCall("n", "mcp__srv__grown")}},
		{Text: "done"},
	}})
	// The notification and the re-listing travel while the model "thinks" about its
	// second turn; the third request is built after they arrived.
	slow := &slowSecond{Provider: p, ready: func() bool { return srv.listings.Load() >= 2 }}
	res, err := agent.New(agent.Deps{Provider: slow, MCP: &agent.MCPOptions{Servers: srv.config("srv")}}).Run(context.Background(),
		agent.TaskSpec{Prompt: "x", Root: t.TempDir(), PermissionMode: permission.ModeBypassPermissions})
	if err != nil {
		t.Fatal(err)
	}
	offered := func(i int) bool {
		for _, s := range p.Requests()[i].Tools {
			if s.Name == "mcp__srv__grown" {
				return true
			}
		}
		return false
	}
	if offered(0) || !offered(2) {
		t.Fatalf("offered before %v, after %v", offered(0), offered(2))
	}
	if got := srv.called(); len(got) != 2 || got[1] != "grown" || res.Status != sema.StatusCompleted {
		t.Fatalf("server calls %v, status %s", got, res.Status)
	}
}

// A delegated child uses its parent's servers (nothing starts twice).
func TestChildUsesTheParentsMCPServers(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	in, _ := json.Marshal(map[string]string{"description": "look", "prompt": "CHILD look it up", "subagent_type": "general-purpose"})
	p := scripted.New(scripted.Script{
		Turns:   []scripted.Turn{{ToolCalls: []scripted.ToolCall{{ID: "t", Name: "Task", Input: in}}}, {Text: "done"}},
		Threads: []scripted.Thread{{Match: "CHILD", Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{mcpCall("c", "mcp__srv__lookup")}}, {Text: "child looked"}}}},
	})
	res, err := agent.New(agent.Deps{Provider: p, MCP: &agent.MCPOptions{Servers: srv.config("srv")}}).Run(context.Background(),
		agent.TaskSpec{Prompt: "x", Root: t.TempDir(), PermissionMode: permission.ModeBypassPermissions})
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.called(); len(got) != 1 || got[0] != "lookup" || res.Subagents[0].Status != sema.StatusCompleted {
		t.Fatalf("server calls %v, child %+v", got, res.Subagents)
	}
	if !strings.Contains(res.Result, "done") {
		t.Fatalf("result %q", res.Result)
	}
}

// slowSecond answers its second request once ready says the server re-listed its tools,
// and a moment more for the client to mount them (at most 10 s).
type slowSecond struct {
	*scripted.Provider
	ready func() bool
	n     int
}

func (s *slowSecond) Stream(ctx context.Context, req *model.Request, d func(model.Delta)) (*model.Response, error) {
	s.n++
	if s.n == 2 {
		for deadline := time.Now().Add(10 * time.Second); !s.ready() && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return s.Provider.Stream(ctx, req, d)
}
