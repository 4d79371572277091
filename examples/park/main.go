// Command park shows a question outliving its process. `park start` runs a task whose
// Write question parks on the state directory and prints how to answer it; `park approve`,
// in another process (a service handler, hours later), claims the checkpoint and runs
// exactly the stored call. A checkpoint is claimed once: approving twice is refused.
//
//	go run ./examples/park start                     # prints: approve STATE ROOT SESSION CHECKPOINT
//	go run ./examples/park approve STATE ROOT SESSION CHECKPOINT
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/examples/internal/demo"
	"github.com/sema-agent/sema/statedir"
)

func main() {
	ctx := context.Background()
	if len(os.Args) == 2 && os.Args[1] == "start" {
		root, state := demo.Workspace("CHANGES.md", "# changes\n")
		dir := demo.Must(statedir.Open(ctx, state))
		defer dir.Close()
		runner := agent.New(agent.Deps{Provider: demo.Model()}.WithStateDir(dir))
		res := demo.Must(runner.Run(ctx, agent.TaskSpec{Prompt: "add a line to CHANGES.md", Root: root, OnAsk: agent.OnAskPark}))
		cp, ok := res.Parked()
		if !ok {
			demo.Must(0, fmt.Errorf("the run ended %s without a question", res.Status))
		}
		fmt.Printf("%s asks: %s\n", cp.Tool, cp.Message)
		fmt.Println("approve", state, root, res.SessionID, cp.ID)
		return
	}
	if len(os.Args) != 6 || os.Args[1] != "approve" {
		demo.Must(0, fmt.Errorf("usage: park start | park approve STATE ROOT SESSION CHECKPOINT"))
	}
	state, root, session, checkpoint := os.Args[2], os.Args[3], os.Args[4], os.Args[5]
	dir := demo.Must(statedir.Open(ctx, state))
	defer dir.Close()
	runner := agent.New(agent.Deps{Provider: demo.Model()}.WithStateDir(dir))
	res := demo.Must(runner.Resume(ctx, agent.TaskSpec{Root: root, Resume: &agent.Resume{SessionID: session}}, agent.Answer{CheckpointID: checkpoint, Allow: true}))
	fmt.Println(res.Status, res.Result)
	fmt.Println("CHANGES.md:", demo.Read(filepath.Join(root, "CHANGES.md")))
}
