// Command embed is the library in one screen: a task streamed event by event, whose
// permission question a Go approver answers, on the state directory's SQLite store; then
// the task's turns (TaskResult.FirstTurn) are rewound. Without ANTHROPIC_API_KEY a
// scripted model plays the model's side. It imports only sema's public packages, so it can
// be copied out of this repository as it is.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/anthropic"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/statedir"
)

func main() {
	ctx := context.Background()
	root, state := workspace("CHANGES.md", "# changes\n")
	dir := must(statedir.Open(ctx, state)) // Deps.Store, History and StateDir in one
	defer dir.Close()

	allow := permission.ApproverFunc(func(ctx context.Context, q permission.ApprovalRequest) (permission.ApprovalDecision, error) {
		fmt.Println("asked:", q.Tool, "-", q.Ask.Reason)
		return permission.ApprovalDecision{Behavior: permission.Allow}, nil
	})
	runner := agent.New(agent.Deps{Provider: provider(), Approver: allow}.WithStateDir(dir))
	var res *agent.TaskResult
	for ev, err := range runner.Events(ctx, agent.TaskSpec{Prompt: "add a line to CHANGES.md", Root: root}) {
		must(ev, err) // break would cancel the run
		fmt.Println("event:", ev.Type)
		res = ev.Result // set on the last event only
	}
	fmt.Println(res.Status, read(root, "CHANGES.md"))

	// Undo the whole task: back to the start of its first turn.
	must(runner.Rewind(ctx, agent.RewindSpec{SessionID: res.SessionID, ToTurn: res.FirstTurn, Files: true}))
	fmt.Println("rewound:", read(root, "CHANGES.md"))
}

// provider is Anthropic's model when ANTHROPIC_API_KEY is set; otherwise a scripted one
// that reads the file, writes it and says so.
func provider() model.Provider {
	if os.Getenv("ANTHROPIC_API_KEY") != "" {
		return must(anthropic.FromEnv())
	}
	return scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "Read", Input: json.RawMessage(`{"file_path":"CHANGES.md"}`)}}},
		{ToolCalls: []scripted.ToolCall{{Name: "Write", Input: json.RawMessage(`{"file_path":"CHANGES.md","content":"# changes\n- one more line\n"}`)}}},
		{Text: "Added one line to CHANGES.md."},
	}})
}

// workspace makes a task root holding one file, and a state directory beside it (never
// inside it: the state directory is denied to every tool), under SEMA_EXAMPLE_DIR when it
// is set, else under a new temporary directory.
func workspace(name, content string) (root, state string) {
	base := os.Getenv("SEMA_EXAMPLE_DIR")
	if base == "" {
		base = must(os.MkdirTemp("", "sema-embed-"))
	}
	root, state = filepath.Join(base, "work"), filepath.Join(base, "state")
	must(0, os.MkdirAll(root, 0o755))
	must(0, os.WriteFile(filepath.Join(root, name), []byte(content), 0o644))
	return root, state
}

// read returns a file of the task root, quoted, for printing.
func read(root, name string) string {
	b, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return fmt.Sprintf("%q", b)
}

// must returns v, or ends the program with err.
func must[T any](v T, err error) T {
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	return v
}
