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

// A child leg's refused calls are the parent's refusals too: the parent's
// PermissionDenials lists them, each marked with the child it came from (the parent's
// Task call, the agent type, the child's session, and the grandchild under Nested), and
// the parent's own refusals stay unmarked.
func TestChildDenialsReachTheParentsResult(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	bash := func(id, cmd string) scripted.ToolCall {
		b, _ := json.Marshal(map[string]string{"command": cmd})
		return scripted.ToolCall{ID: id, Name: "Bash", Input: b}
	}
	childWrite := write("child.txt", "child\n")
	childWrite.ID = "child_write"
	parentWrite := write("parent.txt", "parent\n")
	parentWrite.ID = "parent_write"
	p := scripted.New(scripted.Script{
		Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{
				taskCall("task_w", "general-purpose", "write it", "CHILD-W: write child.txt"),
				taskCall("task_b", "general-purpose", "clean up", "CHILD-B: remove the build"),
				taskCall("task_n", "general-purpose", "delegate", "CHILD-N: hand it on"),
			}},
			{ToolCalls: []scripted.ToolCall{parentWrite}},
			{Text: "parent done"},
		},
		Threads: []scripted.Thread{
			// Nobody is there to approve a Write in the default mode: it is refused.
			{Match: "CHILD-W", Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{childWrite}}, {Text: "could not write"}}},
			// A deny rule refuses the command.
			{Match: "CHILD-B", Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{bash("child_rm", "rm -rf build")}}, {Text: "could not remove"}}},
			{Match: "CHILD-N", Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{taskCall("task_g", "general-purpose", "deeper", "GRANDCHILD: remove it")}}, {Text: "child done"}}},
			{Match: "GRANDCHILD", Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{bash("grand_rm", "rm -rf dist")}}, {Text: "grandchild done"}}},
		},
	})
	r := agent.New(agent.Deps{Provider: p, Delegation: &agent.Delegation{MaxDepth: 2}})
	evs, res := collect(t, r.Events(context.Background(), agent.TaskSpec{Prompt: "go", Root: root, DisallowedTools: []string{"Bash(rm:*)"}}))
	if res == nil || res.Status != sema.StatusCompleted {
		t.Fatalf("result %+v", res)
	}
	for _, f := range []string{"child.txt", "parent.txt"} {
		if _, err := os.Stat(filepath.Join(root, f)); !os.IsNotExist(err) {
			t.Fatalf("%s was written: %v", f, err)
		}
	}
	sessions := map[string]string{} // Task call id → child session
	for _, s := range res.Subagents {
		sessions[s.ToolUseID] = s.SessionID
	}
	byID := map[string]agent.PermissionDenial{}
	for _, d := range res.PermissionDenials {
		if _, dup := byID[d.ToolUseID]; dup {
			t.Fatalf("denial %s listed twice: %+v", d.ToolUseID, res.PermissionDenials)
		}
		if d.Code != permission.CodeDenied || d.Reason == "" {
			t.Errorf("denial %+v: code or reason missing", d)
		}
		byID[d.ToolUseID] = d
	}
	if len(byID) != 4 {
		t.Fatalf("denials %+v, want the parent's Write, the two children's and the grandchild's", res.PermissionDenials)
	}
	if d := byID["parent_write"]; d.Tool != "Write" || d.Subagent != nil {
		t.Errorf("the parent's own denial %+v: want Write, not marked", d)
	}
	for _, c := range []struct{ id, tool, task, desc string }{
		{"child_write", "Write", "task_w", "write it"},
		{"child_rm", "Bash", "task_b", "clean up"},
	} {
		d := byID[c.id]
		if d.Tool != c.tool || d.Subagent == nil || d.Subagent.ToolUseID != c.task || d.Subagent.Type != "general-purpose" ||
			d.Subagent.Description != c.desc || d.Subagent.SessionID == "" || d.Subagent.SessionID != sessions[c.task] || d.Subagent.Nested != nil {
			t.Errorf("%s: denial %+v subagent %+v, want %s marked with %s", c.id, d, d.Subagent, c.tool, c.task)
		}
	}
	g := byID["grand_rm"]
	if g.Tool != "Bash" || g.Subagent == nil || g.Subagent.ToolUseID != "task_n" || g.Subagent.SessionID != sessions["task_n"] ||
		g.Subagent.Nested == nil || g.Subagent.Nested.ToolUseID != "task_g" || g.Subagent.Nested.SessionID == "" {
		t.Errorf("the grandchild's denial %+v subagent %+v, want task_n then task_g", g, g.Subagent)
	}
	var in map[string]string
	if b, _ := json.Marshal(byID["child_rm"].Input); json.Unmarshal(b, &in) != nil || in["command"] != "rm -rf build" {
		t.Errorf("the child's Bash denial input %s", b)
	}
	// The stream carried each child's refusal once, as the child's event.
	forwarded := map[string]string{}
	for _, ev := range evs {
		if ev.Type == agent.EventPermission && ev.Denial != nil {
			forwarded[ev.Denial.ToolUseID] = ev.ParentToolUseID
		}
	}
	if forwarded["child_write"] != "task_w" || forwarded["child_rm"] != "task_b" || forwarded["parent_write"] != "" {
		t.Errorf("permission events by call: %v", forwarded)
	}
	// The JSON result names the child.
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Denials []struct {
			ToolUseID string `json:"tool_use_id"`
			Subagent  *struct {
				Type      string `json:"type"`
				ToolUseID string `json:"tool_use_id"`
			} `json:"subagent"`
		} `json:"permission_denials"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	marked := 0
	for _, d := range out.Denials {
		if d.Subagent != nil && d.Subagent.Type == "general-purpose" && d.Subagent.ToolUseID != "" {
			marked++
		}
	}
	if marked != 3 {
		t.Errorf("permission_denials JSON %s: %d marked with their child, want 3", b, marked)
	}
}
