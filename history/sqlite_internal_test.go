package history

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/sema-agent/sema/session/sqlitedb"
)

// A transaction whose context ends before it commits is rolled back by database/sql,
// and the commit then finds it gone (sql.ErrTxDone); the store reports the
// cancellation, not a fault of its own, and nothing is stored.
func TestSQLiteTxCutOffByCancel(t *testing.T) {
	t.Parallel()
	s, err := OpenSQLite(filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	err = s.tx(ctx, func(q sqlitedb.Querier) error {
		if _, err := q.ExecContext(ctx, hq.InsertBoundary, "S", 1, string(KindTurn), 1); err != nil {
			return err
		}
		cancel()
		// database/sql rolls the transaction back on a goroutine of its own once ctx
		// ends; a statement that does not watch ctx tells when it has.
		for {
			_, err := q.ExecContext(context.Background(), `SELECT 1`)
			if errors.Is(err, sql.ErrTxDone) {
				return nil
			}
		}
	})
	if !errors.Is(err, context.Canceled) || errors.Is(err, sql.ErrTxDone) {
		t.Fatalf("a transaction cut off by its context = %v, want context.Canceled", err)
	}
	bs, err := s.Boundaries(t.Context(), "S")
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 0 {
		t.Fatalf("a transaction cut off by its context stored %+v", bs)
	}
}
