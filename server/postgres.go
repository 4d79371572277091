package server

import (
	"context"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/pgstore"
	"github.com/sema-agent/sema/session"
)

// pgBackend keeps everything in one Postgres database: the session and history stores
// (pgstore), the service's tables and River's, on one pool. Every process that names the
// database shares the tasks, their streams and checkpoints; the store is the only copy,
// and LISTEN/NOTIFY only wakes other processes' streams sooner than their polling would.
type pgBackend struct {
	store *pgstore.DB
	pool  *pgxpool.Pool
	queue *river.Client[pgx.Tx]
	// wake is called with a task id when another process appended to its stream.
	wake func(taskID string)
	stop context.CancelFunc
}

// notifyChannel is the LISTEN/NOTIFY channel of appended events; the payload is the
// task id.
const notifyChannel = "sema_serve_events"

// migrationLock is the advisory lock under which a process creates the service's and
// River's tables, so that processes starting together do not race.
const migrationLock = 0x73656d615f737276 // "sema_srv"

// poolSize is the service's Postgres pool where the operator's connection string names
// no pool_max_conns: pgxpool's own default (the larger of 4 and the CPUs) for the legs
// and the API, and two more for the connections LISTEN holds for good (River's queue
// and the event streams'), which pgxpool's default left the legs without. Saturated,
// 1,000 sessions on 2 CPUs (BENCHMARKS.md): 4 connections 155–166 tasks/s, 6 171–175,
// 12 179–184. More is the operator's to give (pool_max_conns): every connection is a
// Postgres backend, and several nodes share the database's max_connections.
func poolSize() int32 { return int32(max(4, runtime.NumCPU()) + 2) }

func openPostgres(ctx context.Context, url string) (*pgBackend, error) {
	store, err := pgstore.OpenWith(ctx, url, pgstore.Options{MaxConns: poolSize()})
	if err != nil {
		return nil, err
	}
	b := &pgBackend{store: store, pool: store.Pool()}
	if err := b.migrate(ctx); err != nil {
		store.Close()
		return nil, err
	}
	return b, nil
}

func (b *pgBackend) migrate(ctx context.Context) error {
	// River's migrations run one transaction per version (a version adds an enum value
	// that the next uses), so the lock that keeps processes from migrating at once is a
	// session lock on a connection of its own, held around them.
	c, err := b.pool.Acquire(ctx)
	if err != nil {
		return sema.Errorf(CodeStoreFailed, "cannot connect for the service's migration: %s", oneLine(err))
	}
	defer c.Release()
	if _, err := c.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLock)); err != nil {
		return sema.Errorf(CodeStoreFailed, "cannot lock the service's migration: %s", oneLine(err))
	}
	defer c.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrationLock))
	m, err := rivermigrate.New(riverpgxv5.New(b.pool), nil)
	if err != nil {
		return sema.Errorf(CodeStoreFailed, "cannot prepare the queue's migrations: %s", oneLine(err))
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return sema.Errorf(CodeStoreFailed, "cannot migrate the queue's tables: %s", oneLine(err))
	}
	err = migrateSchema(ctx, func(ctx context.Context, q string) error {
		_, err := c.Exec(ctx, q)
		return err
	})
	if err != nil {
		return sema.Errorf(CodeStoreFailed, "cannot create the service's tables: %s", oneLine(err))
	}
	return nil
}

// oneLine is a driver error's text on one line (pgx's connection errors never carry
// the password; pgstore.Open has refused a DSN that would).
func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

func (b *pgBackend) db() conn                { return pgConn{b.pool} }
func (b *pgBackend) sessions() session.Store { return b.store.Sessions() }
func (b *pgBackend) history() history.Store  { return b.store.History() }

func (b *pgBackend) tx(ctx context.Context, fn func(c conn, enqueue enqueueFunc) error) error {
	tx, err := b.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	enqueue := func(taskID, queue string) error {
		if b.queue == nil {
			return sema.Errorf(CodeStoreFailed, "the queue is not started")
		}
		_, err := b.queue.InsertTx(ctx, tx, runArgs{TaskID: taskID}, &river.InsertOpts{Queue: queue})
		return err
	}
	if err := fn(pgConn{tx}, enqueue); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

const qNotify = `SELECT pg_notify(?, id) FROM unnest(?::text[]) AS id`

// notifyIn tells the other processes that the streams of tasks ids grew, in the
// transaction c: Postgres sends the word as c commits, for no statement of its own.
func (b *pgBackend) notifyIn(ctx context.Context, c conn, ids []string) error {
	_, err := c.exec(ctx, qNotify, notifyChannel, ids)
	return err
}

// commitHeld commits the held writes of hs and the other processes' wake-up in one
// batch: one implicit transaction (pgx sends a batch with one Sync), so they commit
// together or not at all, for one round trip where BEGIN, the events, the spend, the
// notify and COMMIT took one each.
func (b *pgBackend) commitHeld(ctx context.Context, ids []string, hs []*heldWrites) error {
	batch := &pgx.Batch{}
	for _, st := range statements(true, hs...) {
		batch.Queue(numbered(st.q), st.args...)
	}
	batch.Queue(numbered(qNotify), notifyChannel, ids)
	return b.pool.SendBatch(ctx, batch).Close()
}

// appendTurn commits a transcript batch and a leg's held writes in one transaction,
// with the other processes' wake-up: sent at once, one round trip and one commit.
func (b *pgBackend) appendTurn(ctx context.Context, es []session.Entry, h *heldWrites) ([]string, error) {
	batch := &pgx.Batch{}
	for _, st := range statements(true, h) {
		batch.Queue(numbered(st.q), st.args...)
	}
	batch.Queue(numbered(qNotify), notifyChannel, []string{h.task})
	return b.store.Sessions().AppendBatchWith(ctx, es, batch)
}

func (b *pgBackend) startQueue(ctx context.Context, w *river.Workers, q queueConfig) error {
	cfg := q.river(w)
	if w == nil {
		cfg = &river.Config{}
	}
	c, err := river.NewClient(riverpgxv5.New(b.pool), cfg)
	if err != nil {
		return err
	}
	b.queue = c
	if w != nil {
		if err := c.Start(ctx); err != nil {
			return err
		}
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	b.stop = cancel
	go b.listen(lctx)
	return nil
}

// listen wakes this process's event streams when another process appends; a broken
// connection is replaced after a second (the streams poll meanwhile).
func (b *pgBackend) listen(ctx context.Context) {
	for ctx.Err() == nil {
		b.listenOnce(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (b *pgBackend) listenOnce(ctx context.Context) {
	c, err := b.pool.Acquire(ctx)
	if err != nil {
		return
	}
	defer c.Release()
	if _, err := c.Exec(ctx, `LISTEN `+notifyChannel); err != nil {
		return
	}
	defer c.Exec(context.Background(), `UNLISTEN `+notifyChannel)
	for {
		n, err := c.Conn().WaitForNotification(ctx)
		if err != nil {
			return
		}
		if b.wake != nil {
			b.wake(n.Payload)
		}
	}
}

func (b *pgBackend) stopQueue(ctx context.Context, cancelLegs func()) error {
	if b.stop != nil {
		defer b.stop()
	}
	if b.queue == nil {
		return nil
	}
	return stopRiver(ctx, b.queue.Stop, b.queue.StopAndCancel, cancelLegs)
}

func (b *pgBackend) close() error {
	if b.stop != nil {
		b.stop()
	}
	return b.store.Close()
}

// pgConn is conn over a pgx pool or transaction: the service's ? placeholders become $n.
type pgConn struct {
	q interface {
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	}
}

func (c pgConn) exec(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := c.q.Exec(ctx, numbered(q), args...)
	return tag.RowsAffected(), err
}

func (c pgConn) query(ctx context.Context, q string, args ...any) (rows, error) {
	r, err := c.q.Query(ctx, numbered(q), args...)
	if err != nil {
		return nil, err
	}
	return r, nil
}
