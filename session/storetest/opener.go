package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/session"
)

// testCreateLeased: a store that opens a new session in one transaction (session.Opener)
// leaves what Create, AcquireLease and StartLeg leave — the session, held by its holder,
// its first leg running — and refuses, changing nothing, an id taken or a bad lease.
func testCreateLeased(t *testing.T, s session.Store) {
	o, ok := s.(session.Opener)
	if !ok {
		t.Skip("the store has no CreateLeased")
	}
	ctx := t.Context()
	in := session.Session{Root: "/w", FSID: "host", Model: "m", Mode: "default", EffectiveMode: "acceptEdits", Title: "fix the build"}
	got, leg, err := o.CreateLeased(ctx, in, "holder a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !uuidRE.MatchString(got.ID) || got.Root != "/w" || got.Title != "fix the build" || got.Model != "m" || got.CreatedAt.IsZero() {
		t.Fatalf("session %+v", got)
	}
	if leg.SessionID != got.ID || leg.Number != 1 || leg.Status != sema.StatusRunning || !leg.EndedAt.IsZero() || !uuidRE.MatchString(leg.ID) {
		t.Fatalf("leg %+v", leg)
	}
	stored := must(s.Get(ctx, got.ID))(t)
	if stored.ID != got.ID || stored.Root != got.Root || stored.Title != got.Title || !stored.CreatedAt.Equal(got.CreatedAt) ||
		stored.Mode != "default" || stored.EffectiveMode != "acceptEdits" {
		t.Fatalf("Get %+v, CreateLeased returned %+v", stored, got)
	}
	if legs := must(s.Legs(ctx, got.ID))(t); len(legs) != 1 || legs[0].ID != leg.ID || legs[0].Status != sema.StatusRunning {
		t.Fatalf("legs %+v, want the one leg %s running", legs, leg.ID)
	}
	// The lease is held: another holder is refused; the holder renews it and writes under it.
	_, err = s.AcquireLease(ctx, got.ID, "holder b", time.Minute)
	wantCode(t, err, session.CodeBusy)
	must(s.RenewLease(ctx, got.ID, "holder a", time.Minute))(t)
	claim := &session.Claim{SessionID: got.ID, Holder: "holder a"}
	must(s.Append(ctx, session.Entry{SessionID: got.ID, LegID: leg.ID, Kind: "user", Payload: json.RawMessage(`{}`), Claim: claim}))(t)
	if next := must(s.StartLeg(ctx, got.ID))(t); next.Number != 2 {
		t.Fatalf("the next leg is number %d, want 2", next.Number)
	}

	// An id taken: refused, and the session it names is as it was.
	in.ID, in.Title = got.ID, "another"
	_, _, err = o.CreateLeased(ctx, in, "holder b", time.Minute)
	wantCode(t, err, session.CodeExists)
	if after := must(s.Get(ctx, got.ID))(t); after.Title != "fix the build" {
		t.Fatalf("a refused CreateLeased changed the session: %+v", after)
	}
	if legs := must(s.Legs(ctx, got.ID))(t); len(legs) != 2 {
		t.Fatalf("a refused CreateLeased changed the legs: %+v", legs)
	}
	_, err = s.AcquireLease(ctx, got.ID, "holder b", time.Minute)
	wantCode(t, err, session.CodeBusy)

	// Bad arguments: nothing is stored.
	fresh := session.Session{ID: session.NewID(), Root: "/w"}
	for name, call := range map[string]func() error{
		"no root": func() error {
			_, _, err := o.CreateLeased(ctx, session.Session{ID: fresh.ID}, "h", time.Minute)
			return err
		},
		"no holder": func() error { _, _, err := o.CreateLeased(ctx, fresh, "", time.Minute); return err },
		"no ttl":    func() error { _, _, err := o.CreateLeased(ctx, fresh, "h", 0); return err },
		"negative":  func() error { _, _, err := o.CreateLeased(ctx, fresh, "h", -time.Second); return err },
	} {
		err := call()
		if sema.CodeOf(err) != session.CodeInvalid && sema.CodeOf(err) != session.CodeLeaseInvalid {
			t.Fatalf("%s: %v, want %s or %s", name, err, session.CodeInvalid, session.CodeLeaseInvalid)
		}
		if _, err := s.Get(ctx, fresh.ID); !sema.IsCode(err, session.CodeNotFound) {
			t.Fatalf("%s: a refused CreateLeased stored the session (%v)", name, err)
		}
	}
}
