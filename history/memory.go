package history

import (
	"bytes"
	"context"
	"slices"
	"sync"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/session/storecode"
)

// Memory is a Store held in memory, with the SQLite store's contract; every method holds
// one mutex. The zero value is not usable; call NewMemory.
type Memory struct {
	mu         sync.Mutex
	boundaries map[string][]Boundary // by scope, in mint order
	records    map[string][]Record   // by scope, in ID order
	blobs      map[string]*memBlob
	carried    map[string]bool // scopes a fork was carried into
	lastID     int64           // boundaries and records share one counter, like rowids
	closed     bool
}

type memBlob struct {
	data []byte
	refs int
}

// NewMemory returns an empty in-memory history store.
func NewMemory() *Memory {
	return &Memory{boundaries: map[string][]Boundary{}, records: map[string][]Record{}, blobs: map[string]*memBlob{}, carried: map[string]bool{}}
}

var _ Store = (*Memory)(nil)

func (m *Memory) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return sema.Errorf(storecode.Closed, "the history store was closed")
	}
	return nil
}

func (m *Memory) newest(scope string) Boundary {
	if bs := m.boundaries[scope]; len(bs) > 0 {
		return bs[len(bs)-1]
	}
	return Boundary{Scope: scope}
}

// MintBoundary implements Store.MintBoundary: it adds a boundary for turn (≥ 1) to
// scope and returns it with its ID.
func (m *Memory) MintBoundary(ctx context.Context, scope string, turn int) (Boundary, error) {
	if err := CheckScope(scope); err != nil {
		return Boundary{}, err
	}
	if err := CheckTurn(turn); err != nil {
		return Boundary{}, err
	}
	if err := m.lock(ctx); err != nil {
		return Boundary{}, err
	}
	defer m.mu.Unlock()
	m.lastID++
	b := Boundary{ID: m.lastID, Scope: scope, Turn: turn, Kind: KindTurn, CreatedAt: now()}
	m.boundaries[scope] = append(m.boundaries[scope], b)
	return b, nil
}

// Boundaries implements Store.Boundaries, returning the scope's boundaries in mint
// order; none is not an error.
func (m *Memory) Boundaries(ctx context.Context, scope string) ([]Boundary, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	return slices.Clone(m.boundaries[scope]), nil
}

func (m *Memory) lookup(scope, key string) (Record, bool) {
	b := m.newest(scope)
	for _, r := range slices.Backward(m.records[scope]) {
		if r.Boundary < b.ID {
			break
		}
		if r.Key == key {
			return r, true
		}
	}
	return Record{}, false
}

// Lookup implements Store.Lookup: the record of key at the scope's newest boundary,
// and false when there is none.
func (m *Memory) Lookup(ctx context.Context, scope, key string) (Record, bool, error) {
	if err := m.lock(ctx); err != nil {
		return Record{}, false, err
	}
	defer m.mu.Unlock()
	r, ok := m.lookup(scope, key)
	return r, ok, nil
}

// Insert implements Store.Insert: it stores rec and its content at the scope's newest
// boundary, or returns the record already there for the key and false.
func (m *Memory) Insert(ctx context.Context, rec Record, content []byte) (Record, bool, error) {
	rec, err := PrepareInsert(rec, content)
	if err != nil {
		return Record{}, false, err
	}
	if err := m.lock(ctx); err != nil {
		return Record{}, false, err
	}
	defer m.mu.Unlock()
	if r, ok := m.lookup(rec.Scope, rec.Key); ok {
		return r, false, nil
	}
	b := m.newest(rec.Scope)
	m.lastID++
	rec.ID, rec.Boundary, rec.Turn, rec.CreatedAt = m.lastID, b.ID, b.Turn, now()
	if rec.Existed && !rec.Lost {
		m.ref(rec.Sum, content)
	}
	m.records[rec.Scope] = append(m.records[rec.Scope], rec)
	return rec, true, nil
}

func (m *Memory) ref(s string, content []byte) {
	b, ok := m.blobs[s]
	if !ok {
		b = &memBlob{data: bytes.Clone(content)}
		m.blobs[s] = b
	}
	b.refs++
}

func (m *Memory) unref(s string) {
	if b, ok := m.blobs[s]; ok {
		if b.refs--; b.refs <= 0 {
			delete(m.blobs, s)
		}
	}
}

// PrepareInsert validates rec and fills what Insert derives from the content.
func PrepareInsert(rec Record, content []byte) (Record, error) {
	if err := CheckScope(rec.Scope); err != nil {
		return rec, err
	}
	if err := CheckKey(rec.Key); err != nil {
		return rec, err
	}
	switch {
	case rec.Existed && rec.Lost:
		rec.Sum, rec.Mode = "", rec.Mode&ModeBits
	case rec.Existed:
		rec.Sum, rec.Size, rec.Mode = SumOf(content), int64(len(content)), rec.Mode&ModeBits
	default:
		rec.Sum, rec.Size, rec.Mode, rec.Lost = "", 0, 0, false
	}
	rec.After, rec.Pending = "", "" // only SetAfter and SetPending say what a write left
	return rec, nil
}

// Records implements Store.Records: the scope's records at boundaries with ID ≥ from,
// by boundary, then ID.
func (m *Memory) Records(ctx context.Context, scope string, from int64) ([]Record, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	return m.recordsFrom(scope, from), nil
}

func (m *Memory) recordsFrom(scope string, from int64) []Record {
	var out []Record
	for _, r := range m.records[scope] {
		if r.Boundary >= from {
			out = append(out, r)
		}
	}
	// IDs grow with time and boundaries too, so ID order is (boundary, ID) order except
	// for records carried from a fork, which are appended already in that order.
	slices.SortStableFunc(out, func(a, b Record) int {
		if a.Boundary != b.Boundary {
			return cmpInt(a.Boundary, b.Boundary)
		}
		return cmpInt(a.ID, b.ID)
	})
	return out
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Blob implements Store.Blob; it errs with CodeBlobMissing when the store holds no
// blob under that sum.
func (m *Memory) Blob(ctx context.Context, s string) ([]byte, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	b, ok := m.blobs[s]
	if !ok {
		return nil, BlobMissing(s)
	}
	return bytes.Clone(b.data), nil
}

// blobsOf implements blobsReader under one hold of the lock.
func (m *Memory) blobsOf(ctx context.Context, sums []string) (map[string][]byte, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	out := make(map[string][]byte, len(sums))
	for _, s := range sums {
		if b, ok := m.blobs[s]; ok {
			out[s] = bytes.Clone(b.data)
		}
	}
	return out, nil
}

// Delete implements Store.Delete: it removes the record with id, and its blob when no
// other record uses it; a missing id is not an error.
func (m *Memory) Delete(ctx context.Context, id int64) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	for scope, rs := range m.records {
		if i := slices.IndexFunc(rs, func(r Record) bool { return r.ID == id }); i >= 0 {
			if rs[i].Existed {
				m.unref(rs[i].Sum)
			}
			m.records[scope] = slices.Delete(rs, i, i+1)
			return nil
		}
	}
	return nil
}

// SetAfter implements Store.SetAfter: it sets the After of the record with id (and
// clears its Pending); a missing id is not an error.
func (m *Memory) SetAfter(ctx context.Context, id int64, after string) error {
	return m.setOn(ctx, id, after, func(r *Record) { r.After, r.Pending = after, "" })
}

// SetPending implements Store.SetPending: it sets the Pending of the record with id; a
// missing id is not an error.
func (m *Memory) SetPending(ctx context.Context, id int64, after string) error {
	return m.setOn(ctx, id, after, func(r *Record) { r.Pending = after })
}

// setOn checks after, then applies set to the record with id, if there is one.
func (m *Memory) setOn(ctx context.Context, id int64, after string, set func(*Record)) error {
	if err := CheckAfter(after); err != nil {
		return err
	}
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	for _, rs := range m.records {
		if i := slices.IndexFunc(rs, func(r Record) bool { return r.ID == id }); i >= 0 {
			set(&rs[i])
			return nil
		}
	}
	return nil
}

// MintRewind implements Store.MintRewind: a rewind boundary and the saved states at it,
// all under one hold of the mutex.
func (m *Memory) MintRewind(ctx context.Context, scope string, turn int, saved []Saved) (Boundary, []Record, error) {
	saved, err := PrepareSaved(scope, turn, saved)
	if err != nil {
		return Boundary{}, nil, err
	}
	if err := m.lock(ctx); err != nil {
		return Boundary{}, nil, err
	}
	defer m.mu.Unlock()
	m.lastID++
	b := Boundary{ID: m.lastID, Scope: scope, Turn: turn, Kind: KindRewind, CreatedAt: now()}
	m.boundaries[scope] = append(m.boundaries[scope], b)
	out := make([]Record, len(saved))
	for i, sv := range saved {
		rec := sv.Record
		m.lastID++
		rec.ID, rec.Boundary, rec.Turn, rec.CreatedAt = m.lastID, b.ID, b.Turn, now()
		if rec.Existed {
			m.ref(rec.Sum, sv.Content)
		}
		m.records[scope] = append(m.records[scope], rec)
		out[i] = rec
	}
	return b, out, nil
}

// CarryFork implements Store.CarryFork: it copies from's boundaries and records into
// to once, and returns how many records it copied (0 on a repeat).
func (m *Memory) CarryFork(ctx context.Context, from, to string) (int, error) {
	if err := CheckScope(from); err != nil {
		return 0, err
	}
	if err := CheckScope(to); err != nil {
		return 0, err
	}
	if err := m.lock(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	if m.carried[to] || from == to {
		return 0, nil
	}
	if len(m.boundaries[to]) > 0 || len(m.records[to]) > 0 {
		return 0, CarryConflict(from, to)
	}
	m.carried[to] = true
	ids := map[int64]int64{0: 0}
	for _, b := range m.boundaries[from] {
		m.lastID++
		ids[b.ID] = m.lastID
		b.ID, b.Scope = m.lastID, to
		m.boundaries[to] = append(m.boundaries[to], b)
	}
	src := m.recordsFrom(from, 0)
	for _, r := range src {
		m.lastID++
		r.ID, r.Scope, r.Boundary = m.lastID, to, ids[r.Boundary]
		if r.Existed {
			m.blobs[r.Sum].refs++
		}
		m.records[to] = append(m.records[to], r)
	}
	return len(src), nil
}

// Forget implements Store.Forget: it drops scope's boundaries and records, the blobs
// no other record uses, and the note that a fork was carried into scope.
func (m *Memory) Forget(ctx context.Context, scope string) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	for _, r := range m.records[scope] {
		if r.Existed {
			m.unref(r.Sum)
		}
	}
	delete(m.records, scope)
	delete(m.boundaries, scope)
	delete(m.carried, scope)
	return nil
}

// Close makes every later call fail.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}
