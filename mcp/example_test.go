package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/mcp"
)

// A configuration in Claude Code's mcpServers format, read, expanded and mounted. The
// server here is an in-process MCP server on a loopback HTTP listener, standing in for
// a real one; a stdio server ("command", "args") mounts the same way.
func ExampleStart() {
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return upperServer() }, nil))
	defer ts.Close()

	config := []byte(`{"mcpServers": {"text": {"type": "http", "url": "${TEXT_MCP_URL}"}}}`)
	servers, err := mcp.ParseConfig(config, "example.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	vars := map[string]string{"TEXT_MCP_URL": ts.URL}
	lookup := func(name string) (string, bool) { v, ok := vars[name]; return v, ok }
	for i := range servers {
		if servers[i], err = servers[i].Expand(lookup); err != nil {
			fmt.Println(err)
			return
		}
	}

	ctx := context.Background()
	mount, err := mcp.Start(ctx, servers, mcp.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mount.Close()

	for _, st := range mount.Status() {
		fmt.Println(st.Name, st.State, st.Tools)
	}
	for _, t := range mount.Tools() {
		spec := t.Spec()
		// Every MCP tool sits in the passthrough seat: the permission gate asks for it.
		fmt.Println(spec.Name, spec.PermissionSeat, spec.ReadOnlyHint)
		r := t.Run(ctx, json.RawMessage(`{"text":"hello"}`))
		fmt.Println(r.IsError, r.TextOf())
	}
	// Output:
	// text connected [mcp__text__upper]
	// mcp__text__upper passthrough true
	// false HELLO
}

// upperServer is an MCP server with one tool, upper, that answers its text in capitals.
func upperServer() *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "text", Version: "1"}, nil)
	type input struct {
		Text string `json:"text"`
	}
	sdk.AddTool(srv, &sdk.Tool{
		Name:        "upper",
		Description: "Upper-cases a text.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true},
	}, func(ctx context.Context, req *sdk.CallToolRequest, in input) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.ToUpper(in.Text)}}}, nil, nil
	})
	return srv
}

// ParseConfig reads a file's "mcpServers" exactly, and refuses what it cannot read by
// name rather than guessing: here a url without a "type" (the transport is never
// guessed).
func ExampleParseConfig() {
	servers, err := mcp.ParseConfig([]byte(`{
		"mcpServers": {
			"files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${PROJECT:-.}"]},
			"docs": {"type": "sse", "url": "https://docs.example.com/sse", "required": true}
		},
		"otherSetting": true
	}`), ".mcp.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range servers {
		fmt.Println(s.Name, s.Type, s.Command, s.Args, s.URL, s.Required)
	}

	_, err = mcp.ParseConfig([]byte(`{"mcpServers": {"docs": {"url": "https://docs.example.com/mcp"}}}`), ".mcp.json")
	fmt.Println(sema.CodeOf(err))
	// Output:
	// docs sse  [] https://docs.example.com/sse true
	// files stdio npx [-y @modelcontextprotocol/server-filesystem ${PROJECT:-.}]  false
	// mcp.config_invalid
}

// Expand resolves ${NAME} and ${NAME:-DEFAULT} in Command, Args, Env, URL and header
// values; a variable that is unset and has no default is refused, never left as text.
func ExampleServer_Expand() {
	lookup := func(name string) (string, bool) {
		if name == "API_TOKEN" {
			return "s3cret", true
		}
		return "", false
	}
	s := mcp.Server{
		Name:    "api",
		Type:    mcp.TypeHTTP,
		URL:     "${API_URL:-https://api.example.com}/mcp",
		Headers: map[string]string{"Authorization": "Bearer ${API_TOKEN}"},
	}
	expanded, err := s.Expand(lookup)
	fmt.Println(expanded.URL, expanded.Headers["Authorization"], err)

	s.URL = "${API_URL}/mcp"
	_, err = s.Expand(lookup)
	fmt.Println(sema.CodeOf(err))
	// Output:
	// https://api.example.com/mcp Bearer s3cret <nil>
	// mcp.config_invalid
}

// A server's tools are named mcp__SERVER__TOOL, so none shadows an engine tool, and
// permission rules written for Claude Code name the same tools.
func ExampleToolName() {
	fmt.Println(mcp.ToolName("github", "create_issue"))
	fmt.Println(mcp.ToolName("my.server", "Write"))
	// Output:
	// mcp__github__create_issue
	// mcp__my_server__Write
}
