package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/session"
)

// The lease and claim tests: one writer per session, and writes that commit only while
// their writer's lease is live.

func testLease(t *testing.T, s session.Store) {
	ctx := t.Context()
	a := create(t, s, "/w")
	l := must(s.AcquireLease(ctx, a.ID, "one", time.Minute))(t)
	if l.SessionID != a.ID || l.Holder != "one" || time.Until(l.ExpiresAt) < 50*time.Second || l.ExpiresAt.Location() != time.UTC {
		t.Fatalf("lease %+v", l)
	}
	_, err := s.AcquireLease(ctx, a.ID, "two", time.Minute)
	wantCode(t, err, session.CodeBusy)
	// The holder takes it again (its expiry moves on) and renews it; nobody else renews.
	must(s.AcquireLease(ctx, a.ID, "one", time.Minute))(t)
	if r := must(s.RenewLease(ctx, a.ID, "one", 2*time.Minute))(t); !r.ExpiresAt.After(l.ExpiresAt) {
		t.Fatalf("renewal did not move the expiry: %v → %v", l.ExpiresAt, r.ExpiresAt)
	}
	_, err = s.RenewLease(ctx, a.ID, "two", time.Minute)
	wantCode(t, err, session.CodeLeaseLost)
	// A release by a non-holder changes nothing; the holder's frees the session.
	if err := s.ReleaseLease(ctx, a.ID, "two"); err != nil {
		t.Fatal(err)
	}
	_, err = s.AcquireLease(ctx, a.ID, "two", time.Minute)
	wantCode(t, err, session.CodeBusy)
	if err := s.ReleaseLease(ctx, a.ID, "one"); err != nil {
		t.Fatal(err)
	}
	_, err = s.RenewLease(ctx, a.ID, "one", time.Minute)
	wantCode(t, err, session.CodeLeaseLost)
	must(s.AcquireLease(ctx, a.ID, "two", time.Minute))(t)
	// Leases are per session, and do not count as activity.
	b := create(t, s, "/w")
	must(s.AcquireLease(ctx, b.ID, "one", time.Minute))(t)
	if got := must(s.Get(ctx, a.ID))(t); !got.UpdatedAt.Equal(a.UpdatedAt) {
		t.Fatalf("a lease moved UpdatedAt: %v → %v", a.UpdatedAt, got.UpdatedAt)
	}
	// A fork is a new session: its source's lease does not come with it.
	f := must(s.Fork(ctx, a.ID, ""))(t)
	must(s.AcquireLease(ctx, f.ID, "three", time.Minute))(t)

	for _, tc := range []struct {
		name string
		err  error
		code string
	}{
		{"acquire unknown session", second(s.AcquireLease(ctx, "nope", "one", time.Minute)), session.CodeNotFound},
		{"renew unknown session", second(s.RenewLease(ctx, "nope", "one", time.Minute)), session.CodeNotFound},
		{"release unknown session", s.ReleaseLease(ctx, "nope", "one"), session.CodeNotFound},
		{"no holder", second(s.AcquireLease(ctx, a.ID, "", time.Minute)), session.CodeLeaseInvalid},
		{"zero ttl", second(s.AcquireLease(ctx, a.ID, "two", 0)), session.CodeLeaseInvalid},
		{"negative renewal", second(s.RenewLease(ctx, a.ID, "two", -time.Second)), session.CodeLeaseInvalid},
		{"release without holder", s.ReleaseLease(ctx, a.ID, ""), session.CodeLeaseInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) { wantCode(t, tc.err, tc.code) })
	}
}

// testLeaseRace: of many acquirers of one free session, exactly one wins.
func testLeaseRace(t *testing.T, s session.Store) {
	ctx := t.Context()
	for round := range 5 {
		a := create(t, s, "/w")
		const racers = 8
		var wg sync.WaitGroup
		start := make(chan struct{})
		results := make([]error, racers)
		for i := range racers {
			wg.Go(func() {
				<-start
				_, results[i] = s.AcquireLease(ctx, a.ID, fmt.Sprint("racer-", i), time.Minute)
			})
		}
		close(start)
		wg.Wait()
		winners := 0
		for i, err := range results {
			switch {
			case err == nil:
				winners++
			case !sema.IsCode(err, session.CodeBusy):
				t.Fatalf("round %d: racer %d: %v", round, i, err)
			}
		}
		if winners != 1 {
			t.Fatalf("round %d: %d racers hold the lease, want exactly 1", round, winners)
		}
	}
}

// testLeaseExpiry: a lease its holder stopped renewing is taken over, and the old
// holder can then neither renew nor release it.
func testLeaseExpiry(t *testing.T, s session.Store) {
	ctx := t.Context()
	a := create(t, s, "/w")
	// The lease must outlive the refused acquire after it on a loaded machine.
	must(s.AcquireLease(ctx, a.ID, "dead", 400*time.Millisecond))(t)
	_, err := s.AcquireLease(ctx, a.ID, "next", time.Minute)
	wantCode(t, err, session.CodeBusy)
	time.Sleep(500 * time.Millisecond)
	must(s.AcquireLease(ctx, a.ID, "next", time.Minute))(t)
	_, err = s.RenewLease(ctx, a.ID, "dead", time.Minute)
	wantCode(t, err, session.CodeLeaseLost)
	if err := s.ReleaseLease(ctx, a.ID, "dead"); err != nil {
		t.Fatal(err)
	}
	_, err = s.AcquireLease(ctx, a.ID, "third", time.Minute)
	wantCode(t, err, session.CodeBusy)
	// An expired lease nobody took is still its holder's to renew.
	b := create(t, s, "/w")
	must(s.AcquireLease(ctx, b.ID, "slow", 20*time.Millisecond))(t)
	time.Sleep(40 * time.Millisecond)
	must(s.RenewLease(ctx, b.ID, "slow", time.Minute))(t)
	_, err = s.AcquireLease(ctx, b.ID, "other", time.Minute)
	wantCode(t, err, session.CodeBusy)
}

// entryOf is a one-entry append to sess under claim c (nil: none).
func entryOf(sess, kind string, c *session.Claim) session.Entry {
	return session.Entry{SessionID: sess, Kind: kind, Payload: json.RawMessage(`{}`), Claim: c}
}

func kinds(t *testing.T, s session.Store, sess string) []string {
	t.Helper()
	var out []string
	for _, e := range must(s.Transcript(t.Context(), sess, ""))(t) {
		out = append(out, e.Kind)
	}
	return out
}

// testClaimedWrites: a claimed Append, AppendBatch or Park commits only while its holder
// holds the claimed session's lease, a delegated child's writes are judged by its root
// session's lease, and a refused write stores nothing.
func testClaimedWrites(t *testing.T, s session.Store) {
	ctx := t.Context()
	a := create(t, s, "/w")
	must(s.AcquireLease(ctx, a.ID, "one", time.Minute))(t)
	mine, theirs := &session.Claim{SessionID: a.ID, Holder: "one"}, &session.Claim{SessionID: a.ID, Holder: "two"}
	must(s.Append(ctx, entryOf(a.ID, "user", mine)))(t)
	_, err := s.Append(ctx, entryOf(a.ID, "stale", theirs))
	wantCode(t, err, session.CodeLeaseLost)
	if b, ok := s.(session.BatchAppender); ok {
		must(b.AppendBatch(ctx, []session.Entry{entryOf(a.ID, "assistant", mine), entryOf(a.ID, "call_started", mine)}))(t)
		_, err := b.AppendBatch(ctx, []session.Entry{entryOf(a.ID, "stale", theirs), entryOf(a.ID, "stale", theirs)})
		wantCode(t, err, session.CodeLeaseLost)
		_, err = b.AppendBatch(ctx, []session.Entry{entryOf(a.ID, "stale", mine), entryOf(a.ID, "stale", theirs)})
		wantCode(t, err, session.CodeEntryInvalid)
	}
	leg := must(s.StartLeg(ctx, a.ID))(t)
	park := session.Checkpoint{SessionID: a.ID, LegID: leg.ID, Tool: "Bash", Args: json.RawMessage(`{}`), Gate: session.GateToolPermission}
	park.Claim = theirs
	_, err = s.Park(ctx, park)
	wantCode(t, err, session.CodeLeaseLost)
	park.Claim = mine
	c := must(s.Park(ctx, park))(t)
	if c.Claim != nil {
		t.Fatalf("Park returned the claim it was given: %+v", c.Claim)
	}
	if got := must(s.Checkpoint(ctx, c.ID))(t); got.Claim != nil || got.ArgsSHA256 != c.ArgsSHA256 {
		t.Fatalf("stored checkpoint %+v", got)
	}

	// A delegated child's session has no lease of its own: its writes ride on its root's.
	child := must(s.Create(ctx, session.Session{Root: "/w", ParentID: a.ID}))(t)
	must(s.Append(ctx, entryOf(child.ID, "delegation", mine)))(t)
	_, err = s.Append(ctx, entryOf(child.ID, "stale", &session.Claim{SessionID: child.ID, Holder: "one"}))
	wantCode(t, err, session.CodeLeaseLost)
	_, err = s.Append(ctx, entryOf(child.ID, "stale", theirs))
	wantCode(t, err, session.CodeLeaseLost)

	// A released lease claims nothing; the next holder's claim does.
	if err := s.ReleaseLease(ctx, a.ID, "one"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Append(ctx, entryOf(a.ID, "stale", mine))
	wantCode(t, err, session.CodeLeaseLost)
	_, err = s.Append(ctx, entryOf(child.ID, "stale", mine))
	wantCode(t, err, session.CodeLeaseLost)
	must(s.AcquireLease(ctx, a.ID, "two", time.Minute))(t)
	must(s.Append(ctx, entryOf(a.ID, "next", theirs)))(t)
	// A write without a claim is not judged by the lease.
	must(s.Append(ctx, entryOf(a.ID, "unclaimed", nil)))(t)

	want := []string{"user", "next", "unclaimed"}
	if _, ok := s.(session.BatchAppender); ok {
		want = []string{"user", "assistant", "call_started", "next", "unclaimed"}
	}
	if d := cmp.Diff(want, kinds(t, s, a.ID)); d != "" {
		t.Fatalf("transcript kinds (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"delegation"}, kinds(t, s, child.ID)); d != "" {
		t.Fatalf("child transcript kinds (-want +got):\n%s", d)
	}

	for _, tc := range []struct {
		name string
		err  error
		code string
	}{
		{"claim without holder", second(s.Append(ctx, entryOf(a.ID, "x", &session.Claim{SessionID: a.ID}))), session.CodeLeaseInvalid},
		{"claim without session", second(s.Append(ctx, entryOf(a.ID, "x", &session.Claim{Holder: "two"}))), session.CodeLeaseInvalid},
		{"park claim without holder", second(s.Park(ctx, session.Checkpoint{SessionID: a.ID, Tool: "Bash", Args: json.RawMessage(`{}`),
			Gate: session.GateToolPermission, Claim: &session.Claim{SessionID: a.ID}})), session.CodeLeaseInvalid},
		{"claimed append to unknown session", second(s.Append(ctx, entryOf("nope", "x", theirs))), session.CodeNotFound},
		{"claim of unknown session", second(s.Append(ctx, entryOf(a.ID, "x", &session.Claim{SessionID: "nope", Holder: "two"}))), session.CodeLeaseLost},
	} {
		t.Run(tc.name, func(t *testing.T) { wantCode(t, tc.err, tc.code) })
	}
}

// testClaimExpiry: a claim is live only until its lease expires, even when nobody took
// the session since; the holder renews it and writes again. Once another holder took
// the expired lease, the old holder can neither renew nor write.
func testClaimExpiry(t *testing.T, s session.Store) {
	ctx := t.Context()
	a := create(t, s, "/w")
	slow := &session.Claim{SessionID: a.ID, Holder: "slow"}
	// Each lease must outlive the append after it on a loaded machine (a database round
	// trip or two, the first on a new connection), and then expire.
	const ttl = 400 * time.Millisecond
	must(s.AcquireLease(ctx, a.ID, "slow", ttl))(t)
	must(s.Append(ctx, entryOf(a.ID, "first", slow)))(t)
	time.Sleep(ttl + 100*time.Millisecond)
	_, err := s.Append(ctx, entryOf(a.ID, "expired", slow))
	wantCode(t, err, session.CodeLeaseLost)
	must(s.RenewLease(ctx, a.ID, "slow", ttl))(t)
	must(s.Append(ctx, entryOf(a.ID, "renewed", slow)))(t)

	time.Sleep(ttl + 100*time.Millisecond)
	must(s.AcquireLease(ctx, a.ID, "next", time.Minute))(t)
	_, err = s.Append(ctx, entryOf(a.ID, "stalled", slow))
	wantCode(t, err, session.CodeLeaseLost)
	_, err = s.RenewLease(ctx, a.ID, "slow", time.Minute)
	wantCode(t, err, session.CodeLeaseLost)
	_, err = s.Park(ctx, session.Checkpoint{SessionID: a.ID, Tool: "Bash", Args: json.RawMessage(`{}`), Gate: session.GateToolPermission, Claim: slow})
	wantCode(t, err, session.CodeLeaseLost)
	must(s.Append(ctx, entryOf(a.ID, "taken", &session.Claim{SessionID: a.ID, Holder: "next"})))(t)
	if d := cmp.Diff([]string{"first", "renewed", "taken"}, kinds(t, s, a.ID)); d != "" {
		t.Fatalf("transcript kinds (-want +got):\n%s", d)
	}
}

// testClaimRace: appends under a claim race a takeover of the lease. Every append the
// store accepted committed before the takeover (it precedes every entry of the new
// holder), and every one after it was refused.
func testClaimRace(t *testing.T, s session.Store) {
	ctx := t.Context()
	for round := range 3 {
		a := create(t, s, "/w")
		old, next := &session.Claim{SessionID: a.ID, Holder: "old"}, &session.Claim{SessionID: a.ID, Holder: "next"}
		must(s.AcquireLease(ctx, a.ID, "old", 40*time.Millisecond))(t)
		var wg sync.WaitGroup
		wg.Go(func() {
			for deadline := time.Now().Add(200 * time.Millisecond); time.Now().Before(deadline); {
				if _, err := s.Append(ctx, entryOf(a.ID, "old", old)); err != nil {
					if !sema.IsCode(err, session.CodeLeaseLost) {
						t.Errorf("round %d: %v", round, err)
					}
					return
				}
			}
			t.Errorf("round %d: the old holder's appends were never refused", round)
		})
		wg.Go(func() {
			for {
				if _, err := s.AcquireLease(ctx, a.ID, "next", time.Minute); err == nil {
					break
				} else if !sema.IsCode(err, session.CodeBusy) {
					t.Errorf("round %d: %v", round, err)
					return
				}
				time.Sleep(time.Millisecond)
			}
			must(s.Append(ctx, entryOf(a.ID, "next", next)))(t)
		})
		wg.Wait()
		ks := kinds(t, s, a.ID)
		i := slices.Index(ks, "next")
		if i < 0 {
			t.Fatalf("round %d: the new holder's entry is missing", round)
		}
		if j := slices.Index(ks[i:], "old"); j >= 0 {
			t.Fatalf("round %d: an append of the old holder landed after the takeover (entry %d, the takeover's is %d, of %d)", round, i+j+1, i+1, len(ks))
		}
	}
}
