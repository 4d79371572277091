package anthropic

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
)

// sdkBody is the body the SDK would send for req: its parameters, encoded by its own
// encoder, with the "stream":true it adds.
func sdkBody(t testing.TB, req *model.Request) (map[string]any, error) {
	params, err := buildParams(req)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(params)
	if err != nil {
		t.Fatalf("the SDK cannot encode the parameters: %v", err)
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	v["stream"] = true
	return v, nil
}

// sameAsSDK asserts that the provider's body for req says what the SDK's would, or
// that both refuse it with the same code and sentence.
func sameAsSDK(t testing.TB, c *bodyCache, req *model.Request) {
	t.Helper()
	want, werr := sdkBody(t, req)
	raw, err := c.encodeBody(req)
	if werr != nil || err != nil {
		if werr == nil || err == nil || sema.CodeOf(err) != sema.CodeOf(werr) || err.Error() != werr.Error() {
			t.Fatalf("refusals differ:\n got  %v\n want %v", err, werr)
		}
		return
	}
	if !json.Valid(raw) {
		t.Fatalf("the body is not JSON:\n%s", raw)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("the body differs from the SDK's:\n got  %s\n want %s", g, w)
	}
}

func fullRequest() *model.Request {
	return &model.Request{
		Model:  "claude-sonnet-4-5",
		System: "You are \"sema\".\n\tTabs, <html> & \u2028 line separators.",
		Tools: []model.ToolSpec{
			{Name: "Read", Description: "reads a file", InputSchema: json.RawMessage(` { "type": "object", "properties": { "file_path": { "type": "string" } }, "$defs": {"x": {}}, "additionalProperties": false } `)},
			{Name: "NoSchema"},
		},
		Messages: []model.Message{
			{Role: model.RoleUser, Content: []model.Block{{Kind: model.KindText, Text: "hello \x01\x1f \\ \" é 日本 \xff\xfe broken"}, {Kind: model.KindText}, {Kind: model.KindImage, MediaType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}}}},
			{Role: model.RoleAssistant, Content: []model.Block{
				{Kind: model.KindThinking, Text: "let me think", Signature: "sig"},
				{Kind: model.KindThinking, Text: "unsigned thinking is left out"},
				{Kind: model.KindText, Text: "reading"},
				{Kind: model.KindToolUse, ID: "toolu_1", Name: "Read", Input: json.RawMessage(` { "file_path" : "a.go" } `)},
				{Kind: model.KindToolUse, ID: "toolu_2", Name: "NoSchema"},
				{Kind: model.KindToolUse, ID: "toolu_3", Name: "NoSchema", Input: json.RawMessage(`null`)},
			}},
			{Role: model.RoleUser, Content: []model.Block{
				{Kind: model.KindToolResult, ID: "toolu_1", Content: []model.Block{{Kind: model.KindText, Text: "package a\n"}, {Kind: model.KindText}, {Kind: model.KindImage, MediaType: "image/jpeg", Data: []byte("jpeg")}}},
				{Kind: model.KindToolResult, ID: "toolu_2", IsError: true, Content: []model.Block{{Kind: model.KindText, Text: "failed"}}},
				{Kind: model.KindToolResult, ID: "toolu_3"},
			}},
			{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.KindText, Text: "done"}, {Kind: model.KindThinking, Text: "after", Signature: "s2"}}},
		},
	}
}

func TestBodyMatchesTheSDK(t *testing.T) {
	c := newBodyCache()
	// With no message at all the SDK leaves the field out and the body says
	// "messages":[]; the API refuses both alike.
	for n := 1; n <= len(fullRequest().Messages); n++ {
		req := fullRequest()
		req.Messages = req.Messages[:n]
		t.Run(fmt.Sprintf("messages=%d", n), func(t *testing.T) {
			sameAsSDK(t, c, req) // encoded
			sameAsSDK(t, c, req) // from the cache
		})
	}
	t.Run("no system, no tools, max tokens", func(t *testing.T) {
		req := fullRequest()
		req.System, req.Tools, req.MaxTokens = "", nil, 77
		sameAsSDK(t, c, req)
	})
}

func TestBodyRefusesWhatTheSDKRefuses(t *testing.T) {
	cases := map[string]func(r *model.Request){
		"negative max tokens": func(r *model.Request) { r.MaxTokens = -1 },
		"bad schema":          func(r *model.Request) { r.Tools[0].InputSchema = json.RawMessage(`{"type":`) },
		"system role":         func(r *model.Request) { r.Messages[1].Role = "system" },
		"array input":         func(r *model.Request) { r.Messages[1].Content[3].Input = json.RawMessage(`[1]`) },
		"broken input":        func(r *model.Request) { r.Messages[1].Content[3].Input = json.RawMessage(`{"a":`) },
		"two objects input":   func(r *model.Request) { r.Messages[1].Content[3].Input = json.RawMessage(`{}{}`) },
		"unknown kind":        func(r *model.Request) { r.Messages[0].Content[0].Kind = "document" },
		"image without data":  func(r *model.Request) { r.Messages[0].Content[2].Data = nil },
		"result holds a call": func(r *model.Request) { r.Messages[2].Content[0].Content[0].Kind = model.KindToolUse },
		"result image no type": func(r *model.Request) {
			r.Messages[2].Content[0].Content[2].MediaType = ""
		},
		// The last message is encoded apart from the others; its refusals too.
		"last message": func(r *model.Request) { r.Messages[3].Content[0].Kind = "video" },
	}
	for name, spoil := range cases {
		t.Run(name, func(t *testing.T) {
			req := fullRequest()
			spoil(req)
			if _, err := newBodyCache().encodeBody(req); sema.CodeOf(err) != model.CodeBadRequest {
				t.Fatalf("got %v, want code %s", err, model.CodeBadRequest)
			}
			sameAsSDK(t, newBodyCache(), req)
		})
	}
}

// TestBodyCacheSeesAChangedMessage: the cache is keyed by content, not by where a
// message lives, so a message changed in place (its text, its tool input's bytes, a
// nested result) is encoded anew, never sent as it was.
func TestBodyCacheSeesAChangedMessage(t *testing.T) {
	c := newBodyCache()
	req := fullRequest()
	req.Messages = append(req.Messages, model.Message{Role: model.RoleUser, Content: []model.Block{{Kind: model.KindText, Text: "next"}}})
	sameAsSDK(t, c, req)
	req.Messages[0].Content[0].Text = "changed"
	sameAsSDK(t, c, req)
	in := req.Messages[1].Content[3].Input
	copy(in[strings.Index(string(in), "a.go"):], "FILE")
	sameAsSDK(t, c, req)
	req.Messages[2].Content[0].Content[0].Text = "package b\n"
	sameAsSDK(t, c, req)
	req.Messages[2].Content[1].IsError = false
	sameAsSDK(t, c, req)
	req.Messages[1].Content[0].Signature = "other"
	sameAsSDK(t, c, req)
	raw, err := c.encodeBody(req)
	if err != nil || strings.Contains(string(raw), "package a") || !strings.Contains(string(raw), "FILE") {
		t.Fatalf("stale content was sent (%v):\n%s", err, raw)
	}
}

// TestBodyCacheBreakpoints: the message that ends the conversation carries the
// breakpoint, and the same message sent again in the middle of a longer conversation
// does not.
func TestBodyCacheBreakpoints(t *testing.T) {
	c := newBodyCache()
	req := fullRequest()
	for n := 1; n <= len(req.Messages); n++ {
		r := *req
		r.Messages = req.Messages[:n]
		raw, err := c.encodeBody(&r)
		if err != nil {
			t.Fatal(err)
		}
		// System, last tool, conversation end.
		if got := strings.Count(string(raw), cacheBreakpoint); got != 3 {
			t.Fatalf("%d messages: %d breakpoints, want 3:\n%s", n, got, raw)
		}
	}
}

func TestBodyCacheConcurrentAndBounded(t *testing.T) {
	c := newBodyCache()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				req := fullRequest()
				req.Messages[0].Content[0].Text = fmt.Sprintf("task %d turn %d", g, i)
				sameAsSDK(t, c, req)
			}
		})
	}
	wg.Wait()

	big := strings.Repeat("x", bodyCacheBytes/4)
	for i := range 12 {
		req := &model.Request{Model: "m", Messages: []model.Message{
			{Role: model.RoleUser, Content: []model.Block{{Kind: model.KindText, Text: fmt.Sprint(i) + big}}},
			{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.KindText, Text: "ok"}}},
		}}
		if _, err := c.encodeBody(req); err != nil {
			t.Fatal(err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	held := 0
	for _, b := range c.cur {
		held += len(b)
	}
	for _, b := range c.old {
		held += len(b)
	}
	if held > 2*bodyCacheBytes+bodyCacheBytes/4+1024 {
		t.Fatalf("the cache holds %d bytes, more than two generations of %d", held, bodyCacheBytes)
	}
}

// FuzzBody holds the encoder to the SDK's encoding for any text, tool input and name.
func FuzzBody(f *testing.F) {
	f.Add("hello", `{"a":1}`, "Read", "sig")
	f.Add("\x00\x7f\u2028\xed\xa0\x80", ` {"a" : [1, 2] } `, "\"q\"", "")
	f.Add("", `[]`, "", "s")
	f.Fuzz(func(t *testing.T, text, input, name, sig string) {
		req := &model.Request{Model: name, System: text, Tools: []model.ToolSpec{{Name: name, Description: text}}, Messages: []model.Message{
			{Role: model.RoleUser, Content: []model.Block{{Kind: model.KindText, Text: text}}},
			{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.KindThinking, Text: text, Signature: sig}, {Kind: model.KindToolUse, ID: name, Name: name, Input: json.RawMessage(input)}}},
			{Role: model.RoleUser, Content: []model.Block{{Kind: model.KindToolResult, ID: name, Content: []model.Block{{Kind: model.KindText, Text: text}}}, {Kind: model.KindText, Text: sig}}},
		}}
		c := newBodyCache()
		sameAsSDK(t, c, req)
		req.Messages = append(req.Messages, model.Message{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.KindText, Text: input}}})
		sameAsSDK(t, c, req)
	})
}

// BenchmarkRequestBody is the cost of a turn's request body at turn 10 and at turn
// 300 of a conversation that reads a 1 KB file each turn: "sdk" is the SDK's encoder
// over its parameters (what the provider sent before), "body" the provider's own with
// the earlier messages cached, as they are from the second turn on (the last two
// messages are new each time: the previous end, now without its breakpoint, and the
// new end).
func BenchmarkRequestBody(b *testing.B) {
	for _, turns := range []int{10, 300} {
		req := &model.Request{Model: "claude-sonnet-4-5", System: strings.Repeat("You are an agent. ", 400), MaxTokens: 8192}
		for i := range 20 {
			req.Tools = append(req.Tools, model.ToolSpec{Name: fmt.Sprintf("Tool%d", i), Description: strings.Repeat("Does things. ", 40),
				InputSchema: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string","description":"the path"},"limit":{"type":"integer"}},"required":["file_path"]}`)})
		}
		req.Messages = append(req.Messages, model.Message{Role: model.RoleUser, Content: []model.Block{{Kind: model.KindText, Text: "read the files"}}})
		result := strings.Repeat("     1\tline of a file that the model asked to read\n", 20)
		for i := range turns - 1 {
			id := fmt.Sprintf("toolu_%04d", i)
			req.Messages = append(req.Messages,
				model.Message{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.KindToolUse, ID: id, Name: "Read", Input: json.RawMessage(fmt.Sprintf(`{"file_path":"/work/f%d.txt"}`, i%5))}}},
				model.Message{Role: model.RoleUser, Content: []model.Block{{Kind: model.KindToolResult, ID: id, Content: []model.Block{{Kind: model.KindText, Text: result}}}}})
		}
		n := len(req.Messages)
		b.Run(fmt.Sprintf("turn=%d/encoder=sdk", turns), func(b *testing.B) {
			for b.Loop() {
				params, err := buildParams(req)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := json.Marshal(params); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("turn=%d/encoder=body", turns), func(b *testing.B) {
			c := newBodyCache()
			if _, err := c.encodeBody(req); err != nil {
				b.Fatal(err)
			}
			i := 0
			for b.Loop() {
				i++
				// Two new messages per turn, as in a real conversation.
				req.Messages[n-2].Content[0].Input = json.RawMessage(fmt.Sprintf(`{"file_path":"/work/g%d.txt"}`, i))
				req.Messages[n-1].Content[0].Content[0].Text = fmt.Sprint(i) + result
				if _, err := c.encodeBody(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
