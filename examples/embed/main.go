// Command embed is the library in one screen: a task streamed event by event, a question
// parked on the state directory's SQLite store, answered later by a second runner with a
// Go approver for what comes after, and the session rewound. Without ANTHROPIC_API_KEY it
// runs a scripted model (examples/internal/demo).
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
	dir := demo.Must(statedir.Open(ctx, state))
	defer dir.Close()
	spec := agent.TaskSpec{Prompt: "add a line to CHANGES.md", Root: root, OnAsk: agent.OnAskPark}
	parking := agent.New(dir.Deps(agent.Deps{Provider: demo.Model()}))
	var parked *agent.TaskResult
	for ev, err := range parking.Events(ctx, spec) { // break would cancel the run
		demo.Must(ev, err)
		fmt.Println("event:", ev.Type)
		parked = ev.Result
	}
	cp, ok := parked.Parked()
	fmt.Println("parked:", ok, cp.Tool)
	yes := permission.ApproverFunc(func(ctx context.Context, q permission.ApprovalRequest) (permission.ApprovalDecision, error) {
		return permission.ApprovalDecision{Behavior: permission.Allow}, nil
	})
	later := agent.New(dir.Deps(agent.Deps{Provider: demo.Model(), Approver: yes}))
	res := demo.Must(later.Resume(ctx, agent.TaskSpec{Root: root, Resume: &agent.Resume{SessionID: parked.SessionID}}, agent.Answer{CheckpointID: cp.ID, Allow: true}))
	fmt.Println("resumed:", res.Status, demo.Read(filepath.Join(root, "CHANGES.md")))
	demo.Must(later.Rewind(ctx, agent.RewindSpec{SessionID: res.SessionID, ToTurn: 1, Files: true}))
	fmt.Println("rewound:", demo.Read(filepath.Join(root, "CHANGES.md")))
}
