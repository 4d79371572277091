package server

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/session/sqlitedb"
	"github.com/sema-agent/sema/statedir"
)

// backend is where the service keeps everything: its own tables, the session and
// file-history stores, and River's queue. Two exist: SQLite files in the state
// directory (one machine) and one Postgres database (many machines).
type backend interface {
	// db is the service's tables outside a transaction.
	db() conn
	// tx runs fn in one transaction of the service's tables; enqueue inserts the job
	// that runs a task into River's queue (the named one) in that same transaction, so a
	// task row and its job exist together or not at all.
	tx(ctx context.Context, fn func(c conn, enqueue enqueueFunc) error) error
	sessions() session.Store
	history() history.Store
	// startQueue starts River's client with the service's worker.
	startQueue(ctx context.Context, w *river.Workers, q queueConfig) error
	// stopQueue stops fetching jobs and waits for running ones until ctx ends, then
	// calls cancel (which ends the running legs; their workers snooze their jobs for
	// another process) and waits for the workers to return.
	stopQueue(ctx context.Context, cancel func()) error
	close() error
}

// queueConfig is how River runs the service's jobs.
type queueConfig struct {
	// workers is how many tasks one process runs at once.
	workers int
	// rescueAfter is how long a job may look stuck (its process gone) before River
	// hands it to another worker. A live worker's leg holds its session's lease, so a
	// job rescued too early waits (session.busy snoozes it) instead of running twice.
	rescueAfter time.Duration
	// queues are the River queues this process works: the tenants' queues whose base
	// directories exist on this machine.
	queues []string
	// poll is how often a worker looks for new jobs when nothing woke it.
	poll time.Duration
}

// enqueueFunc inserts the job of task taskID on the named River queue, in the
// transaction it was handed with.
type enqueueFunc func(taskID, queue string) error

func (q queueConfig) river(w *river.Workers) *river.Config {
	queues := map[string]river.QueueConfig{}
	for _, name := range q.queues {
		queues[name] = river.QueueConfig{MaxWorkers: q.workers}
	}
	return &river.Config{
		Queues:               queues,
		Workers:              w,
		JobTimeout:           -1, // a task runs as long as its budgets let it
		RescueStuckJobsAfter: q.rescueAfter,
		FetchPollInterval:    q.poll,
		FetchCooldown:        q.poll / 2,
		MaxAttempts:          25,
	}
}

// sqliteBackend keeps the sessions and file history in the state directory's database
// (statedir) and the service's tables and River's in serve.db beside it: one file for the
// queue, because River's SQLite driver wants a pool of one connection, which the stores'
// concurrent readers should not share.
type sqliteBackend struct {
	dir   *statedir.Dir
	serve *sql.DB
	// read is a pool of its own over serve.db for the service's queries outside a
	// transaction: WAL lets them read beside the one writer, where on serve's single
	// connection they queued behind River's and the event log's writes.
	read *sql.DB
	// seen are the queries met inside a transaction, prepared after it (inside it the
	// transaction holds serve.db's one connection, which preparing would need).
	seen  sync.Map
	queue *river.Client[*sql.Tx]
	name  string
}

// ServeDatabaseName is the file in the state directory that holds the service's tables
// and River's queue.
const ServeDatabaseName = "serve.db"

func openSQLite(ctx context.Context, home string) (*sqliteBackend, error) {
	dir, err := statedir.Open(ctx, home)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir.Path(), ServeDatabaseName)
	db, err := sqlitedb.Open(path, sqlitedb.Options{})
	if err != nil {
		dir.Close()
		return nil, sema.Errorf(CodeStoreFailed, "cannot open the service database %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	b := &sqliteBackend{dir: dir, serve: db, name: path}
	if err := b.migrate(ctx); err != nil {
		b.close()
		return nil, err
	}
	if b.read, err = sqlitedb.Open(path, sqlitedb.Options{}); err != nil {
		b.close()
		return nil, sema.Errorf(CodeStoreFailed, "cannot open the service database %s: %w", path, err)
	}
	return b, nil
}

func (b *sqliteBackend) migrate(ctx context.Context) error {
	m, err := rivermigrate.New(riversqlite.New(b.serve), nil)
	if err != nil {
		return sema.Errorf(CodeStoreFailed, "cannot prepare the queue's migrations: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return sema.Errorf(CodeStoreFailed, "cannot migrate the queue's tables in %s: %w", b.name, err)
	}
	err = migrateSchema(ctx, func(ctx context.Context, q string) error {
		_, err := b.serve.ExecContext(ctx, q)
		return err
	})
	if err != nil {
		return sema.Errorf(CodeStoreFailed, "cannot create the service's tables in %s: %w", b.name, err)
	}
	return nil
}

func (b *sqliteBackend) db() conn {
	return sqlConn{q: splitQuerier{read: sqlitedb.Reader(b.read), write: sqlitedb.Reader(b.serve)}}
}
func (b *sqliteBackend) sessions() session.Store { return b.dir.Sessions() }
func (b *sqliteBackend) history() history.Store  { return b.dir.History() }

func (b *sqliteBackend) tx(ctx context.Context, fn func(c conn, enqueue enqueueFunc) error) error {
	tx, err := b.serve.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	enqueue := func(taskID, queue string) error {
		if b.queue == nil {
			return sema.Errorf(CodeStoreFailed, "the queue is not started")
		}
		_, err := b.queue.InsertTx(ctx, tx, runArgs{TaskID: taskID}, &river.InsertOpts{Queue: queue})
		return err
	}
	var fresh []string
	learn := func(q string) {
		if _, loaded := b.seen.LoadOrStore(q, true); !loaded {
			fresh = append(fresh, q)
		}
	}
	err = fn(sqlConn{q: sqlitedb.InTx(tx, b.serve), learn: learn}, enqueue)
	if err == nil {
		err = tx.Commit() // and so gives the connection back, for the preparing below
	}
	if err == nil {
		sqlitedb.Committed(b.serve) // for the checkpoints beside the writers
	}
	for _, q := range fresh {
		if err != nil || sqlitedb.Prepare(ctx, b.serve, q) != nil {
			b.seen.Delete(q) // the next transaction that runs it tries again
		}
	}
	return err
}

func (b *sqliteBackend) startQueue(ctx context.Context, w *river.Workers, q queueConfig) error {
	cfg := q.river(w)
	if w == nil {
		cfg = &river.Config{} // inserts only: this process runs no tasks
	}
	c, err := river.NewClient(riversqlite.New(b.serve), cfg)
	if err != nil {
		return err
	}
	b.queue = c
	if w == nil {
		return nil
	}
	return c.Start(ctx)
}

func (b *sqliteBackend) stopQueue(ctx context.Context, cancelLegs func()) error {
	if b.queue == nil {
		return nil
	}
	return stopRiver(ctx, b.queue.Stop, b.queue.StopAndCancel, cancelLegs)
}

// stopRiver stops a River client: gracefully until ctx ends, then by ending the legs
// (the workers ignore River's own cancellation: see taskWorker.Timeout) and waiting a
// little longer for their workers to hand their jobs back.
func stopRiver(ctx context.Context, stop, stopAndCancel func(context.Context) error, cancelLegs func()) error {
	err := stop(ctx)
	if err == nil {
		return nil
	}
	cancelLegs()
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if cerr := stopAndCancel(cctx); cerr != nil {
		return cerr
	}
	return err
}

func (b *sqliteBackend) close() error {
	if b.read != nil {
		sqlitedb.Close(b.read)
	}
	err := sqlitedb.Close(b.serve)
	if cerr := b.dir.Close(); err == nil {
		err = cerr
	}
	return err
}

func (b *sqliteBackend) stateDir() string { return b.dir.Path() }

// splitQuerier sends statements that write to serve.db's one writing connection and
// queries to the pool beside it. A query sees every write committed before it began.
type splitQuerier struct{ read, write sqlitedb.Querier }

func (q splitQuerier) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return q.write.ExecContext(ctx, query, args...)
}

func (q splitQuerier) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return q.read.QueryContext(ctx, query, args...)
}

func (q splitQuerier) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return q.read.QueryRowContext(ctx, query, args...)
}
