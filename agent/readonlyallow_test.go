package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model/scripted"
)

// A deployment's read-only allowlist narrows the permission fold's "read-only needs no
// question" answer as well as bash_readonly: one list for both.
func TestReadonlyAllowNarrowsTheFoldToo(t *testing.T) {
	t.Parallel()
	run := func(shell *agent.ShellOptions) *agent.TaskResult {
		root := t.TempDir()
		if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		model := scripted.New(scripted.Script{Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{{Name: "Bash", Input: json.RawMessage(`{"command":"cat a.txt"}`)}}},
			{Text: "done"},
		}})
		res, err := agent.New(agent.Deps{Provider: model, Shell: shell}).Run(context.Background(), agent.TaskSpec{Prompt: "read", Root: root})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := run(&agent.ShellOptions{Sandbox: "off"}); len(res.PermissionDenials) != 0 {
		t.Fatalf("with the built-in list, cat a.txt needs no question: %+v", res.PermissionDenials)
	}
	res := run(&agent.ShellOptions{Sandbox: "off", ReadonlyAllow: []string{"ls"}})
	if len(res.PermissionDenials) != 1 || res.PermissionDenials[0].Tool != "Bash" {
		t.Fatalf("with a list of only ls, cat a.txt must be a question (refused, nobody to ask): %+v", res.PermissionDenials)
	}
}
