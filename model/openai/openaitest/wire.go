package openaitest

import (
	"encoding/json"
	"strings"
)

// ChatRequest is a typed view of a Chat Completions request body, for assertions.
type ChatRequest struct {
	Model               string         `json:"model"`                 // the model asked for
	Messages            []Message      `json:"messages"`              // the conversation, system message first when there is one
	Tools               []Tool         `json:"tools"`                 // the function tools offered
	Stream              bool           `json:"stream"`                // true for every request the server scripts
	StreamOptions       *StreamOptions `json:"stream_options"`        // nil when absent
	MaxTokens           *int64         `json:"max_tokens"`            // nil when absent; compatible servers get this one
	MaxCompletionTokens *int64         `json:"max_completion_tokens"` // nil when absent; the official API gets this one
}

// StreamOptions is the request's stream_options.
type StreamOptions struct {
	// IncludeUsage asks for the final usage chunk.
	IncludeUsage bool `json:"include_usage"`
}

// Message is one message of a request.
type Message struct {
	// Role is "system", "user", "assistant" or "tool".
	Role string `json:"role"`
	// Content is a JSON string, an array of parts, or null/absent.
	Content json.RawMessage `json:"content"`
	// ToolCalls are an assistant message's calls.
	ToolCalls []MessageToolCall `json:"tool_calls"`
	// ToolCallID is the call a tool message answers.
	ToolCallID string `json:"tool_call_id"`
}

// MessageToolCall is one tool call of an assistant message.
type MessageToolCall struct {
	ID       string `json:"id"`   // the id a tool message answers
	Type     string `json:"type"` // "function"
	Function struct {
		Name      string `json:"name"`      // the function called
		Arguments string `json:"arguments"` // the arguments as a JSON text in a string
	} `json:"function"` // the call itself
}

// Part is one content part of a message.
type Part struct {
	Type     string `json:"type"` // "text" or "image_url"
	Text     string `json:"text"` // a text part's text
	ImageURL struct {
		URL string `json:"url"` // the image's URL; package openai sends a data: URL
	} `json:"image_url"` // an image_url part's image
}

// Tool is one tool of a request.
type Tool struct {
	Type     string `json:"type"` // "function"
	Function struct {
		Name        string          `json:"name"`        // the tool's name
		Description string          `json:"description"` // the tool's description
		Parameters  json.RawMessage `json:"parameters"`  // the JSON Schema of its input
	} `json:"function"` // the function the tool declares
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
