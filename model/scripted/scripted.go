// Package scripted is a deterministic model.Provider that replays a script of assistant
// turns. It makes no network calls. Tests use it, and so does `sema demo`, the built-in
// demonstration that runs without an API key.
//
// A script is JSON:
//
//	{"turns": [
//	  {"text": "Let me look.", "tool_calls": [{"name": "Glob", "input": {"pattern": "**/*.go"}}]},
//	  {"text": "There are two Go files."}
//	]}
//
// Each Stream call answers with the next turn. A turn with tool calls stops with
// "tool_use", one without with "end_turn" (unless stop_reason says otherwise). A turn may
// instead carry an error {"code": "model.overloaded", "message": "…"}, returned as a
// *sema.Error. When the script is exhausted, Stream fails with CodeExhausted.
package scripted

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
)

// CodeExhausted is the error code of a call past the end of the script.
const CodeExhausted = "model.script_exhausted"

// Script is a sequence of assistant turns.
type Script struct {
	// Turns are the responses, in the order successive Stream calls return them.
	Turns []Turn `json:"turns"`
}

// Turn is one scripted response.
type Turn struct {
	// Text, when not empty, becomes one text block, streamed to onDelta in pieces
	// split after each space.
	Text string `json:"text,omitempty"`
	// ToolCalls become tool_use blocks after the text, in order.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// StopReason is the response's stop reason; empty means tool_use when there are
	// tool calls and end_turn otherwise.
	StopReason model.StopReason `json:"stop_reason,omitempty"`
	// Usage is the response's usage; nil means an estimate of four bytes a token.
	Usage *model.Usage `json:"usage,omitempty"`
	// Error, when set, is returned by Stream instead of a response; the turn is
	// still consumed.
	Error *sema.Error `json:"error,omitempty"`
}

// ToolCall is one scripted tool call. ID is generated when empty.
type ToolCall struct {
	// ID is the tool_use ID; empty means "toolu_scripted_<turn>_<call>", both
	// counted from 1.
	ID string `json:"id,omitempty"`
	// Name is the tool called; Parse refuses a call without one.
	Name string `json:"name"`
	// Input is the call's arguments, a JSON object; empty means {}.
	Input json.RawMessage `json:"input,omitempty"`
}

// Provider replays a Script. It is safe for concurrent use; concurrent runs share the
// script's position, so give each run its own Provider when order matters.
type Provider struct {
	mu       sync.Mutex
	turns    []Turn
	next     int
	requests []*model.Request
}

// New returns a Provider replaying s.
func New(s Script) *Provider { return &Provider{turns: s.Turns} }

// Parse decodes a script strictly (unknown fields are refused, so a typo is not a silent
// no-op).
func Parse(data []byte) (Script, error) {
	var s Script
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Script{}, sema.Errorf(model.CodeConfig, "the model script is not valid: %v", err)
	}
	for i, t := range s.Turns {
		for j, c := range t.ToolCalls {
			if c.Name == "" {
				return Script{}, sema.Errorf(model.CodeConfig, "the model script's turn %d, tool call %d has no name", i+1, j+1)
			}
			var obj map[string]json.RawMessage
			if len(c.Input) > 0 && json.Unmarshal(c.Input, &obj) != nil {
				return Script{}, sema.Errorf(model.CodeConfig, "the model script's turn %d, tool call %d: input must be a JSON object", i+1, j+1)
			}
		}
	}
	return s, nil
}

// Load reads and parses a script file.
func Load(path string) (*Provider, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, sema.Errorf(model.CodeConfig, "cannot read the model script %s: %v", path, err)
	}
	s, err := Parse(data)
	if err != nil {
		return nil, err
	}
	return New(s), nil
}

// Name returns "scripted".
func (*Provider) Name() string { return "scripted" }

// Requests returns the requests received so far, for tests.
func (p *Provider) Requests() []*model.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*model.Request(nil), p.requests...)
}

// Stream answers with the next turn of the script.
func (p *Provider) Stream(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, &sema.Error{Code: model.CodeCancelled, Message: "the model call was cancelled", Err: err}
	}
	p.mu.Lock()
	p.requests = append(p.requests, req)
	if p.next >= len(p.turns) {
		p.mu.Unlock()
		return nil, sema.Errorf(CodeExhausted, "the model script has no turn %d", p.next+1)
	}
	n := p.next
	t := p.turns[n]
	p.next++
	p.mu.Unlock()

	if t.Error != nil {
		return nil, t.Error
	}
	resp := &model.Response{Model: "scripted"}
	if t.Text != "" {
		if onDelta != nil {
			// Deliver the text in word-sized pieces, as a streaming model would.
			for _, w := range strings.SplitAfter(t.Text, " ") {
				onDelta(model.Delta{Kind: model.DeltaText, Text: w})
			}
		}
		resp.Content = append(resp.Content, model.TextBlock(t.Text))
	}
	for i, c := range t.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("toolu_scripted_%d_%d", n+1, i+1)
		}
		input := c.Input
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		if onDelta != nil {
			onDelta(model.Delta{Kind: model.DeltaToolUse, Name: c.Name})
		}
		resp.Content = append(resp.Content, model.Block{Kind: model.KindToolUse, ID: id, Name: c.Name, Input: input})
	}
	resp.StopReason = t.StopReason
	if resp.StopReason == "" {
		resp.StopReason = model.StopEndTurn
		if len(t.ToolCalls) > 0 {
			resp.StopReason = model.StopToolUse
		}
	}
	if t.Usage != nil {
		resp.Usage = *t.Usage
	} else {
		resp.Usage = model.Usage{InputTokens: int64(approxTokens(req)), OutputTokens: int64(len(t.Text)/4 + 1)}
	}
	return resp, nil
}

// approxTokens estimates the prompt size (four bytes a token) so demo usage is plausible.
func approxTokens(req *model.Request) int {
	n := len(req.System)
	for _, m := range req.Messages {
		for _, b := range m.Content {
			n += len(b.Text) + len(b.Input)
			for _, c := range b.Content {
				n += len(c.Text)
			}
		}
	}
	return n/4 + 1
}
