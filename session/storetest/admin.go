package storetest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sema-agent/sema/session"
)

// RunAdmin runs the conformance tests of session.Admin (listing, finding and pruning
// sessions, listing a session's checkpoints) against stores made by newStore. It sets
// up each case through Store's methods, which Run tests; a store passes both.
func RunAdmin[S session.AdminStore](t *testing.T, newStore func(t *testing.T) S) {
	run(t, func(t *testing.T) session.AdminStore { return newStore(t) }, []conformance[session.AdminStore]{
		{"ListNewest", testListNewest},
		{"Checkpoints", testCheckpoints},
		{"RefusedWritesListNothing", testRefusedWritesListNothing},
		{"Prune", testPrune},
	})
}

// testCheckpoints: Checkpoints lists a session's checkpoints oldest first, claimed ones
// as they were claimed, each as Checkpoint returns it.
func testCheckpoints(t *testing.T, s session.AdminStore) {
	ctx := t.Context()
	a := create(t, s, "/w")
	other := create(t, s, "/w")
	leg := must(s.StartLeg(ctx, a.ID))(t)
	c := must(s.Park(ctx, session.Checkpoint{SessionID: a.ID, LegID: leg.ID, Tool: "Bash", Args: json.RawMessage(`{"command":"make"}`),
		Gate: session.GateToolPermission}))(t)
	c2 := must(s.Park(ctx, session.Checkpoint{SessionID: a.ID, Tool: "ExitPlanMode", Args: json.RawMessage(`{"plan":"p"}`),
		Gate: session.GatePlanReview}))(t)
	must(s.Park(ctx, session.Checkpoint{SessionID: other.ID, Tool: "Write", Args: json.RawMessage(`{}`), Gate: session.GateToolPermission}))(t)
	must(s.ClaimCheckpoint(ctx, c.ID, session.Decision{Verdict: session.VerdictAllow}))(t)

	list := must(s.Checkpoints(ctx, a.ID))(t)
	if len(list) != 2 || list[0].ID != c.ID || list[1].ID != c2.ID || list[1].Gate != session.GatePlanReview {
		t.Fatalf("Checkpoints = %+v", list)
	}
	want := []session.Checkpoint{must(s.Checkpoint(ctx, c.ID))(t), must(s.Checkpoint(ctx, c2.ID))(t)}
	if d := cmp.Diff(want, list); d != "" {
		t.Fatalf("Checkpoints (-Checkpoint +Checkpoints):\n%s", d)
	}
	if got := must(s.Checkpoints(ctx, create(t, s, "/w").ID))(t); len(got) != 0 {
		t.Fatalf("a session that never parked lists %d checkpoints", len(got))
	}
	_, err := s.Checkpoints(ctx, "nope")
	wantCode(t, err, session.CodeNotFound)
}

// testRefusedWritesListNothing: a refused Park or Fork leaves nothing for Checkpoints or
// List to find.
func testRefusedWritesListNothing(t *testing.T, s session.AdminStore) {
	ctx := t.Context()
	a := create(t, s, "/w")
	b := create(t, s, "/w")
	legB := must(s.StartLeg(ctx, b.ID))(t)
	_, refused := parkRefusals(a.ID, legB.ID)
	for _, tc := range refused {
		_, err := s.Park(ctx, tc.c)
		wantCode(t, err, tc.code)
	}
	if got := must(s.Checkpoints(ctx, a.ID))(t); len(got) != 0 {
		t.Fatalf("refused parks stored %d checkpoints", len(got))
	}

	// A Park whose claim is not live stores nothing either.
	must(s.AcquireLease(ctx, a.ID, "one", time.Minute))(t)
	_, err := s.Park(ctx, session.Checkpoint{SessionID: a.ID, Tool: "Bash", Args: json.RawMessage(`{}`), Gate: session.GateToolPermission,
		Claim: &session.Claim{SessionID: a.ID, Holder: "two"}})
	wantCode(t, err, session.CodeLeaseLost)
	if cps := must(s.Checkpoints(ctx, a.ID))(t); len(cps) != 0 {
		t.Fatalf("a refused Park stored %d checkpoints", len(cps))
	}

	bIDs := appendN(t, s, b.ID, "", 1)
	_, err = s.Fork(ctx, "nope", "")
	wantCode(t, err, session.CodeNotFound)
	_, err = s.Fork(ctx, a.ID, bIDs[0])
	wantCode(t, err, session.CodeEntryNotFound)
	if got := must(s.List(ctx, session.Filter{}))(t); len(got) != 2 {
		t.Fatalf("refused forks created sessions: %d", len(got))
	}
}

func testListNewest(t *testing.T, s session.AdminStore) {
	ctx := t.Context()
	a := create(t, s, "/w")
	b := create(t, s, "/w")
	c := create(t, s, "/other")
	child := must(s.Create(ctx, session.Session{Root: "/w", ParentID: a.ID}))(t)
	// Appending to a makes it the most recently updated root session at /w.
	appendN(t, s, a.ID, "", 1)

	list := func(f session.Filter) []string {
		var out []string
		for _, x := range must(s.List(ctx, f))(t) {
			out = append(out, x.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		f    session.Filter
		want []string
	}{
		{"all", session.Filter{}, []string{a.ID, child.ID, c.ID, b.ID}},
		{"root", session.Filter{Root: "/w"}, []string{a.ID, child.ID, b.ID}},
		{"roots only", session.Filter{Root: "/w", RootsOnly: true}, []string{a.ID, b.ID}},
		{"limit", session.Filter{Limit: 2}, []string{a.ID, child.ID}},
		{"unknown root", session.Filter{Root: "/none"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, list(tc.f)); d != "" {
				t.Fatalf("List (-want +got):\n%s", d)
			}
		})
	}
	if got := must(s.Newest(ctx, "/w"))(t); got.ID != a.ID {
		t.Fatalf("Newest(/w) = %s, want %s", got.ID, a.ID)
	}
	appendN(t, s, child.ID, "", 1)
	if got := must(s.Newest(ctx, "/w"))(t); got.ID != a.ID {
		t.Fatalf("Newest(/w) = %s, a child session must not be the one to continue", got.ID)
	}
	must(s.Update(ctx, b.ID, func(x *session.Session) error { x.Title = "t"; return nil }))(t)
	if got := must(s.Newest(ctx, "/w"))(t); got.ID != b.ID {
		t.Fatalf("Newest(/w) after updating b = %s, want %s", got.ID, b.ID)
	}
	_, err := s.Newest(ctx, "/none")
	wantCode(t, err, session.CodeNotFound)
}

func testPrune(t *testing.T, s session.AdminStore) {
	ctx := t.Context()
	ago := func(h int) time.Time { return time.Now().Add(-time.Duration(h) * time.Hour) }
	// Age counts from the last update, not from creation: a session used just now stays.
	untouched := must(s.Create(ctx, session.Session{Root: "/w", CreatedAt: ago(72)}))(t)
	usedLeg := must(s.Create(ctx, session.Session{Root: "/w", CreatedAt: ago(48)}))(t)
	must(s.StartLeg(ctx, usedLeg.ID))(t)
	usedAppend := must(s.Create(ctx, session.Session{Root: "/w", CreatedAt: ago(30)}))(t)
	must(s.Append(ctx, session.Entry{SessionID: usedAppend.ID, Kind: "user"}))(t)
	fresh := create(t, s, "/w")
	c := must(s.Park(ctx, session.Checkpoint{SessionID: fresh.ID, Tool: "Bash", Args: json.RawMessage(`{}`), Gate: session.GateToolPermission}))(t)

	if got := must(s.Prune(ctx, ago(24)))(t); !slices.Equal(got, []string{untouched.ID}) {
		t.Fatalf("Prune removed %v, want only the untouched 72-hour-old %s", got, untouched.ID)
	}
	_, err := s.Get(ctx, untouched.ID)
	wantCode(t, err, session.CodeNotFound)
	for _, id := range []string{usedLeg.ID, usedAppend.ID, fresh.ID} {
		must(s.Get(ctx, id))(t)
	}
	want := []string{usedLeg.ID, usedAppend.ID, fresh.ID}
	slices.Sort(want)
	if got := must(s.Prune(ctx, time.Now().Add(time.Hour)))(t); !slices.Equal(got, want) {
		t.Fatalf("Prune(future) removed %v, want %v", got, want)
	}
	// Everything a session owns goes with it.
	_, err = s.Checkpoint(ctx, c.ID)
	wantCode(t, err, session.CodeCheckpointNotFound)
	_, err = s.Legs(ctx, usedLeg.ID)
	wantCode(t, err, session.CodeNotFound)
	_, err = s.Transcript(ctx, usedAppend.ID, "")
	wantCode(t, err, session.CodeNotFound)
	if got := must(s.List(ctx, session.Filter{}))(t); len(got) != 0 {
		t.Fatalf("sessions left after pruning everything: %d", len(got))
	}
	if got := must(s.Prune(ctx, time.Now().Add(time.Hour)))(t); len(got) != 0 {
		t.Fatalf("Prune of an empty store removed %v", got)
	}
}
