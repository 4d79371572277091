package mcpservers

import (
	"context"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/sema-agent/sema/mcp"
	"github.com/sema-agent/sema/settings"
)

const root = "/work"

// read serves the workspace's .mcp.json, declaring the server "a".
func read(_ context.Context, path string) ([]byte, error) {
	if path == filepath.Join(root, ProjectFile) {
		return []byte(`{"mcpServers": {"a": {"command": "project-a"}}}`), nil
	}
	return nil, fs.ErrNotExist
}

// input has a server of each layer: the workspace's "a" and "ws", the user's settings'
// "a" and "b", the deployment's "b" and "c", the task's "c".
func input(trust, strict bool, held *[]mcp.Server) Input {
	return Input{
		Strict: strict, Trust: trust, Root: root, Read: read,
		Files: []settings.File{
			{Layer: settings.User, Path: "user.json", MCPServers: json.RawMessage(`{"a": {"command": "user-a"}, "b": {"command": "user-b"}}`)},
			{Layer: settings.Project, Path: "/work/.sema/settings.json", MCPServers: json.RawMessage(`{"ws": {"command": "ws"}}`)},
		},
		Deployment:  []mcp.Server{{Name: "b", Command: "deployment-b"}, {Name: "c", Command: "deployment-c"}},
		Task:        []mcp.Server{{Name: "c", Command: "task-c"}},
		LookupEnv:   func(string) (string, bool) { return "", false },
		OnUntrusted: func(p []mcp.Server) { *held = p },
	}
}

func commands(servers []mcp.Server) map[string]string {
	out := map[string]string{}
	for _, s := range servers {
		out[s.Name] = s.Command
		if s.Project != (s.Name == "ws" || s.Command == "project-a") {
			out[s.Name] += " (project marked wrong)"
		}
	}
	return out
}

// A later layer's server replaces an earlier one's of the same name; the workspace's are
// held back and heard of unless trusted; strict keeps the task's alone.
func TestCollect(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name          string
		trust, strict bool
		want          map[string]string
		held          int
	}{
		{"untrusted", false, false, map[string]string{"a": "user-a", "b": "deployment-b", "c": "task-c"}, 2},
		{"trusted", true, false, map[string]string{"a": "user-a", "b": "deployment-b", "c": "task-c", "ws": "ws"}, 0},
		{"strict", false, true, map[string]string{"c": "task-c"}, 0},
	} {
		var held []mcp.Server
		servers, untrusted, err := Collect(context.Background(), input(c.trust, c.strict, &held))
		if err != nil {
			t.Fatal(err)
		}
		got := commands(servers)
		if len(got) != len(c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
		for n, cmd := range c.want {
			if got[n] != cmd {
				t.Errorf("%s: server %s runs %q, want %q", c.name, n, got[n], cmd)
			}
		}
		if len(untrusted) != c.held || len(held) != c.held {
			t.Errorf("%s: %d held back, %d heard, want %d", c.name, len(untrusted), len(held), c.held)
		}
	}
}
