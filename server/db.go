package server

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"sync"
)

// conn is the SQL the service's own tables need, the same on either backend: queries
// are written with ? placeholders, and the Postgres backend numbers them ($1, $2, …).
// Identifiers, timestamps (unix milliseconds) and JSON (text) are stored in types both
// databases share, so one schema and one set of queries serve both.
type conn interface {
	exec(ctx context.Context, q string, args ...any) (int64, error)
	query(ctx context.Context, q string, args ...any) (rows, error)
}

// rows is a query's answer, read row by row.
type rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// queryRow runs q and scans its first row into dest; no row is errNoRow.
func queryRow(ctx context.Context, c conn, q string, args []any, dest ...any) error {
	r, err := c.query(ctx, q, args...)
	if err != nil {
		return err
	}
	defer r.Close()
	if !r.Next() {
		if err := r.Err(); err != nil {
			return err
		}
		return errNoRow
	}
	return r.Scan(dest...)
}

var errNoRow = errors.New("no row")

// schema is the service's own tables. Tasks, their event streams, tenants, their tokens
// (hashed), the checkpoints they wait on and the sessions they own; River's tables live
// beside them (its own migrations), and the session and history stores keep theirs.
var schema = []string{
	`CREATE TABLE IF NOT EXISTS sema_serve_tenants (
		name TEXT PRIMARY KEY,
		base TEXT NOT NULL,
		max_concurrent INTEGER NOT NULL,
		tokens_per_day BIGINT NOT NULL,
		queue TEXT NOT NULL DEFAULT 'default',
		created_ms BIGINT NOT NULL,
		deleted_ms BIGINT
	)`,
	`CREATE TABLE IF NOT EXISTS sema_serve_tokens (
		hash TEXT PRIMARY KEY,
		tenant TEXT NOT NULL,
		created_ms BIGINT NOT NULL
	)`,
	`CREATE TABLE IF NOT EXISTS sema_serve_tasks (
		id TEXT PRIMARY KEY,
		tenant TEXT NOT NULL,
		session_id TEXT NOT NULL,
		kind TEXT NOT NULL,
		spec TEXT NOT NULL,
		status TEXT NOT NULL,
		checkpoint_id TEXT NOT NULL DEFAULT '',
		decision TEXT NOT NULL DEFAULT '',
		result TEXT NOT NULL DEFAULT '',
		tokens BIGINT NOT NULL DEFAULT 0,
		head_at_start TEXT NOT NULL DEFAULT '',
		began INTEGER NOT NULL DEFAULT 0,
		cancel_requested INTEGER NOT NULL DEFAULT 0,
		created_ms BIGINT NOT NULL,
		updated_ms BIGINT NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS sema_serve_tasks_tenant ON sema_serve_tasks (tenant, status)`,
	`CREATE INDEX IF NOT EXISTS sema_serve_tasks_cancel ON sema_serve_tasks (cancel_requested, status)`,
	`CREATE TABLE IF NOT EXISTS sema_serve_events (
		task_id TEXT NOT NULL,
		seq BIGINT NOT NULL,
		data TEXT NOT NULL,
		PRIMARY KEY (task_id, seq)
	)`,
	`CREATE TABLE IF NOT EXISTS sema_serve_checkpoints (
		id TEXT PRIMARY KEY,
		tenant TEXT NOT NULL,
		task_id TEXT NOT NULL,
		session_id TEXT NOT NULL,
		decision TEXT NOT NULL DEFAULT '',
		created_ms BIGINT NOT NULL,
		decided_ms BIGINT NOT NULL DEFAULT 0
	)`,
	`CREATE INDEX IF NOT EXISTS sema_serve_checkpoints_open ON sema_serve_checkpoints (tenant, decided_ms)`,
	`CREATE TABLE IF NOT EXISTS sema_serve_sessions (
		id TEXT PRIMARY KEY,
		tenant TEXT NOT NULL,
		created_ms BIGINT NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS sema_serve_sessions_tenant ON sema_serve_sessions (tenant, created_ms)`,
}

// sqlConn is conn over database/sql (the SQLite backend), outside a transaction or, with
// tx, inside one. Its statements are prepared once per process (stmts): SQLite's parser
// is otherwise a sixth of the service's CPU under load.
type sqlConn struct {
	db    *sql.DB
	tx    *sql.Tx
	stmts *stmtCache
}

func (c sqlConn) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if c.tx == nil {
		return c.stmts.get(ctx, c.db, q)
	}
	// Inside a transaction the database's one connection is the transaction's: a query
	// prepared before runs as the transaction's copy (closed with it); a new one is
	// prepared on the transaction, and for the cache once the transaction has ended.
	if st, ok := c.stmts.m.Load(q); ok {
		return c.tx.StmtContext(ctx, st.(*sql.Stmt)), nil
	}
	c.stmts.pending.Store(q, true)
	return c.tx.PrepareContext(ctx, q)
}

func (c sqlConn) exec(ctx context.Context, q string, args ...any) (int64, error) {
	st, err := c.stmt(ctx, q)
	if err != nil {
		return 0, err
	}
	r, err := st.ExecContext(ctx, args...)
	if err != nil {
		return 0, err
	}
	return r.RowsAffected()
}

func (c sqlConn) query(ctx context.Context, q string, args ...any) (rows, error) {
	st, err := c.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	r, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{r}, nil
}

// stmtCache holds the prepared form of each query the service has run: its queries are
// a fixed set of literals, so the cache stays small.
type stmtCache struct {
	m       sync.Map // query → *sql.Stmt
	pending sync.Map // query → true: met inside a transaction, to prepare after it
}

// fill prepares the queries first met inside a transaction; db's connection is free.
func (c *stmtCache) fill(ctx context.Context, db *sql.DB) {
	c.pending.Range(func(q, _ any) bool {
		c.pending.Delete(q)
		c.get(ctx, db, q.(string)) // on a failure, the next use prepares it again
		return true
	})
}

func (c *stmtCache) get(ctx context.Context, db *sql.DB, q string) (*sql.Stmt, error) {
	if st, ok := c.m.Load(q); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	if prev, loaded := c.m.LoadOrStore(q, st); loaded {
		st.Close()
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { r.Rows.Close() }

// numbered rewrites ? placeholders as $1, $2, … (the service's queries hold no ? in a
// string literal).
func numbered(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}
