package openaitest

import (
	"encoding/json"
	"strings"
)

// ChatRequest is a typed view of a Chat Completions request body, for assertions.
type ChatRequest struct {
	Model               string         `json:"model"`
	Messages            []Message      `json:"messages"`
	Tools               []Tool         `json:"tools"`
	Stream              bool           `json:"stream"`
	StreamOptions       *StreamOptions `json:"stream_options"`
	MaxTokens           *int64         `json:"max_tokens"`
	MaxCompletionTokens *int64         `json:"max_completion_tokens"`
}

// StreamOptions is the request's stream_options.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Message is one message of a request.
type Message struct {
	Role string `json:"role"`
	// Content is a JSON string, an array of parts, or null/absent.
	Content    json.RawMessage   `json:"content"`
	ToolCalls  []MessageToolCall `json:"tool_calls"`
	ToolCallID string            `json:"tool_call_id"`
}

// MessageToolCall is one tool call of an assistant message.
type MessageToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Part is one content part of a message.
type Part struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL struct {
		URL string `json:"url"`
	} `json:"image_url"`
}

// Tool is one tool of a request.
type Tool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// Parts returns the message's content as parts: a string content is one text part.
func (m Message) Parts() []Part {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []Part{{Type: "text", Text: s}}
	}
	var parts []Part
	_ = json.Unmarshal(m.Content, &parts)
	return parts
}

// Text returns the message's text: the string content, or its text parts joined.
func (m Message) Text() string {
	var b strings.Builder
	for _, p := range m.Parts() {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// IsString reports whether the content is a plain JSON string.
func (m Message) IsString() bool {
	var s string
	return json.Unmarshal(m.Content, &s) == nil
}
