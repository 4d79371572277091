// Package historytest is the conformance suite of history.Store. A store is done when
//
//	historytest.Run(t, func(t *testing.T) history.Store { return newStore(t) })
//
// passes. newStore must return an empty store that lives until t ends (register its
// Close with t.Cleanup); each subtest gets its own, and subtests run in parallel.
//
// The suite checks what the Store interface's method docs promise and what history.Files
// and its rewind rely on, through the interface only: boundaries in mint order, one
// first-touch record per (scope, boundary, key), records ordered for the rewind ledger,
// blobs shared by sum and kept while a record uses them, the one-time fork carry, Forget,
// refusals that change nothing, writers racing on one key, after-images (SetAfter) and
// rewind boundaries minted with their saved states in one step (MintRewind). How a store keeps its
// blobs (one row per sum, say) is not visible through the interface; a store's own tests
// check that.
package historytest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/history"
)

// Run runs every conformance test against stores made by newStore.
func Run(t *testing.T, newStore func(t *testing.T) history.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s history.Store)
	}{
		{"MintBoundary", testMintBoundary},
		{"BoundaryRefusals", testBoundaryRefusals},
		{"InsertLookup", testInsertLookup},
		{"InsertFields", testInsertFields},
		{"InsertRefusals", testInsertRefusals},
		{"RecordsOrder", testRecordsOrder},
		{"BlobSharedAndDropped", testBlobSharedAndDropped},
		{"CarryFork", testCarryFork},
		{"CarryForkRefusals", testCarryForkRefusals},
		{"Forget", testForget},
		{"ConcurrentInsert", testConcurrentInsert},
		{"ConcurrentMint", testConcurrentMint},
		{"CancelledContext", testCancelledContext},
		{"SetAfter", testSetAfter},
		{"SetPending", testSetPending},
		{"MintRewind", testMintRewind},
		{"MintRewindRefusals", testMintRewindRefusals},
		{"CarryForkKeepsKindAndAfter", testCarryForkKeepsKindAndAfter},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

// must(f())(t) fails t when f failed and returns f's value.
func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if !sema.IsCode(err, code) {
		t.Fatalf("error = %v, want code %s", err, code)
	}
	var se *sema.Error
	if errors.As(err, &se) && se.Message == "" {
		t.Fatalf("%s error has no message", code)
	}
}

// sum is the lowercase hex sha256 the store must compute for a pre-image.
func sum(b string) string {
	s := sha256.Sum256([]byte(b))
	return hex.EncodeToString(s[:])
}

// insert records key's pre-image content (absent when content is nil) in scope.
func insert(t *testing.T, s history.Store, scope, key string, content []byte) (history.Record, bool) {
	t.Helper()
	rec := history.Record{Scope: scope, Key: key, Existed: content != nil, Mode: 0o644}
	got, minted, err := s.Insert(t.Context(), rec, content)
	check(t, err)
	return got, minted
}

func keys(rs []history.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Key
	}
	return out
}

func turns(bs []history.Boundary) []int {
	out := make([]int, len(bs))
	for i, b := range bs {
		out[i] = b.Turn
	}
	return out
}

// MintBoundary: a later mint has a larger ID across the whole store; re-minting a turn
// adds a boundary; Boundaries lists one scope's boundaries in mint order.
func testMintBoundary(t *testing.T, s history.Store) {
	ctx := t.Context()
	if bs := must(s.Boundaries(ctx, "S"))(t); len(bs) != 0 {
		t.Fatalf("a new store has boundaries %+v", bs)
	}
	b1 := must(s.MintBoundary(ctx, "S", 1))(t)
	other := must(s.MintBoundary(ctx, "T", 1))(t)
	b2 := must(s.MintBoundary(ctx, "S", 2))(t)
	again := must(s.MintBoundary(ctx, "S", 1))(t) // a branch restarted at turn 1
	ids := []int64{b1.ID, other.ID, b2.ID, again.ID}
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("boundary ids %v do not grow in mint order across scopes", ids)
		}
	}
	if b1.Scope != "S" || b1.Turn != 1 || b1.CreatedAt.IsZero() {
		t.Fatalf("minted boundary %+v", b1)
	}
	if d := cmp.Diff([]history.Boundary{b1, b2, again}, must(s.Boundaries(ctx, "S"))(t)); d != "" {
		t.Fatalf("Boundaries(S) (-minted +listed):\n%s", d)
	}
	if d := cmp.Diff([]history.Boundary{other}, must(s.Boundaries(ctx, "T"))(t)); d != "" {
		t.Fatalf("Boundaries(T) (-minted +listed):\n%s", d)
	}
}

// A refused mint changes nothing.
func testBoundaryRefusals(t *testing.T, s history.Store) {
	ctx := t.Context()
	_, err := s.MintBoundary(ctx, "S", 0)
	wantCode(t, err, history.CodeTurnInvalid)
	_, err = s.MintBoundary(ctx, "S", -3)
	wantCode(t, err, history.CodeTurnInvalid)
	_, err = s.MintBoundary(ctx, "", 1)
	wantCode(t, err, history.CodeScopeInvalid)
	if bs := must(s.Boundaries(ctx, "S"))(t); len(bs) != 0 {
		t.Fatalf("refused mints left boundaries %+v", bs)
	}
	if bs := must(s.Boundaries(ctx, ""))(t); len(bs) != 0 {
		t.Fatalf("a refused mint in the empty scope left boundaries %+v", bs)
	}
}

// Insert records at the scope's newest boundary (0 before the first), once per key and
// boundary; Lookup sees only the newest boundary's records.
func testInsertLookup(t *testing.T, s history.Store) {
	ctx := t.Context()
	const key = "/w/a.txt"
	if _, ok := must2(s.Lookup(ctx, "S", key))(t); ok {
		t.Fatal("Lookup found a record in an empty store")
	}
	r0, minted := insert(t, s, "S", key, []byte("v0"))
	if !minted || r0.Boundary != 0 || r0.Turn != 0 || r0.ID == 0 || r0.CreatedAt.IsZero() {
		t.Fatalf("a record before the first boundary = %+v minted=%v", r0, minted)
	}
	if got, ok := must2(s.Lookup(ctx, "S", key))(t); !ok || got != r0 {
		t.Fatalf("Lookup = %+v %v, want %+v", got, ok, r0)
	}
	// The same key in the same boundary: the first record stands, its pre-image too.
	dup, minted := insert(t, s, "S", key, []byte("v1"))
	if minted || dup != r0 {
		t.Fatalf("a second Insert in one boundary = %+v minted=%v, want the first %+v", dup, minted, r0)
	}
	if data := must(s.Blob(ctx, r0.Sum))(t); string(data) != "v0" {
		t.Fatalf("the first pre-image reads %q after a second Insert", data)
	}
	// Another scope and another key are other histories.
	if _, minted := insert(t, s, "T", key, []byte("v1")); !minted {
		t.Fatal("the same key in another scope was not recorded")
	}
	if _, minted := insert(t, s, "S", "/w/b.txt", nil); !minted {
		t.Fatal("another key in the same boundary was not recorded")
	}

	b1 := must(s.MintBoundary(ctx, "S", 1))(t)
	if _, ok := must2(s.Lookup(ctx, "S", key))(t); ok {
		t.Fatal("Lookup found an older boundary's record after a new boundary")
	}
	r1, minted := insert(t, s, "S", key, []byte("v1"))
	if !minted || r1.Boundary != b1.ID || r1.Turn != 1 || r1.ID == r0.ID {
		t.Fatalf("the first touch after boundary %d = %+v minted=%v", b1.ID, r1, minted)
	}
	if got, ok := must2(s.Lookup(ctx, "S", key))(t); !ok || got != r1 {
		t.Fatalf("Lookup after the new boundary = %+v %v, want %+v", got, ok, r1)
	}
	// A re-minted turn is a new boundary: the key is recorded again.
	b2 := must(s.MintBoundary(ctx, "S", 1))(t)
	r2, minted := insert(t, s, "S", key, []byte("v2"))
	if !minted || r2.Boundary != b2.ID || r2.Turn != 1 {
		t.Fatalf("the first touch after a re-minted turn = %+v minted=%v", r2, minted)
	}
}

func must2[A, B any](a A, b B, err error) func(t *testing.T) (A, B) {
	return func(t *testing.T) (A, B) {
		t.Helper()
		check(t, err)
		return a, b
	}
}

// Insert derives Sum and Size from the content and keeps only the permission bits of
// Mode (with setuid, setgid, sticky); an absent pre-image has none of them. The store
// assigns ID, Boundary, Turn and CreatedAt whatever the caller put there.
func testInsertFields(t *testing.T, s history.Store) {
	ctx := t.Context()
	b := must(s.MintBoundary(ctx, "S", 3))(t)
	for _, tc := range []struct {
		name    string
		in      history.Record
		content []byte
		want    history.Record
	}{
		{"a file", history.Record{Key: "/w/f", Existed: true, Mode: 0o750 | fs.ModeSetuid, Size: 99, Sum: "bogus"},
			[]byte("#!/bin/sh\n"), history.Record{Key: "/w/f", Existed: true, Mode: 0o750 | fs.ModeSetuid, Size: 10, Sum: sum("#!/bin/sh\n")}},
		{"type bits dropped", history.Record{Key: "/w/g", Existed: true, Mode: fs.ModeDir | fs.ModeSymlink | 0o600 | fs.ModeSticky},
			[]byte("x"), history.Record{Key: "/w/g", Existed: true, Mode: 0o600 | fs.ModeSticky, Size: 1, Sum: sum("x")}},
		{"an empty file", history.Record{Key: "/w/empty", Existed: true, Mode: 0o644},
			[]byte{}, history.Record{Key: "/w/empty", Existed: true, Mode: 0o644, Sum: sum("")}},
		{"an empty file given as nil", history.Record{Key: "/w/empty2", Existed: true, Mode: 0o644},
			nil, history.Record{Key: "/w/empty2", Existed: true, Mode: 0o644, Sum: sum("")}},
		{"absent", history.Record{Key: "/w/new", Existed: false, Mode: 0o644, Size: 5, Sum: "bogus"},
			[]byte("ignored"), history.Record{Key: "/w/new"}},
		{"lost: no bytes, no blob, its size and mode kept", history.Record{Key: "/w/big", Existed: true, Lost: true, Mode: 0o640, Size: 7 << 20, Sum: "bogus"},
			[]byte("ignored"), history.Record{Key: "/w/big", Existed: true, Lost: true, Mode: 0o640, Size: 7 << 20}},
		{"lost means nothing without Existed", history.Record{Key: "/w/none", Lost: true},
			nil, history.Record{Key: "/w/none"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Scope, in.ID, in.Boundary, in.Turn = "S", 12345, 777, 9
			got, minted, err := s.Insert(ctx, in, tc.content)
			check(t, err)
			if !minted {
				t.Fatal("not minted")
			}
			if got.ID == 12345 || got.Boundary != b.ID || got.Turn != 3 || got.Scope != "S" || got.CreatedAt.IsZero() {
				t.Fatalf("store-assigned fields %+v, want a new ID at boundary %d (turn 3)", got, b.ID)
			}
			want := tc.want
			want.ID, want.Scope, want.Boundary, want.Turn, want.CreatedAt = got.ID, "S", b.ID, 3, got.CreatedAt
			if d := cmp.Diff(want, got); d != "" {
				t.Fatalf("Insert (-want +got):\n%s", d)
			}
			stored, ok := must2(s.Lookup(ctx, "S", got.Key))(t)
			if d := cmp.Diff(got, stored); !ok || d != "" {
				t.Fatalf("the stored record differs from the returned one (found %v; -returned +stored):\n%s", ok, d)
			}
			if got.Existed && !got.Lost {
				data := must(s.Blob(ctx, got.Sum))(t)
				if string(data) != string(tc.content) {
					t.Fatalf("Blob = %q, want %q", data, tc.content)
				}
			}
		})
	}
}

// A refused Insert records nothing.
func testInsertRefusals(t *testing.T, s history.Store) {
	ctx := t.Context()
	for _, tc := range []struct {
		name, scope, key, code string
	}{
		{"empty scope", "", "/w/a", history.CodeScopeInvalid},
		{"relative key", "S", "w/a", history.CodeKeyInvalid},
		{"unclean key", "S", "/w/../w/a", history.CodeKeyInvalid},
		{"trailing slash", "S", "/w/a/", history.CodeKeyInvalid},
		{"empty key", "S", "", history.CodeKeyInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := s.Insert(ctx, history.Record{Scope: tc.scope, Key: tc.key, Existed: true}, []byte("x"))
			wantCode(t, err, tc.code)
		})
	}
	if recs := must(s.Records(ctx, "S", 0))(t); len(recs) != 0 {
		t.Fatalf("refused Inserts left records %+v", recs)
	}
	_, err := s.Blob(ctx, sum("x"))
	wantCode(t, err, history.CodeBlobMissing)
}

// Records(scope, from) is what a rewind to the boundary from reads: every record at a
// boundary whose ID is ≥ from, by boundary, then by ID, so the first record of a key is
// its state at from.
func testRecordsOrder(t *testing.T, s history.Store) {
	ctx := t.Context()
	insert(t, s, "S", "/w/z0", []byte("before any boundary"))
	b1 := must(s.MintBoundary(ctx, "S", 1))(t)
	insert(t, s, "S", "/w/b1", []byte("1"))
	insert(t, s, "S", "/w/a1", nil)
	must(s.MintBoundary(ctx, "T", 1))(t)
	insert(t, s, "T", "/w/other", []byte("t"))
	b2 := must(s.MintBoundary(ctx, "S", 2))(t)
	insert(t, s, "S", "/w/b1", []byte("2"))
	insert(t, s, "S", "/w/c2", []byte("c"))

	all := must(s.Records(ctx, "S", 0))(t)
	if d := cmp.Diff([]string{"/w/z0", "/w/b1", "/w/a1", "/w/b1", "/w/c2"}, keys(all)); d != "" {
		t.Fatalf("Records(S, 0) keys (-want +got):\n%s", d)
	}
	for i := 1; i < len(all); i++ {
		p, r := all[i-1], all[i]
		if r.Boundary < p.Boundary || (r.Boundary == p.Boundary && r.ID <= p.ID) {
			t.Fatalf("Records out of (boundary, ID) order at %d: %+v then %+v", i, p, r)
		}
	}
	if got := keys(must(s.Records(ctx, "S", b1.ID))(t)); !cmp.Equal(got, []string{"/w/b1", "/w/a1", "/w/b1", "/w/c2"}) {
		t.Fatalf("Records(S, boundary 1) keys %v", got)
	}
	from2 := must(s.Records(ctx, "S", b2.ID))(t)
	if got := keys(from2); !cmp.Equal(got, []string{"/w/b1", "/w/c2"}) {
		t.Fatalf("Records(S, boundary 2) keys %v", got)
	}
	if data := must(s.Blob(ctx, from2[0].Sum))(t); string(data) != "2" {
		t.Fatalf("the state of /w/b1 at boundary 2 reads %q, want 2", data)
	}
	if got := must(s.Records(ctx, "S", b2.ID+1000))(t); len(got) != 0 {
		t.Fatalf("Records after the newest boundary = %+v", got)
	}
	if got := must(s.Records(ctx, "nobody", 0))(t); len(got) != 0 {
		t.Fatalf("Records of an unknown scope = %+v", got)
	}
}

// A blob is keyed by its sum: records of the same bytes share it, it stays while any
// record uses it, and it goes with the last one (Delete and Forget alike).
func testBlobSharedAndDropped(t *testing.T, s history.Store) {
	ctx := t.Context()
	same := []byte("the same bytes\n")
	must(s.MintBoundary(ctx, "S", 1))(t)
	must(s.MintBoundary(ctx, "T", 1))(t)
	a, _ := insert(t, s, "S", "/w/a", same)
	b, _ := insert(t, s, "S", "/w/b", same)
	c, _ := insert(t, s, "T", "/w/c", same)
	d, _ := insert(t, s, "S", "/w/d", []byte("different"))
	gone, _ := insert(t, s, "S", "/w/gone", nil)
	if a.Sum != b.Sum || b.Sum != c.Sum || a.Sum != sum(string(same)) || d.Sum == a.Sum {
		t.Fatalf("sums %s %s %s %s", a.Sum, b.Sum, c.Sum, d.Sum)
	}
	_, err := s.Blob(ctx, sum("never stored"))
	wantCode(t, err, history.CodeBlobMissing)

	check(t, s.Delete(ctx, d.ID))
	_, err = s.Blob(ctx, d.Sum)
	wantCode(t, err, history.CodeBlobMissing)
	if _, ok := must2(s.Lookup(ctx, "S", "/w/d"))(t); ok {
		t.Fatal("a deleted record is still found")
	}
	check(t, s.Delete(ctx, d.ID)) // deleting a record that is gone is not an error
	check(t, s.Delete(ctx, gone.ID))
	check(t, s.Delete(ctx, 1<<40))

	check(t, s.Delete(ctx, a.ID))
	if data := must(s.Blob(ctx, a.Sum))(t); string(data) != string(same) {
		t.Fatalf("a shared blob reads %q after one of its records went", data)
	}
	check(t, s.Forget(ctx, "S")) // b goes; c in T still uses the blob
	if data := must(s.Blob(ctx, a.Sum))(t); string(data) != string(same) {
		t.Fatalf("forgetting S dropped a blob T still uses: %q", data)
	}
	check(t, s.Delete(ctx, c.ID))
	_, err = s.Blob(ctx, a.Sum)
	wantCode(t, err, history.CodeBlobMissing)
	// The bytes come back with the next record of them.
	again, _ := insert(t, s, "T", "/w/c", same)
	if data := must(s.Blob(ctx, again.Sum))(t); string(data) != string(same) {
		t.Fatalf("a re-recorded blob reads %q", data)
	}
}

// CarryFork copies the parent's boundaries (same turns, in order, new IDs) and records
// (mapped onto the copied boundaries) into the fork once; the fork then owns its history.
func testCarryFork(t *testing.T, s history.Store) {
	ctx := t.Context()
	insert(t, s, "parent", "/w/early", []byte("e"))
	must(s.MintBoundary(ctx, "parent", 1))(t)
	insert(t, s, "parent", "/w/a", []byte("a0"))
	insert(t, s, "parent", "/w/new", nil)
	must(s.MintBoundary(ctx, "parent", 2))(t)
	insert(t, s, "parent", "/w/a", []byte("a1"))
	parentBs := must(s.Boundaries(ctx, "parent"))(t)
	parentRecs := must(s.Records(ctx, "parent", 0))(t)

	n := must(s.CarryFork(ctx, "parent", "fork"))(t)
	if n != len(parentRecs) {
		t.Fatalf("carried %d records, the parent has %d", n, len(parentRecs))
	}
	forkBs := must(s.Boundaries(ctx, "fork"))(t)
	if !cmp.Equal(turns(forkBs), turns(parentBs)) {
		t.Fatalf("fork boundary turns %v, parent's %v", turns(forkBs), turns(parentBs))
	}
	bmap := map[int64]int64{0: 0}
	for i, b := range forkBs {
		if b.Scope != "fork" || b.ID == parentBs[i].ID || (i > 0 && b.ID <= forkBs[i-1].ID) {
			t.Fatalf("fork boundaries %+v", forkBs)
		}
		bmap[parentBs[i].ID] = b.ID
	}
	forkRecs := must(s.Records(ctx, "fork", 0))(t)
	if len(forkRecs) != len(parentRecs) {
		t.Fatalf("the fork lists %d records, the parent %d", len(forkRecs), len(parentRecs))
	}
	for i, r := range forkRecs {
		p := parentRecs[i]
		if r.Scope != "fork" || r.ID == p.ID || r.Boundary != bmap[p.Boundary] || r.Turn != p.Turn || r.Key != p.Key ||
			r.Existed != p.Existed || r.Sum != p.Sum || r.Mode != p.Mode || r.Size != p.Size {
			t.Fatalf("fork record %d = %+v, from the parent's %+v", i, r, p)
		}
	}
	// The fork's newest boundary is the copy of the parent's: a first touch there is
	// already recorded.
	if got, ok := must2(s.Lookup(ctx, "fork", "/w/a"))(t); !ok || got.Boundary != forkBs[len(forkBs)-1].ID {
		t.Fatalf("Lookup in the fork = %+v %v", got, ok)
	}

	// Once: later parent history does not follow, and a second carry copies nothing.
	must(s.MintBoundary(ctx, "parent", 3))(t)
	insert(t, s, "parent", "/w/later", []byte("l"))
	if n := must(s.CarryFork(ctx, "parent", "fork"))(t); n != 0 {
		t.Fatalf("a second carry copied %d records", n)
	}
	if got := must(s.Records(ctx, "fork", 0))(t); len(got) != len(forkRecs) {
		t.Fatalf("the fork has %d records after a second carry, want %d", len(got), len(forkRecs))
	}
	// The fork's own records are its own: the parent never sees them, and the carried
	// blobs outlive the parent.
	must(s.MintBoundary(ctx, "fork", 3))(t)
	insert(t, s, "fork", "/w/mine", []byte("m"))
	if slices.Contains(keys(must(s.Records(ctx, "parent", 0))(t)), "/w/mine") {
		t.Fatal("a fork's record appeared in the parent")
	}
	check(t, s.Forget(ctx, "parent"))
	for _, r := range forkRecs {
		if r.Existed {
			if _, err := s.Blob(ctx, r.Sum); err != nil {
				t.Fatalf("the fork's blob %s went with the parent: %v", r.Key, err)
			}
		}
	}

	// A parent without history still marks the carry done.
	if n := must(s.CarryFork(ctx, "empty-parent", "fork2"))(t); n != 0 {
		t.Fatalf("carried %d from an empty parent", n)
	}
	must(s.MintBoundary(ctx, "p2", 1))(t)
	insert(t, s, "p2", "/w/x", []byte("x"))
	if n := must(s.CarryFork(ctx, "p2", "fork2"))(t); n != 0 {
		t.Fatalf("a second carry into fork2 (from another parent) copied %d", n)
	}
}

// A carry into a scope with history of its own, or between invalid scopes, is refused
// and copies nothing; carrying a scope into itself is a no-op.
func testCarryForkRefusals(t *testing.T, s history.Store) {
	ctx := t.Context()
	must(s.MintBoundary(ctx, "parent", 1))(t)
	insert(t, s, "parent", "/w/a", []byte("a"))

	must(s.MintBoundary(ctx, "has-boundary", 1))(t)
	_, err := s.CarryFork(ctx, "parent", "has-boundary")
	wantCode(t, err, history.CodeCarryConflict)
	insert(t, s, "has-record", "/w/r", nil) // a record before any boundary
	_, err = s.CarryFork(ctx, "parent", "has-record")
	wantCode(t, err, history.CodeCarryConflict)
	if got := must(s.Records(ctx, "has-boundary", 0))(t); len(got) != 0 {
		t.Fatalf("a refused carry copied %+v", got)
	}
	if got := must(s.Boundaries(ctx, "has-record"))(t); len(got) != 0 {
		t.Fatalf("a refused carry copied boundaries %+v", got)
	}

	_, err = s.CarryFork(ctx, "", "x")
	wantCode(t, err, history.CodeScopeInvalid)
	_, err = s.CarryFork(ctx, "parent", "")
	wantCode(t, err, history.CodeScopeInvalid)

	if n := must(s.CarryFork(ctx, "parent", "parent"))(t); n != 0 {
		t.Fatalf("carrying a scope into itself copied %d", n)
	}
	if got := must(s.Records(ctx, "parent", 0))(t); len(got) != 1 {
		t.Fatalf("carrying a scope into itself changed it: %+v", got)
	}
	// A refused carry did not mark the scope carried.
	check(t, s.Forget(ctx, "has-boundary"))
	if n := must(s.CarryFork(ctx, "parent", "has-boundary"))(t); n != 1 {
		t.Fatalf("a carry after a refused one copied %d, want 1", n)
	}
}

// Forget removes one scope's boundaries and records — and the mark of a fork carried
// into it — and nothing of any other scope.
func testForget(t *testing.T, s history.Store) {
	ctx := t.Context()
	must(s.MintBoundary(ctx, "S", 1))(t)
	insert(t, s, "S", "/w/a", []byte("a"))
	must(s.MintBoundary(ctx, "T", 1))(t)
	tr, _ := insert(t, s, "T", "/w/a", []byte("t"))
	must(s.CarryFork(ctx, "T", "F"))(t)

	check(t, s.Forget(ctx, "S"))
	if bs := must(s.Boundaries(ctx, "S"))(t); len(bs) != 0 {
		t.Fatalf("Forget left boundaries %+v", bs)
	}
	if rs := must(s.Records(ctx, "S", 0))(t); len(rs) != 0 {
		t.Fatalf("Forget left records %+v", rs)
	}
	if _, ok := must2(s.Lookup(ctx, "S", "/w/a"))(t); ok {
		t.Fatal("Lookup finds a forgotten record")
	}
	if rs := must(s.Records(ctx, "T", 0))(t); len(rs) != 1 || rs[0] != tr {
		t.Fatalf("forgetting S changed T: %+v", rs)
	}
	check(t, s.Forget(ctx, "never-used"))

	// A forgotten fork can be carried into again, as a new session with that id would be.
	check(t, s.Forget(ctx, "F"))
	if n := must(s.CarryFork(ctx, "T", "F"))(t); n != 1 {
		t.Fatalf("a carry into a forgotten fork copied %d, want 1", n)
	}
	// A forgotten scope starts again from nothing.
	b := must(s.MintBoundary(ctx, "S", 1))(t)
	if r, minted := insert(t, s, "S", "/w/a", []byte("a2")); !minted || r.Boundary != b.ID {
		t.Fatalf("a first touch in a forgotten scope = %+v minted=%v", r, minted)
	}
}

// Of many writers recording one key in one boundary, exactly one mints and all get its
// record.
func testConcurrentInsert(t *testing.T, s history.Store) {
	ctx := t.Context()
	must(s.MintBoundary(ctx, "S", 1))(t)
	const n = 8
	var wg sync.WaitGroup
	minted := make([]bool, n)
	recs := make([]history.Record, n)
	for i := range n {
		wg.Go(func() {
			r, m, err := s.Insert(ctx, history.Record{Scope: "S", Key: "/w/a", Existed: true, Mode: 0o644}, []byte{byte('a' + i)})
			if err != nil {
				t.Error(err)
			}
			minted[i], recs[i] = m, r
		})
	}
	wg.Wait()
	count := 0
	for _, m := range minted {
		if m {
			count++
		}
	}
	if count != 1 {
		t.Fatalf("%d concurrent Inserts minted, want exactly 1", count)
	}
	for _, r := range recs {
		if r != recs[0] {
			t.Fatalf("concurrent Inserts returned different records: %+v and %+v", r, recs[0])
		}
	}
	if got := must(s.Records(ctx, "S", 0))(t); len(got) != 1 {
		t.Fatalf("%d records after concurrent Inserts, want 1", len(got))
	}
}

// Concurrent mints in one scope each get a boundary with its own ID.
func testConcurrentMint(t *testing.T, s history.Store) {
	ctx := t.Context()
	const n = 8
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if _, err := s.MintBoundary(ctx, "S", i+1); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	bs := must(s.Boundaries(ctx, "S"))(t)
	if len(bs) != n {
		t.Fatalf("%d boundaries after %d concurrent mints", len(bs), n)
	}
	for i := 1; i < len(bs); i++ {
		if bs[i].ID <= bs[i-1].ID {
			t.Fatalf("Boundaries not in ID order: %+v", bs)
		}
	}
}

// A write whose context has ended fails with the context's error and changes nothing.
func testCancelledContext(t *testing.T, s history.Store) {
	must(s.MintBoundary(t.Context(), "S", 1))(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.MintBoundary(ctx, "S", 2); !errors.Is(err, context.Canceled) {
		t.Fatalf("MintBoundary with a cancelled context: %v", err)
	}
	if _, _, err := s.Insert(ctx, history.Record{Scope: "S", Key: "/w/a", Existed: true}, []byte("a")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Insert with a cancelled context: %v", err)
	}
	if _, err := s.CarryFork(ctx, "S", "F"); !errors.Is(err, context.Canceled) {
		t.Fatalf("CarryFork with a cancelled context: %v", err)
	}
	if bs := must(s.Boundaries(t.Context(), "S"))(t); len(bs) != 1 {
		t.Fatalf("a cancelled mint left %d boundaries", len(bs))
	}
	if rs := must(s.Records(t.Context(), "S", 0))(t); len(rs) != 0 {
		t.Fatalf("a cancelled Insert left records %+v", rs)
	}
	if bs := must(s.Boundaries(t.Context(), "F"))(t); len(bs) != 0 {
		t.Fatalf("a cancelled carry copied %+v", bs)
	}
}

// SetAfter sets what was left at a record's key; the last call wins, Insert never takes
// an After from its caller, and a bad value or a missing record changes nothing.
func testSetAfter(t *testing.T, s history.Store) {
	ctx := t.Context()
	must(s.MintBoundary(ctx, "S", 1))(t)
	in := history.Record{Scope: "S", Key: "/w/a", Existed: true, Mode: 0o644, After: sum("smuggled")}
	r, _, err := s.Insert(ctx, in, []byte("a0"))
	check(t, err)
	if r.After != "" {
		t.Fatalf("Insert kept the caller's After %q", r.After)
	}
	check(t, s.SetAfter(ctx, r.ID, sum("a1")))
	check(t, s.SetAfter(ctx, r.ID, sum("a2")))
	if got, _ := must2(s.Lookup(ctx, "S", "/w/a"))(t); got.After != sum("a2") {
		t.Fatalf("After = %q, want the last write's %q", got.After, sum("a2"))
	}
	check(t, s.SetAfter(ctx, r.ID, history.AfterAbsent))
	if got := must(s.Records(ctx, "S", 0))(t); len(got) != 1 || got[0].After != history.AfterAbsent {
		t.Fatalf("Records after SetAfter(absent) = %+v", got)
	}
	for _, bad := range []string{"", "nope", sum("x")[:63], "ABCDEF" + sum("x")[6:]} {
		wantCode(t, s.SetAfter(ctx, r.ID, bad), history.CodeAfterInvalid)
	}
	if got, _ := must2(s.Lookup(ctx, "S", "/w/a"))(t); got.After != history.AfterAbsent {
		t.Fatalf("a refused SetAfter changed After to %q", got.After)
	}
	check(t, s.SetAfter(ctx, 1<<40, sum("x"))) // a record that is gone
	check(t, s.Delete(ctx, r.ID))
	check(t, s.SetAfter(ctx, r.ID, sum("x")))
}

// SetPending names what a write about to begin will leave, beside the After of the
// writes before it; the last call wins, SetAfter (the write confirmed) clears it, Insert
// and MintRewind never take one from their callers, a fork carries it, and a bad value
// or a missing record changes nothing.
func testSetPending(t *testing.T, s history.Store) {
	ctx := t.Context()
	must(s.MintBoundary(ctx, "S", 1))(t)
	r, _, err := s.Insert(ctx, history.Record{Scope: "S", Key: "/w/a", Existed: true, Mode: 0o644, Pending: sum("smuggled")}, []byte("a0"))
	check(t, err)
	if r.Pending != "" {
		t.Fatalf("Insert kept the caller's Pending %q", r.Pending)
	}
	check(t, s.SetAfter(ctx, r.ID, sum("a1")))
	check(t, s.SetPending(ctx, r.ID, sum("a2")))
	check(t, s.SetPending(ctx, r.ID, sum("a3")))
	if got, _ := must2(s.Lookup(ctx, "S", "/w/a"))(t); got.After != sum("a1") || got.Pending != sum("a3") {
		t.Fatalf("After %q, Pending %q; want the confirmed write's %q and the last begun one's %q", got.After, got.Pending, sum("a1"), sum("a3"))
	}
	for _, bad := range []string{"", "nope", sum("x")[:63], "ABCDEF" + sum("x")[6:]} {
		wantCode(t, s.SetPending(ctx, r.ID, bad), history.CodeAfterInvalid)
	}
	must(s.CarryFork(ctx, "S", "fork"))(t)
	if got := must(s.Records(ctx, "fork", 0))(t); len(got) != 1 || got[0].Pending != sum("a3") || got[0].After != sum("a1") {
		t.Fatalf("fork records %+v", got)
	}
	check(t, s.SetAfter(ctx, r.ID, sum("a3")))
	if got := must(s.Records(ctx, "S", 0))(t); len(got) != 1 || got[0].After != sum("a3") || got[0].Pending != "" {
		t.Fatalf("Records after the write was confirmed = %+v", got)
	}
	_, saved := must3(s.MintRewind(ctx, "S", 1, []history.Saved{{Record: history.Record{Key: "/w/a", Existed: true, Mode: 0o644, After: sum("a0"), Pending: sum("smuggled")}, Content: []byte("a3")}}))(t)
	if got := must(s.Records(ctx, "S", 0))(t); len(got) != 2 || saved[0].Pending != "" || got[1].Pending != "" {
		t.Fatalf("MintRewind kept the caller's Pending: %+v", got)
	}
	check(t, s.SetPending(ctx, 1<<40, sum("x"))) // a record that is gone
	check(t, s.Delete(ctx, r.ID))
	check(t, s.SetPending(ctx, r.ID, sum("x")))
}

// MintRewind mints a rewind boundary — the newest, listed with its kind among the
// turns — and stores the saved states at it with their blobs and Afters, a repeated key
// once.
func testMintRewind(t *testing.T, s history.Store) {
	ctx := t.Context()
	b1 := must(s.MintBoundary(ctx, "S", 1))(t)
	if b1.Kind != history.KindTurn {
		t.Fatalf("a turn boundary has kind %q", b1.Kind)
	}
	insert(t, s, "S", "/w/a", []byte("a0"))
	saved := []history.Saved{
		{Record: history.Record{Key: "/w/a", Existed: true, Mode: 0o600 | fs.ModeSetgid, After: sum("a0")}, Content: []byte("a1 by someone\n")},
		{Record: history.Record{Key: "/w/new", After: history.AfterAbsent}, Content: []byte("ignored")},
		{Record: history.Record{Key: "/w/a", Existed: true, Mode: 0o644}, Content: []byte("a repeat is dropped")},
		{Record: history.Record{Key: "/w/empty", Existed: true, Mode: 0o644}},
	}
	b, recs, err := s.MintRewind(ctx, "S", 1, saved)
	check(t, err)
	if b.Kind != history.KindRewind || b.Turn != 1 || b.Scope != "S" || b.ID <= b1.ID || b.CreatedAt.IsZero() {
		t.Fatalf("rewind boundary %+v", b)
	}
	if d := cmp.Diff([]history.Boundary{b1, b}, must(s.Boundaries(ctx, "S"))(t)); d != "" {
		t.Fatalf("Boundaries (-want +got):\n%s", d)
	}
	if len(recs) != 3 {
		t.Fatalf("MintRewind returned %d records, want 3 (a repeated key once): %+v", len(recs), recs)
	}
	want := []history.Record{
		{Key: "/w/a", Existed: true, Mode: 0o600 | fs.ModeSetgid, Sum: sum("a1 by someone\n"), Size: 14, After: sum("a0")},
		{Key: "/w/new", After: history.AfterAbsent},
		{Key: "/w/empty", Existed: true, Mode: 0o644, Sum: sum("")},
	}
	for i := range want {
		want[i].ID, want[i].Scope, want[i].Boundary, want[i].Turn, want[i].CreatedAt = recs[i].ID, "S", b.ID, 1, recs[i].CreatedAt
		if recs[i].ID == 0 || recs[i].CreatedAt.IsZero() {
			t.Fatalf("record %d has no ID or time: %+v", i, recs[i])
		}
	}
	if d := cmp.Diff(want, recs); d != "" {
		t.Fatalf("MintRewind records (-want +got):\n%s", d)
	}
	if d := cmp.Diff(want, must(s.Records(ctx, "S", b.ID))(t)); d != "" {
		t.Fatalf("stored records at the rewind boundary (-want +got):\n%s", d)
	}
	if data := must(s.Blob(ctx, recs[0].Sum))(t); string(data) != "a1 by someone\n" {
		t.Fatalf("saved blob = %q", data)
	}
	if data := must(s.Blob(ctx, recs[2].Sum))(t); len(data) != 0 {
		t.Fatalf("an empty saved file's blob = %q", data)
	}
	// The rewind boundary is the newest: Lookup and Insert work at it.
	if got, ok := must2(s.Lookup(ctx, "S", "/w/a"))(t); !ok || got.ID != recs[0].ID {
		t.Fatalf("Lookup after MintRewind = %+v %v", got, ok)
	}
	// Nothing to save still marks the rewind.
	b2, none, err := s.MintRewind(ctx, "S", 0, nil)
	check(t, err)
	if b2.Kind != history.KindRewind || b2.Turn != 0 || len(none) != 0 {
		t.Fatalf("an empty MintRewind = %+v %+v", b2, none)
	}
	// The saved blobs go with the scope.
	check(t, s.Forget(ctx, "S"))
	_, err = s.Blob(ctx, recs[0].Sum)
	wantCode(t, err, history.CodeBlobMissing)
}

// A refused MintRewind stores neither the boundary nor any record.
func testMintRewindRefusals(t *testing.T, s history.Store) {
	ctx := t.Context()
	good := history.Saved{Record: history.Record{Key: "/w/a", Existed: true}, Content: []byte("a")}
	for _, tc := range []struct {
		name, scope string
		turn        int
		saved       []history.Saved
		code        string
	}{
		{"empty scope", "", 1, []history.Saved{good}, history.CodeScopeInvalid},
		{"negative turn", "S", -1, []history.Saved{good}, history.CodeTurnInvalid},
		{"relative key", "S", 1, []history.Saved{good, {Record: history.Record{Key: "w/b"}}}, history.CodeKeyInvalid},
		{"bad after", "S", 1, []history.Saved{good, {Record: history.Record{Key: "/w/b", After: "later"}}}, history.CodeAfterInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := s.MintRewind(ctx, tc.scope, tc.turn, tc.saved)
			wantCode(t, err, tc.code)
		})
	}
	if bs := must(s.Boundaries(ctx, "S"))(t); len(bs) != 0 {
		t.Fatalf("refused MintRewinds left boundaries %+v", bs)
	}
	if rs := must(s.Records(ctx, "S", 0))(t); len(rs) != 0 {
		t.Fatalf("refused MintRewinds left records %+v", rs)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := s.MintRewind(cctx, "S", 1, []history.Saved{good}); !errors.Is(err, context.Canceled) {
		t.Fatalf("MintRewind with a cancelled context: %v", err)
	}
	if bs := must(s.Boundaries(ctx, "S"))(t); len(bs) != 0 {
		t.Fatalf("a cancelled MintRewind left boundaries %+v", bs)
	}
}

// A fork carries its parent's rewind boundaries as rewinds, and every record's After.
func testCarryForkKeepsKindAndAfter(t *testing.T, s history.Store) {
	ctx := t.Context()
	must(s.MintBoundary(ctx, "parent", 1))(t)
	r, _ := insert(t, s, "parent", "/w/a", []byte("a0"))
	check(t, s.SetAfter(ctx, r.ID, sum("a1")))
	must3(s.MintRewind(ctx, "parent", 1, []history.Saved{{Record: history.Record{Key: "/w/a", Existed: true, Mode: 0o644, After: sum("a0")}, Content: []byte("a1")}}))(t)
	must(s.CarryFork(ctx, "parent", "fork"))(t)
	bs := must(s.Boundaries(ctx, "fork"))(t)
	if len(bs) != 2 || bs[0].Kind != history.KindTurn || bs[1].Kind != history.KindRewind {
		t.Fatalf("fork boundaries %+v", bs)
	}
	recs := must(s.Records(ctx, "fork", 0))(t)
	if len(recs) != 2 || recs[0].After != sum("a1") || recs[1].After != sum("a0") || recs[1].Boundary != bs[1].ID {
		t.Fatalf("fork records %+v", recs)
	}
}

func must3[A, B any](a A, b B, err error) func(t *testing.T) (A, B) {
	return must2(a, b, err)
}
