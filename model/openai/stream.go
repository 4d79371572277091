package openai

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
)

// maxLine bounds one line of the event stream. A compatible server may send a whole
// tool call (a file's content, say) in one data line, so the bound is generous; it
// exists so that a server that never sends a newline cannot exhaust memory.
const maxLine = 64 << 20

// streamAPIError is an error object the server sent inside the stream.
type streamAPIError struct{ apiError }

func (e *streamAPIError) Error() string { return "error event in the stream: " + e.Message }

// malformed is the error of a stream that broke the wire format.
func malformed(format string, args ...any) *sema.Error {
	return sema.Errorf(model.CodeMalformedStream, format, args...)
}

// toolCall is a tool call being assembled.
type toolCall struct {
	id, name string
	args     strings.Builder
}

// complete reports whether the arguments so far are a whole JSON value.
func (c *toolCall) complete() bool {
	s := strings.TrimSpace(c.args.String())
	return s != "" && json.Valid([]byte(s))
}

// assembler builds a model.Response from the chunks of one stream.
type assembler struct {
	reqModel string
	onDelta  func(model.Delta)
	maxLine  int

	model    string
	text     strings.Builder
	thinking strings.Builder
	calls    []*toolCall
	byIndex  map[int64]*toolCall
	finish   string
	refusal  bool
	usage    model.Usage
	done     bool
	// cut is set when the stream ended cleanly but early (no [DONE]): a server or a
	// proxy dropped the rest, which another attempt may well deliver.
	cut bool
}

func newAssembler(reqModel string, onDelta func(model.Delta)) *assembler {
	return &assembler{reqModel: reqModel, onDelta: onDelta, maxLine: maxLine, byIndex: map[int64]*toolCall{}}
}

func (a *assembler) emit(d model.Delta) {
	if a.onDelta != nil {
		a.onDelta(d)
	}
}

// scanBufs keeps the scanners' first buffers between streams: a service reads hundreds
// of streams a second, and a 64 KiB buffer per stream was a tenth of what it allocated.
// A line longer than one grows the scanner a buffer of its own, which is not kept.
var scanBufs = sync.Pool{New: func() any { b := make([]byte, 0, scanBufSize); return &b }}

const scanBufSize = 64 << 10

// read consumes a text/event-stream body until "data: [DONE]". It returns nil only for
// a complete stream; a *sema.Error for a stream that broke the format; a
// *streamAPIError for an error the server reported; any other error is the
// transport's.
func (a *assembler) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	if a.maxLine >= scanBufSize {
		buf := scanBufs.Get().(*[]byte)
		defer scanBufs.Put(buf)
		sc.Buffer((*buf)[:0], a.maxLine)
	} else {
		sc.Buffer(make([]byte, 0, a.maxLine), a.maxLine)
	}
	var (
		event string
		data  []byte
		have  bool
	)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if have {
				if err := a.event(event, data); err != nil || a.done {
					return err
				}
			}
			event, data, have = "", data[:0], false
			continue
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(name) {
		case "data":
			if have {
				data = append(data, '\n')
			}
			data = append(data, value...)
			have = true
		case "event":
			event = string(value)
		}
		// Comments (": keep-alive"), id and retry fields carry nothing for us.
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return malformed("the server sent a stream line longer than %d bytes: check that the base URL points at a Chat Completions API", a.maxLine)
		}
		return err
	}
	// The format ends an event with a blank line; a server that omits it before closing
	// still meant the event.
	if have {
		if err := a.event(event, data); err != nil || a.done {
			return err
		}
	}
	a.cut = true
	if a.finish == "" {
		return malformed("the stream ended before the response was complete (no finish_reason and no data: [DONE]): the server or a proxy cut it off; retry the task")
	}
	return malformed("the stream ended without data: [DONE] after finish_reason %q: the server or a proxy cut it off; retry the task", a.finish)
}

// event handles one server-sent event.
func (a *assembler) event(typ string, data []byte) error {
	payload := bytes.TrimSpace(data)
	if string(payload) == "[DONE]" {
		a.done = true
		if a.finish == "" {
			return malformed("the stream ended without a finish_reason: the server stopped the response early; retry the task")
		}
		return nil
	}
	if len(payload) == 0 {
		return nil
	}
	var chunk wireChunk
	if err := json.Unmarshal(payload, &chunk); err != nil {
		return malformed("the server sent a stream event that is not a JSON chunk (%q): retry the task, and check that the base URL points at a Chat Completions API", clip(string(payload), 80))
	}
	if e := bytes.TrimSpace(chunk.Error); (len(e) > 0 && string(e) != "null") || typ == "error" {
		return &streamAPIError{parseAPIError(0, payload)}
	}
	if a.model == "" {
		a.model = string(chunk.Model)
	}
	for i := range chunk.Choices {
		ch := &chunk.Choices[i]
		// Only the first choice is read; the request never asks for more (n = 1).
		if ch.Index.OK && ch.Index.V != 0 {
			continue
		}
		a.choice(ch)
	}
	if u := chunk.Usage; u != nil {
		cached := u.PromptTokensDetails.CachedTokens.V
		written := u.PromptTokensDetails.CacheWriteTokens.V
		a.usage = model.Usage{
			InputTokens:      max(u.PromptTokens.V-cached-written, 0),
			OutputTokens:     u.CompletionTokens.V,
			CacheReadTokens:  cached,
			CacheWriteTokens: written,
		}
	}
	return nil
}

func (a *assembler) choice(ch *wireChoice) {
	d := &ch.Delta
	// Compatible servers stream reasoning as reasoning_content (vLLM, DeepSeek) or
	// reasoning (Ollama, OpenRouter).
	for _, r := range [...]flexString{d.ReasoningContent, d.Reasoning} {
		if r != "" {
			a.thinking.WriteString(string(r))
			a.emit(model.Delta{Kind: model.DeltaThinking, Text: string(r)})
		}
	}
	if d.Content != "" {
		a.text.WriteString(string(d.Content))
		a.emit(model.Delta{Kind: model.DeltaText, Text: string(d.Content)})
	}
	if d.Refusal != "" {
		a.refusal = true
		a.text.WriteString(string(d.Refusal))
		a.emit(model.Delta{Kind: model.DeltaText, Text: string(d.Refusal)})
	}
	for i := range d.ToolCalls {
		tc := &d.ToolCalls[i]
		a.toolDelta(tc.Index.OK, tc.Index.V, string(tc.ID), string(tc.Function.Name), string(tc.Function.Arguments))
	}
	// The deprecated single function_call of older servers is one call without index.
	if fc := d.FunctionCall; fc.Name != "" || fc.Arguments != "" {
		a.toolDelta(false, 0, "", string(fc.Name), string(fc.Arguments))
	}
	if ch.FinishReason != "" {
		a.finish = string(ch.FinishReason)
	}
}

// toolDelta merges one tool-call delta; see the package documentation for the rules.
func (a *assembler) toolDelta(hasIndex bool, index int64, id, name, args string) {
	var c *toolCall
	switch {
	case hasIndex:
		c = a.byIndex[index]
	case id != "":
		for _, k := range a.calls {
			if k.id == id {
				c = k
				break
			}
		}
	case len(a.calls) > 0:
		c = a.calls[len(a.calls)-1]
	}
	fresh := c == nil ||
		(id != "" && c.id != "" && id != c.id) ||
		(name != "" && c.name != "" && (name != c.name || (args != "" && c.complete())))
	if fresh {
		if !hasIndex && id == "" && name == "" && args == "" {
			return
		}
		c = &toolCall{}
		a.calls = append(a.calls, c)
		if hasIndex {
			a.byIndex[index] = c
		}
	}
	if c.id == "" {
		c.id = id
	}
	if c.name == "" && name != "" {
		c.name = name
		a.emit(model.Delta{Kind: model.DeltaToolUse, Name: name})
	}
	c.args.WriteString(args)
}

// response returns the assembled response; read must have returned nil.
func (a *assembler) response() *model.Response {
	r := &model.Response{Model: a.model, Usage: a.usage}
	if r.Model == "" {
		r.Model = a.reqModel
	}
	if a.thinking.Len() > 0 {
		r.Content = append(r.Content, model.Block{Kind: model.KindThinking, Text: a.thinking.String()})
	}
	if a.text.Len() > 0 {
		r.Content = append(r.Content, model.TextBlock(a.text.String()))
	}
	calls := 0
	for _, c := range a.calls {
		if c.id == "" && c.name == "" && c.args.Len() == 0 {
			continue
		}
		id := c.id
		if id == "" {
			id = "call_" + rand.Text()
		}
		r.Content = append(r.Content, model.Block{Kind: model.KindToolUse, ID: id, Name: c.name, Input: toolInput(c.args.String())})
		calls++
	}
	r.StopReason = stopReason(a.finish, calls > 0)
	if a.refusal {
		r.StopReason = model.StopRefusal
	}
	return r
}

// toolInput turns the streamed arguments into a block input: {} when empty, the JSON
// when valid, else a JSON string holding the text (see the package documentation).
func toolInput(args string) json.RawMessage {
	s := strings.TrimSpace(args)
	if s == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(args)
	return b
}

func stopReason(finish string, calls bool) model.StopReason {
	switch finish {
	case "tool_calls", "function_call":
		return model.StopToolUse
	case "length":
		return model.StopMaxTokens
	case "content_filter":
		return model.StopRefusal
	default:
		// "stop", and words of other servers ("eos", "end_turn", …). Some servers say
		// "stop" after tool calls; the calls are what the engine must answer.
		if calls {
			return model.StopToolUse
		}
		return model.StopEndTurn
	}
}
