// Package model is the one interface between the engine and a language model: messages
// made of content blocks, tool specs, and a streaming call that returns the assembled
// response. Providers (model/anthropic, model/openai, model/scripted) translate to and from
// their wire formats inside their own packages; no SDK type crosses this boundary.
package model

import (
	"context"
	"encoding/json"
)

// Provider streams one model response. Stream calls onDelta (which may be nil) as text
// arrives, and returns the complete response once the stream ends. A provider retries
// transient failures itself; the error it returns is final and is a *sema.Error with a
// "model.*" code (see the Code constants). Stream must honour ctx: cancellation ends the
// call promptly with ctx's error wrapped in code CodeCancelled.
type Provider interface {
	// Name is the provider's short name ("anthropic", "openai", "scripted").
	Name() string
	Stream(ctx context.Context, req *Request, onDelta func(Delta)) (*Response, error)
}

// Role is who spoke a message.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one entry of the conversation.
type Message struct {
	Role    Role    `json:"role"`
	Content []Block `json:"content"`
}

// BlockKind names the kind of a content block.
type BlockKind string

const (
	KindText       BlockKind = "text"
	KindImage      BlockKind = "image"
	KindToolUse    BlockKind = "tool_use"
	KindToolResult BlockKind = "tool_result"
	KindThinking   BlockKind = "thinking"
)

// Block is one piece of message content. Which fields are meaningful depends on Kind:
//   - text: Text.
//   - image: MediaType ("image/png", …) and Data (raw bytes, not base64).
//   - tool_use: ID, Name, Input (a JSON object).
//   - tool_result: ID (the tool_use it answers), Content (text and image blocks), IsError.
//   - thinking: Text, and Signature when the provider returned one (it must be sent back
//     unchanged on the next request).
type Block struct {
	Kind      BlockKind       `json:"kind"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	Content   []Block         `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	MediaType string          `json:"media_type,omitempty"`
	Data      []byte          `json:"data,omitempty"`
	Signature string          `json:"signature,omitempty"`
}

// TextBlock returns a text block.
func TextBlock(s string) Block { return Block{Kind: KindText, Text: s} }

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Request is one call to the model.
type Request struct {
	// Model is the provider's model name ("claude-sonnet-4-5", "gpt-4.1", "llama3.1").
	Model string
	// System is the system prompt. Providers that support prompt caching place a cache
	// breakpoint after it and after the tool specs, which stay stable across turns.
	System   string
	Messages []Message
	Tools    []ToolSpec
	// MaxTokens bounds the response; zero means the provider's default (8192).
	MaxTokens int
}

// StopReason says why the model stopped. Providers map their own words onto these.
type StopReason string

const (
	StopEndTurn   StopReason = "end_turn"
	StopToolUse   StopReason = "tool_use"
	StopMaxTokens StopReason = "max_tokens"
	StopSequence  StopReason = "stop_sequence"
	StopRefusal   StopReason = "refusal"
)

// Usage counts tokens. Cache fields are zero for providers without prompt caching.
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_input_tokens"`
	CacheWriteTokens int64 `json:"cache_creation_input_tokens"`
}

// Add returns u + o.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + o.InputTokens,
		OutputTokens:     u.OutputTokens + o.OutputTokens,
		CacheReadTokens:  u.CacheReadTokens + o.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + o.CacheWriteTokens,
	}
}

// Response is one complete model response.
type Response struct {
	// Model is the model that answered, as the provider reported it.
	Model      string
	Content    []Block
	StopReason StopReason
	Usage      Usage
}

// ToolCalls returns the tool_use blocks of the response, in order.
func (r *Response) ToolCalls() []Block {
	var calls []Block
	for _, b := range r.Content {
		if b.Kind == KindToolUse {
			calls = append(calls, b)
		}
	}
	return calls
}

// Text returns the concatenated text blocks of the response.
func (r *Response) Text() string {
	var s string
	for _, b := range r.Content {
		if b.Kind == KindText {
			s += b.Text
		}
	}
	return s
}

// DeltaKind names a streaming increment.
type DeltaKind string

const (
	DeltaText     DeltaKind = "text"
	DeltaThinking DeltaKind = "thinking"
	// DeltaToolUse announces that a tool call has started streaming (Name is set).
	DeltaToolUse DeltaKind = "tool_use"
)

// Delta is an increment of a streaming response, for live display only: the Response
// returned by Stream is the authority.
type Delta struct {
	Kind DeltaKind
	Text string
	Name string
}

// Error codes every provider uses for its final errors.
const (
	CodeAuth            = "model.auth"             // missing or rejected credentials
	CodeNotFound        = "model.not_found"        // unknown model
	CodeContextTooLong  = "model.context_too_long" // the prompt exceeds the context window
	CodeRateLimited     = "model.rate_limited"     // 429 after retries
	CodeOverloaded      = "model.overloaded"       // 5xx / overloaded after retries
	CodeNetwork         = "model.network"          // connection failure
	CodeBadRequest      = "model.bad_request"      // the provider refused the request
	CodeMalformedStream = "model.malformed_stream" // the stream broke the wire format
	CodeCancelled       = "model.cancelled"        // ctx ended the call
	CodeConfig          = "model.config"           // provider misconfigured (no API key, bad base URL)
	CodeError           = "model.error"            // a provider error with no code of its own (the runner codes it so)
)
