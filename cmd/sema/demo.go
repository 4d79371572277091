package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
)

// demoFiles is the workspace the demo works in: a tiny Go program with a typo.
var demoFiles = map[string]string{
	"go.mod": "module example.com/greet\n\ngo 1.26\n",
	"main.go": `package main

import "fmt"

// greeting returns the line main prints.
func greeting(name string) string {
	// TODO: greet by time of day.
	return fmt.Sprintf("Helo, %s!", name)
}

func main() {
	fmt.Println(greeting("world"))
}
`,
	"README.md": "# greet\n\nPrints a greeting.\n",
}

// demoScript is what the scripted model "says": it explores the workspace with the read
// tools, fixes the typo through the write lane, and summarizes.
func demoScript() scripted.Script {
	call := func(name string, input map[string]any) scripted.ToolCall {
		b, _ := json.Marshal(input)
		return scripted.ToolCall{Name: name, Input: b}
	}
	return scripted.Script{Turns: []scripted.Turn{
		{Text: "I'll have an Explore agent survey the workspace first.", ToolCalls: []scripted.ToolCall{
			call("Task", map[string]any{"description": "survey the workspace", "subagent_type": "Explore",
				"prompt": "Survey this Go workspace: list the Go files and every TODO or FIXME note, with file and line."}),
		}},
		{Text: "Let me read main.go.", ToolCalls: []scripted.ToolCall{
			call("Read", map[string]any{"file_path": "main.go"}),
		}},
		{Text: `The greeting says "Helo". I'll fix the typo.`, ToolCalls: []scripted.ToolCall{
			call("Edit", map[string]any{"file_path": "main.go", "old_string": `"Helo, %s!"`, "new_string": `"Hello, %s!"`}),
		}},
		{Text: "Fixed the typo in main.go: greeting now prints \"Hello, world!\". There is one open TODO (greet by time of day)."},
	}, Threads: []scripted.Thread{{Match: "Survey this Go workspace", Turns: []scripted.Turn{
		{Text: "Looking for Go files and notes.", ToolCalls: []scripted.ToolCall{
			call("Glob", map[string]any{"pattern": "**/*.go"}),
			call("Grep", map[string]any{"pattern": "TODO|FIXME", "output_mode": "content", "-n": true}),
		}},
		{Text: "One Go file, main.go; one note: main.go:7 TODO: greet by time of day."},
	}}}}
}

func newDemoCmd(stdout, stderr io.Writer) *cobra.Command {
	var keep bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the built-in scripted demo in a temporary workspace (no API key needed)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := os.MkdirTemp("", "sema-demo-")
			if err != nil {
				return &exitErr{code: exitError, err: err}
			}
			if !keep {
				defer os.RemoveAll(dir)
			}
			for name, body := range demoFiles {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					return &exitErr{code: exitError, err: err}
				}
			}
			fmt.Fprintln(stdout, "sema demo — DEMO MODE: a scripted model replays a fixed conversation; no API is called.")
			fmt.Fprintf(stdout, "workspace: %s\n\n", dir)
			runner := agent.New(agent.Deps{Provider: scripted.New(demoScript())})
			spec := agent.TaskSpec{
				Prompt:         "Fix the typo in the greeting and tell me what else is left to do.",
				Root:           dir,
				PermissionMode: permission.ModeBypassPermissions,
			}
			fmt.Fprintf(stdout, "prompt: %s\n\n", spec.Prompt)
			var res *agent.TaskResult
			for ev, err := range runner.Events(cmd.Context(), spec) {
				if err != nil {
					return &exitErr{code: exitError, err: err}
				}
				showDemoEvent(stdout, ev)
				if ev.Type == agent.EventResult {
					res = ev.Result
				}
			}
			fmt.Fprintf(stdout, "\nstatus: %s · turns: %d · tokens in/out: %d/%d (estimated; scripted model)\n",
				res.Status, res.NumTurns, res.Usage.InputTokens, res.Usage.OutputTokens)
			if len(res.EditedFiles) > 0 {
				fmt.Fprintf(stdout, "edited: %s\n", strings.Join(res.EditedFiles, ", "))
			}
			if keep {
				fmt.Fprintf(stdout, "the workspace is kept at %s\n", dir)
			}
			fmt.Fprint(stdout, demoNextSteps(onPath("sema")))
			if res.Status != sema.StatusCompleted {
				err := error(sema.Errorf("demo.failed", "the demo ended with status %s", res.Status))
				if res.Error != nil {
					err = res.Error
				}
				return &exitErr{code: exitError, err: err}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the demo workspace afterwards")
	return cmd
}

// showDemoEvent prints one step of the demo for a person to follow; a delegated agent's
// steps are indented under its Task call.
func showDemoEvent(w io.Writer, ev agent.Event) {
	if ev.ParentToolUseID != "" {
		w = indented{w}
	}
	switch ev.Type {
	case agent.EventSubagentStart:
		fmt.Fprintf(w, "    ⤷ agent %s started: %s\n", ev.Subagent.Type, ev.Subagent.Description)
	case agent.EventSubagentEnd:
		fmt.Fprintf(w, "    ⤶ agent %s %s after %d turns\n", ev.Subagent.Type, ev.Subagent.Status, ev.Subagent.NumTurns)
	case agent.EventInit:
		fmt.Fprintf(w, "tools: %s\n\n", strings.Join(ev.Manifest.Tools, ", "))
	case agent.EventAssistant:
		for _, b := range ev.Message.Content {
			if b.Text != "" {
				fmt.Fprintf(w, "model › %s\n", b.Text)
			}
		}
	case agent.EventToolUse:
		fmt.Fprintf(w, "  ▸ %s %s\n", ev.ToolUse.Name, ev.ToolUse.Input)
	case agent.EventToolResult:
		mark := "✓"
		if ev.ToolResult.IsError {
			mark = "✗ " + ev.ToolResult.Code
		}
		fmt.Fprintf(w, "    %s\n", mark)
		lines := strings.Split(strings.TrimRight(ev.ToolResult.Text, "\n"), "\n")
		const max = 12
		for i, line := range lines {
			if i == max {
				fmt.Fprintf(w, "    │ … %d more lines\n", len(lines)-max)
				break
			}
			fmt.Fprintf(w, "    │ %s\n", line)
		}
	case agent.EventNotice:
		fmt.Fprintf(w, "notice: %s (%s)\n", ev.Notice.Message, ev.Notice.Code)
	}
}

// indented writes a delegated agent's lines one step further in.
type indented struct{ w io.Writer }

func (i indented) Write(p []byte) (int, error) {
	lines := strings.SplitAfter(string(p), "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString("      │ " + l)
		}
	}
	if _, err := io.WriteString(i.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// demoNextSteps is what the demo ends with: how to install sema when no sema is on PATH
// (the demo was most likely started with go run), then how to run a real model.
func demoNextSteps(installed bool) string {
	steps := "\n"
	if !installed {
		steps += "To install sema: `go install ./cmd/sema` in this checkout (it goes to $(go env GOPATH)/bin; put that\n" +
			"directory on your PATH), or `go build -o sema ./cmd/sema` for a binary here.\n"
	}
	return steps + "To run a real model: export ANTHROPIC_API_KEY=… and `sema run \"explain this repository\"` in a repo.\n"
}

// onPath reports whether a program named name is on PATH.
func onPath(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}
