package mcp

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sema-agent/sema/mcp/internal/testserver"
)

// BenchmarkStartStdio50Tools measures a start from nothing to 50 mounted tools: the
// process start, the handshake and the listing, and the Close that follows.
func BenchmarkStartStdio50Tools(b *testing.B) {
	srv := stdioServer(b, "bench", "tools=50")
	for b.Loop() {
		m, err := Start(context.Background(), []Server{srv}, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if n := len(m.Tools()); n != 50 {
			b.Fatalf("%d tools mounted, want 50", n)
		}
		m.Close()
	}
}

// BenchmarkCallRoundTrip measures one call through the adapter: Run on a mounted
// stdio tool, to the Result. Compare BenchmarkCallDirect.
func BenchmarkCallRoundTrip(b *testing.B) {
	m, _ := mount(b, []Server{stdioServer(b, "bench", "")}, Options{})
	echo := lookup(b, m, "mcp__bench__echo")
	input := json.RawMessage(`{"text":"hello"}`)
	ctx := context.Background()
	for b.Loop() {
		if r := echo.Run(ctx, input); r.IsError || r.TextOf() != "hello" {
			b.Fatalf("result %+v", r)
		}
	}
}

// BenchmarkCallDirect measures the same call on a bare SDK session over the SDK's own
// command transport: the floor the adapter adds its work to.
func BenchmarkCallDirect(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), testserver.EnvVar+"=")
	ctx := context.Background()
	client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "0"}, nil)
	session, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, &sdk.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		b.Fatal(err)
	}
	defer session.Close()
	params := &sdk.CallToolParams{Name: "echo", Arguments: json.RawMessage(`{"text":"hello"}`)}
	for b.Loop() {
		res, err := session.CallTool(ctx, params)
		if err != nil || res.IsError || len(res.Content) != 1 {
			b.Fatalf("result %+v, %v", res, err)
		}
	}
}
