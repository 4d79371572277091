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
		trace TEXT NOT NULL DEFAULT '',
		mode_requested TEXT NOT NULL DEFAULT '',
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
	// The tokens each tenant's tasks spent, by the hour the model answered in: every
	// model response adds its tokens as it arrives (see spend.go), so the day's budget
	// counts what a leg spent even when the leg never ends (its process was killed).
	`CREATE TABLE IF NOT EXISTS sema_serve_spend (
		tenant TEXT NOT NULL,
		hour_ms BIGINT NOT NULL,
		tokens BIGINT NOT NULL,
		PRIMARY KEY (tenant, hour_ms)
	)`,
	`CREATE INDEX IF NOT EXISTS sema_serve_spend_hour ON sema_serve_spend (hour_ms)`,
	// The managed settings file the operator attached to a tenant (tenantsettings.go).
	`CREATE TABLE IF NOT EXISTS sema_serve_tenant_settings (
		tenant TEXT PRIMARY KEY,
		path TEXT NOT NULL,
		data TEXT NOT NULL
	)`,
	// A tenant's policy (Policy, JSON); a tenant without a row has the default one.
	`CREATE TABLE IF NOT EXISTS sema_serve_policies (
		tenant TEXT PRIMARY KEY,
		policy TEXT NOT NULL
	)`,
	// The tenants' webhooks (webhooks.go) and their deliveries (webhookdelivery.go).
	`CREATE TABLE IF NOT EXISTS sema_serve_webhooks (
		id TEXT PRIMARY KEY,
		tenant TEXT NOT NULL,
		url TEXT NOT NULL,
		events TEXT NOT NULL,
		format TEXT NOT NULL,
		secret TEXT NOT NULL,
		private_ok INTEGER NOT NULL DEFAULT 0,
		created_ms BIGINT NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS sema_serve_webhooks_tenant ON sema_serve_webhooks (tenant)`,
	`CREATE TABLE IF NOT EXISTS sema_serve_deliveries (
		id TEXT PRIMARY KEY,
		webhook_id TEXT NOT NULL,
		tenant TEXT NOT NULL,
		event TEXT NOT NULL,
		body TEXT NOT NULL,
		status TEXT NOT NULL,
		attempts INTEGER NOT NULL DEFAULT 0,
		last_error TEXT NOT NULL DEFAULT '',
		next_ms BIGINT NOT NULL,
		claimed_until_ms BIGINT NOT NULL DEFAULT 0,
		created_ms BIGINT NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS sema_serve_deliveries_due ON sema_serve_deliveries (status, next_ms)`,
	`CREATE INDEX IF NOT EXISTS sema_serve_deliveries_webhook ON sema_serve_deliveries (webhook_id, created_ms)`,
	// Approval links (links.go): the sha256 of each link's token, never the token.
	`CREATE TABLE IF NOT EXISTS sema_serve_links (
		hash TEXT PRIMARY KEY,
		tenant TEXT NOT NULL,
		checkpoint_id TEXT NOT NULL,
		created_ms BIGINT NOT NULL,
		expires_ms BIGINT NOT NULL,
		used_ms BIGINT NOT NULL DEFAULT 0
	)`,
	// Keys the service makes once and every process shares (the console's cookie key).
	`CREATE TABLE IF NOT EXISTS sema_serve_keys (
		name TEXT PRIMARY KEY,
		key TEXT NOT NULL,
		created_ms BIGINT NOT NULL
	)`,
	// The tenants' schedules (schedules.go): next_ms is the tick a working process
	// claims, advancing it in the transaction that submits the tick's task.
	`CREATE TABLE IF NOT EXISTS sema_serve_schedules (
		id TEXT PRIMARY KEY,
		tenant TEXT NOT NULL,
		cron TEXT NOT NULL,
		task TEXT NOT NULL,
		next_ms BIGINT NOT NULL,
		fired BIGINT NOT NULL DEFAULT 0,
		last_task_id TEXT NOT NULL DEFAULT '',
		last_fired_ms BIGINT NOT NULL DEFAULT 0,
		refused BIGINT NOT NULL DEFAULT 0,
		last_refusal TEXT NOT NULL DEFAULT '',
		created_ms BIGINT NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS sema_serve_schedules_due ON sema_serve_schedules (next_ms)`,
	`CREATE INDEX IF NOT EXISTS sema_serve_schedules_tenant ON sema_serve_schedules (tenant, created_ms)`,
}

// replacedTables are tables whose layout changed incompatibly, each with a query that
// fails on the old layout: a store made before the change drops the old table, and
// the schema creates the new one. sema_serve_spend held one row per running leg (its
// spend so far) before it became the tenants' spend by the hour: what the dropped rows
// held is the spend of the legs running at the upgrade.
var replacedTables = []struct{ table, probe string }{
	{"sema_serve_spend", `SELECT hour_ms FROM sema_serve_spend LIMIT 0`},
}

// addedColumns are the columns added to a table after it was first made: a store made
// before gets each one it lacks.
var addedColumns = []struct{ table, column, def string }{
	{"sema_serve_tasks", "trace", "TEXT NOT NULL DEFAULT ''"},
	{"sema_serve_tasks", "mode_requested", "TEXT NOT NULL DEFAULT ''"},
	{"sema_serve_tasks", "schedule_id", "TEXT NOT NULL DEFAULT ''"},
}

// migrateSchema brings the service's tables to the schema with exec, which runs one
// statement: tables replaced, then created, then given the columns added since. A
// probe that fails is how a missing table or column shows, the same on both databases
// (neither statement may run inside a transaction that a failure would abort).
func migrateSchema(ctx context.Context, exec func(ctx context.Context, q string) error) error {
	for _, r := range replacedTables {
		if exec(ctx, r.probe) != nil {
			if err := exec(ctx, `DROP TABLE IF EXISTS `+r.table); err != nil {
				return err
			}
		}
	}
	for _, q := range schema {
		if err := exec(ctx, q); err != nil {
			return err
		}
	}
	for _, a := range addedColumns {
		if exec(ctx, `SELECT `+a.column+` FROM `+a.table+` LIMIT 0`) != nil {
			if err := exec(ctx, `ALTER TABLE `+a.table+` ADD COLUMN `+a.column+` `+a.def); err != nil {
				return err
			}
		}
	}
	return nil
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
