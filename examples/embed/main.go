// Command embed is the library in one screen: a task streamed event by event, whose
// question parks (TaskSpec.OnAsk) on the state directory's SQLite store; a second runner
// answers it later (Runner.Resume) with a Go approver for what comes after; then the
// task's turns (TaskResult.FirstTurn) are rewound. Without ANTHROPIC_API_KEY it runs a
// scripted model (examples/internal/demo).
package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/examples/internal/demo"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/statedir"
)

func main() {
	ctx := context.Background()
	root, state := demo.Workspace("CHANGES.md", "# changes\n")
	dir := demo.Must(statedir.Open(ctx, state)) // Deps.Store, History and StateDir in one
	defer dir.Close()

	spec := agent.TaskSpec{Prompt: "add a line to CHANGES.md", Root: root, OnAsk: agent.OnAskPark}
	runner := agent.New(agent.Deps{Provider: demo.Model()}.WithStateDir(dir))
	var parked *agent.TaskResult
	for ev, err := range runner.Events(ctx, spec) { // break would cancel the run
		demo.Must(ev, err)
		fmt.Println("event:", ev.Type)
		parked = ev.Result // set on the last event only
	}
	cp, ok := parked.Parked()
	fmt.Println("parked:", ok, cp.Tool)

	// Later, in any process: answer the question; the approver answers what comes next.
	yes := permission.ApproverFunc(func(ctx context.Context, q permission.ApprovalRequest) (permission.ApprovalDecision, error) {
		return permission.ApprovalDecision{Behavior: permission.Allow}, nil
	})
	later := agent.New(agent.Deps{Provider: demo.Model(), Approver: yes}.WithStateDir(dir))
	again := agent.TaskSpec{Root: root, Resume: &agent.Resume{SessionID: parked.SessionID}}
	res := demo.Must(later.Resume(ctx, again, agent.Answer{CheckpointID: cp.ID, Allow: true}))
	fmt.Println("resumed:", res.Status, demo.Read(filepath.Join(root, "CHANGES.md")))

	// Undo the whole task: back to the start of its first turn.
	demo.Must(later.Rewind(ctx, agent.RewindSpec{SessionID: res.SessionID, ToTurn: parked.FirstTurn, Files: true}))
	fmt.Println("rewound:", demo.Read(filepath.Join(root, "CHANGES.md")))
}
