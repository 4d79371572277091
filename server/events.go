package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/sema-agent/sema"
)

// taskEvents is GET /v1/tasks/{id}/events: the task's events as server-sent events, from
// the store. Each event's id is its sequence number in the task; a client that
// reconnects with Last-Event-ID (or ?after=N) gets exactly the events after it, whatever
// process it reconnects to. The stream ends after the task's last event once the task
// has ended for good; a parked task's stream stays open through the decision and the
// resumed leg. With ?text=1 it also carries the model's text as it streams, from this
// process's legs (livetext.go).
func (s *Server) taskEvents(w http.ResponseWriter, r *http.Request, t *tenant) {
	ctx := r.Context()
	id := r.PathValue("id")
	if _, err := s.task(ctx, t, id); err != nil {
		if errors.Is(err, errNoRow) {
			writeErr(w, r, http.StatusNotFound, taskNotFound())
			return
		}
		s.internal(w, r, err)
		return
	}
	after := int64(0)
	for _, v := range []string{r.Header.Get("Last-Event-ID"), r.URL.Query().Get("after")} {
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeErr(w, r, http.StatusBadRequest, sema.Errorf(CodeBadRequest, "Last-Event-ID (or after) must be an event id: a non-negative integer"))
			return
		}
		after = n
	}
	var pieces heldPieces // its channel is nil unless asked for: never ready
	switch r.URL.Query().Get("text") {
	case "", "0":
	case "1":
		ch, stop := s.live.subscribe(id)
		defer stop()
		pieces.ch = ch
	default:
		writeErr(w, r, http.StatusBadRequest, sema.Errorf(CodeBadRequest, "text must be 1 (send the model's text as it streams) or 0"))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	rc.Flush()
	heartbeat := time.NewTicker(15 * time.Second)
	defer heartbeat.Stop()
	for {
		// Wait for a wake-up registered before reading, so an event appended between the
		// read and the wait is not slept through.
		woken := s.wake.wait(id)
		moreWrites(r, rc)
		pieces.take()
		n, wrote, err := s.writeInOrder(ctx, w, id, &after, &pieces)
		if err != nil {
			s.wake.forget(id, woken)
			return
		}
		if n > 0 || wrote > 0 {
			rc.Flush()
		}
		if n == 0 {
			task, err := s.task(ctx, t, id)
			if err != nil {
				s.wake.forget(id, woken)
				return
			}
			if task.Terminal() {
				// Events written before the status are all in: read once more, then end.
				moreWrites(r, rc)
				if m, _, err := s.writeInOrder(ctx, w, id, &after, &pieces); err == nil && m > 0 {
					rc.Flush()
					s.wake.forget(id, woken)
					continue
				}
				s.wake.forget(id, woken)
				return
			}
		}
		poll := time.NewTimer(s.cfg.Poll)
	wait:
		for {
			select {
			case <-ctx.Done():
				s.wake.forget(id, woken)
				poll.Stop()
				return
			case <-woken:
			case p := <-pieces.ch:
				// A piece whose stored predecessors are written goes out at once, without
				// a look at the store; one that waits for an event sends the reader back
				// to the store first.
				pieces.held = append(pieces.held, p)
				pieces.take()
				if pieces.next() > after {
					s.wake.forget(id, woken)
					break
				}
				moreWrites(r, rc)
				if _, err := pieces.writeReady(w, after); err != nil {
					s.wake.forget(id, woken)
					poll.Stop()
					return
				}
				rc.Flush()
				continue wait
			case <-poll.C:
				s.wake.forget(id, woken)
			case <-heartbeat.C:
				s.wake.forget(id, woken)
				moreWrites(r, rc)
				if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
					poll.Stop()
					return
				}
				rc.Flush()
			}
			break
		}
		poll.Stop()
	}
}

// writeInOrder writes the stored events after *after, with the held pieces of text
// each after the stored event it follows, and moves *after. It reports how many stored
// events and how many pieces it wrote. Pieces that wait for an event not stored yet
// stay held.
func (s *Server) writeInOrder(ctx context.Context, w http.ResponseWriter, id string, after *int64, pieces *heldPieces) (n, wrote int, err error) {
	for {
		k, err := pieces.writeReady(w, *after)
		wrote += k
		if err != nil {
			return n, wrote, err
		}
		upTo := pieces.next() // 0: every stored event
		m, err := s.writeEvents(ctx, w, id, after, upTo)
		n += m
		if err != nil || m == 0 || upTo == 0 {
			return n, wrote, err
		}
	}
}

// writeEvents writes the task's events after *after (and up to upTo, when it is not 0),
// a page at a time, and moves *after. A page is read whole, and its rows closed, before anything is written: a
// client that stops reading blocks the write until WriteTimeout, and must not hold a
// connection to the store meanwhile (SQLite's serve.db has one, which every request and
// worker shares).
func (s *Server) writeEvents(ctx context.Context, w http.ResponseWriter, id string, after *int64, upTo int64) (int, error) {
	page, err := s.eventPage(ctx, id, *after, upTo)
	if err != nil {
		return 0, err
	}
	for i, ev := range page {
		if _, err := fmt.Fprintf(w, "id: %d\ndata: %s\n\n", ev.seq, ev.data); err != nil {
			return i, err
		}
		*after = ev.seq
	}
	return len(page), nil
}

// storedEvent is one event of a task's stream as the store keeps it.
type storedEvent struct {
	seq  int64
	data string
}

// eventPageBytes bounds the events one page holds in memory (past its first event).
const eventPageBytes = 4 << 20

// eventPage reads the task's events after seq (and up to upTo; 0: no bound): up to 500, and no more than
// eventPageBytes of them unless the first alone is larger.
func (s *Server) eventPage(ctx context.Context, id string, after, upTo int64) ([]storedEvent, error) {
	if upTo == 0 {
		upTo = math.MaxInt64
	}
	rs, err := s.b.db().query(ctx, `SELECT seq, data FROM sema_serve_events WHERE task_id = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT 500`, id, after, upTo)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var page []storedEvent
	size := 0
	for size < eventPageBytes && rs.Next() {
		var ev storedEvent
		if err := rs.Scan(&ev.seq, &ev.data); err != nil {
			return nil, err
		}
		page = append(page, ev)
		size += len(ev.data)
	}
	return page, rs.Err()
}

// announcedCalls are the tool calls a task's stream has announced already (tool_use
// events), by delegating call, turn and call id. A resumed leg announces again the calls of the turn it
// resumes (from the parked call on: in `sema approve`'s stream they are new); in the
// task's one stream they were announced by the leg that parked, so the worker leaves
// them out. The turn is part of the key because a model may reuse a call id across
// turns.
func (s *Server) announcedCalls(ctx context.Context, id string) (map[string]bool, error) {
	rs, err := s.b.db().query(ctx, `SELECT data FROM sema_serve_events WHERE task_id = ? AND data LIKE ? ORDER BY seq`, id, `%"tool_use"%`)
	ids, err := collect(rs, err, scanString)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, data := range ids {
		var ev struct {
			Type   string `json:"type"`
			Turn   int    `json:"turn"`
			ID     string `json:"id"`
			Parent string `json:"parent_tool_use_id"`
		}
		if json.Unmarshal([]byte(data), &ev) == nil && ev.Type == "tool_use" {
			out[callKey(ev.Parent, ev.Turn, ev.ID)] = true
		}
	}
	return out, nil
}

func callKey(parent string, turn int, id string) string {
	return parent + "/" + strconv.Itoa(turn) + "/" + id
}
