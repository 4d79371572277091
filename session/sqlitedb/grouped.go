package sqlitedb

import (
	"context"
	"database/sql"
	"slices"
	"time"
)

// maxGroup and groupBudget bound the writes one grouped transaction carries: its first
// write's caller waits for the last one's to run, so a group stops taking writes once it
// has run for groupBudget (the rest wait for the next group, first in line).
const maxGroup = 64

var groupBudget = time.Millisecond // a variable for the tests

// onGroup, when set (by a test), is told how many writes each shared transaction ran.
var onGroup func(n int)

// groupSavepoint names the savepoint around each write of a group.
const groupSavepoint = "sema_grouped_write"

// Grouped runs fn inside a write transaction as Tx does — fn's writes are committed all
// together when it returns nil and none of them otherwise, and a panic in fn is raised
// again in the caller — but when other callers of Grouped on db are waiting at the same
// time, their writes share one transaction: each within a savepoint of its own, so an
// error in one rolls back only that one, and the transaction is committed once for all.
// A busy writer then pays one BEGIN and one COMMIT (one append to the write-ahead log)
// for many writes instead of one each.
//
// fn runs on whichever waiting caller's goroutine leads the group, its statements under
// a context that does not end: SQLite rolls back a whole transaction when a statement in
// it is interrupted, so one caller's cancelled context must not reach a statement run on
// behalf of others. A caller's context that ends before its write begins refuses it
// (ctx.Err()); once begun, the write's outcome is reported whatever the context. When
// the shared transaction cannot go on (SQLite rolled it back after an error, or it could
// not commit), every write that had not failed on its own is run again alone, as Tx runs
// it, so no caller's outcome is another's doing. fn must return the first error a
// statement gives it, and, as with Tx, may be run more than once.
func Grouped(ctx context.Context, db *sql.DB, fn func(q Querier) error) error {
	h := handleFor(db)
	r := &groupWrite{ctx: ctx, fn: fn, done: make(chan groupOutcome, 1)}
	h.gmu.Lock()
	h.queue = append(h.queue, r)
	if h.leader == nil {
		h.leader = r
		r.done <- groupOutcome{lead: true}
	}
	h.gmu.Unlock()
	for {
		var out groupOutcome
		select {
		case out = <-r.done:
		case <-ctx.Done():
			if h.withdraw(r) {
				return ctx.Err()
			}
			out = <-r.done // taken into a group: its outcome is on its way
		}
		if !out.lead {
			return out.result()
		}
		return h.lead(db, r)
	}
}

// groupWrite is one caller's write waiting for, or in, a group.
type groupWrite struct {
	ctx  context.Context
	fn   func(q Querier) error
	done chan groupOutcome // one outcome, or the lead
}

// groupOutcome is what a write's caller receives: its result, or the turn to lead.
type groupOutcome struct {
	err      error
	panicked bool
	panicVal any
	lead     bool
}

func (o groupOutcome) result() error {
	if o.panicked {
		panic(o.panicVal)
	}
	return o.err
}

// withdraw takes r out of the queue if no group has taken it, passing the lead on if r
// had it; it reports whether r was still waiting.
func (h *handle) withdraw(r *groupWrite) bool {
	h.gmu.Lock()
	defer h.gmu.Unlock()
	i := slices.Index(h.queue, r)
	if i < 0 {
		return false
	}
	h.queue = slices.Delete(h.queue, i, i+1)
	if h.leader == r {
		h.passLeadLocked()
	}
	return true
}

// passLeadLocked gives the lead to the first waiting write, or lets it go.
func (h *handle) passLeadLocked() {
	h.leader = nil
	if len(h.queue) > 0 {
		h.leader = h.queue[0]
		h.leader.done <- groupOutcome{lead: true}
	}
}

// lead runs, as r's caller, the group that begins with r once the writer is free, and
// returns r's outcome. r is first in the queue whenever it leads: the lead goes to the
// first waiting write, and only the leader takes writes from the front.
func (h *handle) lead(db *sql.DB, r *groupWrite) error {
	select {
	case h.gate <- struct{}{}:
	case <-r.ctx.Done():
		if h.withdraw(r) {
			return r.ctx.Err()
		}
		// Not possible: only the leader takes writes from the queue.
		panic("sqlitedb: a leading write left the queue while waiting for the writer")
	}
	h.gmu.Lock()
	batch := slices.Clone(h.queue[:min(len(h.queue), maxGroup)])
	h.queue = slices.Delete(h.queue, 0, len(batch))
	h.gmu.Unlock()
	defer func() {
		<-h.gate
		h.gmu.Lock()
		h.passLeadLocked()
		h.gmu.Unlock()
	}()
	if len(batch) == 1 {
		// Alone: exactly Tx, on the caller's own context and goroutine.
		return h.retrying(r.ctx, db, r.fn)
	}
	h.runGroup(db, batch)
	return (<-r.done).result()
}

// retrying is Tx's body once the writer is held: fn in a transaction, run again while
// SQLite reports the database busy without having waited.
func (h *handle) retrying(ctx context.Context, db *sql.DB, fn func(q Querier) error) error {
	return h.fault(retryBusy(ctx, func() error { return tx(ctx, db, h, fn) }))
}

// runGroup runs batch's writes in one transaction and gives each its outcome.
func (h *handle) runGroup(db *sql.DB, batch []*groupWrite) {
	gctx := context.Background()
	t, err := db.BeginTx(gctx, nil)
	if err != nil {
		h.runAlone(db, batch)
		return
	}
	q := groupq{txq: txq{tx: t, db: db, h: h}, ctx: gctx}
	var ran []*groupWrite // run without error, waiting for the commit
	start := time.Now()
	for i, r := range batch {
		if i > 0 && time.Since(start) > groupBudget {
			// Long enough: the rest lead the queue, for the next group.
			h.gmu.Lock()
			h.queue = append(slices.Clone(batch[i:]), h.queue...)
			h.gmu.Unlock()
			batch = batch[:i]
			break
		}
		if err := r.ctx.Err(); err != nil {
			r.done <- groupOutcome{err: err}
			continue
		}
		if _, err := t.ExecContext(gctx, "SAVEPOINT "+groupSavepoint); err != nil {
			t.Rollback()
			h.runAlone(db, append(ran, batch[i:]...))
			return
		}
		out := callGrouped(r.fn, q)
		if out.err != nil || out.panicked {
			// Undo this write only. If SQLite has already rolled the transaction back
			// (an I/O error, a full disk), the savepoint is gone with it: the writes run
			// before this one are lost too and run again alone.
			if _, err := t.ExecContext(gctx, "ROLLBACK TO "+groupSavepoint); err != nil {
				t.Rollback()
				r.done <- h.coded(out)
				h.runAlone(db, append(ran, batch[i+1:]...))
				return
			}
		}
		if _, err := t.ExecContext(gctx, "RELEASE "+groupSavepoint); err != nil {
			t.Rollback()
			if out.err != nil || out.panicked {
				r.done <- h.coded(out)
				h.runAlone(db, append(ran, batch[i+1:]...))
			} else {
				h.runAlone(db, append(ran, batch[i:]...))
			}
			return
		}
		if out.err != nil || out.panicked {
			r.done <- h.coded(out)
			continue
		}
		ran = append(ran, r)
	}
	if onGroup != nil {
		onGroup(len(batch))
	}
	if err := t.Commit(); err != nil {
		t.Rollback()
		h.runAlone(db, ran)
		return
	}
	for _, r := range ran {
		r.done <- groupOutcome{}
	}
	h.committed(db)
}

// runAlone runs each write in a transaction of its own, as Tx would have, for writes a
// group could not carry to its commit.
func (h *handle) runAlone(db *sql.DB, batch []*groupWrite) {
	for _, r := range batch {
		var out groupOutcome
		func() {
			defer func() {
				if v := recover(); v != nil {
					out = groupOutcome{panicked: true, panicVal: v}
				}
			}()
			out.err = h.retrying(r.ctx, db, r.fn)
		}()
		r.done <- out
	}
}

// coded is out with its error coded as a fault of h's file where it is one, as Tx codes
// the errors it returns.
func (h *handle) coded(out groupOutcome) groupOutcome {
	out.err = h.fault(out.err)
	return out
}

// callGrouped runs fn, turning a panic into an outcome for its caller to raise.
func callGrouped(fn func(q Querier) error, q Querier) (out groupOutcome) {
	defer func() {
		if v := recover(); v != nil {
			out = groupOutcome{panicked: true, panicVal: v}
		}
	}()
	return groupOutcome{err: fn(q)}
}

// groupq is a group's transaction as a Querier: every statement runs under the group's
// context, whatever context its caller passes (see Grouped).
type groupq struct {
	txq
	ctx context.Context
}

func (g groupq) ExecContext(_ context.Context, query string, args ...any) (sql.Result, error) {
	return g.txq.ExecContext(g.ctx, query, args...)
}

func (g groupq) QueryContext(_ context.Context, query string, args ...any) (*sql.Rows, error) {
	return g.txq.QueryContext(g.ctx, query, args...)
}

func (g groupq) QueryRowContext(_ context.Context, query string, args ...any) *sql.Row {
	return g.txq.QueryRowContext(g.ctx, query, args...)
}
