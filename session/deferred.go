package session

import (
	"context"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/internal/later"
)

// Deferred is a Store that is still being opened: open runs once, on its own goroutine,
// as soon as Deferred is called, and every method waits for it, then calls the store it
// opened — or fails with open's error. It lets a host hand a runner its store before the
// store is ready: a runner's new session touches its store only beside the leg's first
// request (see agent's TaskSpec.SessionID), so the store opens beside everything the leg
// prepares first. The store open returns must be a BatchAppender and an Opener (the
// SQLite, memory and PostgreSQL stores are); Deferred is both. Close waits for the
// opening and closes nothing: the store belongs to whoever open gave it to.
func Deferred(open func() (Store, error)) Store {
	return &deferred{later.Start(func() (Store, error) {
		s, err := open()
		if err == nil {
			err = full(s)
		}
		return s, err
	})}
}

// deferred is the Store Deferred returns.
type deferred struct {
	opening *later.Value[Store]
}

// full refuses a store without the batch and the opening a deferred store offers.
func full(s Store) error {
	_, batch := s.(BatchAppender)
	_, opener := s.(Opener)
	if !batch || !opener {
		return sema.Errorf(CodeDeferUnsupported, "the session store %T cannot be deferred: it does not both commit a batch of entries and open a session in one transaction (session.BatchAppender, session.Opener); hand it to the runner once it is open", s)
	}
	return nil
}

func (d *deferred) store() (Store, error) { return d.opening.Wait() }

func (d *deferred) Create(ctx context.Context, s Session) (Session, error) {
	st, err := d.store()
	if err != nil {
		return Session{}, err
	}
	return st.Create(ctx, s)
}

func (d *deferred) CreateLeased(ctx context.Context, s Session, holder string, ttl time.Duration) (Session, Leg, error) {
	st, err := d.store()
	if err != nil {
		return Session{}, Leg{}, err
	}
	return st.(Opener).CreateLeased(ctx, s, holder, ttl)
}

func (d *deferred) Get(ctx context.Context, id string) (Session, error) {
	st, err := d.store()
	if err != nil {
		return Session{}, err
	}
	return st.Get(ctx, id)
}

func (d *deferred) Update(ctx context.Context, id string, fn func(*Session) error) (Session, error) {
	st, err := d.store()
	if err != nil {
		return Session{}, err
	}
	return st.Update(ctx, id, fn)
}

func (d *deferred) Fork(ctx context.Context, id, atEntry string) (Session, error) {
	st, err := d.store()
	if err != nil {
		return Session{}, err
	}
	return st.Fork(ctx, id, atEntry)
}

func (d *deferred) StartLeg(ctx context.Context, sessionID string) (Leg, error) {
	st, err := d.store()
	if err != nil {
		return Leg{}, err
	}
	return st.StartLeg(ctx, sessionID)
}

func (d *deferred) EndLeg(ctx context.Context, legID string, status sema.Status) (Leg, error) {
	st, err := d.store()
	if err != nil {
		return Leg{}, err
	}
	return st.EndLeg(ctx, legID, status)
}

func (d *deferred) Legs(ctx context.Context, sessionID string) ([]Leg, error) {
	st, err := d.store()
	if err != nil {
		return nil, err
	}
	return st.Legs(ctx, sessionID)
}

func (d *deferred) Append(ctx context.Context, e Entry) (string, error) {
	st, err := d.store()
	if err != nil {
		return "", err
	}
	return st.Append(ctx, e)
}

func (d *deferred) AppendBatch(ctx context.Context, es []Entry) ([]string, error) {
	st, err := d.store()
	if err != nil {
		return nil, err
	}
	return st.(BatchAppender).AppendBatch(ctx, es)
}

func (d *deferred) Transcript(ctx context.Context, sessionID, head string) ([]Entry, error) {
	st, err := d.store()
	if err != nil {
		return nil, err
	}
	return st.Transcript(ctx, sessionID, head)
}

func (d *deferred) Park(ctx context.Context, c Checkpoint) (Checkpoint, error) {
	st, err := d.store()
	if err != nil {
		return Checkpoint{}, err
	}
	return st.Park(ctx, c)
}

func (d *deferred) Checkpoint(ctx context.Context, id string) (Checkpoint, error) {
	st, err := d.store()
	if err != nil {
		return Checkpoint{}, err
	}
	return st.Checkpoint(ctx, id)
}

func (d *deferred) ClaimCheckpoint(ctx context.Context, id string, dec Decision) (Checkpoint, error) {
	st, err := d.store()
	if err != nil {
		return Checkpoint{}, err
	}
	return st.ClaimCheckpoint(ctx, id, dec)
}

func (d *deferred) AcquireLease(ctx context.Context, sessionID, holder string, ttl time.Duration) (Lease, error) {
	st, err := d.store()
	if err != nil {
		return Lease{}, err
	}
	return st.AcquireLease(ctx, sessionID, holder, ttl)
}

func (d *deferred) RenewLease(ctx context.Context, sessionID, holder string, ttl time.Duration) (Lease, error) {
	st, err := d.store()
	if err != nil {
		return Lease{}, err
	}
	return st.RenewLease(ctx, sessionID, holder, ttl)
}

func (d *deferred) ReleaseLease(ctx context.Context, sessionID, holder string) error {
	st, err := d.store()
	if err != nil {
		return err
	}
	return st.ReleaseLease(ctx, sessionID, holder)
}

// Close waits for the opening; the opened store is its owner's to close.
func (d *deferred) Close() error {
	d.opening.Wait()
	return nil
}

var (
	_ BatchAppender = (*deferred)(nil)
	_ Opener        = (*deferred)(nil)
)
