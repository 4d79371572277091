package acp

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model"
)

// maxDiffFile bounds the files a diff carries whole; a larger file's edit is reported
// as the tool's text answer.
const maxDiffFile = 1 << 20

// maxOutput bounds the text of a tool's answer sent to the client.
const maxOutput = 64 << 10

// toolState is what the session keeps of a tool call between its announcement and its
// result: the file an edit acts on and its text before.
type toolState struct {
	name   string
	path   string  // absolute; "" for a call that acts on no file
	before *string // the file's text before an edit; nil when it did not exist
	edit   bool
}

// event sends what one of the leg's events means to the client.
func (s *acpSession) event(ev agent.Event) {
	if ev.ParentToolUseID != "" {
		// A delegated child's events: its questions reach the client through the
		// approver; its text and calls stay inside the Task call that ran it.
		return
	}
	switch ev.Type {
	case agent.EventInit:
		if ev.Manifest != nil && ev.Manifest.Mode.Effective != "" {
			s.setCurrentMode(permissionMode(ev.Manifest.Mode.Effective))
		}
	case agent.EventText:
		if ev.Text != "" {
			s.mu.Lock()
			s.streamed = true
			s.mu.Unlock()
			s.update(SessionUpdate{SessionUpdate: UpdateAgentMessage, Content: ptr(TextBlock(ev.Text))})
		}
	case agent.EventAssistant:
		s.mu.Lock()
		streamed := s.streamed
		s.streamed = false
		s.mu.Unlock()
		if ev.Message != nil {
			s.message(ev.Message, !streamed)
		}
	case agent.EventToolUse:
		if ev.ToolUse != nil {
			s.toolCall(ev.ToolUse.ID, ev.ToolUse.Name, ev.ToolUse.Input)
		}
	case agent.EventToolResult:
		if r := ev.ToolResult; r != nil {
			s.toolResult(r.ID, r.IsError, r.Text)
		}
	case agent.EventPermission:
		if d := ev.Denial; d != nil && d.ToolUseID != "" {
			s.update(SessionUpdate{SessionUpdate: UpdateToolCallUpdate, ToolCallID: d.ToolUseID, Status: StatusFailed,
				Content: []ToolCallContent{textContent("Not run: " + d.Reason)}})
		}
	case agent.EventTodos:
		entries := []PlanEntry{}
		for _, t := range ev.Todos {
			st := string(t.Status)
			switch st {
			case StatusPending, StatusInProgress, StatusCompleted:
			default:
				st = StatusPending
			}
			entries = append(entries, PlanEntry{Content: t.Content, Priority: "medium", Status: st})
		}
		s.update(SessionUpdate{SessionUpdate: UpdatePlan, Entries: &entries})
	case agent.EventNotice:
		if ev.Notice != nil {
			fmt.Fprintf(s.a.opts.Log, "sema acp: session %s: %s (%s)\n", s.id, ev.Notice.Message, ev.Notice.Code)
		}
	}
}

// message sends a complete model response's thinking, and its text when that did not
// stream.
func (s *acpSession) message(m *model.Message, text bool) {
	for _, b := range m.Content {
		switch {
		case b.Kind == model.KindThinking && b.Text != "":
			s.update(SessionUpdate{SessionUpdate: UpdateAgentThought, Content: ptr(TextBlock(b.Text))})
		case b.Kind == model.KindText && text && b.Text != "":
			s.update(SessionUpdate{SessionUpdate: UpdateAgentMessage, Content: ptr(TextBlock(b.Text))})
		}
	}
}

// toolCall announces a call (pending) and keeps what its result will need.
func (s *acpSession) toolCall(id, name string, input json.RawMessage) {
	u := s.describe(id, name, input)
	u.SessionUpdate, u.Status = UpdateToolCall, StatusPending
	st := &toolState{name: name, edit: kindOf(name) == "edit"}
	if len(u.Locations) > 0 {
		st.path = u.Locations[0].Path
	}
	if st.edit && st.path != "" {
		st.before = readText(st.path)
		if s.bufs != nil {
			s.bufs.forget(st.path)
		}
	}
	s.mu.Lock()
	s.tools[id] = st
	s.mu.Unlock()
	s.update(u)
}

// describe is a call as the client shows it: title, kind, locations, raw input.
func (s *acpSession) describe(id, name string, input json.RawMessage) SessionUpdate {
	u := SessionUpdate{ToolCallID: id, Title: title(name, input), Kind: kindOf(name), RawInput: rawInput(input)}
	var m map[string]any
	_ = json.Unmarshal(input, &m)
	str := func(k string) string { v, _ := m[k].(string); return v }
	root := ""
	if s.opened != nil {
		root = s.opened.Root
	}
	for _, k := range []string{"file_path", "notebook_path", "path"} {
		if p := str(k); p != "" {
			if !filepath.IsAbs(p) && root != "" {
				p = filepath.Join(root, p)
			}
			loc := ToolCallLocation{Path: filepath.Clean(p)}
			if off, ok := m["offset"].(float64); ok && off >= 1 && name == "Read" {
				loc.Line = ptr(int(off))
			}
			u.Locations = []ToolCallLocation{loc}
			break
		}
	}
	return u
}

// toolResult reports a call's end: a diff of the file for an edit that landed, the
// tool's text otherwise.
func (s *acpSession) toolResult(id string, isError bool, text string) {
	s.mu.Lock()
	st := s.tools[id]
	delete(s.tools, id)
	s.mu.Unlock()
	u := SessionUpdate{SessionUpdate: UpdateToolCallUpdate, ToolCallID: id, Status: StatusCompleted}
	if isError {
		u.Status = StatusFailed
	}
	if st != nil && st.edit && st.path != "" && !isError {
		if s.bufs != nil {
			// Written through the editor: the diff is of the editor's text.
			if e, ok := s.bufs.edited(st.path); ok {
				u.Content = []ToolCallContent{{Type: "diff", Path: st.path, OldText: e.before, NewText: &e.after}}
				s.update(u)
				return
			}
		}
		if after := readText(st.path); after != nil {
			u.Content = []ToolCallContent{{Type: "diff", Path: st.path, OldText: st.before, NewText: after}}
			s.update(u)
			return
		}
	}
	if text != "" {
		u.Content = []ToolCallContent{textContent(clip(text))}
	}
	s.update(u)
}

func textContent(s string) ToolCallContent {
	return ToolCallContent{Type: "content", Content: ptr(TextBlock(s))}
}

// readText reads a file whole for a diff; nil when it is missing, too large or not
// text.
func readText(path string) *string {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxDiffFile {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil || !utf8.Valid(b) {
		return nil
	}
	return ptr(string(b))
}

func clip(s string) string {
	if len(s) <= maxOutput {
		return s
	}
	cut := maxOutput
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n… (%d more bytes)", len(s)-cut)
}

func rawInput(input json.RawMessage) json.RawMessage {
	if len(input) == 0 || !json.Valid(input) {
		return nil
	}
	return input
}

// kindOf is the protocol's kind of a tool, for the client's icon.
func kindOf(name string) string {
	switch name {
	case "Read", "NotebookRead":
		return "read"
	case "Edit", "MultiEdit", "Write", "NotebookEdit":
		return "edit"
	case "Glob", "Grep", "LS":
		return "search"
	case "Bash", "BashOutput", "KillShell", "bash_readonly":
		return "execute"
	case "WebFetch", "WebSearch":
		return "fetch"
	case "TodoWrite", "Task":
		return "think"
	}
	return "other"
}

// title is a call in one line: the tool and what it acts on.
func title(name string, input json.RawMessage) string {
	var m map[string]any
	_ = json.Unmarshal(input, &m)
	str := func(k string) string { v, _ := m[k].(string); return v }
	target := ""
	switch name {
	case "Bash", "bash_readonly":
		target = "`" + firstLine(str("command")) + "`"
	case "Glob", "Grep":
		target = str("pattern")
		if p := str("path"); p != "" {
			target += " in " + p
		}
	case "Task":
		target = str("description")
	case "WebFetch":
		target = str("url")
	default:
		for _, k := range []string{"file_path", "notebook_path", "path"} {
			if p := str(k); p != "" {
				target = p
				break
			}
		}
	}
	if target == "" || target == "``" {
		return name
	}
	return name + " " + target
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
