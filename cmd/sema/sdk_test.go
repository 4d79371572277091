package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func testSDKSession(out *syncBuffer) *sdkSession {
	return &sdkSession{o: &runOptions{}, stderr: &syncBuffer{}, out: newSDKOut(out), setup: &sdkSetup{modelRef: "scripted/none"},
		pending: map[string]chan sdkAnswer{}, queue: make(chan sdkUserMessage, 4096)}
}

// Whatever a line holds, reading it never panics; an initialize request is answered at
// once, with its request id, success or error.
func FuzzSDKLine(f *testing.F) {
	f.Add(`{"type":"control_request","request_id":"i","request":{"subtype":"initialize","systemPrompt":[""]}}`)
	f.Add(`{"type":"control_request","request_id":"i","request":{"subtype":"initialize","hooks":{"PreToolUse":[{"matcher":"(","hookCallbackIds":["h"]}]}}}`)
	f.Add(`{"type":"control_request","request_id":"i","request":{"subtype":"initialize","mcpServers":{"x":{"command":""}}}}`)
	f.Add(`{"type":"user","message":{"role":"user","content":[{"type":"image"}]}}`)
	f.Add(`{"type":"user","message":{"content":"hi"}}`)
	f.Add(`{"type":"control_response","response":{"subtype":"success","request_id":"sema-1","response":{}}}`)
	f.Add(`[1,2]`)
	f.Fuzz(func(t *testing.T, line string) {
		var out syncBuffer
		s := testSDKSession(&out)
		s.handleLine(context.Background(), []byte(line))
		var env struct {
			Type      string `json:"type"`
			RequestID string `json:"request_id"`
			Request   struct {
				Subtype string `json:"subtype"`
			} `json:"request"`
		}
		if json.Unmarshal([]byte(line), &env) == nil && env.Type == "control_request" && env.Request.Subtype == "initialize" {
			var resp struct {
				Type     string `json:"type"`
				Response struct {
					Subtype   string `json:"subtype"`
					RequestID string `json:"request_id"`
				} `json:"response"`
			}
			first, _, _ := strings.Cut(out.String(), "\n")
			if err := json.Unmarshal([]byte(first), &resp); err != nil || resp.Type != "control_response" || resp.Response.RequestID != env.RequestID ||
				(resp.Response.Subtype != "success" && resp.Response.Subtype != "error") {
				t.Fatalf("initialize %q answered %q", line, first)
			}
		}
	})
}

// A user line's content is a string or text blocks; other blocks are refused by name.
func TestSDKUserMessage(t *testing.T) {
	if m := userMessage(json.RawMessage(`{"content":"hi"}`)); m.err != nil || m.text != "hi" {
		t.Fatalf("%+v", m)
	}
	if m := userMessage(json.RawMessage(`{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`)); m.err != nil || m.text != "a\n\nb" {
		t.Fatalf("%+v", m)
	}
	if m := userMessage(json.RawMessage(`{"content":[{"type":"image","source":{}}]}`)); m.err == nil || !strings.Contains(m.err.Error(), "image") {
		t.Fatalf("%+v", m)
	}
	if m := userMessage(json.RawMessage(`{}`)); m.err == nil {
		t.Fatalf("%+v", m)
	}
}
