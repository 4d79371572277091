package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/session"
)

// turnFixture is a server on one store with a session and a leg's stream whose timer
// never fires by itself (wait: an hour), so what is stored was committed by what the
// test did.
type turnFixture struct {
	s       *Server
	legs    *legStream
	store   *turnStore
	session string
}

func newTurnFixture(t *testing.T, cfg Config) *turnFixture {
	t.Helper()
	s, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	legs := newLegStream(s, &taskRow{id: "task-1", tenant: "acme"})
	legs.wait = time.Hour
	t.Cleanup(legs.stop)
	store, err := s.newTurnStore(legs)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := store.Create(context.Background(), session.Session{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return &turnFixture{s: s, legs: legs, store: store, session: sess.ID}
}

func (f *turnFixture) entries(kinds ...string) []session.Entry {
	var es []session.Entry
	for _, k := range kinds {
		es = append(es, session.Entry{SessionID: f.session, Kind: k, Payload: json.RawMessage(`{}`)})
	}
	return es
}

// state is what the store holds of the turn: the transcript's kinds, the task's events
// (seq:data) and the tenant's spend.
func (f *turnFixture) state(t *testing.T) (kinds, events string, spent int64) {
	t.Helper()
	ctx := context.Background()
	tr, err := f.s.b.sessions().Transcript(ctx, f.session, "")
	if err != nil {
		t.Fatal(err)
	}
	var ks []string
	for _, e := range tr {
		ks = append(ks, e.Kind)
	}
	if spent, err = tokensToday(ctx, f.s.b.db(), "acme", nowMS()); err != nil {
		t.Fatal(err)
	}
	return strings.Join(ks, ","), strings.Join(storedEvents(t, f.s, "task-1"), " "), spent
}

// TestTurnCarriesItsEvents: a leg's events and spend are held until its next transcript
// write, which commits them with its entries.
func TestTurnCarriesItsEvents(t *testing.T) {
	eachStoreInternal(t, func(t *testing.T, cfg Config) {
		f := newTurnFixture(t, cfg)
		f.legs.hold([]byte(`"assistant"`))
		f.legs.holdSpend(700, nowMS())
		f.legs.hold([]byte(`"tool_use"`))
		if k, ev, spent := f.state(t); k != "" || ev != "" || spent != 0 {
			t.Fatalf("before the turn's commit: transcript %q, events %q, spend %d; want nothing stored", k, ev, spent)
		}
		if _, err := f.store.AppendBatch(context.Background(), f.entries("assistant", "call_started")); err != nil {
			t.Fatal(err)
		}
		k, ev, spent := f.state(t)
		if k != "assistant,call_started" || ev != `1:"assistant" 2:"tool_use"` || spent != 700 {
			t.Fatalf("after the turn's commit: transcript %q, events %q, spend %d; want both entries, both events and 700", k, ev, spent)
		}
		// A single Append carries too.
		f.legs.hold([]byte(`"tool_result"`))
		if _, err := f.store.Append(context.Background(), f.entries("tool_results")[0]); err != nil {
			t.Fatal(err)
		}
		if _, ev, _ := f.state(t); ev != `1:"assistant" 2:"tool_use" 3:"tool_result"` {
			t.Fatalf("after an Append: events %q", ev)
		}
	})
}

// TestTurnFailureKeepsNeither: when the turn's events cannot be stored (the sequence
// number of its second event is taken), its entries are not stored either, on both
// stores; what was held is held again and a later commit stores it, in order.
func TestTurnFailureKeepsNeither(t *testing.T) {
	eachStoreInternal(t, func(t *testing.T, cfg Config) {
		f := newTurnFixture(t, cfg)
		ctx := context.Background()
		if _, err := f.s.b.db().exec(ctx, qInsertEvent, "task-1", 2, `"taken"`); err != nil {
			t.Fatal(err)
		}
		f.legs.hold([]byte(`"assistant"`))
		f.legs.holdSpend(700, nowMS())
		f.legs.hold([]byte(`"tool_use"`))
		if _, err := f.store.AppendBatch(ctx, f.entries("assistant", "call_started")); err == nil {
			t.Fatal("a turn whose event could not be stored committed")
		}
		if k, ev, spent := f.state(t); k != "" || ev != `2:"taken"` || spent != 0 {
			t.Fatalf("after the failed turn: transcript %q, events %q, spend %d; want nothing of the turn", k, ev, spent)
		}
		if _, err := f.s.b.db().exec(ctx, `DELETE FROM sema_serve_events WHERE task_id = ?`, "task-1"); err != nil {
			t.Fatal(err)
		}
		f.legs.hold([]byte(`"notice"`))
		if err := f.legs.flush(ctx); err != nil {
			t.Fatal(err)
		}
		if _, ev, spent := f.state(t); ev != `1:"assistant" 2:"tool_use" 3:"notice"` || spent != 700 {
			t.Fatalf("after the next commit: events %q, spend %d; want the held events in order and 700", ev, spent)
		}
	})
}

// TestRefusedTranscriptEvents: a transcript write the store refuses (a lease the leg
// does not hold) stores none of the turn's events on Postgres, where they share its
// transaction; on SQLite, where they are committed first in another file, the events
// are stored without the entries — never the entries without the events. Either way
// the event is stored once the next commit is made.
func TestRefusedTranscriptEvents(t *testing.T) {
	eachStoreInternal(t, func(t *testing.T, cfg Config) {
		f := newTurnFixture(t, cfg)
		f.legs.hold([]byte(`"assistant"`))
		es := f.entries("assistant")
		es[0].Claim = &session.Claim{SessionID: f.session, Holder: "someone-else"}
		if _, err := f.store.AppendBatch(context.Background(), es); !sema.IsCode(err, session.CodeLeaseLost) {
			t.Fatalf("a write under a lease not held: %v; want %s", err, session.CodeLeaseLost)
		}
		want := `1:"assistant"`
		if _, shared := f.s.b.(turnAppender); shared {
			want = ""
		}
		if k, ev, _ := f.state(t); k != "" || ev != want {
			t.Fatalf("after the refused write: transcript %q, events %q; want none and %q", k, ev, want)
		}
		// What was not stored is held again, and what was is not written twice.
		if err := f.legs.flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, ev, _ := f.state(t); ev != `1:"assistant"` {
			t.Fatalf("after the next commit: events %q; want the event once", ev)
		}
	})
}

// TestHeldEventsStoredInOrder: however the commits of a leg's events interleave — the
// transcript's, the timer's, a notice's own — a reader of the store never sees an event
// before one numbered earlier: what is stored is always 1…n.
func TestHeldEventsStoredInOrder(t *testing.T) {
	eachStoreInternal(t, func(t *testing.T, cfg Config) {
		f := newTurnFixture(t, cfg)
		f.legs.wait = time.Millisecond // the timer commits too, between the others
		ctx := context.Background()
		const n = 120
		done := make(chan struct{})
		var wg sync.WaitGroup
		errs := make(chan error, 4*n)
		wg.Add(1)
		go func() { // the reader
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if err := gapless(f.s, "task-1"); err != nil {
					errs <- err
					return
				}
			}
		}()
		var writers sync.WaitGroup
		writers.Add(2)
		go func() { // the runner: events, and a transcript write every few
			defer writers.Done()
			for i := range n {
				f.legs.hold(fmt.Appendf(nil, `"e%d"`, i))
				if i%4 == 3 {
					if _, err := f.store.Append(ctx, f.entries("turn")[0]); err != nil {
						errs <- err
					}
				}
			}
		}()
		go func() { // notices committed at once, and text that kicks
			defer writers.Done()
			for i := range n / 4 {
				if err := f.legs.append(fmt.Appendf(nil, `"notice%d"`, i)); err != nil {
					errs <- err
				}
				f.legs.kick()
			}
		}()
		writers.Wait()
		if err := f.legs.flush(ctx); err != nil {
			t.Fatal(err)
		}
		close(done)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if got := len(storedEvents(t, f.s, "task-1")); got != n+n/4 {
			t.Fatalf("%d events stored, want %d", got, n+n/4)
		}
		if err := gapless(f.s, "task-1"); err != nil {
			t.Fatal(err)
		}
	})
}

// gapless reports an error unless task's stored events are numbered 1…n.
func gapless(s *Server, task string) error {
	rs, err := s.b.db().query(context.Background(), `SELECT seq FROM sema_serve_events WHERE task_id = ? ORDER BY seq`, task)
	seqs, err := collect(rs, err, func(r rows) (int64, error) {
		var n int64
		err := r.Scan(&n)
		return n, err
	})
	if err != nil {
		return err
	}
	for i, seq := range seqs {
		if seq != int64(i+1) {
			return fmt.Errorf("stored events %v: %s is stored before %d", seqs, strconv.FormatInt(seq, 10), i+1)
		}
	}
	return nil
}

// TestKickCommitsWhatIsHeld: the model's text kicks the events held before it into the
// store at once (its place in the stream must be stored), without the timer (an hour
// here) or a transcript write.
func TestKickCommitsWhatIsHeld(t *testing.T) {
	eachStoreInternal(t, func(t *testing.T, cfg Config) {
		f := newTurnFixture(t, cfg)
		f.legs.hold([]byte(`"init"`))
		woken := f.s.wake.wait("task-1")
		f.legs.kick()
		select {
		case <-woken:
		case <-time.After(30 * time.Second):
			t.Fatal("the held event was not committed after a kick")
		}
		if _, ev, _ := f.state(t); ev != `1:"init"` {
			t.Fatalf("events %q after the kick; want the held one", ev)
		}
	})
}

// TestLegEndFailureIsReported: a leg's end written without a leg stream (finish) whose
// transaction fails — the store refuses its result event — reports the failure and
// stores none of it (the task's row is not touched either), on both stores.
func TestLegEndFailureIsReported(t *testing.T) {
	eachStoreInternal(t, func(t *testing.T, cfg Config) {
		ctx := context.Background()
		s, err := New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		refuse := []string{`CREATE TRIGGER refuse_result BEFORE INSERT ON sema_serve_events
			WHEN NEW.task_id = 'task-1' BEGIN SELECT RAISE(ABORT, 'injected'); END`}
		if cfg.Postgres != "" {
			refuse = []string{`CREATE FUNCTION refuse_result() RETURNS trigger AS $f$
				BEGIN IF NEW.task_id = 'task-1' THEN RAISE EXCEPTION 'injected'; END IF; RETURN NEW; END $f$ LANGUAGE plpgsql`,
				`CREATE TRIGGER refuse_result BEFORE INSERT ON sema_serve_events FOR EACH ROW EXECUTE FUNCTION refuse_result()`}
		}
		for _, ddl := range refuse {
			if _, err := s.b.db().exec(ctx, ddl); err != nil {
				t.Fatal(err)
			}
		}
		task := &taskRow{id: "task-1", tenant: "acme"}
		err = s.finish(ctx, task, errorResult("", sema.Errorf("model.failed", "the model failed")), nil)
		if err == nil || !strings.Contains(err.Error(), "injected") {
			t.Fatalf("a leg's end whose transaction failed was reported as %v", err)
		}
		if got := storedEvents(t, s, "task-1"); len(got) != 0 {
			t.Fatalf("events %q: the failed end stored part of itself", got)
		}
	})
}
