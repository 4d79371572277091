package server

import (
	"context"
	"sync"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/session"
)

// A leg's writes to the service's tables ride with its transcript. The events a leg
// emits and the tokens its responses spend are held in memory, numbered, and committed
// with the leg's next transcript write — the entries a call's intent, a turn's tool
// results, a parked question or the leg's end commit — in that write's own transaction
// on Postgres (sent with it, one round trip), where the sessions and the service's
// tables share one database, and in serve.db just before it on SQLite, where they are
// two files. A tool turn so costs two commits on Postgres (its transcript's, which were
// six with each event and each response's spend committed on its own), and on SQLite
// its transcript's two and one in serve.db before each.
//
// Which writes ride, and which do not:
//   - Ride: every event the runner emits that the stream stores (init, assistant,
//     tool_use, tool_result, the permission events and the runner's notices), and each
//     response's spend when the tenant has no daily budget.
//   - Committed at once, with whatever is held before them: a notice of the leg's wait
//     for its model (modelwait.go) and of a mode change (taskmode.go), which announce a
//     wait or a change a watcher must see while it lasts; and each response's spend when
//     the tenant has a daily budget, since the other legs' sums must see it.
//   - Never stored: the model's text as it streams (livetext.go). It goes out from
//     memory at once, and first kicks what is held before it into the store, so that its
//     place in the stream is there to be read.
//   - The leg's result event is written with its last held writes and the task's status,
//     in the task's finishing transaction.
//
// What the rule keeps:
//   - A leg goes on only once what it said is kept: the next thing a leg does that the
//     world sees — a tool's run, a question parked, its end — follows a transcript
//     commit, which carries every event emitted before it. On Postgres a turn's entries
//     and its events are stored together or not at all; on SQLite the events are stored
//     first, so an entry is never stored without the events before it.
//   - A stream reads only the store, in order: held writes are committed by one writer
//     at a time per leg (legStream.commitMu), so a task's events are stored in the order
//     they were numbered, whichever commit carries them.
//   - Nothing waits long: what no transcript commit took within heldFor (a slow
//     PreToolUse hook, say) is committed on its own, and a leg that hands its job back
//     commits what it holds before another attempt can number events after it.

// heldFor bounds how long a held write waits for a transcript commit to carry it before
// it is committed on its own: long enough for a turn's commits to take it (they follow
// within a millisecond unless a hook or a question intervenes), short enough that a
// watcher sees a tool call announced at about the time it starts.
const heldFor = 50 * time.Millisecond

// heldWrites are the writes of one task's leg waiting for a commit: its events, in
// sequence, and its responses' tokens by the hour they arrived in.
type heldWrites struct {
	task   string
	tenant string
	events []storedEvent
	spend  []hourSpend
}

// hourSpend is tokens spent in the hour starting at hour (unix milliseconds).
type hourSpend struct{ hour, tokens int64 }

func (h *heldWrites) empty() bool { return len(h.events) == 0 && len(h.spend) == 0 }

// addSpend adds tokens to the hour holding now.
func (h *heldWrites) addSpend(tokens, now int64) {
	if tokens <= 0 {
		return
	}
	hour := hourOf(now)
	if n := len(h.spend); n > 0 && h.spend[n-1].hour == hour {
		h.spend[n-1].tokens += tokens
		return
	}
	h.spend = append(h.spend, hourSpend{hour: hour, tokens: tokens})
}

// statement is one write in the service's SQL (? placeholders).
type statement struct {
	q    string
	args []any
}

// statements are the held writes of hs as the service's SQL, in order: the events, then
// the spend. On Postgres (pg) the events are one statement however many they are — each
// row is otherwise a statement of its own for the server to parse, plan and answer;
// SQLite runs in the process, where a statement per row costs no round trip and keeps
// one prepared form.
func statements(pg bool, hs ...*heldWrites) []statement {
	var out []statement
	if pg {
		if st, ok := insertEvents(hs); ok {
			out = append(out, st)
		}
	} else {
		for _, h := range hs {
			for _, ev := range h.events {
				out = append(out, statement{qInsertEvent, []any{h.task, ev.seq, ev.data}})
			}
		}
	}
	for _, h := range hs {
		for _, s := range h.spend {
			out = append(out, statement{qRecordSpend, []any{h.tenant, s.hour, s.tokens}})
		}
	}
	return out
}

// qInsertEvents is qInsertEvent for many rows, on Postgres: the rows' columns as arrays.
const qInsertEvents = `INSERT INTO sema_serve_events (task_id, seq, data) SELECT * FROM unnest(?::text[], ?::bigint[], ?::text[])`

// insertEvents is one statement that stores the events of every hs; false when they
// hold none.
func insertEvents(hs []*heldWrites) (statement, bool) {
	n := 0
	for _, h := range hs {
		n += len(h.events)
	}
	if n == 0 {
		return statement{}, false
	}
	tasks, seqs, data := make([]string, 0, n), make([]int64, 0, n), make([]string, 0, n)
	for _, h := range hs {
		for _, ev := range h.events {
			tasks, seqs, data = append(tasks, h.task), append(seqs, ev.seq), append(data, ev.data)
		}
	}
	return statement{qInsertEvents, []any{tasks, seqs, data}}, true
}

// writeHeld runs the held writes of hs on c, a transaction's connection.
func writeHeld(ctx context.Context, c conn, hs ...*heldWrites) error {
	_, pg := c.(pgConn)
	for _, st := range statements(pg, hs...) {
		if _, err := c.exec(ctx, st.q, st.args...); err != nil {
			return err
		}
	}
	return nil
}

// putBack returns to h the writes of an earlier commit that failed: they come first,
// since they were numbered first.
func (h *heldWrites) putBack(failed heldWrites) {
	h.events = append(failed.events, h.events...)
	h.spend = append(failed.spend, h.spend...)
}

// legStream numbers and holds the events of one leg — the runner's, and the waiting
// notices its model calls write meanwhile (possibly from a child leg's goroutine) — and
// the spend of its responses, until a commit takes them (see above).
type legStream struct {
	s      *Server
	taskID string
	tenant string
	// commitMu is held from the moment a commit takes the held writes until it ends, so
	// one commit of the task's events at a time, in their order.
	commitMu sync.Mutex
	mu       sync.Mutex // guards what follows
	seq      int64
	held     heldWrites
	timer    *time.Timer // commits what is held when wait passes without a commit
	armed    bool
	wait     time.Duration // heldFor
}

func newLegStream(s *Server, t *taskRow) *legStream {
	return &legStream{s: s, taskID: t.id, tenant: t.tenant, wait: heldFor}
}

// last is the id of the last event the stream numbered (stored, or held for the next
// commit).
func (l *legStream) last() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}

// hold numbers an event and keeps it for the next commit.
func (l *legStream) hold(data []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	l.held.events = append(l.held.events, storedEvent{seq: l.seq, data: string(data)})
	l.armLocked()
}

// holdSpend keeps a response's tokens for the next commit.
func (l *legStream) holdSpend(tokens, now int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held.addSpend(tokens, now)
	l.armLocked()
}

// append stores an event now, with everything held before it, and returns once it is
// committed: for what must not wait for the leg's next transcript commit.
func (l *legStream) append(data []byte) error {
	l.hold(data)
	return l.flush(context.Background())
}

// flush commits what is held, on its own (through the event log's group commit).
func (l *legStream) flush(ctx context.Context) error {
	return l.commit(func(h *heldWrites) error {
		if h.empty() {
			return nil
		}
		return l.s.events.commit(h)
	})
}

// kick has what is held committed now rather than when wait passes, without waiting
// for it.
func (l *legStream) kick() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.armed && !l.held.empty() {
		l.timer.Reset(0)
	}
}

// commit hands the held writes to write, which commits them (with its own writes); if
// it fails, they are held again, before anything held since.
func (l *legStream) commit(write func(h *heldWrites) error) error {
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	l.mu.Lock()
	h := l.held
	l.held = heldWrites{task: l.taskID, tenant: l.tenant}
	h.task, h.tenant = l.taskID, l.tenant
	l.mu.Unlock()
	err := write(&h)
	if err != nil {
		l.mu.Lock()
		l.held.putBack(h)
		l.armLocked()
		l.mu.Unlock()
	}
	return err
}

// next numbers one more event that its caller writes itself, in a commit it makes
// through commit (the leg's result).
func (l *legStream) next() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	return l.seq
}

// armLocked starts the timer that commits what is held after wait, unless it runs.
func (l *legStream) armLocked() {
	if l.armed {
		return
	}
	l.armed = true
	if l.timer == nil {
		l.timer = time.AfterFunc(l.wait, l.expire)
		return
	}
	l.timer.Reset(l.wait)
}

func (l *legStream) expire() {
	l.mu.Lock()
	l.armed = false
	l.mu.Unlock()
	if err := l.flush(context.Background()); err != nil {
		l.s.log.Warn("held events not written; the leg's next commit tries again", "task_id", l.taskID, "error", err.Error())
	}
}

// stop ends the timer: the leg is over and its last writes are committed.
func (l *legStream) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer != nil {
		l.timer.Stop()
	}
	l.armed = false
}

// turnStore is the session store a leg's runner writes through: each transcript write
// carries what the leg holds (see above).
type turnStore struct {
	batchStore
	s    *Server
	legs *legStream
}

var _ batchStore = (*turnStore)(nil)

// batchStore is the session store of both backends: an AdminStore that commits a batch
// of entries in one transaction, and opens a new session with its lease and first leg
// in one.
type batchStore interface {
	session.AdminStore
	session.BatchAppender
	session.Opener
}

// newTurnStore wraps the backend's session store for legs.
func (s *Server) newTurnStore(legs *legStream) (*turnStore, error) {
	b, ok := s.b.sessions().(batchStore)
	if !ok {
		return nil, sema.Errorf(CodeStoreFailed, "the session store %T cannot commit a batch of entries", s.b.sessions())
	}
	return &turnStore{batchStore: b, s: s, legs: legs}, nil
}

// Append commits one entry with what the leg holds.
func (t *turnStore) Append(ctx context.Context, e session.Entry) (string, error) {
	ids, err := t.AppendBatch(ctx, []session.Entry{e})
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// AppendBatch commits es with what the leg holds.
func (t *turnStore) AppendBatch(ctx context.Context, es []session.Entry) ([]string, error) {
	var ids []string
	err := t.legs.commit(func(h *heldWrites) error {
		var err error
		ids, err = t.s.appendTurn(ctx, t.batchStore, es, h)
		return err
	})
	return ids, err
}

// turnAppender is a backend whose session store and service tables share a database:
// it commits a transcript batch and held writes in one transaction.
type turnAppender interface {
	appendTurn(ctx context.Context, es []session.Entry, h *heldWrites) ([]string, error)
}

// appendTurn commits es to store and h to the service's tables: in one transaction
// when the backend can, else h first (as its events were emitted first), then es.
func (s *Server) appendTurn(ctx context.Context, store batchStore, es []session.Entry, h *heldWrites) ([]string, error) {
	if !h.empty() && len(es) > 0 {
		if ta, ok := s.b.(turnAppender); ok {
			ids, err := ta.appendTurn(ctx, es, h)
			if err == nil {
				s.metrics.events.Add(float64(len(h.events)))
				s.wake.notify(h.task)
			}
			return ids, err
		}
	}
	if !h.empty() {
		if err := s.events.commit(h); err != nil {
			return nil, err
		}
		// Stored: a failure of the entries below must not hold them again.
		*h = heldWrites{task: h.task, tenant: h.tenant}
	}
	return store.AppendBatch(ctx, es)
}
