package tui

import (
	"encoding/json"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/model"
)

// convert turns one event of a task's stream (a stream-json line) into the agent.Event
// the screen renders, with what the screen reads of it: the manifest, the model's
// response, the tool calls and results, the denials, the notices and the todo list. A
// result is not converted here (the follower gathers the legs' results); a question
// event is left out, the checkpoint that follows it is asked instead; the other types
// (compaction, subagent start and end) and a line that does not decode are left out.
func convert(ev client.Event) (agent.Event, bool) {
	out := agent.Event{Turn: ev.Turn, ParentToolUseID: ev.ParentToolUseID}
	switch ev.Type {
	case client.EventSystem:
		var init struct {
			Manifest *agent.Manifest `json:"manifest"`
		}
		if ev.Subtype != "init" || json.Unmarshal(ev.Data, &init) != nil || init.Manifest == nil {
			return out, false
		}
		out.Type, out.Manifest = agent.EventInit, init.Manifest
	case client.EventAssistant:
		a, ok := payload[*client.AssistantEvent](ev)
		if !ok {
			return out, false
		}
		out.Type, out.Message = agent.EventAssistant, assistantMessage(a)
	case client.EventToolUse:
		u, ok := payload[*client.ToolUseEvent](ev)
		if !ok {
			return out, false
		}
		out.Type, out.ToolUse = agent.EventToolUse, &agent.ToolUse{ID: u.ID, Name: u.Name, Input: u.Input}
	case client.EventToolResult:
		r, ok := payload[*client.ToolResultEvent](ev)
		if !ok {
			return out, false
		}
		out.Type = agent.EventToolResult
		out.ToolResult = &agent.ToolResult{ID: r.ToolUseID, Name: r.Name, IsError: r.IsError, Code: r.Code, Text: r.Content}
	case client.EventPermission:
		p, ok := payload[*client.PermissionEvent](ev)
		if !ok || ev.Subtype == "question" || p.Reason == "" {
			return out, false
		}
		out.Type = agent.EventPermission
		out.Denial = &agent.PermissionDenial{Tool: p.Tool, Input: p.Input, Reason: p.Reason, Code: p.Code}
	case client.EventNotice:
		n, ok := payload[*client.NoticeEvent](ev)
		if !ok {
			return out, false
		}
		out.Type, out.Notice = agent.EventNotice, &sema.Notice{Code: n.Code, Message: n.Message}
	case client.EventTodos:
		var t struct {
			Todos []agent.Todo `json:"todos"`
		}
		if json.Unmarshal(ev.Data, &t) != nil {
			return out, false
		}
		out.Type, out.Todos = agent.EventTodos, t.Todos
	default:
		return out, false
	}
	return out, true
}

// assistantMessage is a response as the screen reads it: its text, thinking and tool
// calls.
func assistantMessage(a *client.AssistantEvent) *model.Message {
	m := &model.Message{Role: model.RoleAssistant}
	for _, b := range a.Message.Content {
		switch b.Type {
		case "text":
			m.Content = append(m.Content, model.Block{Kind: model.KindText, Text: b.Text})
		case "thinking":
			m.Content = append(m.Content, model.Block{Kind: model.KindThinking, Text: b.Text})
		case "tool_use":
			m.Content = append(m.Content, model.Block{Kind: model.KindToolUse, ID: b.ID, Name: b.Name, Input: b.Input})
		}
	}
	return m
}

func payload[T any](ev client.Event) (T, bool) {
	p, err := ev.Payload()
	v, ok := p.(T)
	return v, ok && err == nil
}
