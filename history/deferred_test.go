package history_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/history/historytest"
	"github.com/sema-agent/sema/session"
)

// A deferred store is the store it opened: it passes the conformance suite over the
// SQLite store on the session store's file, its opening a little late.
func TestDeferredConformance(t *testing.T) {
	t.Parallel()
	historytest.Run(t, func(t *testing.T) history.Store {
		return history.Deferred(func() (history.Store, error) {
			time.Sleep(time.Millisecond) // the calls wait for it
			ss, err := session.OpenSQLite(filepath.Join(t.TempDir(), "sema.db"))
			if err != nil {
				return nil, err
			}
			t.Cleanup(func() { ss.Close() })
			return history.NewSQLite(t.Context(), ss.DB())
		})
	})
}

// A failed opening fails every call with its error.
func TestDeferredFails(t *testing.T) {
	t.Parallel()
	broken := errors.New("the state database is damaged")
	d := history.Deferred(func() (history.Store, error) { return nil, sema.Errorf("store.corrupt", "damaged: %w", broken) })
	ctx := t.Context()
	calls := map[string]error{}
	_, calls["MintBoundary"] = d.MintBoundary(ctx, "s", 1)
	_, calls["Boundaries"] = d.Boundaries(ctx, "s")
	_, _, calls["Lookup"] = d.Lookup(ctx, "s", "k")
	_, _, calls["Insert"] = d.Insert(ctx, history.Record{Scope: "s", Key: "k"}, nil)
	_, calls["Records"] = d.Records(ctx, "s", 0)
	_, calls["Blob"] = d.Blob(ctx, "sum")
	calls["Delete"] = d.Delete(ctx, 1)
	calls["SetAfter"] = d.SetAfter(ctx, 1, history.AfterAbsent)
	calls["SetPending"] = d.SetPending(ctx, 1, history.AfterAbsent)
	_, _, calls["MintRewind"] = d.MintRewind(ctx, "s", 1, nil)
	_, calls["CarryFork"] = d.CarryFork(ctx, "a", "b")
	calls["Forget"] = d.Forget(ctx, "s")
	for method, err := range calls {
		if !errors.Is(err, broken) {
			t.Errorf("%s: %v, want the opening's error", method, err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}
