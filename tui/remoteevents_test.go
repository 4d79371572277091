package tui

import (
	"encoding/json"
	"testing"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/model"
)

// streamLine is a stream event as client.Events reads it: the head fields from its data.
func streamLine(t *testing.T, data string) client.Event {
	t.Helper()
	var head struct {
		Type    string `json:"type"`
		Subtype string `json:"subtype"`
		Turn    int    `json:"turn"`
		Parent  string `json:"parent_tool_use_id"`
	}
	if err := json.Unmarshal([]byte(data), &head); err != nil {
		t.Fatal(err)
	}
	return client.Event{ID: 1, Data: json.RawMessage(data), Type: head.Type, Subtype: head.Subtype, Turn: head.Turn, ParentToolUseID: head.Parent}
}

func TestConvertStreamEvents(t *testing.T) {
	for _, tt := range []struct {
		name, data string
		check      func(agent.Event) bool
	}{
		{"init", `{"type":"system","subtype":"init","session_id":"s1","manifest":{"session_id":"s1","permission_mode":{"requested":"","effective":"plan"}}}`,
			func(e agent.Event) bool {
				return e.Type == agent.EventInit && e.Manifest.SessionID == "s1" && e.Manifest.Mode.Effective == "plan"
			}},
		{"assistant", `{"type":"assistant","turn":2,"message":{"role":"assistant","content":[{"type":"thinking","text":"hm"},{"type":"text","text":"hi"},{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"a"}}]}}`,
			func(e agent.Event) bool {
				return e.Type == agent.EventAssistant && e.Turn == 2 && blockText(e.Message, model.KindText) == "hi" &&
					blockText(e.Message, model.KindThinking) == "hm" && len(e.Message.Content) == 3 && e.Message.Content[2].Name == "Read"
			}},
		{"tool use", `{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"},"turn":1}`,
			func(e agent.Event) bool {
				return e.Type == agent.EventToolUse && e.ToolUse.ID == "t1" && e.ToolUse.Name == "Bash" && string(e.ToolUse.Input) == `{"command":"ls"}`
			}},
		{"tool result", `{"type":"tool_result","tool_use_id":"t1","name":"Bash","is_error":true,"code":"tool.failed","content":"boom"}`,
			func(e agent.Event) bool {
				r := e.ToolResult
				return e.Type == agent.EventToolResult && r.ID == "t1" && r.IsError && r.Code == "tool.failed" && r.Text == "boom"
			}},
		{"denial", `{"type":"permission","tool":"Write","input":{"file_path":"x"},"reason":"no","code":"permission.denied"}`,
			func(e agent.Event) bool {
				return e.Type == agent.EventPermission && e.Denial.Tool == "Write" && e.Denial.Reason == "no" && e.Denial.Code == "permission.denied"
			}},
		{"notice", `{"type":"notice","code":"serve.model_waiting","message":"waiting for the model"}`,
			func(e agent.Event) bool {
				return e.Type == agent.EventNotice && e.Notice.Code == "serve.model_waiting" && e.Notice.Message == "waiting for the model"
			}},
		{"todos", `{"type":"todos","todos":[{"content":"a","status":"pending","activeForm":"doing a"}]}`,
			func(e agent.Event) bool {
				return e.Type == agent.EventTodos && len(e.Todos) == 1 && e.Todos[0].Content == "a"
			}},
		{"child", `{"type":"tool_use","id":"t2","name":"Read","input":{},"parent_tool_use_id":"task1"}`,
			func(e agent.Event) bool { return e.ParentToolUseID == "task1" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := convert(streamLine(t, tt.data))
			if !ok || !tt.check(got) {
				t.Fatalf("convert(%s) = %+v, %v", tt.data, got, ok)
			}
		})
	}
}

// A question is not shown as an event (its checkpoint is asked), nor are the types the
// screen does not render, nor a line that does not decode.
func TestConvertLeavesOut(t *testing.T) {
	for _, data := range []string{
		`{"type":"permission","subtype":"question","tool":"Write","input":{},"message":"Allow?","behavior":"ask"}`,
		`{"type":"system","subtype":"other"}`,
		`{"type":"compaction","tokens_before":10}`,
		`{"type":"tool_use","id":5}`,
		`{"type":"something_new"}`,
	} {
		if got, ok := convert(streamLine(t, data)); ok {
			t.Errorf("convert(%s) = %+v, want left out", data, got)
		}
	}
}
