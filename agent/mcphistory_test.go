package agent_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/mcp"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/tools"
)

// fsServer is a real MCP server (the official SDK's, over streamable HTTP) whose tools
// change files in dir behind the runner's back, as a filesystem or code-generating
// server does: "rewrite" edits and creates, "purge" removes.
func fsServer(t *testing.T, dir string) []mcp.Server {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "fs", Version: "1"}, nil)
	obj := map[string]any{"type": "object"}
	srv.AddTool(&sdk.Tool{Name: "rewrite", Description: "edits files", InputSchema: obj, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("rewritten by the server\n"), 0o644)
			os.WriteFile(filepath.Join(dir, "made.txt"), []byte("made by the server\n"), 0o644)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "rewrote"}}}, nil
		})
	srv.AddTool(&sdk.Tool{Name: "purge", Description: "removes a file", InputSchema: obj},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			os.Remove(filepath.Join(dir, "keep.txt"))
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "purged"}}}, nil
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return []mcp.Server{{Name: "fs", Type: "http", URL: hs.URL, Source: "test"}}
}

// What an MCP tool changes in the write roots is in file history, whatever its server
// hints: a rewind to the turn restores the edited file, removes the created one and
// brings back the removed one. A deployment that declares the tool read-only is taken
// at its word: its calls are not walked, and then nothing is recorded.
func TestRewindRestoresWhatAnMCPToolChanged(t *testing.T) {
	for _, declared := range []bool{false, true} {
		root, err := filepath.EvalSymlinks(t.TempDir())
		must(t, err)
		must(t, os.WriteFile(filepath.Join(root, "notes.txt"), []byte("my notes\n"), 0o644))
		must(t, os.WriteFile(filepath.Join(root, "keep.txt"), []byte("keep me\n"), 0o600))
		model := scripted.New(scripted.Script{Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{mcpCall("c1", "mcp__fs__rewrite")}},
			{ToolCalls: []scripted.ToolCall{mcpCall("c2", "mcp__fs__purge")}},
			{Text: "Done."},
		}})
		rules, err := permission.ParseRules([]string{"mcp__fs"}, nil, nil)
		must(t, err)
		opts := &agent.MCPOptions{Servers: fsServer(t, root)}
		if declared {
			opts.ToolEffects = map[string]tools.Effect{"mcp__fs": tools.EffectRead}
		}
		runner := agent.New(agent.Deps{Provider: model, Store: session.NewMemory(), History: history.NewMemory(), Policy: &agent.Policy{Rules: rules},
			Shell: &agent.ShellOptions{Sandbox: "off"}, MCP: opts})
		res, err := runner.Run(context.Background(), agent.TaskSpec{Prompt: "use the server", Root: root})
		must(t, err)
		if b, _ := os.ReadFile(filepath.Join(root, "made.txt")); string(b) != "made by the server\n" {
			t.Fatalf("the server's tool did not run: made.txt %q; result %+v", b, res)
		}
		rw, err := runner.Rewind(context.Background(), agent.RewindSpec{SessionID: res.SessionID, ToTurn: res.FirstTurn, Files: true})
		if declared {
			if err != nil || rw.Ledger == nil || len(rw.Ledger.Entries) != 0 {
				t.Fatalf("declared read-only: rewind %+v, %v; want nothing recorded", rw, err)
			}
			continue
		}
		must(t, err)
		if b, _ := os.ReadFile(filepath.Join(root, "notes.txt")); string(b) != "my notes\n" {
			t.Errorf("notes.txt after the rewind: %q", b)
		}
		if b, _ := os.ReadFile(filepath.Join(root, "keep.txt")); string(b) != "keep me\n" {
			t.Errorf("keep.txt after the rewind: %q", b)
		}
		if _, err := os.Stat(filepath.Join(root, "made.txt")); !os.IsNotExist(err) {
			t.Errorf("made.txt after the rewind: %v; want it gone", err)
		}
		if len(rw.Ledger.Entries) != 3 {
			t.Errorf("ledger %+v; want the three files", rw.Ledger.Entries)
		}
	}
}
