// Package boundary mints a history scope's turn boundaries lazily: a turn mints its
// boundary just before its first change of a file (Ensure), so a turn that only reads
// mints none. A turn's transcript entry records how many boundaries the scope held when
// it started (Begin): the boundaries after that many are the turn's own and its
// successors', whether the turn minted one or not, which is what a rewind to the turn
// needs (see rewindpoint). Nothing else mints in the scope while a leg runs: the lease
// keeps other legs and rewinds out, and a delegated child recording into the scope asks
// its root leg's Minter.
package boundary

import (
	"context"
	"sync"

	"github.com/sema-agent/sema/history"
)

// Scope is the history scope a Minter mints in, and the leg's part in minting.
type Scope struct {
	History history.Store
	Scope   string
	// Unsynced reports whether background commands may have changed files since their
	// changes were last recorded: a turn then mints its boundary at once, so what they
	// change during it belongs to it.
	Unsynced func() bool
	// BeforeMint runs just before a boundary is minted: what background commands changed
	// so far is recorded for the turn that ends.
	BeforeMint func(ctx context.Context)
	// Failed reports a boundary of turn that could not be stored.
	Failed func(turn int, err error)
}

// Minter is where a leg stands in its scope's boundaries. Its zero value is ready.
type Minter struct {
	mu sync.Mutex
	// turn is the turn whose boundary the next change of a file needs (0: none).
	turn int
	// minted: that turn has its boundary already.
	minted bool
	// count is how many boundaries the scope holds; known is false until it was read.
	count int
	known bool
}

// Fresh tells the minter its scope is new — the scope of a session the leg has just
// named — so it holds no boundaries, and Begin need not ask the store (which may still
// be opening: session.Deferred).
func (m *Minter) Fresh() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.count, m.known = 0, true
}

// Begin starts turn and returns how many boundaries the scope holds (nil when that could
// not be read: a rewind then finds the turn's boundary by its number). The boundary
// itself waits for the turn's first change of a file, unless s.Unsynced.
func (m *Minter) Begin(ctx context.Context, s Scope, turn int) *int {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.countLocked(ctx, s)
	m.turn, m.minted = turn, false
	var at *int
	if m.known {
		n := m.count
		at = &n
	}
	if s.Unsynced() {
		m.mintLocked(ctx, s)
	}
	return at
}

// ResumeParked lets the changes of a parked turn's calls, which a resumed leg runs, land
// at that turn's boundary: the one it minted before it parked, or one minted now at the
// first change if it had none. at is the count the turn's entry recorded, when counted.
func (m *Minter) ResumeParked(ctx context.Context, s Scope, turn, at int, counted bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	bs := m.countLocked(ctx, s)
	m.turn, m.minted = turn, true
	if counted && m.known {
		// The boundary after the turn's count is its own if it is that turn's.
		m.minted = at < len(bs) && bs[at].Kind == history.KindTurn && bs[at].Turn == turn
	}
}

// Turn is the turn the scope's records land in now.
func (m *Minter) Turn() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.turn
}

// Ensure mints the current turn's boundary if the turn has none yet. It runs before
// every first-touch record, so the record lands at the turn's boundary, and returns the
// mint's error when the turn still has none: a record made then would land at an earlier
// turn's boundary, and a rewind to this turn would not find what the turn changed. A
// later Ensure of the same turn tries the mint again.
func (m *Minter) Ensure(ctx context.Context, s Scope) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.turn == 0 || m.minted {
		return nil
	}
	return m.mintLocked(ctx, s)
}

// countLocked reads, once, how many boundaries the scope holds, and returns them when it
// read them.
func (m *Minter) countLocked(ctx context.Context, s Scope) []history.Boundary {
	if m.known {
		return nil
	}
	bs, err := s.History.Boundaries(ctx, s.Scope)
	if err != nil {
		return nil
	}
	m.count, m.known = len(bs), true
	return bs
}

func (m *Minter) mintLocked(ctx context.Context, s Scope) error {
	s.BeforeMint(ctx)
	if _, err := s.History.MintBoundary(context.WithoutCancel(ctx), s.Scope, m.turn); err != nil {
		s.Failed(m.turn, err)
		return err
	}
	m.minted = true
	m.count++
	return nil
}
