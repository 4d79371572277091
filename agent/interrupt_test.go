package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
)

// A refusal that asks to stop the task (ApprovalDecision.Interrupt) is recorded as a
// refusal — its permission event, then the call's permission.denied result — and only
// then does the task end cancelled: no later call of the turn runs, and the model is not
// asked again. That holds for a call the write lane asks about and for one the gate asks
// about itself, for the task's own calls and a child's; an allow that carries the flag
// changes nothing.
func TestInterruptingRefusalIsRecordedThenStopsTheTask(t *testing.T) {
	t.Parallel()
	bash := func(id, cmd string) scripted.ToolCall {
		b, _ := json.Marshal(map[string]string{"command": cmd})
		return scripted.ToolCall{ID: id, Name: "Bash", Input: b}
	}
	named := func(c scripted.ToolCall, id string) scripted.ToolCall { c.ID = id; return c }
	cases := []struct {
		name     string
		turns    []scripted.Turn
		threads  []scripted.Thread
		asked    string // the call refused with the interrupt
		behavior permission.Behavior
		never    []string // files no call may have written
		stopped  bool
	}{
		{name: "a lane write, then a command", asked: "w1", behavior: permission.Deny, stopped: true, never: []string{"a.txt", "b.txt"},
			turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{named(write("a.txt", "a\n"), "w1"), bash("b1", "echo b > b.txt")}}, {Text: "went on"}}},
		{name: "a command, then a lane write", asked: "b1", behavior: permission.Deny, stopped: true, never: []string{"a.txt", "b.txt"},
			turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{bash("b1", "echo b > b.txt"), named(write("a.txt", "a\n"), "w1")}}, {Text: "went on"}}},
		{name: "a child's write stops its parent", asked: "cw", behavior: permission.Deny, stopped: true, never: []string{"c.txt", "a.txt"},
			turns: []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{taskCall("task_1", "general-purpose", "write it", "CHILD: write c.txt")}},
				{ToolCalls: []scripted.ToolCall{named(write("a.txt", "a\n"), "w1")}},
				{Text: "went on"},
			},
			threads: []scripted.Thread{{Match: "CHILD", Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{named(write("c.txt", "c\n"), "cw")}}, {Text: "child went on"}}}}},
		{name: "an allow ignores the flag", asked: "w1", behavior: permission.Allow, stopped: false,
			turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{named(write("a.txt", "a\n"), "w1")}}, {Text: "went on"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			p := scripted.New(scripted.Script{Turns: c.turns, Threads: c.threads})
			approver := permission.ApproverFunc(func(_ context.Context, req permission.ApprovalRequest) (permission.ApprovalDecision, error) {
				if req.ToolUseID == c.asked {
					return permission.ApprovalDecision{Behavior: c.behavior, Reason: "stop here", Interrupt: true}, nil
				}
				return permission.ApprovalDecision{Behavior: permission.Allow}, nil
			})
			r := agent.New(agent.Deps{Provider: p, Approver: approver, Delegation: &agent.Delegation{MaxDepth: 1}})
			evs, res := collect(t, r.Events(context.Background(), agent.TaskSpec{Prompt: "go", Root: root}))
			if res == nil {
				t.Fatal("no result")
			}
			if !c.stopped {
				if res.Status != sema.StatusCompleted || res.Result != "went on" {
					t.Fatalf("an allow stopped the task: %s %+v %q", res.Status, res.Error, res.Result)
				}
				return
			}
			if res.Status != sema.StatusCancelled || res.Error == nil || res.Error.Code != "run.cancelled" {
				t.Fatalf("result %s %+v, want cancelled (run.cancelled)", res.Status, res.Error)
			}
			for _, f := range c.never {
				if _, err := os.Stat(filepath.Join(root, f)); !os.IsNotExist(err) {
					t.Errorf("%s exists (%v): a call ran after the interrupting refusal", f, err)
				}
			}
			// The refusal's event comes first, then the call's result, which is the
			// refusal: not a permission check that "did not answer".
			denial, result := -1, -1
			for i, ev := range evs {
				switch {
				case ev.Type == agent.EventPermission && ev.Denial != nil && ev.Denial.ToolUseID == c.asked:
					denial = i
				case ev.Type == agent.EventToolResult && ev.ToolResult.ID == c.asked:
					result = i
					if ev.ToolResult.Code != permission.CodeDenied || !ev.ToolResult.IsError {
						t.Errorf("the refused call's result %+v, want %s", ev.ToolResult, permission.CodeDenied)
					}
				}
			}
			if denial < 0 || result < 0 || denial > result {
				t.Fatalf("the denial event at %d and the call's result at %d: want both, the denial first", denial, result)
			}
			found := false
			for _, d := range res.PermissionDenials {
				found = found || d.ToolUseID == c.asked
			}
			if !found {
				t.Errorf("the refusal is not among the result's denials: %+v", res.PermissionDenials)
			}
			// The model heard nothing after the turn the refusal ended: the task's own
			// leg made one request (two with a child: the parent's and the child's).
			want := 1
			if c.threads != nil {
				want = 2
			}
			if n := len(p.Requests()); n != want {
				t.Errorf("%d model requests, want %d: the task went on after the interrupt", n, want)
			}
		})
	}
}
