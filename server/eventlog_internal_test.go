package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
)

// newEventTestServer is a server on the store cfg names, closed when the test ends.
func newEventTestServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newTestServer(t *testing.T) *Server {
	t.Helper()
	s := newTestServerAt(t, t.TempDir())
	t.Cleanup(func() { s.Close() })
	return s
}

func storedEvents(t *testing.T, s *Server, task string) []string {
	t.Helper()
	rs, err := s.b.db().query(context.Background(), `SELECT seq, data FROM sema_serve_events WHERE task_id = ? ORDER BY seq`, task)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		var seq int64
		var data string
		if err := rs.Scan(&seq, &data); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d:%s", seq, data))
	}
	return out
}

// heldEventWrite is a leg's write for the event log: task's events numbered seqs, and 7
// tokens spent at now by tenant "t-"+task.
func heldEventWrite(task string, now int64, seqs ...int64) *eventWrite {
	h := &heldWrites{task: task, tenant: "t-" + task}
	for _, seq := range seqs {
		h.events = append(h.events, storedEvent{seq: seq, data: fmt.Sprintf(`"%s%d"`, task, seq)})
	}
	h.addSpend(7, now)
	return &eventWrite{h: h, err: make(chan error, 1)}
}

// TestEventLogConcurrentAppends: many legs appending at once each find every one of
// their events stored, in order, once — on both stores (on Postgres a batch's events
// are one statement).
func TestEventLogConcurrentAppends(t *testing.T) {
	eachStoreInternal(t, func(t *testing.T, cfg Config) {
		s := newEventTestServer(t, cfg)
		const tasks, each = 40, 25
		var wg sync.WaitGroup
		errs := make(chan error, tasks*each)
		for i := range tasks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for seq := int64(1); seq <= each; seq++ {
					if err := s.events.append(fmt.Sprint("task-", i), seq, fmt.Appendf(nil, `{"n":%d}`, seq)); err != nil {
						errs <- err
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for i := range tasks {
			got := storedEvents(t, s, fmt.Sprint("task-", i))
			if len(got) != each {
				t.Fatalf("task %d: %d events stored, want %d", i, len(got), each)
			}
			for j, g := range got {
				if want := fmt.Sprintf(`%d:{"n":%d}`, j+1, j+1); g != want {
					t.Fatalf("task %d event %d: %s, want %s", i, j, g, want)
				}
			}
		}
	})
}

// TestEventLogFailureIsTheWritersOwn: a batch whose one write cannot be stored (one of
// its events' sequence numbers is taken) fails that writer only, none of its events
// stored; the others' events and spend are stored — on both stores, with writes of one
// event and of several.
func TestEventLogFailureIsTheWritersOwn(t *testing.T) {
	eachStoreInternal(t, func(t *testing.T, cfg Config) {
		s := newEventTestServer(t, cfg)
		ctx := context.Background()
		if err := s.events.append("a", 2, []byte(`"first"`)); err != nil {
			t.Fatal(err)
		}
		write := func(task string, seqs ...int64) *eventWrite { return heldEventWrite(task, nowMS(), seqs...) }
		batch := []*eventWrite{write("b", 1, 2, 3), write("a", 1, 2, 3), write("c", 1), write("d", 1, 2)}
		s.events.write(batch)
		for i, want := range []bool{true, false, true, true} {
			if err := <-batch[i].err; (err == nil) != want {
				t.Errorf("write %d (%s): err %v", i, batch[i].h.task, err)
			}
		}
		if got := storedEvents(t, s, "a"); len(got) != 1 || got[0] != `2:"first"` {
			t.Errorf("task a: %v", got)
		}
		for task, n := range map[string]int{"b": 3, "c": 1, "d": 2} {
			if got := storedEvents(t, s, task); len(got) != n {
				t.Errorf("task %s: %v, want %d events", task, got, n)
			}
		}
		for tenant, want := range map[string]int64{"t-a": 0, "t-b": 7, "t-c": 7, "t-d": 7} {
			if got, err := tokensToday(ctx, s.b.db(), tenant, nowMS()); err != nil || got != want {
				t.Errorf("tenant %s spent %d (%v), want %d", tenant, got, err, want)
			}
		}
	})
}

// TestEventLogBatchCommitsWhole: on Postgres a batch is sent as one implicit transaction;
// when a statement after the events fails (here one leg's spend, whose hour's sum would
// pass the column's range), none of the batch is kept, and each leg's writes are tried
// alone: the others' events are stored once, the failing leg's not at all. (SQLite turns
// such a sum into a real number instead of failing, so the case is Postgres's.)
func TestEventLogBatchCommitsWhole(t *testing.T) {
	eachStoreInternal(t, func(t *testing.T, cfg Config) {
		if cfg.Postgres == "" {
			t.Skip("a sum past the integer range does not fail on SQLite")
		}
		s := newEventTestServer(t, cfg)
		ctx := context.Background()
		now := nowMS()
		if err := recordSpend(ctx, s.b.db(), "t-x", math.MaxInt64-3, now); err != nil {
			t.Fatal(err)
		}
		write := func(task string, seqs ...int64) *eventWrite { return heldEventWrite(task, now, seqs...) }
		batch := []*eventWrite{write("b", 1, 2), write("x", 1), write("c", 1)}
		s.events.write(batch)
		for i, want := range []bool{true, false, true} {
			if err := <-batch[i].err; (err == nil) != want {
				t.Errorf("write %d (%s): err %v", i, batch[i].h.task, err)
			}
		}
		for task, n := range map[string]int{"b": 2, "x": 0, "c": 1} {
			if got := storedEvents(t, s, task); len(got) != n {
				t.Errorf("task %s: %v, want %d events", task, got, n)
			}
		}
	})
}

func TestEventLogRefusesAfterClose(t *testing.T) {
	s := newTestServer(t)
	s.events.close()
	if err := s.events.append("a", 1, []byte(`1`)); !errors.Is(err, errEventLogClosed) {
		t.Fatalf("append after close: %v", err)
	}
	s.events.close() // a second close is harmless
}
