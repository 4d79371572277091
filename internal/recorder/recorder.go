// Package recorder writes a leg's transcript: it queues entries whose loss in a crash the
// next leg copes with, commits them with the next entry that must be durable (one commit
// a turn, in one transaction when the store can batch), and fails closed: once an entry
// cannot be stored, or the leg lost its session's lease, it records nothing more, and the
// stored chain stays a prefix that the next leg completes.
package recorder

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/internal/transcript"
	"github.com/sema-agent/sema/session"
)

// CodeRecordFailed is the runner's session.record_failed (agent.CodeSessionRecordFailed;
// a test there holds the two equal): a transcript entry could not be stored.
const CodeRecordFailed = "session.record_failed"

// Leg is the leg whose transcript a Recorder writes.
type Leg struct {
	Store     session.Store
	SessionID string
	LegID     string
	// BranchFrom is the entry the leg's first entry follows (a resume's At), else "".
	BranchFrom string
	// Claim is the lease claim the entries are written under (nil: none).
	Claim func() *session.Claim
	// Reclaim answers entries the store refused with session.lease_lost: nil when the
	// lease only expired and was renewed (the entries are tried once more), else the
	// refusal, and the leg stops.
	Reclaim func(ctx context.Context) error
	// Opened, when set, waits for the session and its leg that are still being stored
	// (a new session's first writes run beside the leg's first request) and returns the
	// leg's id, or why they could not be stored. The first commit calls it once, before
	// any entry is written; LegID is then unset.
	Opened func() (string, error)
}

// Recorder writes one leg's transcript. Its zero value records nothing and reports every
// entry stored, as a leg without a session store does, until Open.
type Recorder struct {
	mu  sync.Mutex // serializes transcript writes, which parallel read calls make
	leg Leg
	// branchFrom is the entry the next committed entry follows, until one is committed.
	branchFrom string
	// err is the first transcript write that failed (or was refused after the lease was
	// lost). From then on the leg writes no more entries and stops.
	err *sema.Error
	// queued are entries stored with the next entry that must be durable before the leg
	// goes on (a call's intent, a parked turn) or when the leg ends; see Later.
	queued []session.Entry
}

// Open starts recording l's entries.
func (r *Recorder) Open(l Leg) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.leg, r.branchFrom = l, l.BranchFrom
}

// Record appends one entry, with the entries Later queued before it, and reports whether
// it was stored: when it returns true, the entry and everything before it are committed.
func (r *Recorder) Record(ctx context.Context, kind string, payload any) (string, bool) {
	if r.leg.Store == nil {
		return "", true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.queueLocked(kind, payload) {
		return "", false
	}
	ids, ok := r.flushLocked(ctx)
	if !ok || len(ids) == 0 {
		return "", ok
	}
	return ids[len(ids)-1], true
}

// Later queues one entry to be committed with the next entry that must be durable
// before the leg goes on (Record), or when the leg ends (Flush). A failure to store it
// stops the leg at the next commit.
func (r *Recorder) Later(kind string, payload any) {
	if r.leg.Store == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queueLocked(kind, payload)
}

// Flush commits the queued entries and reports whether everything recorded so far is
// stored.
func (r *Recorder) Flush(ctx context.Context) bool {
	if r.leg.Store == nil {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.flushLocked(ctx)
	return ok
}

// FlushBeforeRequest stores what was queued before a turn's request goes out. When only
// prompts (user entries) wait, they are committed concurrently with the request; anything
// else queued is committed first. It returns nil when the entries could not be stored,
// else a func that reports, once the request is back, whether they were.
func (r *Recorder) FlushBeforeRequest(ctx context.Context) func() bool {
	if r.leg.Store == nil {
		return func() bool { return true }
	}
	r.mu.Lock()
	onlyPrompt := len(r.queued) > 0
	for _, e := range r.queued {
		onlyPrompt = onlyPrompt && e.Kind == transcript.KindUser
	}
	if !onlyPrompt {
		_, ok := r.flushLocked(ctx)
		r.mu.Unlock()
		if !ok {
			return nil
		}
		return func() bool { return true }
	}
	// The flush holds mu until it is done, so nothing recorded meanwhile overtakes it.
	done := make(chan bool, 1)
	go func() {
		defer r.mu.Unlock()
		_, ok := r.flushLocked(ctx)
		done <- ok
	}()
	return func() bool {
		ok := <-done
		done <- ok
		return ok
	}
}

// Err is the failed transcript write that stops the leg, if there was one.
func (r *Recorder) Err() *sema.Error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// LeaseLost is the error that stops a leg whose session another run took over.
func LeaseLost(cause error) *sema.Error {
	return &sema.Error{Code: session.CodeLeaseLost, Message: "the run stopped: another run took the session over (this one was stalled past its lease); nothing more of this run was recorded, and no further tool ran",
		Err: cause}
}

func (r *Recorder) queueLocked(kind string, payload any) bool {
	if r.err != nil {
		return false
	}
	data, err := json.Marshal(payload)
	if err != nil {
		r.err = (&sema.Error{Code: CodeRecordFailed, Message: "the run stopped: a transcript entry (" + kind + ") could not be stored: " + err.Error(), Err: err}).
			With("kind", kind)
		r.queued = nil
		return false
	}
	// The leg and the claim are stamped when the entries are committed: a new session's
	// leg may not be stored yet, nor its lease taken.
	r.queued = append(r.queued, session.Entry{SessionID: r.leg.SessionID, Kind: kind, Payload: data})
	return true
}

// opened waits for a leg whose session is still being stored (Leg.Opened), once. When it
// could not be, nothing of the leg is ever written.
func (r *Recorder) opened() bool {
	if r.leg.Opened == nil {
		return true
	}
	legID, err := r.leg.Opened()
	r.leg.Opened = nil
	var se *sema.Error
	switch {
	case errors.As(err, &se):
		r.err = se // the store's own refusal (store.locked, io.disk_full, …) says what to do
		return false
	case err != nil:
		r.err = (&sema.Error{Code: CodeRecordFailed, Message: "the run stopped: its new session could not be stored: " + err.Error(), Err: err}).
			With("kind", "session")
		return false
	}
	r.leg.LegID = legID
	return true
}

// stamp sets the leg and the current claim on entries about to be committed.
func (r *Recorder) stamp(es []session.Entry) {
	var claim *session.Claim
	if r.leg.Claim != nil {
		claim = r.leg.Claim()
	}
	for i := range es {
		es[i].LegID, es[i].Claim = r.leg.LegID, claim
	}
}

// flushLocked commits the queued entries, in one transaction when the store can batch
// them (session.BatchAppender), else one Append each in order.
func (r *Recorder) flushLocked(ctx context.Context) ([]string, bool) {
	if r.err != nil || !r.opened() {
		r.queued = nil
		return nil, false
	}
	if len(r.queued) == 0 {
		return nil, true
	}
	es := r.queued
	r.queued = nil
	if cause := context.Cause(ctx); sema.IsCode(cause, session.CodeLeaseLost) {
		// Another run owns the session now; an entry from this leg would interleave
		// with its entries.
		r.err = LeaseLost(cause)
		return nil, false
	}
	es[0].ParentID = r.branchFrom // only the first entry of a branch names its parent
	r.stamp(es)
	ctx = context.WithoutCancel(ctx)
	ids, err := r.appendEntries(ctx, es)
	if sema.IsCode(err, session.CodeLeaseLost) {
		// The store refused the entries for the lease. One that merely expired (the leg
		// stalled, nobody took the session) is renewed and the rest tried once more; one
		// another run took stops the leg, which then writes and runs nothing more.
		if err = r.reclaim(ctx); err == nil {
			var more []string
			r.stamp(es[len(ids):]) // the renewed claim
			more, err = r.appendEntries(ctx, es[len(ids):])
			ids = append(ids, more...)
		}
		if sema.IsCode(err, session.CodeLeaseLost) {
			r.err = LeaseLost(err)
			return ids, false
		}
	}
	if err != nil {
		r.err = (&sema.Error{Code: CodeRecordFailed, Message: "the run stopped: a transcript entry (" + es[len(ids)].Kind + ") could not be stored: " + sema.MessageOf(err), Err: err}).
			With("kind", es[len(ids)].Kind)
		return ids, false
	}
	return ids, true
}

func (r *Recorder) reclaim(ctx context.Context) error {
	if r.leg.Reclaim == nil {
		return session.LeaseLost("", "")
	}
	return r.leg.Reclaim(ctx)
}

// appendEntries commits es, in one transaction when the store can batch them
// (session.BatchAppender), else one Append each in order, and returns the ids of those
// committed: a prefix of es.
func (r *Recorder) appendEntries(ctx context.Context, es []session.Entry) ([]string, error) {
	if b, ok := r.leg.Store.(session.BatchAppender); ok && len(es) > 1 {
		ids, err := b.AppendBatch(ctx, es)
		if err != nil {
			return nil, err
		}
		r.branchFrom = ""
		return ids, nil
	}
	ids := make([]string, 0, len(es))
	for _, e := range es {
		if len(ids) > 0 {
			e.ParentID = "" // the entries after a branch's first follow it
		}
		id, err := r.leg.Store.Append(ctx, e)
		if err != nil {
			return ids, err
		}
		r.branchFrom = ""
		ids = append(ids, id)
	}
	return ids, nil
}
