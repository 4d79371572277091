package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/sema-agent/sema"
)

// syncBuffer is a buffer the agent writes to from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// FuzzLine feeds the agent one line after initialize and checks that it does not
// panic and writes only JSON-RPC messages: answers with a result or an error object of
// a known code, or notifications.
func FuzzLine(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`,
		`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[{"name":"x","command":"true","args":[],"env":[]}]}}`,
		`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}`,
		`{"jsonrpc":"2.0","id":4,"method":"session/load","params":{"sessionId":"s","cwd":"/tmp","mcpServers":[]}}`,
		`{"jsonrpc":"2.0","id":5,"method":"session/set_mode","params":{"sessionId":"s","modeId":"plan"}}`,
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`,
		`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":9,"result":{"outcome":{"outcome":"cancelled"}}}`,
		`{"jsonrpc":"2.0","id":9,"error":{"code":-1,"message":"no"}}`,
		`[1,2]`, `null`, `{"jsonrpc":"2.0","id":[],"method":"x"}`, "{\"jsonrpc\":\"2.0\",\"id\":1e400,\"method\":\"x\"}", "\xff\xfe",
	} {
		f.Add(seed)
	}
	known := map[int]bool{CodeParseError: true, CodeInvalidRequest: true, CodeMethodNotFound: true, CodeInvalidParams: true,
		CodeInternalError: true, CodeResourceNotFound: true}
	f.Fuzz(func(t *testing.T, line string) {
		line = strings.ReplaceAll(line, "\n", " ") // one line
		var out syncBuffer
		opts := Options{NewID: func() string { return "s" }, Open: func(context.Context, SessionSetup) (*Session, error) {
			return nil, sema.Errorf("config.test", "no sessions here")
		}}
		in := `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":1}}` + "\n" + line + "\n"
		if err := Serve(context.Background(), opts, strings.NewReader(in), &out); err != nil {
			t.Fatalf("Serve: %v", err)
		}
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var m struct {
				JSONRPC string          `json:"jsonrpc"`
				Method  string          `json:"method"`
				Result  json.RawMessage `json:"result"`
				Error   *Error          `json:"error"`
			}
			var members map[string]json.RawMessage
			if err := json.Unmarshal([]byte(l), &m); err != nil || m.JSONRPC != "2.0" || json.Unmarshal([]byte(l), &members) != nil {
				t.Fatalf("for %q the agent wrote %q", line, l)
			}
			_, hasID := members["id"]
			switch {
			case m.Method != "":
			case !hasID:
				t.Fatalf("for %q an answer without an id: %q", line, l)
			case (m.Error == nil) == (m.Result == nil):
				t.Fatalf("for %q an answer with neither or both of result and error: %q", line, l)
			case m.Error != nil && (!known[m.Error.Code] || m.Error.Message == ""):
				t.Fatalf("for %q an error of no known code: %q", line, l)
			}
		}
	})
}
