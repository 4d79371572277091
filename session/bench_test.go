package session_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

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
