package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/sema-agent/sema/model"
)

// accumulator assembles the events of one stream into a response. It checks the order
// the API guarantees (message_start first, blocks started in index order, deltas that
// fit their block, every block stopped, a stop reason, message_stop last) and reports
// the first violation as an error.
type accumulator struct {
	emit       func(model.Delta)
	started    bool
	stopped    bool
	model      string
	usage      model.Usage
	stopReason sdk.StopReason
	blocks     []*block
}

// block is one content block being streamed.
type block struct {
	kind      string // the wire type: "text", "thinking", "tool_use", or one this package skips
	text      strings.Builder
	signature strings.Builder
	id, name  string
	// input gathers the input_json_delta pieces; startInput is the input of
	// content_block_start, used only when no piece arrives.
	input      []byte
	gotInput   bool
	startInput string
	closed     bool
}

// known reports whether the block is one the response carries; blocks of other types
// (server tools, redacted thinking) only appear with features this provider never
// enables, and are skipped with their deltas.
func (b *block) known() bool {
	return b.kind == "text" || b.kind == "thinking" || b.kind == "tool_use"
}

// newAccumulator returns an accumulator that passes deltas to emit, which may be nil.
func newAccumulator(emit func(model.Delta)) *accumulator {
	return &accumulator{emit: emit}
}

// emitText passes a text or thinking delta on; the string is made only when someone
// listens.
func (a *accumulator) emitText(kind model.DeltaKind, text []byte) {
	if a.emit != nil && len(text) > 0 {
		a.emit(model.Delta{Kind: kind, Text: string(text)})
	}
}

// add takes one event; ev's slices are not kept.
func (a *accumulator) add(ev *wireEvent) error {
	if string(ev.Type) == "message_start" {
		if a.started {
			return errors.New("a second message_start arrived")
		}
		a.started = true
		a.model = string(ev.Model)
		u := ev.MessageUsage
		a.usage = model.Usage{
			InputTokens:      u.Input.N,
			OutputTokens:     u.Output.N,
			CacheReadTokens:  u.CacheRead.N,
			CacheWriteTokens: u.CacheWrite.N,
		}
		return nil
	}
	if !a.started {
		return fmt.Errorf("%s arrived before message_start", ev.Type)
	}
	switch string(ev.Type) {
	case "content_block_start":
		return a.start(ev)
	case "content_block_delta":
		return a.delta(ev)
	case "content_block_stop":
		b, err := a.block(ev.Index, "content_block_stop")
		if err != nil {
			return err
		}
		b.closed = true
	case "message_delta":
		a.stopReason = sdk.StopReason(ev.Delta.StopReason)
		// Every count in message_delta is a running total for the whole message, so it
		// replaces the count of message_start; counts it leaves out keep theirs.
		u := ev.Usage
		if u.Output.OK {
			a.usage.OutputTokens = u.Output.N
		}
		if u.Input.OK {
			a.usage.InputTokens = u.Input.N
		}
		if u.CacheRead.OK {
			a.usage.CacheReadTokens = u.CacheRead.N
		}
		if u.CacheWrite.OK {
			a.usage.CacheWriteTokens = u.CacheWrite.N
		}
	case "message_stop":
		a.stopped = true
	}
	// Event types this version does not know are skipped: the API may add new ones.
	return nil
}

func (a *accumulator) block(index count, event string) (*block, error) {
	if !index.OK {
		return nil, fmt.Errorf("%s has no index", event)
	}
	if index.N < 0 || index.N >= int64(len(a.blocks)) {
		return nil, fmt.Errorf("%s names content block %d, but %d blocks have started", event, index.N, len(a.blocks))
	}
	return a.blocks[index.N], nil
}

func (a *accumulator) start(ev *wireEvent) error {
	if !ev.Index.OK {
		return errors.New("content_block_start has no index")
	}
	if ev.Index.N != int64(len(a.blocks)) {
		return fmt.Errorf("content_block_start has index %d where %d was due", ev.Index.N, len(a.blocks))
	}
	cb := &ev.Block
	b := &block{kind: blockKind(cb.Type)}
	a.blocks = append(a.blocks, b)
	switch b.kind {
	case "text":
		b.text.Write(cb.Text)
		a.emitText(model.DeltaText, cb.Text)
	case "thinking":
		b.signature.Write(cb.Signature)
		b.text.Write(cb.Thinking)
		a.emitText(model.DeltaThinking, cb.Thinking)
	case "tool_use":
		if len(cb.ID) == 0 || len(cb.Name) == 0 {
			return fmt.Errorf("tool_use block %d has no id or no name", ev.Index.N)
		}
		b.id, b.name = string(cb.ID), string(cb.Name)
		b.startInput = string(cb.Input)
		if a.emit != nil {
			a.emit(model.Delta{Kind: model.DeltaToolUse, Name: b.name})
		}
	}
	return nil
}

// blockKind is the kind of a block of wire type typ: "text", "thinking", "tool_use",
// or the type itself for one this package skips.
func blockKind(typ []byte) string {
	switch string(typ) {
	case "text":
		return "text"
	case "thinking":
		return "thinking"
	case "tool_use":
		return "tool_use"
	}
	return string(typ)
}

func (a *accumulator) delta(ev *wireEvent) error {
	b, err := a.block(ev.Index, "content_block_delta")
	if err != nil {
		return err
	}
	if b.closed {
		return fmt.Errorf("content_block_delta arrived for block %d after its content_block_stop", ev.Index.N)
	}
	if !b.known() {
		return nil
	}
	d := &ev.Delta
	want := deltaBlock(d.Type)
	if want == "" {
		// citations_delta and delta types added later carry nothing this package keeps.
		return nil
	}
	if want != b.kind {
		return fmt.Errorf("a %s arrived for block %d, which is a %s block", d.Type, ev.Index.N, b.kind)
	}
	switch string(d.Type) {
	case "text_delta":
		b.text.Write(d.Text)
		a.emitText(model.DeltaText, d.Text)
	case "thinking_delta":
		b.text.Write(d.Thinking)
		a.emitText(model.DeltaThinking, d.Thinking)
	case "signature_delta":
		b.signature.Write(d.Signature)
	case "input_json_delta":
		b.input = append(b.input, d.PartialJSON...)
		b.gotInput = true
	}
	return nil
}

// deltaBlock is the block type a delta type belongs to, or "" for delta types this
// package does not read.
func deltaBlock(delta []byte) string {
	switch string(delta) {
	case "text_delta":
		return "text"
	case "thinking_delta", "signature_delta":
		return "thinking"
	case "input_json_delta":
		return "tool_use"
	}
	return ""
}

// response returns the assembled response; it is called after message_stop.
func (a *accumulator) response() (*model.Response, error) {
	if a.stopReason == "" {
		return nil, errors.New("no message_delta with a stop reason arrived")
	}
	resp := &model.Response{Model: a.model, Usage: a.usage}
	for i, b := range a.blocks {
		if !b.closed {
			return nil, fmt.Errorf("content block %d was never stopped", i)
		}
		switch b.kind {
		case "text":
			// An empty text block carries nothing, and the API refuses it when the
			// block is sent back in the next request.
			if b.text.Len() > 0 {
				resp.Content = append(resp.Content, model.TextBlock(b.text.String()))
			}
		case "thinking":
			resp.Content = append(resp.Content, model.Block{Kind: model.KindThinking, Text: b.text.String(), Signature: b.signature.String()})
		case "tool_use":
			input, ok := toolInput(b)
			if !ok {
				if a.stopReason == sdk.StopReasonMaxTokens {
					// The response was cut off while the call was being written; a
					// half-written call must not run, and the stop reason says why
					// it is missing.
					continue
				}
				return nil, fmt.Errorf("the input of tool call %s (%s) is not a JSON object", b.id, b.name)
			}
			resp.Content = append(resp.Content, model.Block{Kind: model.KindToolUse, ID: b.id, Name: b.name, Input: input})
		}
	}
	resp.StopReason = stopReason(a.stopReason, len(resp.ToolCalls()) > 0)
	return resp, nil
}

// toolInput returns the input of a tool_use block: the exact concatenation of its
// input_json_delta pieces, else the input of content_block_start, with nothing at all
// read as {}. It reports false when the result is not a JSON object.
func toolInput(b *block) (json.RawMessage, bool) {
	raw := b.input
	if !b.gotInput {
		raw = []byte(b.startInput)
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return json.RawMessage(`{}`), true
	}
	if trimmed[0] != '{' || !json.Valid(trimmed) {
		return nil, false
	}
	return json.RawMessage(raw), true
}

// stopReason maps the API's stop reasons onto the model package's.
func stopReason(r sdk.StopReason, toolCalls bool) model.StopReason {
	switch r {
	case sdk.StopReasonEndTurn:
		return model.StopEndTurn
	case sdk.StopReasonToolUse:
		return model.StopToolUse
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		return model.StopMaxTokens
	case sdk.StopReasonStopSequence:
		return model.StopSequence
	case sdk.StopReasonRefusal:
		return model.StopRefusal
	}
	// pause_turn and reasons added later: the content decides what comes next.
	if toolCalls {
		return model.StopToolUse
	}
	return model.StopEndTurn
}

// watch is the watchdog of one attempt: armed with the first-byte timeout when a request
// is sent, with the idle timeout when the response starts, and re-armed by every read of
// the response body, it cancels the attempt when it runs out.
type watch struct {
	d      time.Duration
	cancel func()
	hit    atomic.Bool

	mu sync.Mutex
	t  *time.Timer
	// first is set while the timer waits for the first byte, firstHit when it fired then.
	first, firstHit bool
}

func newWatch(d time.Duration, cancel func()) *watch {
	return &watch{d: d, cancel: cancel}
}

// arm (re)starts the idle timeout.
func (w *watch) arm() { w.armFor(w.d, false) }

// armFirst starts the wait for the first byte of a response: d, or none when d is 0.
func (w *watch) armFirst(d time.Duration) {
	if d <= 0 {
		w.stop()
		return
	}
	w.armFor(d, true)
}

func (w *watch) armFor(d time.Duration, first bool) {
	if d <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.first = first
	if w.t == nil {
		w.t = time.AfterFunc(d, func() {
			w.mu.Lock()
			w.firstHit = w.first
			w.mu.Unlock()
			w.hit.Store(true)
			w.cancel()
		})
		return
	}
	w.t.Reset(d)
}

// firstByteFired reports that the attempt was abandoned waiting for its first byte.
func (w *watch) firstByteFired() bool {
	if !w.hit.Load() {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.firstHit
}

func (w *watch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.t != nil {
		w.t.Stop()
	}
}

func (w *watch) fired() bool { return w.hit.Load() }

// watchedBody is a response body that re-arms the watchdog on every read and marks
// read failures, so that a connection that breaks mid-stream is told apart from a
// stream whose content breaks the format.
type watchedBody struct {
	rc io.ReadCloser
	w  *watch
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.w.arm()
	}
	if err != nil && err != io.EOF {
		return n, &readError{err: err}
	}
	return n, err
}

func (b *watchedBody) Close() error {
	b.w.stop()
	return b.rc.Close()
}

// readError is a failure to read the response body.
type readError struct{ err error }

func (e *readError) Error() string { return "reading the response: " + e.err.Error() }
func (e *readError) Unwrap() error { return e.err }
