package server

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"

	"github.com/sema-agent/sema/session/sqlitedb"
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

// collect reads every row of a query's answer (rs, err) with scan, and closes it.
func collect[T any](rs rows, err error, scan func(rows) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []T
	for rs.Next() {
		x, err := scan(rs)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, rs.Err()
}

// scanString is collect's scan of a one-column answer.
func scanString(r rows) (string, error) {
	var v string
	err := r.Scan(&v)
	return v, err
}

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
	// The tokens a running leg spent so far, for its tenant's daily budget (dayGuard);
	// a leg's end adds them to its task's tokens, and its next leg starts from nothing.
	`CREATE TABLE IF NOT EXISTS sema_serve_spend (
		task_id TEXT PRIMARY KEY,
		tenant TEXT NOT NULL,
		tokens BIGINT NOT NULL,
		updated_ms BIGINT NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS sema_serve_spend_tenant ON sema_serve_spend (tenant, updated_ms)`,
	// A tenant's policy (Policy, JSON); a tenant without a row has the default one.
	`CREATE TABLE IF NOT EXISTS sema_serve_policies (
		tenant TEXT PRIMARY KEY,
		policy TEXT NOT NULL
	)`,
}

// sqlConn is conn over SQLite (serve.db), outside a transaction or inside one, through
// sqlitedb's prepared statements; learn, inside a transaction, sees each query it runs,
// so the backend can prepare it for the next time (see sqliteBackend.tx).
type sqlConn struct {
	q     sqlitedb.Querier
	learn func(query string)
}

func (c sqlConn) exec(ctx context.Context, q string, args ...any) (int64, error) {
	if c.learn != nil {
		c.learn(q)
	}
	r, err := c.q.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return r.RowsAffected()
}

func (c sqlConn) query(ctx context.Context, q string, args ...any) (rows, error) {
	if c.learn != nil {
		c.learn(q)
	}
	r, err := c.q.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{r}, nil
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
