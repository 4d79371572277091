package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/openai"
)

// benchRequest is a request as a task's tenth turn sends it: a long system prompt, a
// conversation of tool calls and results, and sixteen tools with their schemas.
func benchRequest() *model.Request {
	req := &model.Request{Model: "gpt-bench", System: strings.Repeat("You are a careful coding agent. ", 300)}
	req.Messages = append(req.Messages, userText("fix the failing test in ./pkg"))
	for i := range 10 {
		id := fmt.Sprintf("call_%d", i)
		req.Messages = append(req.Messages,
			model.Message{Role: model.RoleAssistant, Content: []model.Block{
				model.TextBlock("Let me look at the file."),
				{Kind: model.KindToolUse, ID: id, Name: "Read", Input: json.RawMessage(`{"file_path":"pkg/file.go","limit":200}`)},
			}},
			model.Message{Role: model.RoleUser, Content: []model.Block{
				{Kind: model.KindToolResult, ID: id, Content: []model.Block{model.TextBlock(strings.Repeat("func f() { return }\n", 100))}},
			}})
	}
	schema := json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string","description":"The absolute path"},"offset":{"type":"number"},"limit":{"type":"number"}},"required":["file_path"],"additionalProperties":false}`)
	for i := range 16 {
		req.Tools = append(req.Tools, model.ToolSpec{Name: fmt.Sprintf("Tool%d", i), Description: strings.Repeat("Does a thing. ", 40), InputSchema: schema})
	}
	return req
}

// BenchmarkStreamCall measures one whole call over local HTTP: the request encoded and
// sent, a short streamed answer read. The server only drains the body.
func BenchmarkStreamCall(b *testing.B) {
	const answer = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, answer)
	}))
	defer srv.Close()
	p, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: "sk-bench"})
	if err != nil {
		b.Fatal(err)
	}
	req := benchRequest()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := p.Stream(context.Background(), req, nil)
		if err != nil || resp.Text() != "ok" {
			b.Fatalf("%v %v", resp, err)
		}
	}
}
