package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
)

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

// TestEventLogConcurrentAppends: many legs appending at once each find every one of
// their events stored, in order, once.
func TestEventLogConcurrentAppends(t *testing.T) {
	s := newTestServer(t)
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
}

// TestEventLogFailureIsTheWritersOwn: a batch whose one event cannot be stored (its
// sequence number is taken) fails that event's writer only; the others are stored.
func TestEventLogFailureIsTheWritersOwn(t *testing.T) {
	s := newTestServer(t)
	if err := s.events.append("a", 1, []byte(`"first"`)); err != nil {
		t.Fatal(err)
	}
	one := func(task, data string) *eventWrite {
		return &eventWrite{h: &heldWrites{task: task, events: []storedEvent{{seq: 1, data: data}}}, err: make(chan error, 1)}
	}
	batch := []*eventWrite{one("b", `"b1"`), one("a", `"again"`), one("c", `"c1"`)}
	s.events.write(batch)
	for i, want := range []bool{true, false, true} {
		if err := <-batch[i].err; (err == nil) != want {
			t.Errorf("write %d (%s/1): err %v", i, batch[i].h.task, err)
		}
	}
	if got := storedEvents(t, s, "a"); len(got) != 1 || got[0] != `1:"first"` {
		t.Errorf("task a: %v", got)
	}
	for _, task := range []string{"b", "c"} {
		if got := storedEvents(t, s, task); len(got) != 1 {
			t.Errorf("task %s: %v", task, got)
		}
	}
}

func TestEventLogRefusesAfterClose(t *testing.T) {
	s := newTestServer(t)
	s.events.close()
	if err := s.events.append("a", 1, []byte(`1`)); !errors.Is(err, errEventLogClosed) {
		t.Fatalf("append after close: %v", err)
	}
	s.events.close() // a second close is harmless
}
