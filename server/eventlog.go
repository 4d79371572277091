package server

import (
	"context"
	"errors"
	"slices"
	"sync"
)

// eventLog writes the legs' held writes (heldwrites.go) that no transcript commit
// carries — on SQLite all of them, on Postgres those a leg commits on its own — with
// group commit: a leg's commit waits until its writes are committed (a stream reads
// only the store, and a leg goes on only once what it said is kept), but the commits of
// all the legs that wait at the same moment share one transaction. Alone, a leg pays one
// commit per call, as before; under load, a commit — SQLite's single writer, Postgres's
// WAL flush and its NOTIFY — is paid once for many legs' writes instead of once for each.
type eventLog struct {
	s    *Server
	in   chan *eventWrite
	quit chan struct{}
	done chan struct{}
	once sync.Once
}

// eventWrite is one leg's writes waiting for their commit.
type eventWrite struct {
	h   *heldWrites
	err chan error
}

// maxEventBatch bounds one transaction: a bigger batch makes its first writer wait for
// the others' rows.
const maxEventBatch = 256

var errEventLogClosed = errors.New("the event log is closed: the process is stopping")

func newEventLog(s *Server) *eventLog {
	l := &eventLog{s: s, in: make(chan *eventWrite), quit: make(chan struct{}), done: make(chan struct{})}
	go l.run()
	return l
}

// append stores one event and returns once it is committed.
func (l *eventLog) append(task string, seq int64, data []byte) error {
	return l.commit(&heldWrites{task: task, events: []storedEvent{{seq: seq, data: string(data)}}})
}

// commit stores a leg's held writes and returns once they are committed.
func (l *eventLog) commit(h *heldWrites) error {
	w := &eventWrite{h: h, err: make(chan error, 1)}
	select {
	case l.in <- w:
	case <-l.quit:
		return errEventLogClosed
	}
	return <-w.err
}

// close stops the writer after the batch it is writing; appends after it fail.
func (l *eventLog) close() {
	l.once.Do(func() { close(l.quit) })
	<-l.done
}

func (l *eventLog) run() {
	defer close(l.done)
	for {
		var first *eventWrite
		select {
		case first = <-l.in:
		case <-l.quit:
			return
		}
		batch := []*eventWrite{first}
	drain:
		for len(batch) < maxEventBatch {
			select {
			case w := <-l.in:
				batch = append(batch, w)
			default:
				break drain
			}
		}
		l.write(batch)
	}
}

// write commits a batch in one transaction (on Postgres one batch of statements, see
// pgBackend.commitHeld), with the other processes' wake-up when the backend sends one.
// When that fails, each leg's writes are committed on their own, so one's failure (a
// task's duplicate sequence number, say) is its own leg's error and no other's.
func (l *eventLog) write(batch []*eventWrite) {
	ctx := context.Background()
	tasks := make([]string, 0, len(batch))
	hs := make([]*heldWrites, len(batch))
	events := 0
	for i, w := range batch {
		tasks = append(tasks, w.h.task)
		hs[i] = w.h
		events += len(w.h.events)
	}
	slices.Sort(tasks)
	tasks = slices.Compact(tasks)
	var err error
	if hc, ok := l.s.b.(heldCommitter); ok {
		err = hc.commitHeld(ctx, tasks, hs)
	} else {
		err = l.s.b.tx(ctx, func(c conn, _ enqueueFunc) error {
			if err := writeHeld(ctx, c, hs...); err != nil {
				return err
			}
			return l.s.notifyIn(ctx, c, tasks)
		})
	}
	if err != nil && len(batch) > 1 {
		for _, w := range batch {
			l.write([]*eventWrite{w})
		}
		return
	}
	if err == nil {
		l.s.metrics.events.Add(float64(events))
		for _, id := range tasks {
			l.s.wake.notify(id)
		}
	}
	for _, w := range batch {
		w.err <- err
	}
}

const qInsertEvent = `INSERT INTO sema_serve_events (task_id, seq, data) VALUES (?, ?, ?)`

func insertEvent(ctx context.Context, c conn, task string, seq int64, data string) error {
	_, err := c.exec(ctx, qInsertEvent, task, seq, data)
	return err
}
