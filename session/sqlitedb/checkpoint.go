package sqlitedb

import (
	"context"
	"database/sql"
	"strconv"
	"sync"
	"sync/atomic"
)

// A commit appends to the write-ahead log; a checkpoint copies the log's pages into the
// database file, syncs both, and lets the next commit start the log over. SQLite's own
// checkpoint runs inside the commit that takes the log past 1,000 pages, while that
// commit still holds the write lock, and this process's other writers wait behind it
// (the gate): in a service of a thousand sessions about one turn in twenty waited for a
// checkpoint, and those waits were the slowest one percent of every turn.
//
// A database from Open checkpoints beside its writers instead. Every
// checkpointCommits-th commit starts a checkpoint on a goroutine of its own, in two
// passes:
//   - the first copies the log while the writers go on, on a connection of its own
//     (outside the database's pool, which may have a single connection, as the service's
//     does): a passive checkpoint neither waits for nor blocks readers and writers, and
//     copies what no reader still needs. The file and the log are then synced, still
//     beside the writers;
//   - the second, on the database's own pool with this process's writers held at the
//     gate, copies what they appended meanwhile (little), so the log ends fully copied
//     and the next commit starts it over. Without it the log never started over under a
//     steady stream of commits (each pass ended behind the newest frame) and grew
//     without bound.
//
// SQLite's own checkpoint stays behind it, at walBackstopPages (four times its default):
// for a transaction larger than a whole pass, and for a log another process's writers
// keep from starting over. A commit counts its own transaction, not its size, which is
// what the backstop is for.

// checkpointCommits is how many commits of a database start a checkpoint beside its
// writers. Sema's transactions append a few pages each (a turn's transcript entries,
// events, a task's row), so this is about SQLite's own 1,000 pages. A variable for the
// tests.
var checkpointCommits int64 = 128

// walBackstopPages is where SQLite's own checkpoint still runs inside a commit. A
// variable for the tests, which set it out of reach to see the checkpoints beside the
// writers alone.
var walBackstopPages = 4096

// onCheckpoint, when set (by a test), is told of each checkpoint started beside the
// writers.
var onCheckpoint func()

// walPragma is the connection setting above, as Open's DSN carries it.
func walPragma() string {
	return "wal_autocheckpoint(" + strconv.Itoa(walBackstopPages) + ")"
}

// checkpointer is a database's checkpoints beside its writers: at most one runs at a
// time, and Close waits for it.
type checkpointer struct {
	on      bool   // a database from Open
	dsn     string // how Open opened it, for the first pass's connection
	commits atomic.Int64
	side    *sql.DB // the first pass's connection, opened by the first checkpoint

	mu      sync.Mutex
	running bool
	closed  bool
	wg      sync.WaitGroup
}

// committed is called after each commit of a write transaction on db (a group's counts
// once), still at the writer gate: every checkpointCommits-th starts a checkpoint. It
// never waits: the checkpoint runs on a goroutine of its own, whose second pass takes
// the gate once the caller has let it go.
func (h *handle) committed(db *sql.DB) {
	c := &h.ckpt
	if !c.on || c.commits.Add(1) < checkpointCommits {
		return
	}
	c.mu.Lock()
	if c.running || c.closed {
		c.mu.Unlock()
		return
	}
	c.running = true
	c.commits.Store(0)
	c.wg.Add(1)
	c.mu.Unlock()
	if onCheckpoint != nil {
		onCheckpoint()
	}
	go h.checkpoint(db)
}

// checkpoint runs the two passes. An error in either leaves the pages in the log, where
// every reader still finds them: the next checkpoint tries again, and SQLite's own is
// behind it.
func (h *handle) checkpoint(db *sql.DB) {
	c := &h.ckpt
	defer c.wg.Done()
	ctx := context.Background()
	if c.side == nil {
		if side, err := sql.Open("sqlite", c.dsn); err == nil {
			side.SetMaxOpenConns(1)
			c.side = side
		}
	}
	if c.side != nil {
		c.side.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
	}
	// A pass that ends behind the newest frame does not sync the database file; the
	// second would, at the gate, with all of the first's pages still to write. They
	// are written out here, beside the writers, and so are the log's frames appended
	// meanwhile: the second pass's syncs are then of a few pages each.
	handles.Lock()
	path := h.path
	handles.Unlock()
	syncFile(path) // an error is left to SQLite's own sync, at the gate
	syncFile(path + "-wal")
	h.gate <- struct{}{}
	db.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
	<-h.gate
	c.mu.Lock()
	c.running = false
	c.mu.Unlock()
}

// Committed tells db's checkpoints that a write transaction the caller began itself
// (with db.BeginTx, not Tx or Grouped) has committed; see checkpoint.go. A writer that
// never calls it leaves the log to SQLite's own checkpoint, at four times its size.
func Committed(db *sql.DB) {
	handles.Lock()
	h := handles.m[db]
	handles.Unlock()
	if h != nil { // nil: closed, or never a database of this package
		h.committed(db)
	}
}

// close stops new checkpoints and waits for a running one.
func (c *checkpointer) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.wg.Wait()
	if c.side != nil {
		c.side.Close()
	}
}
