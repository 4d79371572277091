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

// Script is a sequence of assistant turns, and the threads of other conversations.
type Script struct {
	// Turns are the responses, in the order successive Stream calls return them.
	Turns []Turn `json:"turns"`
	// Threads answer the conversations that are not the main one — a delegated agent's —
	// each from its own turns, so that concurrent conversations stay deterministic. A
	// request whose first user message contains a thread's Match is answered from that
	// thread (the first thread that matches); any other request from Turns.
	Threads []Thread `json:"threads,omitempty"`
}

// Thread is the script of one conversation told apart by its first user message.
type Thread struct {
	// Match is a piece of text the conversation's first user message contains; Parse
	// refuses an empty one.
	Match string `json:"match"`
	// Turns are the thread's responses, in order.
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
	// counted from 1 ("toolu_scripted_t<thread>_<turn>_<call>" in a thread).
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
	threads  []Thread
	threadAt []int
	requests []*model.Request
}

// New returns a Provider replaying s.
func New(s Script) *Provider {
	return &Provider{turns: s.Turns, threads: s.Threads, threadAt: make([]int, len(s.Threads))}
}

// Parse decodes a script strictly (unknown fields are refused, so a typo is not a silent
// no-op).
func Parse(data []byte) (Script, error) {
	var s Script
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Script{}, sema.Errorf(model.CodeConfig, "the model script is not valid: %v", err)
	}
	for i, th := range s.Threads {
		if th.Match == "" {
			return Script{}, sema.Errorf(model.CodeConfig, "the model script's thread %d has no match", i+1)
		}
		if err := checkTurns(th.Turns, fmt.Sprintf("thread %q, ", th.Match)); err != nil {
			return Script{}, err
		}
	}
	if err := checkTurns(s.Turns, ""); err != nil {
		return Script{}, err
	}
	return s, nil
}

func checkTurns(turns []Turn, where string) error {
	for i, t := range turns {
		for j, c := range t.ToolCalls {
			if c.Name == "" {
				return sema.Errorf(model.CodeConfig, "the model script's %sturn %d, tool call %d has no name", where, i+1, j+1)
			}
			var obj map[string]json.RawMessage
			if len(c.Input) > 0 && json.Unmarshal(c.Input, &obj) != nil {
				return sema.Errorf(model.CodeConfig, "the model script's %sturn %d, tool call %d: input must be a JSON object", where, i+1, j+1)
			}
		}
	}
	return nil
}

// Load reads and parses a script file.
func Load(path string) (*Provider, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, sema.Errorf(model.CodeConfig, "cannot read the model script %s: %w", path, err)
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
	turns, next, where, idPrefix := p.turns, &p.next, "", "toolu_scripted_"
	if first := firstUserText(req); first != "" {
		for i, th := range p.threads {
			if strings.Contains(first, th.Match) {
				turns, next, where = th.Turns, &p.threadAt[i], fmt.Sprintf("thread %q has ", th.Match)
				idPrefix = fmt.Sprintf("toolu_scripted_t%d_", i+1)
				break
			}
		}
	}
	if *next >= len(turns) {
		n := *next
		p.mu.Unlock()
		if where == "" {
			where = "model script has "
		} else {
			where = "model script's " + where
		}
		return nil, sema.Errorf(CodeExhausted, "the %sno turn %d", where, n+1)
	}
	n := *next
	t := turns[n]
	*next++
	p.mu.Unlock()

	if t.Error != nil {
		return nil, t.Error
	}
	resp := &model.Response{Model: "scripted"}
	if t.Text != "" {
		if onDelta != nil {
			// Deliver the text in word-sized pieces, as a streaming model would, and stop
			// when the call is cancelled meanwhile, as a stream cut short would.
			for _, w := range strings.SplitAfter(t.Text, " ") {
				if ctx.Err() != nil {
					break
				}
				onDelta(model.Delta{Kind: model.DeltaText, Text: w})
			}
		}
		resp.Content = append(resp.Content, model.TextBlock(t.Text))
	}
	if err := ctx.Err(); err != nil {
		return nil, &sema.Error{Code: model.CodeCancelled, Message: "the model call was cancelled", Err: err}
	}
	for i, c := range t.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("%s%d_%d", idPrefix, n+1, i+1)
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

// firstUserText is the text of the conversation's first user message.
func firstUserText(req *model.Request) string {
	for _, m := range req.Messages {
		if m.Role != model.RoleUser {
			continue
		}
		var b strings.Builder
		for _, bl := range m.Content {
			if bl.Kind == model.KindText {
				b.WriteString(bl.Text)
			}
		}
		return b.String()
	}
	return ""
}
