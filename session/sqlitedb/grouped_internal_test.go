package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// groupDB opens a database with a table of written ids.
func groupDB(t testing.TB) *sql.DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "g.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Close(db) })
	if _, err := db.Exec(`CREATE TABLE w (id TEXT PRIMARY KEY, n INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return db
}

// behaviour is what one write of a test does.
type behaviour byte

const (
	writes          behaviour = iota // two rows, then nil
	fails                            // a row, then an error
	panics                           // a row, then a panic
	cancelled                        // its caller's context has ended before it begins
	breaksTheTx                      // a row, then ends the whole transaction (as SQLite does after an I/O error) and fails
	conflicts                        // a row whose key another write of this test took: a statement's error
	cancelledMidway                  // its caller's context ends after its first statement: it still writes both rows
	nBehaviours
)

var errWrite = errors.New("the write refuses")

// write is the function a write with behaviour b runs: it writes id (and id+"/2"),
// passing ctx (its caller's, which cancel ends) to every statement.
func write(ctx context.Context, cancel context.CancelFunc, b behaviour, id string) func(q Querier) error {
	return func(q Querier) error {
		if b == conflicts {
			_, err := q.ExecContext(ctx, `INSERT INTO w (id, n) VALUES ('taken', 1)`)
			return err
		}
		if _, err := q.ExecContext(ctx, `INSERT INTO w (id, n) VALUES (?, 1)`, id); err != nil {
			return err
		}
		switch b {
		case cancelledMidway:
			cancel()
		case fails:
			return errWrite
		case panics:
			panic("the write panics: " + id)
		case breaksTheTx:
			if _, err := q.ExecContext(ctx, `ROLLBACK`); err != nil {
				return err
			}
			return errWrite
		}
		_, err := q.ExecContext(ctx, `INSERT INTO w (id, n) VALUES (?, 2)`, id+"/2")
		return err
	}
}

// runGroupOf queues one write per behaviour while the writer is held, so they all wait
// together, then lets them go; it returns each write's error and whether it panicked.
func runGroupOf(t testing.TB, db *sql.DB, bs []behaviour) ([]error, []bool) {
	t.Helper()
	h := handleFor(db)
	h.gate <- struct{}{} // the writer is busy
	errs, panicked := make([]error, len(bs)), make([]bool, len(bs))
	var wg sync.WaitGroup
	waiting := 0
	for i, b := range bs {
		ctx, cancel := context.WithCancel(context.Background())
		if b == cancelled {
			cancel()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cancel()
			defer func() {
				if v := recover(); v != nil {
					panicked[i] = true
				}
			}()
			errs[i] = Grouped(ctx, db, write(ctx, cancel, b, fmt.Sprint("w", i)))
		}()
		if b != cancelled {
			waiting++
			waitQueued(t, h, waiting)
		}
	}
	<-h.gate
	wg.Wait()
	return errs, panicked
}

// waitQueued waits until at least n writes are queued (or have left the queue because
// their context ended).
func waitQueued(t testing.TB, h *handle, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.gmu.Lock()
		q := len(h.queue)
		h.gmu.Unlock()
		if q >= n || time.Now().After(deadline) {
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// checkOutcomes holds every write to "its rows are there exactly when it returned nil".
func checkOutcomes(t testing.TB, db *sql.DB, bs []behaviour, errs []error, panicked []bool) {
	t.Helper()
	rows := map[string]bool{}
	r, err := db.Query(`SELECT id FROM w`)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var id string
		r.Scan(&id)
		rows[id] = true
	}
	r.Close()
	for i, b := range bs {
		id := fmt.Sprint("w", i)
		ok := errs[i] == nil && !panicked[i]
		want := b == writes
		if b == cancelledMidway {
			// In a group it writes; run alone (after a group broke) it is Tx's, which a
			// context ending midway rolls back. Either way, its rows are there exactly
			// when it returned nil.
			want = ok
		}
		if ok != want {
			t.Errorf("write %d (%v): error %v, panicked %v; want success %v", i, b, errs[i], panicked[i], want)
		}
		if b == conflicts {
			continue
		}
		if rows[id] != ok || rows[id+"/2"] != ok {
			t.Errorf("write %d (%v) returned %v (panicked %v) but its rows are there: %v, %v", i, b, errs[i], panicked[i], rows[id], rows[id+"/2"])
		}
		switch b {
		case cancelled:
			if !errors.Is(errs[i], context.Canceled) {
				t.Errorf("write %d: a cancelled write returned %v", i, errs[i])
			}
		case fails, breaksTheTx:
			if !errors.Is(errs[i], errWrite) {
				t.Errorf("write %d: a refusing write returned %v, not its own error", i, errs[i])
			}
		case panics:
			if !panicked[i] {
				t.Errorf("write %d: a panicking write did not panic in its caller", i)
			}
		}
	}
}

func (b behaviour) String() string {
	return [...]string{"writes", "fails", "panics", "cancelled", "breaks the transaction", "conflicts", "cancelled midway"}[b]
}

func TestGroupedWritesEachOutcomeIsItsOwn(t *testing.T) {
	cases := map[string][]behaviour{
		"all write":                           {writes, writes, writes, writes},
		"one fails among others":              {writes, fails, writes},
		"the first fails":                     {fails, writes, writes},
		"the last fails":                      {writes, writes, fails},
		"one panics":                          {writes, panics, writes},
		"one was cancelled while waiting":     {writes, cancelled, writes},
		"one breaks the transaction":          {writes, writes, breaksTheTx, writes, writes},
		"the first breaks the transaction":    {breaksTheTx, writes, writes},
		"a statement's own error":             {writes, conflicts, writes},
		"every kind":                          {writes, fails, panics, cancelled, breaksTheTx, conflicts, cancelledMidway, writes},
		"alone":                               {writes},
		"alone, failing":                      {fails},
		"alone, breaking the transaction":     {breaksTheTx},
		"two breaking the transaction in one": {writes, breaksTheTx, writes, breaksTheTx, writes},
	}
	// One shared transaction for all (a budget never spent), and one write per
	// transaction (a budget spent at once: every write after the first waits for the
	// next group, first in line).
	for _, budget := range []time.Duration{time.Hour, 0} {
		for name, bs := range cases {
			t.Run(fmt.Sprintf("%s, budget %v", name, budget), func(t *testing.T) {
				defer setBudget(budget)()
				db := groupDB(t)
				if _, err := db.Exec(`INSERT INTO w (id, n) VALUES ('taken', 0)`); err != nil {
					t.Fatal(err)
				}
				var groups []int
				onGroup = func(n int) { groups = append(groups, n) }
				defer func() { onGroup = nil }()
				errs, panicked := runGroupOf(t, db, bs)
				checkOutcomes(t, db, bs, errs, panicked)
				if budget == 0 {
					for _, n := range groups {
						if n != 1 {
							t.Errorf("with the budget spent at once, transactions ran %v writes, want one each", groups)
							break
						}
					}
				}
			})
		}
	}
}

// setBudget sets groupBudget for a test and returns what puts it back.
func setBudget(d time.Duration) func() {
	old := groupBudget
	groupBudget = d
	return func() { groupBudget = old }
}

// TestGroupedWritesShareATransaction shows the writes waiting together are committed
// together: a reader sees none of them until it sees all of them.
func TestGroupedWritesShareATransaction(t *testing.T) {
	defer setBudget(time.Hour)()
	db := groupDB(t)
	var groups []int
	onGroup = func(n int) { groups = append(groups, n) }
	defer func() { onGroup = nil }()
	bs := []behaviour{writes, writes, writes, writes, writes, writes}
	errs, panicked := runGroupOf(t, db, bs)
	checkOutcomes(t, db, bs, errs, panicked)
	if len(groups) != 1 || groups[0] != len(bs) {
		t.Errorf("six writes waiting together ran as groups %v, want one of six", groups)
	}
}

// TestGroupedWriteOutlivesItsCallersContext: a write whose caller's context ends after it
// began in a group is not interrupted (an interrupted statement would roll back the
// whole group's transaction): it writes, and says so.
func TestGroupedWriteOutlivesItsCallersContext(t *testing.T) {
	db := groupDB(t)
	bs := []behaviour{writes, cancelledMidway, writes}
	errs, panicked := runGroupOf(t, db, bs)
	checkOutcomes(t, db, bs, errs, panicked)
	if errs[1] != nil {
		t.Errorf("the write whose caller gave up midway returned %v; in a group it is not interrupted", errs[1])
	}
}

// TestGroupedLeaderCancelledWhileWaiting: the caller that would lead the next group gives
// up while the writer is busy; the lead passes on and the others still write.
func TestGroupedLeaderCancelledWhileWaiting(t *testing.T) {
	db := groupDB(t)
	h := handleFor(db)
	h.gate <- struct{}{}
	ctx, cancel := context.WithCancel(context.Background())
	leaderDone := make(chan error, 1)
	go func() { leaderDone <- Grouped(ctx, db, write(ctx, cancel, writes, "leader")) }()
	waitQueued(t, h, 1)
	others := make(chan error, 3)
	for i := range 3 {
		go func() {
			others <- Grouped(context.Background(), db, write(context.Background(), func() {}, writes, fmt.Sprint("w", i)))
		}()
	}
	waitQueued(t, h, 4)
	cancel()
	if err := <-leaderDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled leader returned %v", err)
	}
	<-h.gate
	for range 3 {
		select {
		case err := <-others:
			if err != nil {
				t.Errorf("a write after the leader gave up: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the writes behind a cancelled leader never ran: the lead was lost")
		}
	}
	var n int
	db.QueryRow(`SELECT count(*) FROM w`).Scan(&n)
	if n != 6 {
		t.Errorf("%d rows, want 6 (three writes of two rows; none of the leader's)", n)
	}
}

// TestGroupedUnderLoad runs writes of every kind from many goroutines at once, with Tx
// writes between them, and holds each to its outcome.
func TestGroupedUnderLoad(t *testing.T) {
	db := groupDB(t)
	if _, err := db.Exec(`INSERT INTO w (id, n) VALUES ('taken', 0)`); err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 60
	bs := make([]behaviour, workers*each)
	errs, panicked := make([]error, len(bs)), make([]bool, len(bs))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range bs {
		bs[i] = behaviour(rng.IntN(int(nBehaviours)))
		if rng.IntN(3) > 0 {
			bs[i] = writes
		}
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range each {
				i := w*each + k
				ctx, cancel := context.WithCancel(context.Background())
				if bs[i] == cancelled {
					cancel()
				}
				func() {
					defer func() {
						if v := recover(); v != nil {
							panicked[i] = true
						}
					}()
					if k%7 == 0 && bs[i] == writes {
						errs[i] = Tx(ctx, db, write(ctx, cancel, bs[i], fmt.Sprint("w", i)))
						return
					}
					errs[i] = Grouped(ctx, db, write(ctx, cancel, bs[i], fmt.Sprint("w", i)))
				}()
				cancel()
			}
		}()
	}
	wg.Wait()
	checkOutcomes(t, db, bs, errs, panicked)
	h := handleFor(db)
	h.gmu.Lock()
	defer h.gmu.Unlock()
	if len(h.queue) != 0 || h.leader != nil {
		t.Errorf("after every write returned, %d are queued and the lead is held: %v", len(h.queue), h.leader != nil)
	}
}

// FuzzGroupedOutcomes runs a group of writes whose kinds the input spells (one byte each)
// and holds every write to its outcome.
func FuzzGroupedOutcomes(f *testing.F) {
	f.Add("\x00\x01\x00")
	f.Add("\x00\x04\x00\x02\x03\x05")
	f.Add("\x04\x04\x00")
	f.Fuzz(func(t *testing.T, spec string) {
		if len(spec) == 0 || len(spec) > 24 {
			return
		}
		db := groupDB(t)
		if _, err := db.Exec(`INSERT INTO w (id, n) VALUES ('taken', 0)`); err != nil {
			t.Fatal(err)
		}
		bs := make([]behaviour, len(spec))
		for i := range spec {
			bs[i] = behaviour(spec[i] % byte(nBehaviours))
		}
		errs, panicked := runGroupOf(t, db, bs)
		checkOutcomes(t, db, bs, errs, panicked)
	})
}
