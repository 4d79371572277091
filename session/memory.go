package session

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/sema-agent/sema"
)

// Memory is a Store held in memory: the same contract as the SQLite store, gone with the
// process. Every method holds one mutex, so each is atomic. The zero value is not
// usable; call NewMemory.
type Memory struct {
	mu          sync.Mutex
	sessions    map[string]*memSession
	legs        map[string]*Leg
	checkpoints map[string]*Checkpoint
	order       int64 // creation counter, the tie-break of equal UpdatedAt
	closed      bool
}

type memSession struct {
	s       Session
	order   int64
	entries []Entry // in Seq order
	byID    map[string]int
	legs    []string // leg ids in number order
	cps     []string // checkpoint ids in park order
	// leaseHolder holds the writer's lease until leaseExpires ("" = free).
	leaseHolder  string
	leaseExpires time.Time
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{sessions: map[string]*memSession{}, legs: map[string]*Leg{}, checkpoints: map[string]*Checkpoint{}}
}

var _ Store = (*Memory)(nil)

// locked runs fn with the store's mutex held, after refusing a cancelled context or a
// closed store: the prologue every method shares, so each method is atomic.
func locked[T any](ctx context.Context, m *Memory, fn func() (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return zero, sema.Errorf(CodeClosed, "the session store was closed")
	}
	return fn()
}

// inSession runs fn on the session with the given id, as locked does, refusing an
// unknown id with NotFound.
func inSession[T any](ctx context.Context, m *Memory, id string, fn func(*memSession) (T, error)) (T, error) {
	return locked(ctx, m, func() (T, error) {
		ms, ok := m.sessions[id]
		if !ok {
			var zero T
			return zero, NotFound(id)
		}
		return fn(ms)
	})
}

// touch moves UpdatedAt forward; it never goes back, so "most recently updated" follows
// the order of the changes even on a coarse clock.
func touch(ms *memSession) {
	t := now()
	if !t.After(ms.s.UpdatedAt) {
		t = ms.s.UpdatedAt.Add(time.Nanosecond)
	}
	ms.s.UpdatedAt = t
}

// Create stores a new session, minting its id when none is given (see [Store.Create]).
func (m *Memory) Create(ctx context.Context, s Session) (Session, error) {
	return locked(ctx, m, func() (Session, error) {
		s, err := CheckCreate(s, now())
		if err != nil {
			return Session{}, err
		}
		if _, ok := m.sessions[s.ID]; ok {
			return Session{}, Exists(s.ID)
		}
		m.order++
		m.sessions[s.ID] = &memSession{s: s, order: m.order, byID: map[string]int{}}
		return s, nil
	})
}

// CreateLeased stores a new session held by holder, with its first leg running (see
// [Opener]).
func (m *Memory) CreateLeased(ctx context.Context, s Session, holder string, ttl time.Duration) (Session, Leg, error) {
	type opened struct {
		s Session
		l Leg
	}
	o, err := locked(ctx, m, func() (opened, error) {
		s, err := CheckCreate(s, now())
		if err != nil {
			return opened{}, err
		}
		if err := CheckLease(s.ID, holder, ttl, true); err != nil {
			return opened{}, err
		}
		if _, ok := m.sessions[s.ID]; ok {
			return opened{}, Exists(s.ID)
		}
		m.order++
		ms := &memSession{s: s, order: m.order, byID: map[string]int{}, leaseHolder: holder, leaseExpires: now().Add(ttl)}
		m.sessions[s.ID] = ms
		l := &Leg{ID: NewID(), SessionID: s.ID, Number: 1, StartedAt: now(), Status: sema.StatusRunning}
		m.legs[l.ID] = l
		ms.legs = append(ms.legs, l.ID)
		touch(ms)
		return opened{ms.s, *l}, nil
	})
	return o.s, o.l, err
}

// Get returns the session with the given id (see [Store.Get]).
func (m *Memory) Get(ctx context.Context, id string) (Session, error) {
	return inSession(ctx, m, id, func(ms *memSession) (Session, error) {
		return ms.s, nil
	})
}

// Update changes the session's Model, Mode, EffectiveMode, PrePlanMode and Title through fn, atomically
// (see [Store.Update]).
func (m *Memory) Update(ctx context.Context, id string, fn func(*Session) error) (Session, error) {
	return inSession(ctx, m, id, func(ms *memSession) (Session, error) {
		s, err := ApplyUpdate(ms.s, fn, ms.s.UpdatedAt)
		if err != nil {
			return Session{}, err
		}
		ms.s = s
		touch(ms)
		return ms.s, nil
	})
}

// List returns the sessions f selects, most recently updated first (see [Store.List]).
func (m *Memory) List(ctx context.Context, f Filter) ([]Session, error) {
	return locked(ctx, m, func() ([]Session, error) {
		var all []*memSession
		for _, ms := range m.sessions {
			if (f.Root == "" || ms.s.Root == f.Root) && (!f.RootsOnly || ms.s.ParentID == "") {
				all = append(all, ms)
			}
		}
		slices.SortFunc(all, func(a, b *memSession) int {
			if c := b.s.UpdatedAt.Compare(a.s.UpdatedAt); c != 0 {
				return c
			}
			return int(b.order - a.order)
		})
		if f.Limit > 0 && len(all) > f.Limit {
			all = all[:f.Limit]
		}
		out := make([]Session, len(all))
		for i, ms := range all {
			out[i] = ms.s
		}
		return out, nil
	})
}

// Newest returns the most recently updated root session at root (see [Store.Newest]).
func (m *Memory) Newest(ctx context.Context, root string) (Session, error) {
	l, err := m.List(ctx, Filter{Root: root, RootsOnly: true, Limit: 1})
	if err != nil {
		return Session{}, err
	}
	if len(l) == 0 {
		return Session{}, NoSessionAt(root)
	}
	return l[0], nil
}

// NoSessionAt is Latest's refusal when no session was started in root.
func NoSessionAt(root string) error {
	return sema.Errorf(CodeNotFound, "no session was started in %s; start a new one", root).With("root", root)
}

// Fork copies the session's chain ending at atEntry ("" = the head) into a new session
// (see [Store.Fork]).
func (m *Memory) Fork(ctx context.Context, id, atEntry string) (Session, error) {
	return inSession(ctx, m, id, func(src *memSession) (Session, error) {
		chain, err := src.chain(atEntry)
		if err != nil {
			return Session{}, err
		}
		t := now()
		f := src.s
		f.ID, f.ForkOf, f.ForkAt, f.Head = NewID(), id, "", ""
		f.CreatedAt, f.UpdatedAt = t, t
		if len(chain) > 0 {
			f.ForkAt = chain[len(chain)-1].ID
		}
		m.order++
		dst := &memSession{s: f, order: m.order, byID: map[string]int{}}
		legMap := map[string]string{}
		for _, e := range chain {
			if e.LegID != "" && legMap[e.LegID] == "" {
				l := *m.legs[e.LegID]
				l.ID, l.SessionID = NewID(), f.ID
				legMap[e.LegID] = l.ID
				m.legs[l.ID] = &l
				dst.legs = append(dst.legs, l.ID)
			}
		}
		slices.SortFunc(dst.legs, func(a, b string) int { return m.legs[a].Number - m.legs[b].Number })
		idMap := map[string]string{}
		for i, e := range chain {
			e.ID, e.SessionID, e.Seq = NewID(), f.ID, int64(i+1)
			idMap[chain[i].ID] = e.ID
			e.ParentID = idMap[e.ParentID]
			e.LegID = legMap[e.LegID]
			e.Payload = bytes.Clone(e.Payload)
			dst.byID[e.ID] = len(dst.entries)
			dst.entries = append(dst.entries, e)
			dst.s.Head = e.ID
		}
		m.sessions[f.ID] = dst
		return dst.s, nil
	})
}

// Prune deletes the sessions last updated before olderThan, with their legs, entries and
// checkpoints, and returns their ids sorted (see [Store.Prune]).
func (m *Memory) Prune(ctx context.Context, olderThan time.Time) ([]string, error) {
	return locked(ctx, m, func() ([]string, error) {
		var pruned []string
		for id, ms := range m.sessions {
			if !ms.s.UpdatedAt.Before(olderThan) {
				continue
			}
			for _, l := range ms.legs {
				delete(m.legs, l)
			}
			for _, c := range ms.cps {
				delete(m.checkpoints, c)
			}
			delete(m.sessions, id)
			pruned = append(pruned, id)
		}
		slices.Sort(pruned)
		return pruned, nil
	})
}

// StartLeg opens the session's next leg, running (see [Store.StartLeg]).
func (m *Memory) StartLeg(ctx context.Context, sessionID string) (Leg, error) {
	return inSession(ctx, m, sessionID, func(ms *memSession) (Leg, error) {
		n := 1
		if len(ms.legs) > 0 {
			n = m.legs[ms.legs[len(ms.legs)-1]].Number + 1
		}
		l := &Leg{ID: NewID(), SessionID: sessionID, Number: n, StartedAt: now(), Status: sema.StatusRunning}
		m.legs[l.ID] = l
		ms.legs = append(ms.legs, l.ID)
		touch(ms)
		return *l, nil
	})
}

// EndLeg closes a running leg with its final status (see [Store.EndLeg]).
func (m *Memory) EndLeg(ctx context.Context, legID string, status sema.Status) (Leg, error) {
	return locked(ctx, m, func() (Leg, error) {
		l, ok := m.legs[legID]
		if !ok {
			return Leg{}, LegNotFound("", legID)
		}
		if err := checkLegEnd(*l, status); err != nil {
			return Leg{}, err
		}
		l.EndedAt, l.Status = now(), status
		touch(m.sessions[l.SessionID])
		return *l, nil
	})
}

// Legs lists the session's legs in number order (see [Store.Legs]).
func (m *Memory) Legs(ctx context.Context, sessionID string) ([]Leg, error) {
	return inSession(ctx, m, sessionID, func(ms *memSession) ([]Leg, error) {
		out := make([]Leg, len(ms.legs))
		for i, id := range ms.legs {
			out[i] = *m.legs[id]
		}
		return out, nil
	})
}

// Append commits one transcript entry and returns its id (see [Store.Append]).
func (m *Memory) Append(ctx context.Context, e Entry) (string, error) {
	ids, err := m.AppendBatch(ctx, []Entry{e})
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

var _ BatchAppender = (*Memory)(nil)

// AppendBatch commits the entries in order, all or none, and returns their ids (see
// [BatchAppender]).
func (m *Memory) AppendBatch(ctx context.Context, es []Entry) ([]string, error) {
	payloads, err := CheckBatch(es)
	if err != nil || len(es) == 0 {
		return nil, err
	}
	return inSession(ctx, m, es[0].SessionID, func(ms *memSession) ([]string, error) {
		if err := m.checkClaim(es[0].Claim); err != nil {
			return nil, err
		}
		// Everything is checked before anything is stored: a batch is all or none.
		for _, e := range es {
			if e.LegID != "" {
				if l, ok := m.legs[e.LegID]; !ok || l.SessionID != e.SessionID {
					return nil, LegNotFound(e.SessionID, e.LegID)
				}
			}
			if e.ParentID == "" {
				continue
			}
			if _, ok := ms.byID[e.ParentID]; !ok {
				return nil, EntryNotFound(e.SessionID, e.ParentID)
			}
		}
		ids := make([]string, len(es))
		for i, e := range es {
			if e.ParentID == "" {
				e.ParentID = ms.s.Head
			}
			e.ID, e.Seq, e.CreatedAt, e.Payload, e.Claim = NewID(), int64(len(ms.entries)+1), now(), payloads[i], nil
			ms.byID[e.ID] = len(ms.entries)
			ms.entries = append(ms.entries, e)
			ms.s.Head = e.ID
			ids[i] = e.ID
		}
		touch(ms)
		return ids, nil
	})
}

// chain returns the entries from the root to head ("" = the session's head).
func (ms *memSession) chain(head string) ([]Entry, error) {
	if head == "" {
		head = ms.s.Head
		if head == "" {
			return nil, nil
		}
	}
	i, ok := ms.byID[head]
	if !ok {
		return nil, EntryNotFound(ms.s.ID, head)
	}
	var rev []Entry
	for {
		e := ms.entries[i]
		e.Payload = bytes.Clone(e.Payload)
		rev = append(rev, e)
		if e.ParentID == "" {
			break
		}
		i = ms.byID[e.ParentID]
	}
	slices.Reverse(rev)
	return rev, nil
}

// Transcript returns the chain of entries from the root to head ("" = the session's
// head; see [Store.Transcript]).
func (m *Memory) Transcript(ctx context.Context, sessionID, head string) ([]Entry, error) {
	return inSession(ctx, m, sessionID, func(ms *memSession) ([]Entry, error) {
		return ms.chain(head)
	})
}

// Park stores a pending tool call with its canonical arguments and their sha256 (see
// [Store.Park]).
func (m *Memory) Park(ctx context.Context, c Checkpoint) (Checkpoint, error) {
	if err := CheckClaim(c.Claim); err != nil {
		return Checkpoint{}, err
	}
	return inSession(ctx, m, c.SessionID, func(ms *memSession) (Checkpoint, error) {
		if err := m.checkClaim(c.Claim); err != nil {
			return Checkpoint{}, err
		}
		if c.LegID != "" {
			if l, ok := m.legs[c.LegID]; !ok || l.SessionID != c.SessionID {
				return Checkpoint{}, LegNotFound(c.SessionID, c.LegID)
			}
		}
		parked, err := CheckPark(c, now())
		if err != nil {
			return Checkpoint{}, err
		}
		parked.Claim = nil
		m.checkpoints[parked.ID] = &parked
		ms.cps = append(ms.cps, parked.ID)
		touch(ms)
		return copyCheckpoint(parked), nil
	})
}

// checkClaim refuses a write whose claim's lease is not live (see Claim); m.mu is held,
// so the lease cannot change before the write is stored.
func (m *Memory) checkClaim(c *Claim) error {
	if c == nil {
		return nil
	}
	ls, ok := m.sessions[c.SessionID]
	if !ok || ls.leaseHolder != c.Holder || !now().Before(ls.leaseExpires) {
		return ClaimLost(*c)
	}
	return nil
}

func copyCheckpoint(c Checkpoint) Checkpoint {
	c.Args = bytes.Clone(c.Args)
	if c.Decision != nil {
		d := *c.Decision
		d.Args = bytes.Clone(d.Args)
		c.Decision = &d
	}
	return c
}

// Checkpoint returns the checkpoint with the given id (see [Store.Checkpoint]).
func (m *Memory) Checkpoint(ctx context.Context, id string) (Checkpoint, error) {
	return locked(ctx, m, func() (Checkpoint, error) {
		c, ok := m.checkpoints[id]
		if !ok {
			return Checkpoint{}, CheckpointNotFound(id)
		}
		return copyCheckpoint(*c), nil
	})
}

// Checkpoints lists the session's checkpoints, oldest first, claimed ones included (see
// [Store.Checkpoints]).
func (m *Memory) Checkpoints(ctx context.Context, sessionID string) ([]Checkpoint, error) {
	return inSession(ctx, m, sessionID, func(ms *memSession) ([]Checkpoint, error) {
		out := make([]Checkpoint, len(ms.cps))
		for i, id := range ms.cps {
			out[i] = copyCheckpoint(*m.checkpoints[id])
		}
		return out, nil
	})
}

// ClaimCheckpoint records d as the checkpoint's answer, at most once (see
// [Store.ClaimCheckpoint]).
func (m *Memory) ClaimCheckpoint(ctx context.Context, id string, d Decision) (Checkpoint, error) {
	d, err := CheckDecision(d)
	if err != nil {
		return Checkpoint{}, err
	}
	return locked(ctx, m, func() (Checkpoint, error) {
		c, ok := m.checkpoints[id]
		if !ok {
			return Checkpoint{}, CheckpointNotFound(id)
		}
		if c.Decision != nil {
			return Checkpoint{}, AlreadyClaimed(*c)
		}
		c.ClaimedAt, c.Decision = now(), &d
		touch(m.sessions[c.SessionID])
		return copyCheckpoint(*c), nil
	})
}

// Close makes every later call fail with CodeClosed; the contents are dropped with the
// store.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}

// AcquireLease makes holder the session's writer until ttl from now, unless another
// holder's lease runs (see [Store.AcquireLease]).
func (m *Memory) AcquireLease(ctx context.Context, sessionID, holder string, ttl time.Duration) (Lease, error) {
	return m.lease(ctx, sessionID, holder, ttl, false)
}

// RenewLease moves holder's lease on ttl from now (see [Store.RenewLease]).
func (m *Memory) RenewLease(ctx context.Context, sessionID, holder string, ttl time.Duration) (Lease, error) {
	return m.lease(ctx, sessionID, holder, ttl, true)
}

func (m *Memory) lease(ctx context.Context, sessionID, holder string, ttl time.Duration, renew bool) (Lease, error) {
	if err := CheckLease(sessionID, holder, ttl, true); err != nil {
		return Lease{}, err
	}
	return inSession(ctx, m, sessionID, func(ms *memSession) (Lease, error) {
		t := now()
		free := ms.leaseHolder == "" || !t.Before(ms.leaseExpires)
		switch {
		case renew && ms.leaseHolder != holder:
			return Lease{}, LeaseLost(sessionID, holder)
		case !renew && ms.leaseHolder != holder && !free:
			return Lease{}, Busy(sessionID, ms.leaseHolder, ms.leaseExpires)
		}
		ms.leaseHolder, ms.leaseExpires = holder, t.Add(ttl)
		return Lease{SessionID: sessionID, Holder: holder, ExpiresAt: ms.leaseExpires}, nil
	})
}

// ReleaseLease frees the session when holder holds its lease (see [Store.ReleaseLease]).
func (m *Memory) ReleaseLease(ctx context.Context, sessionID, holder string) error {
	if err := CheckLease(sessionID, holder, 0, false); err != nil {
		return err
	}
	_, err := inSession(ctx, m, sessionID, func(ms *memSession) (struct{}, error) {
		if ms.leaseHolder == holder {
			ms.leaseHolder, ms.leaseExpires = "", time.Time{}
		}
		return struct{}{}, nil
	})
	return err
}
