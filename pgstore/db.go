package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/session/storecode"
)

// Codes of the errors Open and New return themselves; the stores' refusals carry the codes
// of packages session and history.
const (
	// CodeOpenFailed reports a database that cannot be reached or prepared: a connection
	// string that does not parse, a server that does not answer or refuses the login, a
	// role that may not create the tables. The message says which, never with the
	// password. It is the code package statedir uses for a SQLite file it cannot open.
	CodeOpenFailed = "store.open_failed"
	// CodeSchemaTooNew refuses a database whose sema tables were written by a newer
	// version of sema; nothing is changed in it. It is the SQLite stores' code.
	CodeSchemaTooNew = storecode.SchemaTooNew
	// CodeClosed answers a call on a store whose DB was closed, as the SQLite and memory
	// stores do.
	CodeClosed = storecode.Closed
)

// DB is a PostgreSQL database holding sema's session and file-history tables, reached
// through a connection pool. It and its stores are safe for concurrent use.
type DB struct {
	pool   *pgxpool.Pool
	own    bool
	closed atomic.Bool
}

// Open connects to the database dsn names (a postgres:// URL or key=value pairs, as
// pgxpool.ParseConfig reads them), migrates sema's tables and returns the DB, which owns
// its pool: Close closes it. Failures are *sema.Error values with CodeOpenFailed or
// CodeSchemaTooNew; no message contains the password of dsn.
func Open(ctx context.Context, dsn string) (*DB, error) {
	return OpenWith(ctx, dsn, Options{})
}

// Options are how OpenWith builds its pool where the connection string is silent.
type Options struct {
	// MaxConns is the pool's size when the connection string names no pool_max_conns;
	// zero keeps pgxpool's default, the larger of 4 and the number of CPUs. A service
	// needs more than a single run: connections held by LISTEN are out of the pool for
	// good, and each statement holds its connection while the process that sent it waits
	// to be scheduled again.
	MaxConns int32
}

// OpenWith is Open with o applied: the connection string's pool_max_conns, when it
// names one, is the operator's and wins over o.MaxConns.
func OpenWith(ctx context.Context, dsn string, o Options) (*DB, error) {
	if o.MaxConns < 0 {
		return nil, sema.Errorf(CodeOpenFailed, "pgstore.Options.MaxConns is %d; give a positive pool size, or zero for pgxpool's default", o.MaxConns)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's parse error keeps the whole connection string (and so the password) in a
		// field and its cause; neither is passed on.
		if strings.Contains(dsn, "pool_") {
			return nil, sema.Errorf(CodeOpenFailed,
				"the PostgreSQL connection string does not parse; check its pool_ settings (pool_max_conns is a whole number, at least 1) and the rest: postgres://USER@HOST:PORT/DATABASE?sslmode=… or key=value pairs")
		}
		return nil, sema.Errorf(CodeOpenFailed,
			"the PostgreSQL connection string does not parse; write it as postgres://USER@HOST:PORT/DATABASE?sslmode=… or as key=value pairs")
	}
	where := describe(cfg.ConnConfig.Config)
	if o.MaxConns > 0 && !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = o.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, openFailed(where, cfg.ConnConfig.Password, err)
	}
	// The pool connects lazily; a ping makes a wrong address or login fail here, at Open,
	// rather than in the first call of a run.
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, openFailed(where, cfg.ConnConfig.Password, err)
	}
	db := &DB{pool: pool, own: true}
	if err := db.migrate(ctx); err != nil {
		pool.Close()
		return nil, prepareFailed(where, cfg.ConnConfig.Password, err)
	}
	return db, nil
}

// New builds a DB on a pool the caller owns and migrates sema's tables in the database
// (and schema, by the pool's search_path) it reaches. Close then leaves the pool open.
func New(ctx context.Context, pool *pgxpool.Pool) (*DB, error) {
	db := &DB{pool: pool}
	if err := db.migrate(ctx); err != nil {
		c := pool.Config().ConnConfig
		return nil, prepareFailed(describe(c.Config), c.Password, err)
	}
	return db, nil
}

// Sessions returns the session store on the database.
func (db *DB) Sessions() *Sessions { return &Sessions{db: db} }

// History returns the file-history store on the database.
func (db *DB) History() *History { return &History{db: db} }

// Pool returns the connection pool, for a caller that shares the database (a job queue
// in the same transaction, say).
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Close ends the stores: later calls fail with CodeClosed. It closes the pool when Open
// made it, and leaves a pool given to New open for its owner. Closing twice is harmless.
func (db *DB) Close() error {
	if db.closed.Swap(true) {
		return nil
	}
	if db.own {
		db.pool.Close()
	}
	return nil
}

// describe names the database a config reaches, without its password.
func describe(c pgconn.Config) string {
	return fmt.Sprintf("%s:%d, database %q as user %q", c.Host, c.Port, c.Database, c.User)
}

// scrub makes a driver's error text part of one sentence: on one line, and without the
// password, in case a driver ever quotes it.
func scrub(text, password string) string {
	if password != "" {
		text = strings.ReplaceAll(text, password, "xxxxx")
	}
	return strings.Join(strings.Fields(text), " ")
}

func openFailed(where, password string, err error) error {
	return &sema.Error{Code: CodeOpenFailed,
		Message: fmt.Sprintf("cannot connect to PostgreSQL at %s: %s; check that the server runs and that the address, user and password are right",
			where, scrub(err.Error(), password)),
		Err: err}
}

func prepareFailed(where, password string, err error) error {
	var se *sema.Error
	if errors.As(err, &se) {
		return err
	}
	return &sema.Error{Code: CodeOpenFailed,
		Message: fmt.Sprintf("cannot create or migrate sema's tables in PostgreSQL at %s: %s; the role needs CREATE on the schema in its search_path",
			where, scrub(err.Error(), password)),
		Err: err}
}

// querier is what a statement runs on: the pool (each statement its own transaction) or
// an open transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// q returns the pool to run a statement on, or CodeClosed.
func (db *DB) q() (querier, error) {
	if db.closed.Load() {
		return nil, sema.Errorf(CodeClosed, "the PostgreSQL store was closed; open it again with pgstore.Open")
	}
	return db.pool, nil
}

// Retries of a write the database aborted because of a race it resolves by failing one
// side: serialization failures, deadlocks (two transactions locking rows in opposite
// orders, e.g. a claim and a prune of the same session), and a foreign key that a
// concurrent delete invalidated (a blob dropped by one transaction while another records
// a new use of it). The next attempt sees the winner's commit and decides again.
const attempts = 5

func retryable(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Code {
	case "40001", "40P01", "23503":
		return true
	}
	return false
}

// run runs fn, again when the database aborted it for a race (see retryable), and reports
// a failure that the context's end caused as that (errors.Is finds context.Canceled).
// fn must have no effect outside the database other than assigning its results.
func (db *DB) run(ctx context.Context, fn func(q querier) error) error {
	q, err := db.q()
	if err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		err = fn(q)
		if !retryable(err) || attempt == attempts || ctx.Err() != nil {
			return fault(ctx, err)
		}
		time.Sleep(time.Duration(attempt) * time.Millisecond)
	}
}

// tx runs fn in one transaction, committed when fn returns nil, as run runs a statement.
func (db *DB) tx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return db.run(ctx, func(q querier) error {
		return pgx.BeginFunc(ctx, q.(*pgxpool.Pool), fn)
	})
}

// fault returns err with the context's error in its chain when the context ended, so a
// caller tells a cancelled call from a fault of the database.
func fault(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var se *sema.Error
	if errors.As(err, &se) {
		return err
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	return err
}

func isUnique(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// Times. timestamptz keeps microseconds; the store's own times are minted by the database
// at that precision, and a caller's time keeps the rest in a column of its own.

// splitTime returns what a timestamptz keeps of t and the nanoseconds below it.
func splitTime(t time.Time) (time.Time, int16) {
	us := t.Truncate(time.Microsecond)
	return us, int16(t.Sub(us))
}

// joinTime is the inverse of splitTime, in UTC.
func joinTime(us time.Time, ns int16) time.Time {
	return us.UTC().Add(time.Duration(ns))
}

// utc returns a time read from the database in UTC, and the zero time for NULL.
func utc(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}
