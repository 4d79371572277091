package server

import (
	"context"
	"errors"
	"slices"
	"sync"
)

// eventLog writes the legs' events to the store with group commit: a leg's append waits
// until its event is committed (a stream reads only the store, and a leg goes on only
// once what it said is kept), but the appends of all the legs that wait at the same
// moment share one transaction. Alone, a leg pays one commit per event, as before; under
// load, a commit — SQLite's single writer, Postgres's WAL flush and its NOTIFY — is paid
// once for many events instead of once for each.
type eventLog struct {
	s    *Server
	in   chan *eventWrite
	quit chan struct{}
	done chan struct{}
	once sync.Once
}

// eventWrite is one event waiting for its commit.
type eventWrite struct {
	task string
	seq  int64
	data string
	err  chan error
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
	w := &eventWrite{task: task, seq: seq, data: string(data), err: make(chan error, 1)}
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

// write commits a batch in one transaction. When that fails, each event is written on
// its own, so one event's failure (a task's duplicate sequence number, say) is its own
// leg's error and no other's.
func (l *eventLog) write(batch []*eventWrite) {
	ctx := context.Background()
	err := l.s.b.tx(ctx, func(c conn, _ enqueueFunc) error {
		for _, w := range batch {
			if err := insertEvent(ctx, c, w.task, w.seq, w.data); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && len(batch) > 1 {
		for _, w := range batch {
			l.write([]*eventWrite{w})
		}
		return
	}
	if err == nil {
		l.s.metrics.events.Add(float64(len(batch)))
		tasks := make([]string, 0, len(batch))
		for _, w := range batch {
			tasks = append(tasks, w.task)
		}
		slices.Sort(tasks)
		l.s.appended(ctx, slices.Compact(tasks)...)
	}
	for _, w := range batch {
		w.err <- err
	}
}

func insertEvent(ctx context.Context, c conn, task string, seq int64, data string) error {
	_, err := c.exec(ctx, `INSERT INTO sema_serve_events (task_id, seq, data) VALUES (?, ?, ?)`, task, seq, data)
	return err
}
