package server

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/sema-agent/sema/agent"
)

// The model's text as it streams is not stored: the stored stream carries each
// response whole (an assistant event), which is what a reader that reconnects, or reads
// from another process, gets. A stream that asks for it (GET /v1/tasks/{id}/events?text=1)
// also gets the pieces as they arrive — only from the process running the leg, and only
// while it is connected: a piece has no event id (SSE keeps the last id as it was), so
// Last-Event-ID and the stored stream are untouched, and a piece a slow reader could not
// take is dropped rather than held (the assistant event that follows has the whole
// text). This is what lets a terminal attached to a session show the answer as it is
// written.

// liveTextBuffer is how many pieces wait for one slow stream before later ones are
// dropped.
const liveTextBuffer = 256

// liveText passes the pieces of the model's text from the legs this process runs to the
// event streams this process serves, by task.
type liveText struct {
	mu   sync.Mutex
	subs map[string]map[chan piece]struct{}
}

// piece is one piece of text (a JSON object) and the id of the last event its leg had
// stored when the model wrote it: a stream writes the piece after that event, never
// before, so a piece of the next turn does not overtake the tool call before it.
type piece struct {
	after int64
	data  []byte
}

func newLiveText() *liveText { return &liveText{subs: map[string]map[chan piece]struct{}{}} }

// subscribe returns the channel of task id's pieces and the function that ends the
// subscription.
func (l *liveText) subscribe(id string) (<-chan piece, func()) {
	ch := make(chan piece, liveTextBuffer)
	l.mu.Lock()
	if l.subs[id] == nil {
		l.subs[id] = map[chan piece]struct{}{}
	}
	l.subs[id][ch] = struct{}{}
	l.mu.Unlock()
	return ch, func() {
		l.mu.Lock()
		delete(l.subs[id], ch)
		if len(l.subs[id]) == 0 {
			delete(l.subs, id)
		}
		l.mu.Unlock()
	}
}

// publish hands a text event of task id's leg to its streams, if any listen; after is
// the id of the last event the leg stored before it. It never waits: a stream whose
// buffer is full misses the piece.
func (l *liveText) publish(id string, after int64, ev agent.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	subs := l.subs[id]
	if len(subs) == 0 {
		return
	}
	data, err := json.Marshal(liveTextEvent{Type: "text", Text: ev.Text, Turn: ev.Turn, Parent: ev.ParentToolUseID})
	if err != nil {
		return
	}
	for ch := range subs {
		select {
		case ch <- piece{after: after, data: data}:
		default:
		}
	}
}

// liveTextEvent is a piece of the model's text on the wire: `event: text`, no id.
type liveTextEvent struct {
	Type   string `json:"type"` // "text"
	Text   string `json:"text"`
	Turn   int    `json:"turn"`
	Parent string `json:"parent_tool_use_id,omitempty"`
}

// heldPieces are the pieces a stream has taken from its channel and not written yet,
// in the order they came.
type heldPieces struct {
	ch   <-chan piece // nil when the stream did not ask for text
	held []piece
}

// take moves the pieces waiting in the channel to the held ones.
func (h *heldPieces) take() {
	for {
		select {
		case p := <-h.ch:
			h.held = append(h.held, p)
		default:
			return
		}
	}
}

// writeReady writes the held pieces whose stored predecessors are written (after is
// the last event id written), each an SSE event named text with no id, and reports how
// many it wrote.
func (h *heldPieces) writeReady(w io.Writer, after int64) (int, error) {
	n := 0
	for len(h.held) > 0 && h.held[0].after <= after {
		if _, err := fmt.Fprintf(w, "event: text\ndata: %s\n\n", h.held[0].data); err != nil {
			return n, err
		}
		h.held, n = h.held[1:], n+1
	}
	return n, nil
}

// next is the id of the last stored event the first held piece waits for; 0 when none
// is held.
func (h *heldPieces) next() int64 {
	if len(h.held) == 0 {
		return 0
	}
	return h.held[0].after
}
