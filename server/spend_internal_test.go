package server

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/sema-agent/sema/internal/pgtest"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/session/sqlitedb"
)

// eachStoreInternal runs fn with a fresh configuration on SQLite and, when a test
// database is configured, on Postgres.
func eachStoreInternal(t *testing.T, fn func(t *testing.T, cfg Config)) {
	cfg := func(t *testing.T) Config {
		return Config{
			Home:         t.TempDir(),
			OpenProvider: func(string) (model.Provider, string, error) { return nil, "", errors.New("no model in this test") },
			Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		}
	}
	t.Run("sqlite", func(t *testing.T) { fn(t, cfg(t)) })
	t.Run("postgres", func(t *testing.T) {
		if !pgtest.Available(t) {
			t.Skip(pgtest.How)
		}
		c := cfg(t)
		c.Postgres = pgtest.Schema(t)
		fn(t, c)
	})
}

// TestSpendPrunedAsAWorkerStarts: spend rows older than spendKept are deleted by a
// working process (as it starts, then hourly); rows the day's budget reads, and the
// day before, are kept, and the budget reads only the last 24 hours.
func TestSpendPrunedAsAWorkerStarts(t *testing.T) {
	eachStoreInternal(t, func(t *testing.T, cfg Config) {
		ctx := context.Background()
		s, err := New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			s.Shutdown(sctx)
			s.Close()
		})
		now := nowMS()
		for _, r := range []struct {
			ago    time.Duration
			tokens int64
		}{{0, 1}, {25 * time.Hour, 10}, {3 * 24 * time.Hour, 100}, {30 * 24 * time.Hour, 1000}} {
			if err := recordSpend(ctx, s.b.db(), "acme", r.tokens, now-r.ago.Milliseconds()); err != nil {
				t.Fatal(err)
			}
		}
		if used, err := tokensToday(ctx, s.b.db(), "acme", now); err != nil || used != 1 {
			t.Fatalf("the day's spend: %d, %v; want 1 (the rows of the hour only)", used, err)
		}
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		var rows, kept int64
		if err := queryRow(ctx, s.b.db(), `SELECT COUNT(*), CAST(COALESCE(SUM(tokens), 0) AS BIGINT) FROM sema_serve_spend`, nil, &rows, &kept); err != nil {
			t.Fatal(err)
		}
		if rows != 2 || kept != 11 {
			t.Fatalf("after the start: %d spend rows holding %d tokens; want 2 holding 11 (the 3- and 30-day-old rows deleted)", rows, kept)
		}
	})
}

// TestOldSpendTableReplaced: a store made when sema_serve_spend held one row per
// running leg opens with the table in its new layout, and the tasks table gains its
// trace column.
func TestOldSpendTableReplaced(t *testing.T) {
	home := t.TempDir()
	newTestServerAt(t, home).Close()
	db, err := sqlitedb.Open(filepath.Join(home, ServeDatabaseName), sqlitedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`DROP TABLE sema_serve_spend`,
		`CREATE TABLE sema_serve_spend (task_id TEXT PRIMARY KEY, tenant TEXT NOT NULL, tokens BIGINT NOT NULL, updated_ms BIGINT NOT NULL)`,
		`INSERT INTO sema_serve_spend VALUES ('t1', 'acme', 5, 0)`,
		`ALTER TABLE sema_serve_tasks DROP COLUMN trace`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	if err := sqlitedb.Close(db); err != nil {
		t.Fatal(err)
	}
	s := newTestServerAt(t, home)
	defer s.Close()
	ctx := context.Background()
	if err := recordSpend(ctx, s.b.db(), "acme", 7, nowMS()); err != nil {
		t.Fatalf("the spend in the new layout: %v", err)
	}
	var trace sql.NullString
	if err := queryRow(ctx, s.b.db(), `SELECT MAX(trace) FROM sema_serve_tasks`, nil, &trace); err != nil {
		t.Fatalf("the tasks' trace column: %v", err)
	}
}

func newTestServerAt(t *testing.T, home string) *Server {
	t.Helper()
	s, err := New(context.Background(), Config{
		Home:         home,
		OpenProvider: func(string) (model.Provider, string, error) { return nil, "", errors.New("no model in this test") },
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
