package server

import (
	"context"
	"testing"
	"time"
)

// The service's queries outside a transaction read beside serve.db's one writing
// connection: a query answers while a transaction holds that connection, and sees
// every write committed before it began.
func TestQueriesReadBesideTheWriter(t *testing.T) {
	ctx := context.Background()
	b, err := openSQLite(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	if _, err := b.db().exec(ctx, `INSERT INTO sema_serve_tenants (name, base, max_concurrent, tokens_per_day, created_ms) VALUES ('a', 'default', 0, 0, 1)`); err != nil {
		t.Fatal(err)
	}
	count := func(ctx context.Context) (int, error) {
		rows, err := b.db().query(ctx, `SELECT count(*) FROM sema_serve_tenants`)
		if err != nil {
			return 0, err
		}
		defer rows.Close()
		n := 0
		if rows.Next() {
			err = rows.Scan(&n)
		}
		return n, err
	}
	if n, err := count(ctx); err != nil || n != 1 {
		t.Fatalf("a query after a committed write reads %d (%v), want 1", n, err)
	}
	holding, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- b.tx(ctx, func(c conn, _ enqueueFunc) error {
			if _, err := c.exec(ctx, `INSERT INTO sema_serve_tenants (name, base, max_concurrent, tokens_per_day, created_ms) VALUES ('b', 'default', 0, 0, 1)`); err != nil {
				return err
			}
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	// The bound only stands for "never": the writing connection stays held until the
	// query returns.
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	n, err := count(qctx)
	cancel()
	close(release)
	if err != nil || n != 1 {
		t.Fatalf("a query while a transaction holds the writer: %d, %v; want 1 (the uncommitted row unseen)", n, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n, err := count(ctx); err != nil || n != 2 {
		t.Fatalf("after the commit a query reads %d (%v), want 2", n, err)
	}
}
