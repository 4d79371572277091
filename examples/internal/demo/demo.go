// Package demo is what the examples share so that each stays one screen: a workspace in a
// temporary directory, a model (Anthropic when ANTHROPIC_API_KEY is set, otherwise a
// scripted one), and Must for the errors an example has no better answer to.
package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/anthropic"
	"github.com/sema-agent/sema/model/scripted"
)

// Must returns v, or ends the program with err.
func Must[T any](v T, err error) T {
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	return v
}

// Workspace makes a temporary task root holding one file, and a state directory beside
// it (never inside it: the state directory is denied to every tool). SEMA_EXAMPLE_DIR,
// when set, is where they are made (and kept); otherwise a new temporary directory.
func Workspace(name, content string) (root, state string) {
	base := os.Getenv("SEMA_EXAMPLE_DIR")
	if base == "" {
		base = Must(os.MkdirTemp("", "sema-example-"))
	}
	root, state = filepath.Join(base, "work"), filepath.Join(base, "state")
	Must(0, os.MkdirAll(root, 0o755))
	Must(0, os.WriteFile(filepath.Join(root, name), []byte(content), 0o644))
	return root, state
}

// Read returns a file's content, quoted, for printing.
func Read(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return fmt.Sprintf("%q", b)
}

// Model is the example's model: Anthropic's when ANTHROPIC_API_KEY is set, else the
// scripted conversation Script.
func Model() model.Provider {
	if os.Getenv("ANTHROPIC_API_KEY") != "" {
		return Must(anthropic.FromEnv())
	}
	return conversation(Script)
}

// Script is the scripted model's side of the examples' task ("add a line to
// CHANGES.md"): read the file, write it, say so.
var Script = []scripted.Turn{
	{Text: "Reading the changelog.", ToolCalls: []scripted.ToolCall{{Name: "Read", Input: json.RawMessage(`{"file_path":"CHANGES.md"}`)}}},
	{Text: "Adding the line.", ToolCalls: []scripted.ToolCall{{Name: "Write", Input: json.RawMessage(`{"file_path":"CHANGES.md","content":"# changes\n- one more line\n"}`)}}},
	{Text: "Added one line to CHANGES.md."},
}

// conversation answers each request with the turn that follows the assistant messages
// already in it, so a resumed session — a new leg, a new Provider — picks up the script
// where the parked one stopped.
type conversation []scripted.Turn

func (c conversation) Name() string { return "scripted" }

func (c conversation) Stream(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	n := 0
	for _, m := range req.Messages {
		if m.Role == model.RoleAssistant {
			n++
		}
	}
	if n >= len(c) {
		n = len(c) - 1
	}
	return scripted.New(scripted.Script{Turns: c[n : n+1]}).Stream(ctx, req, onDelta)
}
