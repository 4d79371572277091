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
	// Stream sends req and returns the assembled response; see the type's comment for
	// onDelta, retries, errors and cancellation.
	Stream(ctx context.Context, req *Request, onDelta func(Delta)) (*Response, error)
}

// Role is who spoke a message.
type Role string

const (
	// RoleUser is the caller's side: prompts and tool results.
	RoleUser Role = "user"
	// RoleAssistant is the model's side: its text, thinking and tool calls.
	RoleAssistant Role = "assistant"
)

// Message is one entry of the conversation.
type Message struct {
	// Role is who spoke; the providers refuse a role other than RoleUser and
	// RoleAssistant with CodeBadRequest.
	Role Role `json:"role"`
	// Content is what was said, in order.
	Content []Block `json:"content"`
}

// BlockKind names the kind of a content block.
type BlockKind string

// The kinds of content block; Block's comment lists the fields each one uses.
const (
	KindText       BlockKind = "text"        // plain text, either side
	KindImage      BlockKind = "image"       // an image, in a user message or a tool result
	KindToolUse    BlockKind = "tool_use"    // a tool call by the model
	KindToolResult BlockKind = "tool_result" // the answer to one tool call
	KindThinking   BlockKind = "thinking"    // the model's reasoning, where it shows it
)

// Block is one piece of message content. Which fields are meaningful depends on Kind:
//   - text: Text.
//   - image: MediaType ("image/png", …) and Data (raw bytes, not base64).
//   - tool_use: ID, Name, Input (a JSON object).
//   - tool_result: ID (the tool_use it answers), Content (text and image blocks), IsError.
//   - thinking: Text, and Signature when the provider returned one (it must be sent back
//     unchanged on the next request).
type Block struct {
	// Kind selects which of the other fields are meaningful.
	Kind BlockKind `json:"kind"`
	// Text is the text of a text or thinking block.
	Text string `json:"text,omitempty"`
	// ID names a tool call: the model's ID on a tool_use block, and the same ID on the
	// tool_result that answers it.
	ID string `json:"id,omitempty"`
	// Name is the tool a tool_use block calls.
	Name string `json:"name,omitempty"`
	// Input is a tool_use block's arguments, a JSON object as the model sent it.
	Input json.RawMessage `json:"input,omitempty"`
	// Content is a tool_result block's answer: text and image blocks.
	Content []Block `json:"content,omitempty"`
	// IsError marks a tool_result that reports a failure to the model.
	IsError bool `json:"is_error,omitempty"`
	// MediaType is an image block's MIME type ("image/png", …).
	MediaType string `json:"media_type,omitempty"`
	// Data is an image block's raw bytes, not base64 (JSON encodes them as base64).
	Data []byte `json:"data,omitempty"`
	// Signature is the provider's signature of a thinking block, to be sent back
	// unchanged; empty when the provider gave none.
	Signature string `json:"signature,omitempty"`
}

// TextBlock returns a text block.
func TextBlock(s string) Block { return Block{Kind: KindText, Text: s} }

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	// Name is what the model calls the tool by; tool_use blocks carry it.
	Name string `json:"name"`
	// Description tells the model what the tool does and when to use it.
	Description string `json:"description"`
	// InputSchema is the JSON Schema of the tool's input, a JSON object; a provider
	// refuses a schema it cannot send with CodeBadRequest.
	InputSchema json.RawMessage `json:"input_schema"`
}

// Request is one call to the model.
type Request struct {
	// Model is the provider's model name ("claude-sonnet-4-5", "gpt-4.1", "llama3.1").
	Model string
	// System is the system prompt. Providers that support prompt caching place a cache
	// breakpoint after it and after the tool specs, which stay stable across turns.
	System string
	// Messages is the conversation so far, oldest first.
	Messages []Message
	// Tools are the tools the model may call in this response; nil offers none.
	Tools []ToolSpec
	// MaxTokens bounds the response; zero means the provider's default (8192).
	MaxTokens int
}

// StopReason says why the model stopped. Providers map their own words onto these.
type StopReason string

const (
	// StopEndTurn: the model finished its answer. Also what a provider reports for a
	// stop word it does not know when the response made no tool call.
	StopEndTurn StopReason = "end_turn"
	// StopToolUse: the response holds tool calls the engine must answer. Providers also
	// report it for a stop word they do not know (and OpenAI-compatible servers' "stop")
	// when the response made calls.
	StopToolUse StopReason = "tool_use"
	// StopMaxTokens: the response hit Request.MaxTokens (or the context window) and is
	// cut off.
	StopMaxTokens StopReason = "max_tokens"
	// StopSequence: the model produced a stop sequence (Anthropic only).
	StopSequence StopReason = "stop_sequence"
	// StopRefusal: the model, or the provider's content filter, declined to answer.
	StopRefusal StopReason = "refusal"
)

// Usage counts tokens. Cache fields are zero for providers without prompt caching.
type Usage struct {
	// InputTokens counts the uncached input tokens: cache reads and writes are counted
	// apart, by every provider.
	InputTokens int64 `json:"input_tokens"`
	// OutputTokens counts the tokens the model generated.
	OutputTokens int64 `json:"output_tokens"`
	// CacheReadTokens counts input tokens served from the prompt cache.
	CacheReadTokens int64 `json:"cache_read_input_tokens"`
	// CacheWriteTokens counts input tokens written to the prompt cache.
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
	Model string
	// Content is the assistant message's thinking, text and tool_use blocks, in the
	// order the model produced them.
	Content []Block
	// StopReason says why the response ended.
	StopReason StopReason
	// Usage is the token count of this one response.
	Usage Usage
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
	// DeltaText carries a piece of answer text in Text.
	DeltaText DeltaKind = "text"
	// DeltaThinking carries a piece of thinking text in Text.
	DeltaThinking DeltaKind = "thinking"
	// DeltaToolUse announces that a tool call has started streaming (Name is set).
	DeltaToolUse DeltaKind = "tool_use"
)

// Delta is an increment of a streaming response, for live display only: the Response
// returned by Stream is the authority.
type Delta struct {
	// Kind says which of Text and Name is set.
	Kind DeltaKind
	// Text is the new piece of text or thinking, not the text so far.
	Text string
	// Name is the tool whose call started, for DeltaToolUse.
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
