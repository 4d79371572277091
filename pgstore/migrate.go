package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sema-agent/sema"
)

// component is one store's share of the database: the name its version is recorded under
// and its migrations, step i moving the schema from version i to i+1. Released steps are
// never edited; a change is a new step at the end.
type component struct {
	name  string
	steps []string
}

var components = []component{
	{"session", sessionSteps},
	{"history", historySteps},
}

const versionTable = `CREATE TABLE IF NOT EXISTS sema_schema_version (
	component  text PRIMARY KEY,
	version    integer NOT NULL,
	updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
)`

// migrateLock serializes migrations of the schema the tables are created in (the first
// of the connection's search_path), database-wide and across processes. The two keys
// are hashes, so another program's advisory locks collide with it only by accident, and
// then merely wait.
const migrateLock = `SELECT pg_advisory_xact_lock(hashtext('sema_schema_version'), hashtext(COALESCE(current_schema(), '')))`

// migrate brings every component up to date. The common case, a database already at this
// build's versions, reads one table and takes no lock. Otherwise all missing steps of all
// components run in one transaction under migrateLock, together with the new versions:
// the first process to take the lock migrates, the others find the work done, and a
// failing step leaves the database as it was.
func (db *DB) migrate(ctx context.Context) error {
	if db.closed.Load() {
		return sema.Errorf(CodeClosed, "the PostgreSQL store was closed; open it again with pgstore.Open")
	}
	have, err := versions(ctx, db.pool)
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && pe.Code == "42P01": // no version table yet: a new database
	case err != nil:
		return fault(ctx, err)
	default:
		if err := checkVersions(have); err != nil || current(have) {
			return err
		}
	}
	return db.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, migrateLock); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, versionTable); err != nil {
			return err
		}
		have, err := versions(ctx, tx)
		if err != nil {
			return err
		}
		if err := checkVersions(have); err != nil {
			return err
		}
		for _, c := range components {
			v := have[c.name]
			if v == len(c.steps) {
				continue
			}
			for i := v; i < len(c.steps); i++ {
				if _, err := tx.Exec(ctx, c.steps[i]); err != nil {
					return fmt.Errorf("migrate %s to version %d: %w", c.name, i+1, err)
				}
			}
			if _, err := tx.Exec(ctx, `INSERT INTO sema_schema_version (component, version) VALUES ($1, $2)
				ON CONFLICT (component) DO UPDATE SET version = excluded.version, updated_at = clock_timestamp()`,
				c.name, len(c.steps)); err != nil {
				return err
			}
		}
		return nil
	})
}

// versions reads the recorded version of each component (absent: 0).
func versions(ctx context.Context, q querier) (map[string]int, error) {
	rows, err := q.Query(ctx, `SELECT component, version FROM sema_schema_version`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	have := map[string]int{}
	for rows.Next() {
		var name string
		var v int
		if err := rows.Scan(&name, &v); err != nil {
			return nil, err
		}
		have[name] = v
	}
	return have, rows.Err()
}

func current(have map[string]int) bool {
	for _, c := range components {
		if have[c.name] != len(c.steps) {
			return false
		}
	}
	return true
}

// checkVersions refuses a database a newer sema migrated: its tables may hold what this
// build would misread.
func checkVersions(have map[string]int) error {
	for _, c := range components {
		if v := have[c.name]; v > len(c.steps) {
			return sema.Errorf(CodeSchemaTooNew,
				"the database holds %s schema version %d but this build knows only up to %d; open it with a newer sema or point the store at another database",
				c.name, v, len(c.steps)).With("component", c.name).With("version", v).With("supported", len(c.steps))
		}
	}
	return nil
}
