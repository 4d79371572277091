package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// The event types of a task's stream (Event.Type): the "type" of each line of `sema run
// --output-format stream-json`.
const (
	EventSystem        = "system"         // subtype init: the leg's manifest, first
	EventAssistant     = "assistant"      // a model response: AssistantEvent
	EventToolUse       = "tool_use"       // a call about to run: ToolUseEvent
	EventToolResult    = "tool_result"    // a call's result: ToolResultEvent
	EventPermission    = "permission"     // a permission decision on a call
	EventNotice        = "notice"         // a notice (code, message, detail), e.g. serve.model_waiting
	EventCompaction    = "compaction"     // the conversation was compacted
	EventTodos         = "todos"          // the todo list changed
	EventSubagentStart = "subagent_start" // a delegated child leg started
	EventSubagentEnd   = "subagent_end"   // a delegated child leg ended
	EventResult        = "result"         // each leg's last; the task's last once it has ended

	// EventText is a piece of the model's text as it streams (TextEvent), sent only to a
	// stream that asks for it (WithText). A piece has no id (Event.ID is 0): it is not
	// stored, comes only from the process running the leg while the stream is connected,
	// and may be missed; the assistant event that follows carries the whole response.
	EventText = "text"
)

// TextEvent is a piece of the model's text as it streams.
type TextEvent struct {
	// Text is the piece.
	Text string `json:"text"`
}

// StreamOption changes what Events asks the service for.
type StreamOption func(*streamOptions)

type streamOptions struct{ text bool }

// WithText asks for the model's text as it streams, as EventText events between the
// stored ones (see EventText for what they promise and what not).
func WithText() StreamOption { return func(o *streamOptions) { o.text = true } }

// InitEvent is a system event of subtype init: a leg starts.
type InitEvent struct {
	// SessionID is the session the leg runs in.
	SessionID string `json:"session_id"`
	// Manifest is the leg's resolved configuration, as `sema run` reports it.
	Manifest json.RawMessage `json:"manifest"`
}

// Block is a content block of an assistant message.
type Block struct {
	// Type is text, tool_use, image or thinking.
	Type string `json:"type"`
	// Text is a text block's text.
	Text string `json:"text,omitempty"`
	// ID, Name and Input are a tool_use block's call.
	ID string `json:"id,omitempty"`
	// Name: see ID.
	Name string `json:"name,omitempty"`
	// Input: see ID.
	Input json.RawMessage `json:"input,omitempty"`
	// MediaType is an image block's type.
	MediaType string `json:"media_type,omitempty"`
}

// AssistantEvent is one response of the model.
type AssistantEvent struct {
	// Message is the response.
	Message struct {
		Role    string  `json:"role"`    // "assistant"
		Content []Block `json:"content"` // text, thinking and tool_use blocks
	} `json:"message"`
}

// ToolUseEvent announces a tool call about to run (once per call in a task's stream).
type ToolUseEvent struct {
	// ID names the call; its ToolResultEvent quotes it.
	ID string `json:"id"`
	// Name is the tool.
	Name string `json:"name"`
	// Input is the call's arguments.
	Input json.RawMessage `json:"input"`
}

// ToolResultEvent is a call's result.
type ToolResultEvent struct {
	// ToolUseID names the call.
	ToolUseID string `json:"tool_use_id"`
	// Name is the tool.
	Name string `json:"name"`
	// IsError reports a failed or refused call; Code is its code when it has one.
	IsError bool `json:"is_error"`
	// Code: see IsError.
	Code string `json:"code,omitempty"`
	// Content is the result's text.
	Content string `json:"content"`
}

// PermissionEvent is a question (Subtype "question") or a denial.
type PermissionEvent struct {
	// Tool and Input are the call asked about or denied.
	Tool string `json:"tool"`
	// Input: see Tool.
	Input json.RawMessage `json:"input"`
	// Message, Gate, AnsweredBy and Behavior describe a question.
	Message string `json:"message,omitempty"`
	// Gate: see Message.
	Gate string `json:"gate,omitempty"`
	// AnsweredBy: see Message.
	AnsweredBy string `json:"answered_by,omitempty"`
	// Behavior: see Message.
	Behavior string `json:"behavior,omitempty"`
	// Reason and Code describe a denial.
	Reason string `json:"reason,omitempty"`
	// Code: see Reason.
	Code string `json:"code,omitempty"`
}

// NoticeEvent is something the run reports and goes on from.
type NoticeEvent struct {
	// Code is the notice's stable code.
	Code string `json:"code"`
	// Message says what happened.
	Message string `json:"message"`
	// Detail holds the notice's facts.
	Detail json.RawMessage `json:"detail,omitempty"`
}

// ResultEvent is a leg's end, as `sema run --output-format json` prints it; the fields
// not named here are in the event's Data.
type ResultEvent struct {
	// SessionID is the session the leg ran in.
	SessionID string `json:"session_id"`
	// Status is the leg's status: completed, awaiting_approval, max_turns,
	// budget_exceeded, error or cancelled.
	Status string `json:"status"`
	// Result is the model's last text.
	Result string `json:"result"`
	// NumTurns is the session's turn count at the end of the leg.
	NumTurns int `json:"num_turns"`
	// TotalCostUSD is what the leg cost.
	TotalCostUSD float64 `json:"total_cost_usd"`
	// Error is set when Status is error.
	Error *struct {
		Code    string `json:"code"`    // the stable error code
		Message string `json:"message"` // what happened, in a sentence
	} `json:"error,omitempty"`
	// Checkpoint is set when Status is awaiting_approval: the question a decision
	// answers (POST /v1/checkpoints/{id}/decision).
	Checkpoint *struct {
		ID      string `json:"id"`      // the checkpoint to decide
		Tool    string `json:"tool"`    // the tool whose call waits
		Message string `json:"message"` // the question, for a person
	} `json:"checkpoint,omitempty"`
}

// Ends reports whether the result ends the task for good (a leg parked at a question
// does not: a decision resumes it in the same stream).
func (r ResultEvent) Ends() bool { return r.Status != StatusAwaitingApproval }

// Payload decodes the event's Data by its Type: *InitEvent, *AssistantEvent,
// *ToolUseEvent, *ToolResultEvent, *PermissionEvent, *NoticeEvent, *ResultEvent or
// *TextEvent;
// json.RawMessage for the other types (compaction, todos, subagent_start/end) and any a
// newer service adds.
func (e Event) Payload() (any, error) {
	var v any
	switch e.Type {
	case EventSystem:
		if e.Subtype != "init" {
			return e.Data, nil
		}
		v = new(InitEvent)
	case EventAssistant:
		v = new(AssistantEvent)
	case EventToolUse:
		v = new(ToolUseEvent)
	case EventToolResult:
		v = new(ToolResultEvent)
	case EventPermission:
		v = new(PermissionEvent)
	case EventNotice:
		v = new(NoticeEvent)
	case EventResult:
		v = new(ResultEvent)
	case EventText:
		v = new(TextEvent)
	default:
		return e.Data, nil
	}
	if err := json.Unmarshal(e.Data, v); err != nil {
		return nil, fmt.Errorf("event %d is not a %s event: %w", e.ID, e.Type, err)
	}
	return v, nil
}

// ToolUse is the event's call when it is a tool_use event.
func (e Event) ToolUse() (*ToolUseEvent, bool) { return payloadAs[*ToolUseEvent](e) }

// ToolResult is the event's result when it is a tool_result event.
func (e Event) ToolResult() (*ToolResultEvent, bool) { return payloadAs[*ToolResultEvent](e) }

// Result is the leg's end when it is a result event.
func (e Event) Result() (*ResultEvent, bool) { return payloadAs[*ResultEvent](e) }

func payloadAs[T any](e Event) (T, bool) {
	p, err := e.Payload()
	v, ok := p.(T)
	return v, ok && err == nil
}

// Backoff bounds how a stream reconnects after its connection drops: it waits Min, then
// twice as long each time up to Max, and gives up after Attempts reconnections in a row
// that deliver no event. The zero value is 250ms, 10s and 8 attempts.
type Backoff struct {
	Min, Max time.Duration // the first wait, and the longest
	Attempts int           // reconnections in a row without an event before giving up
}

func (b Backoff) orDefault() Backoff {
	if b.Min <= 0 {
		b.Min = 250 * time.Millisecond
	}
	if b.Max < b.Min {
		b.Max = max(b.Min, 10*time.Second)
	}
	if b.Attempts <= 0 {
		b.Attempts = 8
	}
	return b
}

// Events follows a task's event stream from after the event with id after (0: from the
// start) until the task ends for good or ctx ends. A connection that drops (or that a
// process of the service closes as it stops) is opened again, with Last-Event-ID set to
// the last event received, after a bounded backoff (Client.Backoff): no event is lost or
// repeated, whichever process of the service answers. An answer that is not a stream (a
// 4xx: unknown task, bad token) ends it with an *Error; so does giving up.
func (c *Client) Events(ctx context.Context, taskID string, after int64, opts ...StreamOption) iter.Seq2[Event, error] {
	var o streamOptions
	for _, opt := range opts {
		opt(&o)
	}
	return func(yield func(Event, error) bool) {
		b := c.Backoff.orDefault()
		wait, failures := b.Min, 0
		for {
			got, ended, err := c.stream(ctx, taskID, &after, o, yield)
			if ended || ctx.Err() != nil {
				return
			}
			var e *Error
			if errors.As(err, &e) && e.Status/100 == 4 && e.Status != http.StatusTooManyRequests {
				yield(Event{}, err) // retrying cannot help
				return
			}
			if got && err == nil {
				wait, failures = b.Min, 0
				continue
			}
			if got {
				wait, failures = b.Min, 0
			}
			if failures++; failures > b.Attempts {
				if err == nil {
					err = errors.New("the stream closed before the task ended")
				}
				yield(Event{}, fmt.Errorf("the event stream of task %s broke %d times in a row: %w", taskID, failures, err))
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, b.Max)
		}
	}
}

// stream reads one connection's events after *after and moves it. It reports whether it
// received an event, and whether the iteration is over: the caller stopped, or the
// stream ended after the task's last event.
func (c *Client) stream(ctx context.Context, taskID string, after *int64, o streamOptions, yield func(Event, error) bool) (got, ended bool, err error) {
	u := c.base + "/v1/tasks/" + url.PathEscape(taskID) + "/events"
	if o.text {
		u += "?text=1"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		yield(Event{}, err)
		return false, true, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "text/event-stream")
	if *after > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(*after, 10))
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return false, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, false, errorOf(resp)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var ev Event
	var data []byte
	var name string // the SSE event's name: "text" for a piece of streaming text
	last := false   // the last event received ends the task
	for sc.Scan() {
		line := sc.Bytes()
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch {
		case len(line) == 0 && name == EventText && data != nil:
			if o.text && !yieldPiece(data, yield) {
				return got, true, nil
			}
			ev, data, name = Event{}, nil, ""
		case len(line) == 0:
			name = ""
			if data == nil || ev.ID <= *after {
				// No data (a keep-alive), or an event already delivered.
				ev, data = Event{}, nil
				continue
			}
			ev.Data = json.RawMessage(data)
			var head struct {
				Type    string `json:"type"`
				Subtype string `json:"subtype"`
				Turn    int    `json:"turn"`
				Parent  string `json:"parent_tool_use_id"`
			}
			json.Unmarshal(data, &head)
			ev.Type, ev.Subtype, ev.Turn, ev.ParentToolUseID = head.Type, head.Subtype, head.Turn, head.Parent
			r, ok := ev.Result()
			last = ok && r.Ends() && ev.ParentToolUseID == ""
			*after, got = ev.ID, true
			if !yield(ev, nil) {
				return got, true, nil
			}
			ev, data = Event{}, nil
		case string(field) == "id":
			ev.ID, _ = strconv.ParseInt(string(value), 10, 64)
		case string(field) == "event":
			name = string(value)
		case string(field) == "data":
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, value...)
		}
	}
	if err := sc.Err(); err != nil {
		return got, false, err
	}
	if last {
		return got, true, nil
	}
	if got {
		// Closed before the task's end (a proxy's timeout, the service stopping): go on
		// at once from the last event.
		return got, false, nil
	}
	// Closed with nothing new: the caller resumed after the task's last event (the task
	// has ended), or the connection keeps closing.
	task, err := c.Task(ctx, taskID)
	if err == nil && task.Terminal() {
		return got, true, nil
	}
	return got, false, err
}

// yieldPiece hands on a piece of streaming text; one that does not decode is left out
// (a piece may be missed anyway). It reports whether the caller wants more.
func yieldPiece(data []byte, yield func(Event, error) bool) bool {
	var head struct {
		Type   string `json:"type"`
		Turn   int    `json:"turn"`
		Parent string `json:"parent_tool_use_id"`
	}
	if json.Unmarshal(data, &head) != nil || head.Type != EventText {
		return true
	}
	return yield(Event{Type: EventText, Turn: head.Turn, ParentToolUseID: head.Parent, Data: json.RawMessage(data)}, nil)
}

// Text is the piece of streaming text when it is a text event (WithText).
func (e Event) Text() (*TextEvent, bool) { return payloadAs[*TextEvent](e) }
