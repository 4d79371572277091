// Package streamjson is the JSON form of a run's events and result: the lines of
// sema's --output-format stream-json, the object of --output-format json, and the
// events of the service's task streams — one encoding, so a reader of one reads all.
package streamjson

import (
	"encoding/json"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model"
)

// Block is a content block in the JSON output, in the familiar Messages shape.
type Block struct {
	// Type is the block's kind: text, tool_use, tool_result, image, thinking.
	Type string `json:"type"`
	// Text is a text block's text.
	Text string `json:"text,omitempty"`
	// ID is a tool_use block's call id.
	ID string `json:"id,omitempty"`
	// Name is a tool_use block's tool.
	Name string `json:"name,omitempty"`
	// Input is a tool_use block's arguments.
	Input json.RawMessage `json:"input,omitempty"`
	// MediaType is an image block's type (image/png, …).
	MediaType string `json:"media_type,omitempty"`
}

// Blocks converts a message's content to the output's blocks.
func Blocks(bs []model.Block) []Block {
	out := make([]Block, 0, len(bs))
	for _, b := range bs {
		w := Block{Type: string(b.Kind), Text: b.Text, ID: b.ID, Name: b.Name, Input: b.Input}
		if b.Kind == model.KindImage {
			w.MediaType = b.MediaType
		}
		out = append(out, w)
	}
	return out
}

// Event is ev as one line of stream-json (nil for an event stream-json leaves out:
// text deltas). A result is Result's object.
func Event(ev agent.Event) any {
	obj := body(ev)
	if m, ok := obj.(map[string]any); ok && ev.ParentToolUseID != "" {
		// A child leg's event: the Task call it belongs to, as the Agent SDKs name it.
		m["parent_tool_use_id"] = ev.ParentToolUseID
	}
	return obj
}

func body(ev agent.Event) any {
	switch ev.Type {
	case agent.EventCompaction:
		return map[string]any{"type": "compaction", "turn": ev.Turn, "compaction": ev.Compaction}
	case agent.EventTodos:
		return map[string]any{"type": "todos", "turn": ev.Turn, "todos": nonNil(ev.Todos)}
	case agent.EventSubagentStart, agent.EventSubagentEnd:
		return map[string]any{"type": string(ev.Type), "turn": ev.Turn, "subagent": ev.Subagent}
	case agent.EventInit:
		return map[string]any{"type": "system", "subtype": "init", "session_id": ev.Manifest.SessionID, "manifest": ev.Manifest}
	case agent.EventAssistant:
		return map[string]any{"type": "assistant", "turn": ev.Turn, "message": map[string]any{"role": "assistant", "content": Blocks(ev.Message.Content)}}
	case agent.EventToolUse:
		return map[string]any{"type": "tool_use", "turn": ev.Turn, "id": ev.ToolUse.ID, "name": ev.ToolUse.Name, "input": json.RawMessage(orEmptyObject(ev.ToolUse.Input))}
	case agent.EventToolResult:
		r := ev.ToolResult
		obj := map[string]any{"type": "tool_result", "turn": ev.Turn, "tool_use_id": r.ID, "name": r.Name, "is_error": r.IsError, "content": r.Text}
		if r.Code != "" {
			obj["code"] = r.Code
		}
		return obj
	case agent.EventPermission:
		if q := ev.Question; q != nil {
			obj := map[string]any{"type": "permission", "subtype": "question", "turn": ev.Turn, "tool": q.Tool, "input": json.RawMessage(orEmptyObject(q.Input)),
				"message": q.Message, "gate": q.Gate, "answered_by": q.AnsweredBy, "behavior": q.Behavior}
			if q.PersonOnly {
				obj["person_only"] = true
			}
			return obj
		}
		if d := ev.Denial; d != nil {
			return map[string]any{"type": "permission", "turn": ev.Turn, "tool": d.Tool, "input": d.Input, "reason": d.Reason, "code": d.Code}
		}
		return nil
	case agent.EventNotice:
		return map[string]any{"type": "notice", "turn": ev.Turn, "code": ev.Notice.Code, "message": ev.Notice.Message, "detail": ev.Notice.Detail}
	case agent.EventResult:
		return Result(ev.Result)
	}
	return nil // text deltas are not part of stream-json
}

func orEmptyObject(b []byte) []byte {
	if len(b) == 0 || !json.Valid(b) {
		return []byte("{}")
	}
	return b
}

// Result is the result object of --output-format json and the last line of stream-json.
func Result(r *agent.TaskResult) map[string]any {
	obj := map[string]any{
		"type":               "result",
		"session_id":         r.SessionID,
		"status":             r.Status,
		"result":             r.Result,
		"num_turns":          r.NumTurns,
		"usage":              r.Usage,
		"total_cost_usd":     r.TotalCostUSD,
		"modelUsage":         nonNilMap(r.ModelUsage),
		"permission_denials": nonNil(r.PermissionDenials),
		"edited_files":       nonNil(r.EditedFiles),
		"manifest":           r.Manifest,
		"notices":            nonNil(r.Notices),
	}
	if r.Error != nil {
		obj["error"] = r.Error
	}
	if cp, parked := r.Parked(); parked {
		obj["checkpoint"] = cp
	}
	if len(r.RewindNotes) > 0 {
		obj["rewind_notes"] = r.RewindNotes
	}
	if r.Answered != nil {
		obj["answered"] = r.Answered
	}
	if len(r.Subagents) > 0 {
		obj["subagents"] = r.Subagents
	}
	if len(r.Compactions) > 0 {
		obj["compactions"] = r.Compactions
	}
	if len(r.Todos) > 0 {
		obj["todos"] = r.Todos
	}
	return obj
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func nonNilMap[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	return m
}
