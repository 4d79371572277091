// Command approver answers the run's permission questions at the terminal: each question
// (the tool, its input, the gate's sentence) is printed, and a line on stdin answers it
// ("y" allows; anything else, or the end of input, refuses).
package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/examples/internal/demo"
	"github.com/sema-agent/sema/permission"
)

func main() {
	root, _ := demo.Workspace("CHANGES.md", "# changes\n")
	in := bufio.NewScanner(os.Stdin)
	ask := permission.ApproverFunc(func(ctx context.Context, q permission.ApprovalRequest) (permission.ApprovalDecision, error) {
		fmt.Printf("%s %s\n  %s\nallow? [y/N] ", q.Tool, q.Input, q.Ask.Reason)
		if in.Scan() && strings.TrimSpace(in.Text()) == "y" {
			fmt.Println()
			return permission.ApprovalDecision{Behavior: permission.Allow}, nil
		}
		fmt.Println()
		return permission.ApprovalDecision{Behavior: permission.Deny, Reason: "the person at the terminal said no"}, nil
	})
	runner := agent.New(agent.Deps{Provider: demo.Model(), Approver: ask})
	res := demo.Must(runner.Run(context.Background(), agent.TaskSpec{Prompt: "add a line to CHANGES.md", Root: root}))
	fmt.Println(res.Status, res.Result)
	fmt.Println("CHANGES.md:", demo.Read(filepath.Join(root, "CHANGES.md")))
}
