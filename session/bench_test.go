package session_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/session"
)

// BenchmarkAppend measures one committed transcript entry per op (one transaction each).
func BenchmarkAppend(b *testing.B) {
	payload := json.RawMessage(`{"role":"assistant","content":[{"type":"text","text":"I will run the tests now and report what fails."}]}`)
	for _, tc := range []struct {
		name string
		new  func(b *testing.B) session.Store
	}{
		{"SQLite", func(b *testing.B) session.Store {
			s, err := session.OpenSQLite(filepath.Join(b.TempDir(), "sema.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}},
		{"Memory", func(b *testing.B) session.Store { return session.NewMemory() }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := tc.new(b)
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
		})
	}
}

// BenchmarkTranscript measures reading a 300-entry transcript (appended in batches of
// ten), root to head, per op: the recursive walk of parent links and the rows it returns.
func BenchmarkTranscript(b *testing.B) {
	s, err := session.OpenSQLite(filepath.Join(b.TempDir(), "sema.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
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

// BenchmarkLegLifecycle measures what a runner's leg costs the SQLite store outside its
// turns, per op: a new session with its lease and first leg (CreateLeased), the leg's
// end, the session's mode, and the lease's release — four transactions, as every leg of
// a service's task makes them.
func BenchmarkLegLifecycle(b *testing.B) {
	s, err := session.OpenSQLite(filepath.Join(b.TempDir(), "sema.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		created, leg, err := s.CreateLeased(ctx, session.Session{Root: "/w", Model: "m", Title: "fix the build"}, "holder", time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.EndLeg(ctx, leg.ID, sema.StatusCompleted); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Update(ctx, created.ID, func(s *session.Session) error { s.Mode = "default"; return nil }); err != nil {
			b.Fatal(err)
		}
		if err := s.ReleaseLease(ctx, created.ID, "holder"); err != nil {
			b.Fatal(err)
		}
	}
}
