package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/imagefit"
	"github.com/sema-agent/sema/permission"
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

// A user line's content is a string or text and image blocks; other blocks are refused
// by name.
func TestSDKUserMessage(t *testing.T) {
	if m := userMessage(json.RawMessage(`{"content":"hi"}`)); m.err != nil || m.text != "hi" {
		t.Fatalf("%+v", m)
	}
	if m := userMessage(json.RawMessage(`{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`)); m.err != nil || m.text != "a\n\nb" {
		t.Fatalf("%+v", m)
	}
	if m := userMessage(json.RawMessage(`{"content":[{"type":"document","source":{}}]}`)); m.err == nil || sema.CodeOf(m.err) != codeSDKUnsupported || !strings.Contains(m.err.Error(), "document") {
		t.Fatalf("%+v", m)
	}
	if m := userMessage(json.RawMessage(`{}`)); m.err == nil {
		t.Fatalf("%+v", m)
	}
}

// sdkPNG is a 1x1 PNG.
var sdkPNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")

// imageBlock is a user line's image block of a base64 source.
func imageBlock(mediaType, data string) string {
	return `{"type":"image","source":{"type":"base64","media_type":"` + mediaType + `","data":"` + data + `"}}`
}

// An image block of a base64 source becomes one of the prompt's images, in order, with
// its bytes decoded; the text blocks are the prompt's text wherever they stand.
func TestSDKUserMessageImages(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString(sdkPNG)
	jpg := []byte("\xff\xd8\xff\xe0\x00\x10JFIF")
	m := userMessage(json.RawMessage(`{"content":[` + imageBlock("image/png", b64) + `,{"type":"text","text":"what is this?"},` +
		imageBlock("image/jpeg", base64.StdEncoding.EncodeToString(jpg)) + `]}`))
	if m.err != nil || m.text != "what is this?" || len(m.images) != 2 {
		t.Fatalf("%+v", m)
	}
	if got := m.images[0]; got.MediaType != "image/png" || !bytes.Equal(got.Data, sdkPNG) || got.Path != "" {
		t.Fatalf("first image %+v", got)
	}
	if got := m.images[1]; got.MediaType != "image/jpeg" || !bytes.Equal(got.Data, jpg) {
		t.Fatalf("second image %+v", got)
	}
}

// An image block sema cannot take is refused by the protocol, by name: the turn fails
// with the sentence and no image reaches the runner.
func TestSDKUserMessageImageRefusals(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString(sdkPNG)
	for _, c := range []struct {
		name, block, code, says string
	}{
		{"url source", `{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}`, codeSDKUnsupported, "url source"},
		{"file source", `{"type":"image","source":{"type":"file","file_id":"f"}}`, codeSDKUnsupported, `"file"`},
		{"no source", `{"type":"image"}`, codeSDKMalformed, "no source"},
		{"source not an object", `{"type":"image","source":"a.png"}`, codeSDKMalformed, "no source"},
		{"bad base64", imageBlock("image/png", "not base64!"), codeSDKMalformed, "not base64"},
		{"empty data", imageBlock("image/png", ""), codeSDKMalformed, "not base64"},
		{"unpadded base64", imageBlock("image/png", strings.TrimRight(b64, "=")), codeSDKMalformed, "not base64"},
		{"media type not an image", imageBlock("application/pdf", b64), codeSDKUnsupported, "application/pdf"},
		{"media type missing", imageBlock("", b64), codeSDKUnsupported, "media type"},
		{"svg", imageBlock("image/svg+xml", base64.StdEncoding.EncodeToString([]byte("<svg/>"))), codeSDKUnsupported, "image/svg+xml"},
		{"bytes of another type", imageBlock("image/jpeg", b64), codeSDKMalformed, "its bytes are image/png"},
		{"bytes of no image", imageBlock("image/png", "AAAA"), codeSDKMalformed, "content block 2 decodes to 3 bytes that are not a PNG"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := userMessage(json.RawMessage(`{"content":[{"type":"text","text":"look"},` + c.block + `]}`))
			if m.err == nil || sema.CodeOf(m.err) != c.code || !strings.Contains(m.err.Error(), c.says) || len(m.images) != 0 {
				t.Fatalf("got %+v; want %s saying %q", m, c.code, c.says)
			}
		})
	}
}

// Whatever a user line's content holds, reading it never panics, and what it answers is
// either a refusal with a code or images whose bytes are of the type they name.
func FuzzSDKUserMessageImages(f *testing.F) {
	f.Add(`[` + imageBlock("image/png", base64.StdEncoding.EncodeToString(sdkPNG)) + `]`)
	f.Add(`[{"type":"image","source":{"type":"url","url":"x"}}]`)
	f.Add(`[{"type":"image","source":{"type":"base64","media_type":"image/gif","data":"R0lGODlh"}}]`)
	f.Add(`[{"type":"image","source":null},{"type":"text","text":"a"}]`)
	f.Add(`"plain"`)
	f.Fuzz(func(t *testing.T, content string) {
		m := userMessage(json.RawMessage(`{"content":` + content + `}`))
		if m.err != nil {
			if sema.CodeOf(m.err) == "" || len(m.images) != 0 {
				t.Fatalf("content %q: refusal %v with %d images", content, m.err, len(m.images))
			}
			return
		}
		for _, img := range m.images {
			if img.Path != "" || len(img.Data) == 0 || imagefit.Sniff(img.Data) != img.MediaType {
				t.Fatalf("content %q: image %q of %d bytes", content, img.MediaType, len(img.Data))
			}
		}
	})
}

// The rules suggested with a can_use_tool request allow the call and as little else as
// rule syntax can say: the client's answer comes back as rules, which mean what their
// syntax says. Calibrated: with the raw command as the rule's content, rm * came back as
// Bash(rm *), every rm, and Edit(main.go), every main.go at any depth.
func TestPermissionSuggestionsAreNarrow(t *testing.T) {
	for _, tc := range []struct {
		tool, input string
		want        string // the rule the suggestion spells; "" for no suggestion
	}{
		{"Bash", `{"command":"go test ./..."}`, "Bash(go test ./...)"},
		{"Bash", `{"command":"rm *"}`, ""},
		{"Bash", `{"command":"make && rm -rf build"}`, ""},
		{"Bash", `{"command":"echo $HOME"}`, ""},
		{"Edit", `{"file_path":"main.go","old_string":"a","new_string":"b"}`, "Edit(//w/main.go)"},
		{"Write", `{"file_path":"/w/sub/a.txt","content":"x"}`, "Edit(//w/sub/a.txt)"},
		{"Read", `{"file_path":"*.go"}`, ""},
		{"WebFetch", `{"url":"https://example.com"}`, "WebFetch"},
	} {
		got := permissionSuggestions(permission.ApprovalRequest{Tool: tc.tool, Input: json.RawMessage(tc.input)}, "/w")
		var rules []string
		for _, s := range got {
			for _, r := range s.(map[string]any)["rules"].([]any) {
				m := r.(map[string]any)
				rule := m["toolName"].(string)
				if c, ok := m["ruleContent"].(string); ok {
					rule += "(" + c + ")"
				}
				rules = append(rules, rule)
			}
		}
		if want := []string{tc.want}; tc.want == "" && len(rules) != 0 || tc.want != "" && !slices.Equal(rules, want) {
			t.Errorf("%s %s: suggested %q, want %q", tc.tool, tc.input, rules, tc.want)
			continue
		}
		for _, r := range rules {
			if _, err := permission.ParseRule(r); err != nil {
				t.Errorf("%s %s: the suggestion %q does not parse: %v", tc.tool, tc.input, r, err)
			}
		}
	}
}

// A rule the SDK's answer adds for the session is kept only when it parses: kept, an
// invalid one (a client's own spelling of a compound command) refused every later turn
// with config.rule_invalid. It is dropped with a line on stderr; the valid ones stay.
func TestSDKAnswerKeepsOnlyRulesThatParse(t *testing.T) {
	var out syncBuffer
	s := testSDKSession(&out)
	got := make(chan permission.ApprovalDecision, 1)
	go func() {
		d, _ := sdkApprover{s}.Approve(context.Background(), permission.ApprovalRequest{Tool: "Bash", Input: json.RawMessage(`{"command":"make && make test"}`)})
		got <- d
	}()
	var id string
	for id == "" {
		time.Sleep(time.Millisecond)
		for _, line := range strings.Split(out.String(), "\n") {
			var req struct {
				RequestID string `json:"request_id"`
			}
			if json.Unmarshal([]byte(line), &req) == nil && req.RequestID != "" {
				id = req.RequestID
			}
		}
	}
	s.handleLine(context.Background(), []byte(`{"type":"control_response","response":{"subtype":"success","request_id":"`+id+`","response":{"behavior":"allow",`+
		`"updatedPermissions":[{"type":"addRules","behavior":"allow","destination":"session","rules":[{"toolName":"Bash","ruleContent":"make && make test"},{"toolName":"Bash","ruleContent":"make test"}]}]}}}`))
	if d := <-got; d.Behavior != permission.Allow {
		t.Fatalf("decision %+v, want the allow", d)
	}
	s.mu.Lock()
	allowed := slices.Clone(s.allowed)
	s.mu.Unlock()
	if !slices.Equal(allowed, []string{"Bash(make test)"}) {
		t.Errorf("rules kept for the session: %q, want only Bash(make test)", allowed)
	}
	if !strings.Contains(s.stderr.(*syncBuffer).String(), "Bash(make && make test) was not kept") {
		t.Errorf("stderr does not say the invalid rule was dropped: %q", s.stderr.(*syncBuffer).String())
	}
}
