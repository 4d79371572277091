package pgstore_test

import (
	"encoding/json"
	"testing"

	"github.com/sema-agent/sema/session"
)

// BenchmarkAppend measures one committed transcript entry per op (one transaction each),
// as session's BenchmarkAppend does for SQLite and memory.
func BenchmarkAppend(b *testing.B) {
	payload := json.RawMessage(`{"role":"assistant","content":[{"type":"text","text":"I will run the tests now and report what fails."}]}`)
	s := newDB(b, newSchema(b)).Sessions()
	ctx := b.Context()
	a, err := s.Create(ctx, session.Session{Root: "/w"})
	if err != nil {
		b.Fatal(err)
	}
	leg, err := s.StartLeg(ctx, a.ID)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Append(ctx, session.Entry{SessionID: a.ID, LegID: leg.ID, Kind: "assistant", Payload: payload}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}

// BenchmarkClaim measures one checkpoint claim per op: the conditional update of the
// checkpoint's row and the session's activity, returning the claimed checkpoint. The
// checkpoints are parked before the timer starts.
func BenchmarkClaim(b *testing.B) {
	s := newDB(b, newSchema(b)).Sessions()
	ctx := b.Context()
	a, err := s.Create(ctx, session.Session{Root: "/w"})
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]string, b.N)
	for i := range ids {
		c, err := s.Park(ctx, session.Checkpoint{SessionID: a.ID, Tool: "Bash", Args: json.RawMessage(`{"command":"go test ./..."}`),
			Gate: session.GateToolPermission})
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = c.ID
	}
	d := session.Decision{Verdict: session.VerdictAllow, Reason: "ok"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := s.ClaimCheckpoint(ctx, ids[i], d); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTranscript measures reading a 300-entry transcript, root to head, per op, as
// session's BenchmarkTranscript does for SQLite.
func BenchmarkTranscript(b *testing.B) {
	s := newDB(b, newSchema(b)).Sessions()
	ctx := b.Context()
	a, err := s.Create(ctx, session.Session{Root: "/w"})
	if err != nil {
		b.Fatal(err)
	}
	payload := json.RawMessage(`{"role":"assistant","content":[{"type":"text","text":"I will run the tests now and report what fails."}]}`)
	batch := make([]session.Entry, 10)
	for i := range batch {
		batch[i] = session.Entry{SessionID: a.ID, Kind: "assistant", Payload: payload}
	}
	for range 30 {
		if _, err := s.AppendBatch(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		es, err := s.Transcript(ctx, a.ID, "")
		if err != nil || len(es) != 300 {
			b.Fatalf("Transcript = %d entries, %v; want 300", len(es), err)
		}
	}
}
