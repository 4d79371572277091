package boundary

import (
	"context"
	"errors"
	"testing"

	"github.com/sema-agent/sema/history"
)

// store counts the reads of the scope's boundaries and can refuse mints.
type store struct {
	*history.Memory
	reads  int
	refuse error
}

func (s *store) Boundaries(ctx context.Context, scope string) ([]history.Boundary, error) {
	s.reads++
	return s.Memory.Boundaries(ctx, scope)
}

func (s *store) MintBoundary(ctx context.Context, scope string, turn int) (history.Boundary, error) {
	if s.refuse != nil {
		return history.Boundary{}, s.refuse
	}
	return s.Memory.MintBoundary(ctx, scope, turn)
}

type fixture struct {
	st       *store
	unsynced bool
	before   int
	failed   []int
}

func (f *fixture) scope() Scope {
	return Scope{History: f.st, Scope: "S", Unsynced: func() bool { return f.unsynced },
		BeforeMint: func(context.Context) { f.before++ },
		Failed:     func(turn int, _ error) { f.failed = append(f.failed, turn) }}
}

func (f *fixture) boundaries(t *testing.T) []history.Boundary {
	t.Helper()
	bs, err := f.st.Memory.Boundaries(context.Background(), "S")
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

// A turn that only reads mints nothing; a turn's first change mints its boundary once;
// each turn records how many boundaries the scope held when it started.
func TestLazyMint(t *testing.T) {
	ctx := context.Background()
	f := &fixture{st: &store{Memory: history.NewMemory()}}
	var m Minter
	if at := m.Begin(ctx, f.scope(), 1); at == nil || *at != 0 {
		t.Fatalf("turn 1 starts at %v", at)
	}
	if at := m.Begin(ctx, f.scope(), 2); at == nil || *at != 0 || len(f.boundaries(t)) != 0 {
		t.Fatalf("a reading turn minted, or turn 2 starts at %v", at)
	}
	m.Ensure(ctx, f.scope())
	m.Ensure(ctx, f.scope())
	if bs := f.boundaries(t); len(bs) != 1 || bs[0].Turn != 2 || f.before != 1 {
		t.Fatalf("boundaries %v, %d mints", bs, f.before)
	}
	if at := m.Begin(ctx, f.scope(), 3); at == nil || *at != 1 || m.Turn() != 3 {
		t.Errorf("turn 3 starts at %v (turn %d)", at, m.Turn())
	}
	if f.st.reads != 1 {
		t.Errorf("the scope's boundaries were read %d times, want once", f.st.reads)
	}
}

// Background commands that may have changed files make a turn mint at once.
func TestUnsyncedMintsAtOnce(t *testing.T) {
	ctx := context.Background()
	f := &fixture{st: &store{Memory: history.NewMemory()}, unsynced: true}
	var m Minter
	m.Begin(ctx, f.scope(), 1)
	if len(f.boundaries(t)) != 1 || f.before != 1 {
		t.Errorf("an unsynced turn minted %d boundaries", len(f.boundaries(t)))
	}
}

// A boundary that cannot be stored is the turn's error at each first change, and tried
// again at the next: a record made without it would land at an earlier turn's boundary.
// Once one is stored, the turn has it and the next turn counts it.
func TestMintFailure(t *testing.T) {
	ctx := context.Background()
	f := &fixture{st: &store{Memory: history.NewMemory(), refuse: errors.New("down")}}
	var m Minter
	m.Begin(ctx, f.scope(), 4)
	for i := range 2 {
		if err := m.Ensure(ctx, f.scope()); err == nil {
			t.Fatalf("Ensure %d: no error for a boundary that was not stored", i+1)
		}
	}
	if len(f.failed) != 2 || f.failed[0] != 4 || f.failed[1] != 4 {
		t.Errorf("failures %v, want turn 4 tried at each change", f.failed)
	}
	f.st.refuse = nil
	if err := m.Ensure(ctx, f.scope()); err != nil {
		t.Fatalf("Ensure once the store takes it: %v", err)
	}
	if err := m.Ensure(ctx, f.scope()); err != nil || len(f.boundaries(t)) != 1 {
		t.Errorf("the turn minted %d boundaries (%v), want one", len(f.boundaries(t)), err)
	}
	if at := m.Begin(ctx, f.scope(), 5); at == nil || *at != 1 {
		t.Errorf("turn 5 starts at %v, want after turn 4's boundary", at)
	}
}

// A resumed parked turn keeps the boundary it minted before it parked, or mints one at
// its first change when it had none.
func TestResumeParked(t *testing.T) {
	ctx := context.Background()
	mem := history.NewMemory()
	if _, err := mem.MintBoundary(ctx, "S", 1); err != nil {
		t.Fatal(err)
	}
	f := &fixture{st: &store{Memory: mem}}
	var m Minter
	m.ResumeParked(ctx, f.scope(), 1, 0, true)
	m.Ensure(ctx, f.scope())
	if len(f.boundaries(t)) != 1 || m.Turn() != 1 {
		t.Fatalf("a parked turn with its boundary minted another: %v", f.boundaries(t))
	}
	var n Minter
	n.ResumeParked(ctx, f.scope(), 2, 1, true)
	n.Ensure(ctx, f.scope())
	if bs := f.boundaries(t); len(bs) != 2 || bs[1].Turn != 2 {
		t.Fatalf("a parked turn without its boundary: %v", bs)
	}
	var o Minter
	o.ResumeParked(ctx, f.scope(), 3, 0, false) // no count recorded: taken as minted
	o.Ensure(ctx, f.scope())
	if len(f.boundaries(t)) != 2 {
		t.Errorf("a parked turn without a count minted: %v", f.boundaries(t))
	}
}
