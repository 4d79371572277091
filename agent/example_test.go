package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/session"
)

// A run parks at a question, and a later call answers it: the stored call runs once.
func ExampleRunner_Resume() {
	ctx := context.Background()
	root, _ := os.MkdirTemp("", "example-")
	defer os.RemoveAll(root)

	store := session.NewMemory()
	hist := history.NewMemory()
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "Write", Input: json.RawMessage(`{"file_path":"notes.md","content":"hello\n"}`)}}},
		{Text: "Wrote notes.md."},
	}})
	runner := agent.New(agent.Deps{Provider: p, Store: store, History: hist})

	res, _ := runner.Run(ctx, agent.TaskSpec{Prompt: "write the notes", Root: root, OnAsk: agent.OnAskPark})
	cp, parked := res.Parked()
	if !parked {
		fmt.Println("not parked:", res.Status)
		return
	}
	fmt.Println(res.Status, cp.Tool)

	res, _ = runner.Resume(ctx, agent.TaskSpec{Root: root, OnAsk: agent.OnAskPark, Resume: &agent.Resume{SessionID: res.SessionID}},
		agent.Answer{CheckpointID: cp.ID, Allow: true})
	// The resumed leg may park again at the model's next question; this one does not.
	if next, again := res.Parked(); again {
		fmt.Println("parked again at", next.Tool)
		return
	}
	b, _ := os.ReadFile(root + "/notes.md")
	fmt.Printf("%s %q %q\n", res.Status, res.Result, b)
	// Output:
	// awaiting_approval Write
	// completed "Wrote notes.md." "hello\n"
}
