package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
)

// imageOmitted stands for an image in a tool result: tool messages carry text only.
const imageOmitted = "[image omitted]"

// The request types below are the parts of a Chat Completions request this provider
// sends, encoded with encoding/json.

type chatRequest struct {
	Model    string        `json:"model"`
	Messages []chatMessage `json:"messages"`
	// Exactly one of the two limits is sent (see Provider.official).
	MaxTokens           int64         `json:"max_tokens,omitempty"`
	MaxCompletionTokens int64         `json:"max_completion_tokens,omitempty"`
	Stream              bool          `json:"stream"`
	StreamOptions       streamOptions `json:"stream_options"`
	Tools               []chatTool    `json:"tools,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role string `json:"role"`
	// Content is a string or a []contentPart; nil (absent) only for an assistant
	// message that makes tool calls.
	Content    any            `json:"content,omitempty"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type contentPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
}

type imageURL struct {
	URL string `json:"url"`
}

type chatToolCall struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"`
	Function chatFunctionCall `json:"function"`
}

type chatFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string           `json:"type"`
	Function chatFunctionSpec `json:"function"`
}

type chatFunctionSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// emptySchema is the parameters of a tool that declares no input schema.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// body translates req into the JSON body of a streaming Chat Completions request.
func (p *Provider) body(req *model.Request) ([]byte, error) {
	out := chatRequest{
		Model:         req.Model,
		Stream:        true,
		StreamOptions: streamOptions{IncludeUsage: true},
	}
	maxTokens := int64(req.MaxTokens)
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	if p.official {
		out.MaxCompletionTokens = maxTokens
	} else {
		out.MaxTokens = maxTokens
	}

	if req.System != "" {
		out.Messages = append(out.Messages, chatMessage{Role: "system", Content: req.System})
	}
	for i, m := range req.Messages {
		msgs, err := messages(m)
		if err != nil {
			return nil, err.With("message", i)
		}
		out.Messages = append(out.Messages, msgs...)
	}
	for _, t := range req.Tools {
		tool, err := functionTool(t)
		if err != nil {
			return nil, err
		}
		out.Tools = append(out.Tools, tool)
	}
	// Text is sent as written: HTML characters need no escaping in a request body.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&out); err != nil {
		return nil, sema.Errorf(model.CodeBadRequest, "the request cannot be encoded as JSON (%v): check the tool inputs in the conversation", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// messages translates one conversation message; a user message may become several
// (its tool results first, then the rest).
func messages(m model.Message) ([]chatMessage, *sema.Error) {
	switch m.Role {
	case model.RoleAssistant:
		return []chatMessage{assistantMessage(m.Content)}, nil
	case model.RoleUser:
		return userMessages(m.Content), nil
	default:
		return nil, sema.Errorf(model.CodeBadRequest, "a message has the role %q; only user and assistant messages can be sent", m.Role)
	}
}

func assistantMessage(blocks []model.Block) chatMessage {
	a := chatMessage{Role: "assistant"}
	var text []string
	for _, b := range blocks {
		switch b.Kind {
		case model.KindText:
			text = append(text, b.Text)
		case model.KindToolUse:
			a.ToolCalls = append(a.ToolCalls, chatToolCall{
				ID:       b.ID,
				Type:     "function",
				Function: chatFunctionCall{Name: b.Name, Arguments: arguments(b.Input)},
			})
		}
		// Thinking blocks stay out: Chat Completions has no field for them.
	}
	// Content may be absent only when the message makes tool calls.
	if len(text) > 0 || len(a.ToolCalls) == 0 {
		a.Content = strings.Join(text, "\n\n")
	}
	return a
}

// arguments renders a tool input as the arguments string: verbatim, {} when empty.
func arguments(input json.RawMessage) string {
	s := strings.TrimSpace(string(input))
	if s == "" {
		return "{}"
	}
	return s
}

func userMessages(blocks []model.Block) []chatMessage {
	var out []chatMessage
	var parts []contentPart
	var text []string
	images := false
	for _, b := range blocks {
		switch b.Kind {
		case model.KindToolResult:
			out = append(out, chatMessage{Role: "tool", Content: toolResultText(b), ToolCallID: b.ID})
		case model.KindText:
			text = append(text, b.Text)
			parts = append(parts, contentPart{Type: "text", Text: b.Text})
		case model.KindImage:
			images = true
			parts = append(parts, contentPart{Type: "image_url", ImageURL: &imageURL{URL: dataURL(b)}})
		}
	}
	switch {
	case images:
		out = append(out, chatMessage{Role: "user", Content: parts})
	case len(text) > 0:
		// Text alone goes as a plain string, the form every compatible server accepts.
		out = append(out, chatMessage{Role: "user", Content: strings.Join(text, "\n\n")})
	case len(out) == 0:
		// An empty user message still holds its place in the conversation.
		out = append(out, chatMessage{Role: "user", Content: ""})
	}
	return out
}

// toolResultText is the text of a tool message for a tool_result block.
func toolResultText(b model.Block) string {
	var parts []string
	for _, c := range b.Content {
		switch c.Kind {
		case model.KindText:
			parts = append(parts, c.Text)
		case model.KindImage:
			parts = append(parts, imageOmitted)
		}
	}
	s := strings.Join(parts, "\n")
	if b.IsError {
		s = "Error: " + s
	}
	return s
}

func dataURL(b model.Block) string {
	mt := b.MediaType
	if mt == "" {
		mt = "image/png"
	}
	return "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(b.Data)
}

// functionTool translates a tool spec. The schema is passed through as raw JSON, so it
// reaches the server as written (numbers and all, compacted).
func functionTool(t model.ToolSpec) (chatTool, *sema.Error) {
	params := emptySchema
	if s := bytes.TrimSpace(t.InputSchema); len(s) > 0 {
		var members map[string]json.RawMessage
		if err := json.Unmarshal(s, &members); err != nil {
			return chatTool{}, sema.Errorf(model.CodeBadRequest,
				"the input schema of tool %q is not a JSON object: fix the tool's schema", t.Name).With("tool", t.Name)
		}
		params = json.RawMessage(s)
		if members == nil {
			params = json.RawMessage(`{}`) // a null schema: an object without members
		}
	}
	return chatTool{Type: "function", Function: chatFunctionSpec{Name: t.Name, Description: t.Description, Parameters: params}}, nil
}
