package acp

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/permission"
)

// The transcript entry kinds the replay reads (package session's entries, as the
// runner writes them).
const (
	entryUser        = "user"
	entryAssistant   = "assistant"
	entryToolResults = "tool_results"
)

// replay sends the stored conversation as session updates: the prompts as user
// message chunks, the model's text and thinking, each tool call and how it ended.
func (s *acpSession) replay(ctx context.Context) error {
	if s.opened.Store == nil {
		return nil
	}
	chain, err := s.opened.Store.Transcript(ctx, s.id, "")
	if err != nil {
		return openError(err, s.id)
	}
	var open []string // calls announced and not yet answered, in order
	answered := map[string]bool{}
	for _, e := range chain {
		switch e.Kind {
		case entryUser:
			var m model.Message
			if json.Unmarshal(e.Payload, &m) != nil {
				continue
			}
			for _, b := range m.Content {
				if b.Kind == model.KindText && b.Text != "" {
					s.update(SessionUpdate{SessionUpdate: UpdateUserMessage, Content: ptr(TextBlock(b.Text))})
				}
			}
		case entryAssistant:
			var a struct {
				Message model.Message `json:"message"`
			}
			if json.Unmarshal(e.Payload, &a) != nil {
				continue
			}
			s.message(&a.Message, true)
			for _, b := range a.Message.Content {
				if b.Kind == model.KindToolUse {
					u := s.describe(b.ID, b.Name, b.Input)
					u.SessionUpdate, u.Status = UpdateToolCall, StatusPending
					s.update(u)
					open = append(open, b.ID)
				}
			}
		case entryToolResults:
			var m model.Message
			if json.Unmarshal(e.Payload, &m) != nil {
				continue
			}
			for _, b := range m.Content {
				if b.Kind != model.KindToolResult {
					continue
				}
				answered[b.ID] = true
				u := SessionUpdate{SessionUpdate: UpdateToolCallUpdate, ToolCallID: b.ID, Status: StatusCompleted}
				if b.IsError {
					u.Status = StatusFailed
				}
				var text []string
				for _, c := range b.Content {
					if c.Kind == model.KindText {
						text = append(text, c.Text)
					}
				}
				if t := strings.Join(text, "\n"); t != "" {
					u.Content = []ToolCallContent{textContent(clip(t))}
				}
				s.update(u)
			}
		}
	}
	for _, id := range open {
		if !answered[id] {
			// A call the session never answered (a cancelled leg's, a parked one's) is
			// not shown as running.
			s.update(SessionUpdate{SessionUpdate: UpdateToolCallUpdate, ToolCallID: id, Status: StatusFailed,
				Content: []ToolCallContent{textContent("Not run.")}})
		}
	}
	return nil
}

// permissionMode reads a recorded mode word.
func permissionMode(word string) permission.Mode {
	if m, err := permission.ParseMode(word); err == nil {
		return m
	}
	return permission.ModeDefault
}
