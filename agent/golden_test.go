package agent_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/sandbox"
)

var update = flag.Bool("update", false, "rewrite the golden files of the event stream")

// TestGoldenEventStream pins the shape of Runner.Events for a few scenarios: which events
// come, in which order, with which fields set. A change is a reviewed diff of the golden
// file (go test ./agent -run Golden -update).
func TestGoldenEventStream(t *testing.T) {
	scenarios := []struct {
		name  string
		files map[string]string
		turns []scripted.Turn
		mode  string
	}{
		{"read_and_answer", map[string]string{"notes.txt": "alpha\n"}, []scripted.Turn{
			{Text: "reading", ToolCalls: []scripted.ToolCall{call("Read", `{"file_path":"notes.txt"}`)}},
			{Text: "one line"},
		}, ""},
		{"write_refused", nil, []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{call("Write", `{"file_path":"b.txt","content":"b"}`)}},
			{Text: "could not"},
		}, ""},
		{"edit_accepted", map[string]string{"a.txt": "helo\n"}, []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{call("Read", `{"file_path":"a.txt"}`)}},
			{ToolCalls: []scripted.ToolCall{call("Edit", `{"file_path":"a.txt","old_string":"helo","new_string":"hello"}`)}},
			{Text: "fixed"},
		}, "acceptEdits"},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			root := t.TempDir()
			for name, body := range sc.files {
				if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r := agent.New(agent.Deps{Provider: scripted.New(scripted.Script{Turns: sc.turns})})
			spec := agent.TaskSpec{Prompt: "do it", Root: root, PermissionMode: "default", Sandbox: sandbox.ModeOff}
			if sc.mode != "" {
				spec.PermissionMode = "acceptEdits"
			}
			var b strings.Builder
			for ev, err := range r.Events(context.Background(), spec) {
				if err != nil {
					t.Fatal(err)
				}
				line := map[string]any{"type": ev.Type, "turn": ev.Turn}
				switch {
				case ev.ToolUse != nil:
					line["tool"] = ev.ToolUse.Name
					line["input"] = json.RawMessage(ev.ToolUse.Input)
				case ev.ToolResult != nil:
					line["tool"], line["is_error"], line["code"], line["text"] = ev.ToolResult.Name, ev.ToolResult.IsError, ev.ToolResult.Code, ev.ToolResult.Text
				case ev.Question != nil:
					line["tool"], line["answered_by"], line["behavior"], line["question"] = ev.Question.Tool, ev.Question.AnsweredBy, ev.Question.Behavior, ev.Question.Message
				case ev.Denial != nil:
					line["tool"], line["code"], line["reason"] = ev.Denial.Tool, ev.Denial.Code, ev.Denial.Reason
				case ev.Notice != nil:
					line["code"] = ev.Notice.Code
				case ev.Result != nil:
					line["status"], line["result"], line["edited"] = ev.Result.Status, ev.Result.Result, ev.Result.EditedFiles
				}
				if ev.Text != "" {
					line["text"] = ev.Text
				}
				if ev.Message != nil {
					line["blocks"] = len(ev.Message.Content)
				}
				j, _ := json.Marshal(line)
				b.Write(j)
				b.WriteByte('\n')
			}
			got := strings.ReplaceAll(b.String(), root, "$ROOT")
			path := filepath.Join("testdata", "golden", sc.name+".events")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("the event stream of %s changed; if intended, run `go test ./agent -run Golden -update` and review the diff.\ngot:\n%s\nwant:\n%s", sc.name, got, want)
			}
		})
	}
}
