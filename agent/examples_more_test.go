package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/tools"
)

// exampleRoot is a task root with one file, removed by the returned function.
func exampleRoot(name, content string) (string, func()) {
	root, _ := os.MkdirTemp("", "example-")
	os.WriteFile(filepath.Join(root, name), []byte(content), 0o644)
	return root, func() { os.RemoveAll(root) }
}

// One task, to its end: the scripted model reads a file and answers.
func ExampleRunner_Run() {
	root, done := exampleRoot("notes.txt", "alpha\nbeta\n")
	defer done()
	model := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "Read", Input: json.RawMessage(`{"file_path":"notes.txt"}`)}}},
		{Text: "Two lines: alpha and beta."},
	}})
	res, err := agent.New(agent.Deps{Provider: model}).Run(context.Background(), agent.TaskSpec{Prompt: "what is in notes.txt?", Root: root})
	if err != nil {
		fmt.Println("refused:", err) // a *sema.Error with a config.* code
		return
	}
	fmt.Println(res.Status, res.NumTurns, res.Result)
	// Output:
	// completed 2 Two lines: alpha and beta.
}

// The same run as a stream: range over the events; breaking out cancels the run.
func ExampleRunner_Events() {
	root, done := exampleRoot("notes.txt", "alpha\n")
	defer done()
	model := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "Read", Input: json.RawMessage(`{"file_path":"notes.txt"}`)}}},
		{Text: "One line."},
	}})
	runner := agent.New(agent.Deps{Provider: model})
	for ev, err := range runner.Events(context.Background(), agent.TaskSpec{Prompt: "read it", Root: root}) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		switch ev.Type {
		case agent.EventToolUse:
			fmt.Println("tool:", ev.ToolUse.Name)
		case agent.EventToolResult:
			fmt.Printf("result: %q\n", ev.ToolResult.Text)
		case agent.EventResult:
			fmt.Println("done:", ev.Result.Status)
		}
	}
	// Output:
	// tool: Read
	// result: "     1\talpha"
	// done: completed
}

// A Go function answers the questions a run puts to a person: here, writes to
// CHANGES.md are allowed and everything else is refused with a sentence the model sees.
func ExampleDeps_approver() {
	root, done := exampleRoot("CHANGES.md", "# changes\n")
	defer done()
	approve := permission.ApproverFunc(func(ctx context.Context, q permission.ApprovalRequest) (permission.ApprovalDecision, error) {
		var in struct {
			FilePath string `json:"file_path"`
		}
		json.Unmarshal(q.Input, &in)
		if q.Tool == "Write" && in.FilePath == "CHANGES.md" {
			return permission.ApprovalDecision{Behavior: permission.Allow}, nil
		}
		return permission.ApprovalDecision{Behavior: permission.Deny, Reason: "only CHANGES.md may change"}, nil
	})
	model := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "Write", Input: json.RawMessage(`{"file_path":"other.md","content":"x"}`)}}},
		{ToolCalls: []scripted.ToolCall{{Name: "Read", Input: json.RawMessage(`{"file_path":"CHANGES.md"}`)}}},
		{ToolCalls: []scripted.ToolCall{{Name: "Write", Input: json.RawMessage(`{"file_path":"CHANGES.md","content":"# changes\n- one\n"}`)}}},
		{Text: "Updated CHANGES.md."},
	}})
	res, _ := agent.New(agent.Deps{Provider: model, Approver: approve}).Run(context.Background(), agent.TaskSpec{Prompt: "update the changelog", Root: root})
	fmt.Println(res.Status, len(res.PermissionDenials), res.PermissionDenials[0].Tool)
	b, _ := os.ReadFile(filepath.Join(root, "CHANGES.md"))
	fmt.Printf("%q\n", b)
	// Output:
	// completed 1 Write
	// "# changes\n- one\n"
}

// File history makes every edit of the write tools undoable: rewinding to the run's first
// turn (TaskResult.FirstTurn) puts the file back as it was before the run.
func ExampleRunner_Rewind() {
	root, done := exampleRoot("main.go", "package main // helo\n")
	defer done()
	store, hist := session.NewMemory(), history.NewMemory()
	model := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "Read", Input: json.RawMessage(`{"file_path":"main.go"}`)}}},
		{ToolCalls: []scripted.ToolCall{{Name: "Edit", Input: json.RawMessage(`{"file_path":"main.go","old_string":"helo","new_string":"hello"}`)}}},
		{Text: "Fixed."},
	}})
	runner := agent.New(agent.Deps{Provider: model, Store: store, History: hist})
	res, _ := runner.Run(context.Background(), agent.TaskSpec{Prompt: "fix the typo", Root: root, PermissionMode: "acceptEdits"})
	b, _ := os.ReadFile(filepath.Join(root, "main.go"))
	fmt.Printf("after the run: %q\n", b)
	if _, err := runner.Rewind(context.Background(), agent.RewindSpec{SessionID: res.SessionID, ToTurn: res.FirstTurn, Files: true}); err != nil {
		fmt.Println(err)
	}
	b, _ = os.ReadFile(filepath.Join(root, "main.go"))
	fmt.Printf("after the rewind: %q\n", b)
	// Output:
	// after the run: "package main // hello\n"
	// after the rewind: "package main // helo\n"
}

// upper is a caller tool: it declares its effect (a read changes nothing), so the
// permission fold lets it run without a question.
type upper struct{}

func (upper) Spec() tools.Spec {
	return tools.Spec{Name: "Upper", Description: "Upper-cases a text.", Effect: tools.EffectRead,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)}
}

func (upper) Run(ctx context.Context, input json.RawMessage) tools.Result {
	var in struct{ Text string }
	if err := json.Unmarshal(input, &in); err != nil {
		return tools.Fail(tools.CodeInputInvalid, "the input is not {\"text\": string}")
	}
	out := []rune(in.Text)
	for i, r := range out {
		if r >= 'a' && r <= 'z' {
			out[i] = r - 'a' + 'A'
		}
	}
	return tools.Text(string(out))
}

// A tool of the embedding program's own, mounted with Deps.Tools.
func ExampleDeps_tools() {
	root, done := exampleRoot("x", "")
	defer done()
	model := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "Upper", Input: json.RawMessage(`{"text":"shout"}`)}}},
		{Text: "SHOUT it is."},
	}})
	for ev := range agent.New(agent.Deps{Provider: model, Tools: []tools.Tool{upper{}}}).Events(context.Background(), agent.TaskSpec{Prompt: "shout", Root: root}) {
		if ev.ToolResult != nil {
			fmt.Println(ev.ToolResult.Name, ev.ToolResult.Text)
		}
	}
	// Output:
	// Upper SHOUT
}

// A second run continues the session (TaskSpec.Resume): its turns continue the session's
// numbering, and Files returns the files to the start of a turn before it begins.
func ExampleResume() {
	root, done := exampleRoot("todo.txt", "buy milk\n")
	defer done()
	model := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "Write", Input: json.RawMessage(`{"file_path":"todo.txt","content":"buy oat milk\n"}`)}}},
		{Text: "Changed it."},
		{Text: "Back as it was."},
	}})
	runner := agent.New(agent.Deps{Provider: model, Store: session.NewMemory(), History: history.NewMemory()})
	first, _ := runner.Run(context.Background(), agent.TaskSpec{Prompt: "oat milk", Root: root, PermissionMode: "acceptEdits"})
	second, err := runner.Run(context.Background(), agent.TaskSpec{Prompt: "undo that", Root: root,
		Resume: &agent.Resume{SessionID: first.SessionID, Files: agent.RewindFilesTo(first.FirstTurn)}})
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	b, _ := os.ReadFile(filepath.Join(root, "todo.txt"))
	fmt.Printf("first %d..%d, second %d..%d, %q\n", first.FirstTurn, first.LastTurn, second.FirstTurn, second.LastTurn, b)
	// Output:
	// first 1..2, second 3..3, "buy milk\n"
}
