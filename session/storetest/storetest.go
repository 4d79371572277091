// Package storetest is the conformance suite of the session stores. A store that serves
// runs (a session.Store) is done when
//
//	storetest.Run(t, func(t *testing.T) session.Store { return newStore(t) })
//
// passes; a store that offers session.Admin too (a session.AdminStore, as every store in
// this module is) is done when RunAdmin passes as well:
//
//	storetest.RunAdmin(t, func(t *testing.T) session.AdminStore { return newStore(t) })
//
// newStore must return an empty store that lives until t ends (register its Close with
// t.Cleanup); each subtest gets its own.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/session"
)

// Run runs the conformance tests of session.Store (what the runner calls) against
// stores made by newStore. It calls no Admin method, so a store made only to serve runs
// passes it; RunAdmin tests the rest.
func Run[S session.Store](t *testing.T, newStore func(t *testing.T) S) {
	run(t, func(t *testing.T) session.Store { return newStore(t) }, []conformance[session.Store]{
		{"CreateGet", testCreateGet},
		{"Update", testUpdate},
		{"Legs", testLegs},
		{"CreateLeased", testCreateLeased},
		{"AppendTranscript", testAppendTranscript},
		{"AppendRefusals", testAppendRefusals},
		{"Branch", testBranch},
		{"AppendBatch", testAppendBatch},
		{"ConcurrentAppend", testConcurrentAppend},
		{"Checkpoint", testCheckpoint},
		{"CheckpointRefusals", testCheckpointRefusals},
		{"DoubleClaimRace", testDoubleClaimRace},
		{"Fork", testFork},
		{"ForkRefusals", testForkRefusals},
		{"CancelledContext", testCancelledContext},
		{"Lease", testLease},
		{"LeaseRace", testLeaseRace},
		{"LeaseExpiry", testLeaseExpiry},
		{"ClaimedWrites", testClaimedWrites},
		{"ClaimExpiry", testClaimExpiry},
		{"ClaimRace", testClaimRace},
	})
}

// conformance is one named test of a suite whose stores are an S.
type conformance[S any] struct {
	name string
	fn   func(t *testing.T, s S)
}

// run runs each test in parallel, on its own store.
func run[S any](t *testing.T, newStore func(t *testing.T) S, tests []conformance[S]) {
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

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

func create(t *testing.T, s session.Store, root string) session.Session {
	t.Helper()
	return must(s.Create(t.Context(), session.Session{Root: root, FSID: "host", Model: "m", Mode: "default"}))(t)
}

func appendN(t *testing.T, s session.Store, sess, leg string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = must(s.Append(t.Context(), session.Entry{SessionID: sess, LegID: leg, Kind: "user",
			Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}))(t)
	}
	return ids
}

func ids(es []session.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

func testCreateGet(t *testing.T, s session.Store) {
	ctx := t.Context()
	in := session.Session{Root: "/w", FSID: "host", Scope: "scope-1", ParentID: "p", Model: "anthropic/x",
		Mode: "plan", EffectiveMode: "plan", PrePlanMode: "acceptEdits", Title: "fix the test"}
	got := must(s.Create(ctx, in))(t)
	if !uuidRE.MatchString(got.ID) {
		t.Fatalf("minted id %q is not a v4 UUID", got.ID)
	}
	if got.CreatedAt.IsZero() || !got.UpdatedAt.Equal(got.CreatedAt) || got.Head != "" {
		t.Fatalf("created session %+v: want CreatedAt = UpdatedAt set and no head", got)
	}
	want := in
	want.ID, want.CreatedAt, want.UpdatedAt = got.ID, got.CreatedAt, got.UpdatedAt
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("Create (-want +got):\n%s", d)
	}
	if d := cmp.Diff(got, must(s.Get(ctx, got.ID))(t)); d != "" {
		t.Fatalf("Get (-create +get):\n%s", d)
	}
	if got.HistoryScope() != "scope-1" {
		t.Fatalf("HistoryScope = %q", got.HistoryScope())
	}

	own := must(s.Create(ctx, session.Session{ID: "given-id", Root: "/w"}))(t)
	if own.ID != "given-id" || own.HistoryScope() != "given-id" {
		t.Fatalf("caller id not kept or scope wrong: %+v", own)
	}
	then := time.Date(2020, 1, 2, 3, 4, 5, 6, time.UTC)
	old := must(s.Create(ctx, session.Session{Root: "/w", CreatedAt: then}))(t)
	if !old.CreatedAt.Equal(then) || !old.UpdatedAt.Equal(then) {
		t.Fatalf("CreatedAt %v UpdatedAt %v, want %v", old.CreatedAt, old.UpdatedAt, then)
	}

	for _, tc := range []struct {
		name string
		err  error
		code string
	}{
		{"duplicate id", second(s.Create(ctx, session.Session{ID: "given-id", Root: "/other"})), session.CodeExists},
		{"no root", second(s.Create(ctx, session.Session{})), session.CodeInvalid},
		{"unknown", second(s.Get(ctx, "nope")), session.CodeNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) { wantCode(t, tc.err, tc.code) })
	}
	if got := must(s.Get(ctx, "given-id"))(t); got.Root != "/w" {
		t.Fatalf("a refused duplicate Create changed the session: %+v", got)
	}
}

func second[T any](_ T, err error) error { return err }

func testUpdate(t *testing.T, s session.Store) {
	ctx := t.Context()
	a := create(t, s, "/w")
	got := must(s.Update(ctx, a.ID, func(x *session.Session) error {
		x.Mode, x.PrePlanMode, x.Model, x.Title = "plan", "default", "openai/y", "renamed"
		x.EffectiveMode = "dontAsk"
		return nil
	}))(t)
	if got.Mode != "plan" || got.PrePlanMode != "default" || got.Model != "openai/y" || got.Title != "renamed" || got.EffectiveMode != "dontAsk" {
		t.Fatalf("Update did not apply: %+v", got)
	}
	if !got.UpdatedAt.After(a.UpdatedAt) {
		t.Fatalf("UpdatedAt %v did not move past %v", got.UpdatedAt, a.UpdatedAt)
	}
	if d := cmp.Diff(got, must(s.Get(ctx, a.ID))(t)); d != "" {
		t.Fatalf("Get after Update (-update +get):\n%s", d)
	}
	// Clearing a field is a change too (leaving plan clears prePlanMode).
	got = must(s.Update(ctx, a.ID, func(x *session.Session) error { x.PrePlanMode = ""; return nil }))(t)
	if got.PrePlanMode != "" {
		t.Fatalf("PrePlanMode not cleared: %q", got.PrePlanMode)
	}

	boom := errors.New("boom")
	for _, tc := range []struct {
		name string
		id   string
		fn   func(*session.Session) error
		code string
		err  error
	}{
		{"root is fixed", a.ID, func(x *session.Session) error { x.Root = "/elsewhere"; x.Mode = "x"; return nil }, session.CodeInvalid, nil},
		{"head is the store's", a.ID, func(x *session.Session) error { x.Head = "h"; return nil }, session.CodeInvalid, nil},
		{"fork lineage is fixed", a.ID, func(x *session.Session) error { x.ForkOf = "f"; return nil }, session.CodeInvalid, nil},
		{"fn error", a.ID, func(x *session.Session) error { x.Mode = "x"; return boom }, "", boom},
		{"unknown", "nope", func(*session.Session) error { return nil }, session.CodeNotFound, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := must(s.Get(ctx, a.ID))(t)
			_, err := s.Update(ctx, tc.id, tc.fn)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("error = %v, want %v", err, tc.err)
				}
			} else {
				wantCode(t, err, tc.code)
			}
			if d := cmp.Diff(before, must(s.Get(ctx, a.ID))(t)); d != "" {
				t.Fatalf("a refused Update changed the session:\n%s", d)
			}
		})
	}
}

func testLegs(t *testing.T, s session.Store) {
	ctx := t.Context()
	a := create(t, s, "/w")
	l1 := must(s.StartLeg(ctx, a.ID))(t)
	l2 := must(s.StartLeg(ctx, a.ID))(t)
	if l1.Number != 1 || l2.Number != 2 || l1.Status != sema.StatusRunning || !l1.EndedAt.IsZero() || l1.SessionID != a.ID {
		t.Fatalf("legs %+v %+v", l1, l2)
	}
	if !uuidRE.MatchString(l1.ID) || l1.ID == l2.ID {
		t.Fatalf("leg ids %q %q", l1.ID, l2.ID)
	}
	ended := must(s.EndLeg(ctx, l1.ID, sema.StatusAwaitingApproval))(t)
	if ended.Status != sema.StatusAwaitingApproval || ended.EndedAt.IsZero() || ended.EndedAt.Before(ended.StartedAt) {
		t.Fatalf("ended leg %+v", ended)
	}
	got := must(s.Legs(ctx, a.ID))(t)
	if d := cmp.Diff([]session.Leg{ended, l2}, got); d != "" {
		t.Fatalf("Legs (-want +got):\n%s", d)
	}
	for _, tc := range []struct {
		name string
		err  error
		code string
	}{
		{"end twice", second(s.EndLeg(ctx, l1.ID, sema.StatusCompleted)), session.CodeLegEnded},
		{"end as running", second(s.EndLeg(ctx, l2.ID, sema.StatusRunning)), session.CodeInvalid},
		{"end with no status", second(s.EndLeg(ctx, l2.ID, "")), session.CodeInvalid},
		{"end unknown", second(s.EndLeg(ctx, "nope", sema.StatusCompleted)), session.CodeLegNotFound},
		{"start unknown session", second(s.StartLeg(ctx, "nope")), session.CodeNotFound},
		{"legs unknown session", second(s.Legs(ctx, "nope")), session.CodeNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) { wantCode(t, tc.err, tc.code) })
	}
	if got := must(s.Legs(ctx, a.ID))(t); got[0].Status != sema.StatusAwaitingApproval {
		t.Fatalf("a refused EndLeg changed the leg: %+v", got[0])
	}
}

func testAppendTranscript(t *testing.T, s session.Store) {
	ctx := t.Context()
	a := create(t, s, "/w")
	if got := must(s.Transcript(ctx, a.ID, ""))(t); len(got) != 0 {
		t.Fatalf("empty session transcript = %v", got)
	}
	leg := must(s.StartLeg(ctx, a.ID))(t)
	payloads := []string{`{"role":"user","text":"<b>hi</b> ünïcode"}`, `[1,2.50,"x"]`, `"just a string"`}
	var want []session.Entry
	for i, p := range payloads {
		id := must(s.Append(ctx, session.Entry{SessionID: a.ID, LegID: leg.ID, Kind: "k" + fmt.Sprint(i), Payload: json.RawMessage(p)}))(t)
		if !uuidRE.MatchString(id) {
			t.Fatalf("entry id %q", id)
		}
		parent := ""
		if i > 0 {
			parent = want[i-1].ID
		}
		want = append(want, session.Entry{ID: id, SessionID: a.ID, LegID: leg.ID, Seq: int64(i + 1), ParentID: parent,
			Kind: "k" + fmt.Sprint(i), Payload: json.RawMessage(p)})
	}
	// An entry outside any leg, with no payload.
	nid := must(s.Append(ctx, session.Entry{SessionID: a.ID, Kind: "system"}))(t)
	want = append(want, session.Entry{ID: nid, SessionID: a.ID, Seq: 4, ParentID: want[2].ID, Kind: "system", Payload: json.RawMessage("null")})

	got := must(s.Transcript(ctx, a.ID, ""))(t)
	for i := range got {
		if got[i].CreatedAt.IsZero() {
			t.Fatalf("entry %d has no CreatedAt", i)
		}
		if i > 0 && got[i].CreatedAt.Before(got[i-1].CreatedAt) {
			t.Fatalf("entry %d created before its parent", i)
		}
		got[i].CreatedAt = time.Time{}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("Transcript (-want +got):\n%s", d)
	}
	if h := must(s.Get(ctx, a.ID))(t).Head; h != nid {
		t.Fatalf("head = %q, want the last entry %q", h, nid)
	}
	// A head in the middle returns the prefix.
	if d := cmp.Diff(ids(want[:2]), ids(must(s.Transcript(ctx, a.ID, want[1].ID))(t))); d != "" {
		t.Fatalf("Transcript to the 2nd entry (-want +got):\n%s", d)
	}
}

func testAppendRefusals(t *testing.T, s session.Store) {
	ctx := t.Context()
	a := create(t, s, "/w")
	b := create(t, s, "/w")
	legB := must(s.StartLeg(ctx, b.ID))(t)
	aIDs := appendN(t, s, a.ID, "", 2)
	bIDs := appendN(t, s, b.ID, "", 1)
	for _, tc := range []struct {
		name string
		e    session.Entry
		code string
	}{
		{"no kind", session.Entry{SessionID: a.ID, Payload: json.RawMessage(`{}`)}, session.CodeEntryInvalid},
		{"payload not JSON", session.Entry{SessionID: a.ID, Kind: "user", Payload: json.RawMessage(`{"a":`)}, session.CodeEntryInvalid},
		{"unknown session", session.Entry{SessionID: "nope", Kind: "user"}, session.CodeNotFound},
		{"leg of another session", session.Entry{SessionID: a.ID, LegID: legB.ID, Kind: "user"}, session.CodeLegNotFound},
		{"unknown leg", session.Entry{SessionID: a.ID, LegID: "nope", Kind: "user"}, session.CodeLegNotFound},
		{"unknown parent", session.Entry{SessionID: a.ID, ParentID: "nope", Kind: "user"}, session.CodeEntryNotFound},
		{"parent in another session", session.Entry{SessionID: a.ID, ParentID: bIDs[0], Kind: "user"}, session.CodeEntryNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Append(ctx, tc.e)
			wantCode(t, err, tc.code)
		})
	}
	// Nothing refused was written: the transcript and the sequence go on unchanged.
	if d := cmp.Diff(aIDs, ids(must(s.Transcript(ctx, a.ID, ""))(t))); d != "" {
		t.Fatalf("refused appends changed the transcript:\n%s", d)
	}
	next := must(s.Append(ctx, session.Entry{SessionID: a.ID, Kind: "user"}))(t)
	tr := must(s.Transcript(ctx, a.ID, ""))(t)
	if tr[len(tr)-1].ID != next || tr[len(tr)-1].Seq != 3 {
		t.Fatalf("after refusals the next entry got seq %d, want 3", tr[len(tr)-1].Seq)
	}
	_, err := s.Transcript(ctx, a.ID, bIDs[0])
	wantCode(t, err, session.CodeEntryNotFound)
	_, err = s.Transcript(ctx, "nope", "")
	wantCode(t, err, session.CodeNotFound)
}

// testBranch is agent.Resume.At: appending with an earlier parent starts a branch; both
// branches stay readable, and the next parentless append follows the new head.
func testBranch(t *testing.T, s session.Store) {
	ctx := t.Context()
	a := create(t, s, "/w")
	x := appendN(t, s, a.ID, "", 3) // x0 ← x1 ← x2
	d := must(s.Append(ctx, session.Entry{SessionID: a.ID, ParentID: x[0], Kind: "user", Payload: json.RawMessage(`"retry"`)}))(t)
	e := must(s.Append(ctx, session.Entry{SessionID: a.ID, Kind: "assistant"}))(t)
	for _, tc := range []struct {
		name, head string
		want       []string
	}{
		{"new head", "", []string{x[0], d, e}},
		{"old branch", x[2], x},
		{"branch point", x[0], x[:1]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ids(must(s.Transcript(ctx, a.ID, tc.head))(t))); diff != "" {
				t.Fatalf("Transcript (-want +got):\n%s", diff)
			}
		})
	}
	tr := must(s.Transcript(ctx, a.ID, ""))(t)
	if tr[1].Seq != 4 || tr[2].Seq != 5 || tr[1].ParentID != x[0] {
		t.Fatalf("branch entries %+v: seq keeps counting appends, parent is the resume point", tr[1:])
	}
}

// testAppendBatch: a store with AppendBatch commits a batch in order, chaining its entries
// (a branch when the first names an earlier parent), and refuses it whole.
func testAppendBatch(t *testing.T, s session.Store) {
	b, ok := s.(session.BatchAppender)
	if !ok {
		t.Skip("the store has no AppendBatch")
	}
	ctx := t.Context()
	a := create(t, s, "/w")
	other := create(t, s, "/w")
	leg := must(s.StartLeg(ctx, a.ID))(t)
	x := appendN(t, s, a.ID, "", 2) // x0 ← x1
	batch := func(es ...session.Entry) ([]string, error) { return b.AppendBatch(ctx, es) }
	entry := func(kind, parent string) session.Entry {
		return session.Entry{SessionID: a.ID, LegID: leg.ID, ParentID: parent, Kind: kind, Payload: json.RawMessage(`{"k":"` + kind + `"}`)}
	}
	got := must(batch(entry("assistant", ""), entry("call_started", ""), entry("tool_results", "")))(t)
	if len(got) != 3 {
		t.Fatalf("AppendBatch returned %d ids, want 3", len(got))
	}
	tr := must(s.Transcript(ctx, a.ID, ""))(t)
	if d := cmp.Diff(append(slices.Clone(x), got...), ids(tr)); d != "" {
		t.Fatalf("transcript after a batch (-want +got):\n%s", d)
	}
	for i, e := range tr[2:] {
		if e.Seq != int64(3+i) || e.LegID != leg.ID || e.ParentID != tr[1+i].ID || !uuidRE.MatchString(e.ID) {
			t.Fatalf("batch entry %d: %+v", i, e)
		}
	}
	// A batch whose first entry names an earlier parent starts a branch there.
	br := must(batch(entry("user", x[0]), entry("assistant", "")))(t)
	if d := cmp.Diff([]string{x[0], br[0], br[1]}, ids(must(s.Transcript(ctx, a.ID, ""))(t))); d != "" {
		t.Fatalf("branch by batch (-want +got):\n%s", d)
	}
	before := ids(must(s.Transcript(ctx, a.ID, ""))(t))
	for _, tc := range []struct {
		name string
		es   []session.Entry
		code string
	}{
		{"an entry without a kind", []session.Entry{entry("user", ""), {SessionID: a.ID}}, session.CodeEntryInvalid},
		{"two sessions", []session.Entry{entry("user", ""), {SessionID: other.ID, Kind: "user"}}, session.CodeEntryInvalid},
		{"an unknown parent last", []session.Entry{entry("user", ""), entry("user", "nope")}, session.CodeEntryNotFound},
		{"an unknown leg last", []session.Entry{entry("user", ""), {SessionID: a.ID, LegID: "nope", Kind: "user"}}, session.CodeLegNotFound},
		{"an unknown session", []session.Entry{{SessionID: "nope", Kind: "user"}}, session.CodeNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := batch(tc.es...)
			wantCode(t, err, tc.code)
		})
	}
	if d := cmp.Diff(before, ids(must(s.Transcript(ctx, a.ID, ""))(t))); d != "" {
		t.Fatalf("a refused batch changed the transcript:\n%s", d)
	}
	if got, err := batch(); err != nil || len(got) != 0 {
		t.Fatalf("an empty batch: %v %v", got, err)
	}
}

func testConcurrentAppend(t *testing.T, s session.Store) {
	ctx := t.Context()
	a := create(t, s, "/w")
	const workers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				if _, err := s.Append(ctx, session.Entry{SessionID: a.ID, Kind: "user",
					Payload: json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i))}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	CheckLinear(t, s, a.ID, workers*each)
}

// CheckLinear asserts that the session's transcript is one chain of exactly n entries
// with sequence numbers 1..n: no append was lost, duplicated or attached to a stale head.
func CheckLinear(t *testing.T, s session.Store, sessionID string, n int) {
	t.Helper()
	tr := must(s.Transcript(t.Context(), sessionID, ""))(t)
	if len(tr) != n {
		t.Fatalf("transcript has %d entries, want %d (a lost write or a fork in the chain)", len(tr), n)
	}
	for i, e := range tr {
		if e.Seq != int64(i+1) {
			t.Fatalf("entry %d has seq %d", i, e.Seq)
		}
		if i > 0 && e.ParentID != tr[i-1].ID {
			t.Fatalf("entry %d does not follow entry %d", i, i-1)
		}
	}
}

func testCheckpoint(t *testing.T, s session.Store) {
	ctx := t.Context()
	a := create(t, s, "/w")
	leg := must(s.StartLeg(ctx, a.ID))(t)
	c := must(s.Park(ctx, session.Checkpoint{SessionID: a.ID, LegID: leg.ID, Tool: "Bash",
		Args: json.RawMessage(`{ "timeout": 1.50, "command": "echo <ok> && rm -rf x" }`),
		Gate: session.GateToolPermission, Mode: "plan", PrePlanMode: "acceptEdits"}))(t)
	wantArgs := `{"command":"echo <ok> && rm -rf x","timeout":1.50}`
	if string(c.Args) != wantArgs {
		t.Fatalf("canonical args = %s, want %s", c.Args, wantArgs)
	}
	if c.ArgsSHA256 != session.SHA256Hex([]byte(wantArgs)) || len(c.ArgsSHA256) != 64 {
		t.Fatalf("args sha256 = %s", c.ArgsSHA256)
	}
	if !uuidRE.MatchString(c.ID) || c.CreatedAt.IsZero() || !c.ClaimedAt.IsZero() || c.Decision != nil {
		t.Fatalf("parked checkpoint %+v", c)
	}
	if d := cmp.Diff(c, must(s.Checkpoint(ctx, c.ID))(t)); d != "" {
		t.Fatalf("Checkpoint (-park +get):\n%s", d)
	}
	c2 := must(s.Park(ctx, session.Checkpoint{SessionID: a.ID, Tool: "ExitPlanMode", Args: json.RawMessage(`{"plan":"p"}`),
		Gate: session.GatePlanReview}))(t)

	claimed := must(s.ClaimCheckpoint(ctx, c.ID, session.Decision{Verdict: session.VerdictAllow,
		Args: json.RawMessage(`{"timeout":2, "command":"echo ok"}`), Reason: "narrowed"}))(t)
	if claimed.ClaimedAt.IsZero() || claimed.Decision == nil {
		t.Fatalf("claimed checkpoint %+v", claimed)
	}
	wantDecision := session.Decision{Verdict: session.VerdictAllow, Args: json.RawMessage(`{"command":"echo ok","timeout":2}`), Reason: "narrowed"}
	if d := cmp.Diff(wantDecision, *claimed.Decision); d != "" {
		t.Fatalf("decision (-want +got):\n%s", d)
	}
	if string(claimed.Args) != wantArgs || claimed.ArgsSHA256 != c.ArgsSHA256 {
		t.Fatalf("claiming changed the stored call: %s", claimed.Args)
	}
	if d := cmp.Diff(claimed, must(s.Checkpoint(ctx, c.ID))(t)); d != "" {
		t.Fatalf("Checkpoint after claim (-claim +get):\n%s", d)
	}
	_, err := s.ClaimCheckpoint(ctx, c.ID, session.Decision{Verdict: session.VerdictDeny})
	wantCode(t, err, session.CodeAlreadyClaimed)
	if got := must(s.Checkpoint(ctx, c.ID))(t); got.Decision.Verdict != session.VerdictAllow {
		t.Fatalf("a refused second claim changed the decision: %+v", got.Decision)
	}

	if got := must(s.Checkpoint(ctx, c2.ID))(t); got.Gate != session.GatePlanReview || got.Decision != nil {
		t.Fatalf("claiming one checkpoint changed another: %+v", got)
	}
	denied := must(s.ClaimCheckpoint(ctx, c2.ID, session.Decision{Verdict: session.VerdictDeny, Reason: "no"}))(t)
	if denied.Decision.Verdict != session.VerdictDeny || denied.Decision.Args != nil {
		t.Fatalf("deny decision %+v", denied.Decision)
	}
}

func testCheckpointRefusals(t *testing.T, s session.Store) {
	ctx := t.Context()
	a := create(t, s, "/w")
	b := create(t, s, "/w")
	legB := must(s.StartLeg(ctx, b.ID))(t)
	ok, refused := parkRefusals(a.ID, legB.ID)
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Park(ctx, tc.c)
			wantCode(t, err, tc.code)
		})
	}

	c := must(s.Park(ctx, ok))(t)
	for _, tc := range []struct {
		name string
		id   string
		d    session.Decision
		code string
	}{
		{"unknown checkpoint", "nope", session.Decision{Verdict: session.VerdictAllow}, session.CodeCheckpointNotFound},
		{"no verdict", c.ID, session.Decision{}, session.CodeDecisionInvalid},
		{"deny with args", c.ID, session.Decision{Verdict: session.VerdictDeny, Args: json.RawMessage(`{}`)}, session.CodeDecisionInvalid},
		{"edited args not JSON", c.ID, session.Decision{Verdict: session.VerdictAllow, Args: json.RawMessage(`nope`)}, session.CodeDecisionInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.ClaimCheckpoint(ctx, tc.id, tc.d)
			wantCode(t, err, tc.code)
		})
	}
	// Refused decisions did not consume the checkpoint.
	if got := must(s.ClaimCheckpoint(ctx, c.ID, session.Decision{Verdict: session.VerdictAllow}))(t); got.Decision == nil {
		t.Fatal("no decision recorded")
	}
	_, err := s.Checkpoint(ctx, "nope")
	wantCode(t, err, session.CodeCheckpointNotFound)
}

// parkRefusal is a checkpoint Park refuses, and the code it refuses it with.
type parkRefusal struct {
	name string
	c    session.Checkpoint
	code string
}

// parkRefusals returns a checkpoint of session that Park takes, and the ones it refuses;
// otherLeg is a leg of another session.
func parkRefusals(sessionID, otherLeg string) (session.Checkpoint, []parkRefusal) {
	ok := session.Checkpoint{SessionID: sessionID, Tool: "Write", Args: json.RawMessage(`{}`), Gate: session.GateToolPermission}
	with := func(f func(*session.Checkpoint)) session.Checkpoint { c := ok; f(&c); return c }
	return ok, []parkRefusal{
		{"no tool", with(func(c *session.Checkpoint) { c.Tool = "" }), session.CodeCheckpointInvalid},
		{"bad gate", with(func(c *session.Checkpoint) { c.Gate = "whenever" }), session.CodeCheckpointInvalid},
		{"args not JSON", with(func(c *session.Checkpoint) { c.Args = json.RawMessage(`{"a":1`) }), session.CodeCheckpointInvalid},
		{"two values", with(func(c *session.Checkpoint) { c.Args = json.RawMessage(`{} {}`) }), session.CodeCheckpointInvalid},
		{"no args", with(func(c *session.Checkpoint) { c.Args = nil }), session.CodeCheckpointInvalid},
		{"unknown session", with(func(c *session.Checkpoint) { c.SessionID = "nope" }), session.CodeNotFound},
		{"leg of another session", with(func(c *session.Checkpoint) { c.LegID = otherLeg }), session.CodeLegNotFound},
	}
}

func testDoubleClaimRace(t *testing.T, s session.Store) {
	ctx := t.Context()
	a := create(t, s, "/w")
	for round := range 5 {
		c := must(s.Park(ctx, session.Checkpoint{SessionID: a.ID, Tool: "Bash", Args: json.RawMessage(`{"command":"make"}`),
			Gate: session.GateToolPermission}))(t)
		const racers = 8
		var wg sync.WaitGroup
		start := make(chan struct{})
		results := make([]error, racers)
		for i := range racers {
			wg.Go(func() {
				<-start
				verdict := session.VerdictAllow
				if i%2 == 1 {
					verdict = session.VerdictDeny
				}
				_, results[i] = s.ClaimCheckpoint(ctx, c.ID, session.Decision{Verdict: verdict, Reason: fmt.Sprint(i)})
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range results {
			switch {
			case err == nil:
				if winner >= 0 {
					t.Fatalf("round %d: racers %d and %d both claimed the checkpoint", round, winner, i)
				}
				winner = i
			case !sema.IsCode(err, session.CodeAlreadyClaimed):
				t.Fatalf("round %d: racer %d: %v", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: nobody claimed the checkpoint", round)
		}
		if got := must(s.Checkpoint(ctx, c.ID))(t); got.Decision.Reason != fmt.Sprint(winner) {
			t.Fatalf("round %d: stored decision is racer %s's, the winner was %d", round, got.Decision.Reason, winner)
		}
	}
}

func testFork(t *testing.T, s session.Store) {
	ctx := t.Context()
	a := must(s.Create(ctx, session.Session{Root: "/w", FSID: "host", Model: "m", Mode: "plan", PrePlanMode: "default", Title: "t"}))(t)
	l1 := must(s.StartLeg(ctx, a.ID))(t)
	x := appendN(t, s, a.ID, l1.ID, 2)
	must(s.EndLeg(ctx, l1.ID, sema.StatusCompleted))(t)
	l2 := must(s.StartLeg(ctx, a.ID))(t)
	y := appendN(t, s, a.ID, l2.ID, 2)
	// A side branch that the fork of the head must not copy.
	must(s.Append(ctx, session.Entry{SessionID: a.ID, ParentID: x[0], Kind: "side"}))(t)
	must(s.Append(ctx, session.Entry{SessionID: a.ID, LegID: l2.ID, ParentID: y[1], Kind: "user", Payload: json.RawMessage(`{"last":true}`)}))(t)
	orig := must(s.Transcript(ctx, a.ID, ""))(t)
	origSession := must(s.Get(ctx, a.ID))(t)

	f := must(s.Fork(ctx, a.ID, ""))(t)
	if f.ID == a.ID || f.ForkOf != a.ID || f.ForkAt != orig[len(orig)-1].ID || f.ParentID != "" {
		t.Fatalf("fork lineage %+v", f)
	}
	if f.Root != a.Root || f.FSID != a.FSID || f.Model != a.Model || f.Mode != "plan" || f.PrePlanMode != "default" || f.Title != "t" {
		t.Fatalf("fork metadata %+v does not carry %+v", f, a)
	}
	ft := must(s.Transcript(ctx, f.ID, ""))(t)
	if len(ft) != len(orig) {
		t.Fatalf("fork has %d entries, want the chain's %d", len(ft), len(orig))
	}
	legs := must(s.Legs(ctx, f.ID))(t)
	if len(legs) != 2 || legs[0].Number != 1 || legs[1].Number != 2 || legs[0].Status != sema.StatusCompleted || legs[0].ID == l1.ID {
		t.Fatalf("fork legs %+v", legs)
	}
	for i := range ft {
		o, c := orig[i], ft[i]
		if c.ID == o.ID || c.SessionID != f.ID || c.Seq != int64(i+1) || c.Kind != o.Kind || string(c.Payload) != string(o.Payload) {
			t.Fatalf("fork entry %d = %+v, original %+v", i, c, o)
		}
		if i > 0 && c.ParentID != ft[i-1].ID {
			t.Fatalf("fork entry %d does not follow the fork's entry %d", i, i-1)
		}
		wantLeg := legs[0].ID
		if i >= 2 {
			wantLeg = legs[1].ID
		}
		if c.LegID != wantLeg {
			t.Fatalf("fork entry %d is in leg %q, want the fork's copy %q", i, c.LegID, wantLeg)
		}
	}
	if l3 := must(s.StartLeg(ctx, f.ID))(t); l3.Number != 3 {
		t.Fatalf("the fork's next leg is %d, want 3", l3.Number)
	}
	// The fork goes its own way; the original does not move.
	must(s.Append(ctx, session.Entry{SessionID: f.ID, Kind: "user"}))(t)
	if d := cmp.Diff(ids(orig), ids(must(s.Transcript(ctx, a.ID, ""))(t))); d != "" {
		t.Fatalf("appending to the fork changed the original:\n%s", d)
	}
	if got := must(s.Get(ctx, a.ID))(t); got.Head != origSession.Head {
		t.Fatal("the original's head moved")
	}

	// A fork at an earlier entry copies the prefix only, and a fork of a fork keeps
	// its own lineage.
	early := must(s.Fork(ctx, a.ID, x[1]))(t)
	if et := must(s.Transcript(ctx, early.ID, ""))(t); len(et) != 2 || early.ForkAt != x[1] {
		t.Fatalf("fork at x[1]: %d entries, ForkAt %q", len(et), early.ForkAt)
	}
	if legs := must(s.Legs(ctx, early.ID))(t); len(legs) != 1 {
		t.Fatalf("a fork of leg 1's entries copies leg 1 only, got %d legs", len(legs))
	}
	ff := must(s.Fork(ctx, early.ID, ""))(t)
	if ff.ForkOf != early.ID || len(must(s.Transcript(ctx, ff.ID, ""))(t)) != 2 {
		t.Fatalf("fork of fork %+v", ff)
	}
	// A session with no transcript forks into an empty session.
	empty := create(t, s, "/w")
	ef := must(s.Fork(ctx, empty.ID, ""))(t)
	if ef.ForkOf != empty.ID || ef.ForkAt != "" || len(must(s.Transcript(ctx, ef.ID, ""))(t)) != 0 {
		t.Fatalf("fork of an empty session %+v", ef)
	}
}

func testForkRefusals(t *testing.T, s session.Store) {
	ctx := t.Context()
	a := create(t, s, "/w")
	b := create(t, s, "/w")
	bIDs := appendN(t, s, b.ID, "", 1)
	_, err := s.Fork(ctx, "nope", "")
	wantCode(t, err, session.CodeNotFound)
	_, err = s.Fork(ctx, a.ID, bIDs[0])
	wantCode(t, err, session.CodeEntryNotFound)
}

func testCancelledContext(t *testing.T, s session.Store) {
	a := create(t, s, "/w")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Append(ctx, session.Entry{SessionID: a.ID, Kind: "user"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append with a cancelled context: %v", err)
	}
	if _, err := s.Create(ctx, session.Session{Root: "/w"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Create with a cancelled context: %v", err)
	}
	if got := must(s.Transcript(t.Context(), a.ID, ""))(t); len(got) != 0 {
		t.Fatalf("a cancelled Append wrote %d entries", len(got))
	}
}
