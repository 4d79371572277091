package main

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model"
)

// sdkEncoder writes one turn's events in the Agent SDKs' message shapes. Every line
// carries session_id and uuid.
type sdkEncoder struct {
	sessionID string
	partial   bool
	started   time.Time
	model     string
	// streaming is set between a stream_event message_start and its message_stop.
	streaming bool
	// msgID is the id of the assistant message being streamed.
	msgID string
	// stopReason is the last response's.
	stopReason model.StopReason
}

// newUUID is a random version 4 UUID.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// line completes a message with the fields every line carries.
func (e *sdkEncoder) line(m map[string]any) map[string]any {
	m["uuid"] = newUUID()
	m["session_id"] = e.sessionID
	return m
}

func parentOf(ev agent.Event) any {
	if ev.ParentToolUseID == "" {
		return nil
	}
	return ev.ParentToolUseID
}

// event returns the lines of one event; most events are one line, some none.
func (e *sdkEncoder) event(ev agent.Event, setup *sdkSetup) []map[string]any {
	ev = cliEvent(ev)
	switch ev.Type {
	case agent.EventInit:
		m := ev.Manifest
		e.model = m.Model
		return []map[string]any{e.line(map[string]any{
			"type": "system", "subtype": "init",
			"cwd": m.Root, "model": m.Model, "permissionMode": m.Mode.Effective, "tools": nonNil(m.Tools),
			"mcp_servers": sdkServers(m), "apiKeySource": apiKeySource(m.Provider), "claude_code_version": "sema " + versionString,
			"slash_commands": commandNames(setup.commandList()), "agents": agentNames(setup.agentList()),
			"output_style": "default", "skills": []string{}, "plugins": []any{},
			"manifest": m,
		})}
	case agent.EventText:
		if !e.partial || ev.ParentToolUseID != "" {
			return nil
		}
		var out []map[string]any
		if !e.streaming {
			e.streaming, e.msgID = true, "msg_"+newUUID()
			out = append(out,
				e.stream(ev, map[string]any{"type": "message_start", "message": map[string]any{"id": e.msgID, "type": "message", "role": "assistant",
					"model": e.model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": wireUsage(model.Usage{})}}),
				e.stream(ev, map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}}))
		}
		return append(out, e.stream(ev, map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": ev.Text}}))
	case agent.EventAssistant:
		var out []map[string]any
		id := "msg_" + newUUID()
		stop, usage, name := model.StopEndTurn, model.Usage{}, e.model
		if r := ev.Response; r != nil {
			stop, usage = r.StopReason, r.Usage
			if r.Model != "" {
				name = r.Model
			}
		}
		if e.streaming && ev.ParentToolUseID == "" {
			id = e.msgID
			out = append(out,
				e.stream(ev, map[string]any{"type": "content_block_stop", "index": 0}),
				e.stream(ev, map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": usage.OutputTokens}}),
				e.stream(ev, map[string]any{"type": "message_stop"}))
			e.streaming = false
		}
		if ev.ParentToolUseID == "" {
			e.stopReason = stop
		}
		return append(out, e.line(map[string]any{
			"type": "assistant",
			"message": map[string]any{"id": id, "type": "message", "role": "assistant", "model": name, "content": sdkBlocks(ev.Message.Content),
				"stop_reason": stop, "stop_sequence": nil, "usage": wireUsage(usage)},
			"parent_tool_use_id": parentOf(ev),
		}))
	case agent.EventToolResult:
		r := ev.ToolResult
		block := map[string]any{"type": "tool_result", "tool_use_id": r.ID, "content": r.Text}
		if r.IsError {
			block["is_error"] = true
		}
		m := map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{block}}, "parent_tool_use_id": parentOf(ev)}
		if r.Code != "" {
			m["code"] = r.Code
		}
		return []map[string]any{e.line(m)}
	case agent.EventPermission:
		d := ev.Denial
		if d == nil {
			return nil
		}
		return []map[string]any{e.line(map[string]any{"type": "system", "subtype": "permission_denied", "tool_name": d.Tool, "tool_use_id": d.ToolUseID,
			"tool_input": d.Input, "reason": d.Reason, "code": d.Code, "parent_tool_use_id": parentOf(ev)})}
	case agent.EventNotice:
		n := ev.Notice
		return []map[string]any{e.line(map[string]any{"type": "system", "subtype": "notice", "code": n.Code, "message": n.Message, "detail": n.Detail,
			"parent_tool_use_id": parentOf(ev)})}
	case agent.EventCompaction:
		c := ev.Compaction
		trigger := "auto"
		if c.Reason == "manual" {
			trigger = "manual"
		}
		return []map[string]any{e.line(map[string]any{"type": "system", "subtype": "compact_boundary",
			"compact_metadata": map[string]any{"trigger": trigger, "pre_tokens": c.TokensBefore, "post_tokens": c.TokensAfter}, "compaction": c})}
	case agent.EventResult:
		return []map[string]any{e.result(ev.Result)}
	}
	return nil
}

func (e *sdkEncoder) stream(ev agent.Event, event map[string]any) map[string]any {
	return e.line(map[string]any{"type": "stream_event", "event": event, "parent_tool_use_id": parentOf(ev)})
}

// result is the turn's result line: the SDKs' fields, and sema's own as extras.
func (e *sdkEncoder) result(r *agent.TaskResult) map[string]any {
	subtype, isError, errs := claudeOutcome(r)
	denials := make([]map[string]any, 0, len(r.PermissionDenials))
	for _, d := range r.PermissionDenials {
		wd := map[string]any{"tool_name": d.Tool, "tool_use_id": d.ToolUseID, "tool_input": d.Input}
		if d.Subagent != nil {
			wd["subagent"] = d.Subagent // sema's own: the child leg whose call it was
		}
		denials = append(denials, wd)
	}
	m := map[string]any{
		"type": "result", "subtype": subtype, "is_error": isError,
		"duration_ms": time.Since(e.started).Milliseconds(), "duration_api_ms": r.DurationAPI.Milliseconds(),
		"num_turns": r.NumTurns, "result": r.Result, "stop_reason": e.stopReason,
		"total_cost_usd": r.TotalCostUSD, "usage": wireUsage(r.Usage), "modelUsage": nonNilMap(r.ModelUsage),
		"permission_denials": denials,
		// sema's own.
		"status": r.Status, "edited_files": nonNil(r.EditedFiles), "manifest": r.Manifest, "notices": nonNil(r.Notices),
	}
	if e.stopReason == "" {
		m["stop_reason"] = nil
	}
	if isError {
		m["errors"] = errs
	}
	if r.Status == sema.StatusCancelled {
		m["terminal_reason"] = "aborted_streaming"
	}
	if r.Error != nil {
		m["error"] = r.Error
	}
	if cp, parked := r.Parked(); parked {
		m["checkpoint"] = cp
	}
	return e.line(m)
}

// failure is the result line of a turn that could not run: its spec was refused, or
// its prompt could not be read.
func (e *sdkEncoder) failure(err error) map[string]any {
	se := &sema.Error{Code: codeUsage, Message: err.Error()}
	if x, ok := err.(*sema.Error); ok {
		se = x
	} else if ee, ok := err.(*exitErr); ok && ee.err != nil {
		if x, ok := ee.err.(*sema.Error); ok {
			se = x
		}
	}
	return e.line(map[string]any{
		"type": "result", "subtype": "error_during_execution", "is_error": true,
		"duration_ms": time.Since(e.started).Milliseconds(), "duration_api_ms": 0, "num_turns": 0, "result": "",
		"stop_reason": nil, "total_cost_usd": 0, "usage": wireUsage(model.Usage{}), "modelUsage": map[string]any{},
		"permission_denials": []any{}, "errors": []string{se.Message}, "status": sema.StatusError, "error": se,
	})
}

func wireUsage(u model.Usage) map[string]any {
	return map[string]any{"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens,
		"cache_creation_input_tokens": u.CacheWriteTokens, "cache_read_input_tokens": u.CacheReadTokens}
}

// sdkBlocks are content blocks in the Messages API's shapes.
func sdkBlocks(bs []model.Block) []any {
	out := make([]any, 0, len(bs))
	for _, b := range bs {
		switch b.Kind {
		case model.KindText:
			out = append(out, map[string]any{"type": "text", "text": b.Text})
		case model.KindToolUse:
			out = append(out, map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": json.RawMessage(orEmptyObject(b.Input))})
		case model.KindThinking:
			out = append(out, map[string]any{"type": "thinking", "thinking": b.Text, "signature": b.Signature})
		default:
			out = append(out, map[string]any{"type": string(b.Kind)})
		}
	}
	return out
}

// sdkServers is the manifest's MCP servers as system/init lists them.
func sdkServers(m *agent.Manifest) []any {
	out := make([]any, 0, len(m.MCPServers))
	for _, s := range m.MCPServers {
		status := s.State
		switch s.State {
		case "connected":
		case "untrusted", "disabled":
			status = "disabled"
		default:
			status = "failed"
		}
		out = append(out, map[string]any{"name": s.Name, "status": status, "source": s.Source, "tools": nonNil(s.Tools)})
	}
	return out
}

// apiKeySource names where the provider's key came from, as system/init says it.
func apiKeySource(provider string) string {
	switch provider {
	case "anthropic":
		if os.Getenv("ANTHROPIC_API_KEY") != "" {
			return "ANTHROPIC_API_KEY"
		}
	case "openai", "openai-compatible":
		if os.Getenv("OPENAI_API_KEY") != "" {
			return "OPENAI_API_KEY"
		}
	}
	return "none"
}

func commandNames(list []map[string]any) []string {
	out := make([]string, 0, len(list))
	for _, c := range list {
		if n, ok := c["name"].(string); ok {
			out = append(out, n)
		}
	}
	return out
}

func agentNames(list []map[string]any) []string { return commandNames(list) }
