package sqlitedb

import (
	"context"
	"database/sql"
	"encoding/binary"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
)

// A commit appends to the write-ahead log; a checkpoint copies the log's pages into the
// database file, syncs both, and lets the next commit start the log over. SQLite's own
// checkpoint runs inside the commit that takes the log past 1,000 pages, while that
// commit still holds the write lock, and this process's other writers wait behind it
// (the gate): in a service of a thousand sessions, a turn that waited for a checkpoint
// was among the slowest one percent, and there were more of them than that.
//
// A database from Open checkpoints beside its writers instead. A commit that finds
// about walCheckpointPages pages in the log (see nextEvery) starts a
// checkpoint on a goroutine of its own, in two passes:
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
// keep from starting over.
//
// SQLite tells a commit nothing of the log's size (its WAL hook is not reachable through
// database/sql), so commits are counted, and each checkpoint's first pass, which reports
// the frames the log holds, says how many commits made them: the next checkpoint starts
// after as many commits as make walCheckpointPages at that rate. The first starts after
// checkpointCommits. A service's grouped commits of many turns carry tens of pages
// each, a single turn's a few: a fixed count checkpointed the first far too often.

// walCheckpointPages is the log's size, in pages, at which a checkpoint starts beside
// the writers: SQLite's own threshold. A variable for the tests.
var walCheckpointPages int64 = 1000

// checkpointCommits is how many commits start the first checkpoint: about a thousand
// pages of sema's transactions (a turn's transcript entries, events, a task's row). A
// variable for the tests.
var checkpointCommits int64 = 128

// The bounds of the commits between checkpoints, whatever the rate measured.
const (
	minCheckpointCommits = 4
	maxCheckpointCommits = 1 << 16
)

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
	// every is the commits that start the next checkpoint (0: checkpointCommits).
	every atomic.Int64
	side  *sql.DB // the first pass's connection, opened by the first checkpoint
	// reset is the log as the last second pass left it: its sequence number (which
	// changes when it starts over) and its frames. Only the running checkpoint uses it.
	reset struct {
		known  bool
		seq    uint32
		frames int64
	}

	mu      sync.Mutex
	running bool
	closed  bool
	wg      sync.WaitGroup
	// stop is closed by close: a checkpoint waiting at the gate for its second pass gives
	// it up, so Close never waits for a writer.
	stop     chan struct{}
	stopOnce sync.Once
}

func (c *checkpointer) stopped() chan struct{} {
	c.stopOnce.Do(func() { c.stop = make(chan struct{}) })
	return c.stop
}

// beforeSecondPass, when set (by a test), is called as a checkpoint goes to the gate.
var beforeSecondPass func()

// committed is called after each commit of a write transaction on db (a group's counts
// once) — still at the writer gate from Tx and Grouped, wherever its caller is from
// Committed — and starts a checkpoint when enough have been made. It never waits: the
// checkpoint runs on a goroutine of its own, whose second pass takes the gate once the
// caller has let it go. (A count made outside the gate while a second pass resets it
// may be lost: the next checkpoint starts one commit later.)
func (h *handle) committed(db *sql.DB) {
	c := &h.ckpt
	if !c.on {
		return
	}
	every := c.every.Load()
	if every == 0 {
		every = checkpointCommits
	}
	n := c.commits.Add(1)
	if n < every {
		return
	}
	c.mu.Lock()
	if c.running || c.closed {
		c.mu.Unlock()
		return
	}
	c.running = true
	c.wg.Add(1)
	c.mu.Unlock()
	if onCheckpoint != nil {
		onCheckpoint()
	}
	go h.checkpoint(db, n)
}

// nextEvery is how many commits start the next checkpoint after a first pass that
// answered busy and frames over a log commits made: as many as make walCheckpointPages
// at that rate when the pass read the log (busy 0, frames above 0), else prev, unchanged.
// A busy answer (another connection's checkpoint was under way) and an empty log measure
// nothing, and must not put the next checkpoint off: taken as a rate, either set the
// most commits allowed, and the log grew to SQLite's own checkpoint, inside a commit.
func nextEvery(prev, commits, busy, frames int64) int64 {
	if busy != 0 || frames <= 0 {
		return prev
	}
	return min(max(walCheckpointPages*commits/frames, minCheckpointCommits), maxCheckpointCommits)
}

// checkpoint runs the two passes; commits made the log it starts on. An error in either
// leaves the pages in the log, where every reader still finds them: the next checkpoint
// tries again, and SQLite's own is behind it.
func (h *handle) checkpoint(db *sql.DB, commits int64) {
	c := &h.ckpt
	defer c.wg.Done()
	ctx := context.Background()
	if c.side == nil {
		if side, err := sql.Open("sqlite", c.dsn); err == nil {
			side.SetMaxOpenConns(1)
			c.side = side
		}
	}
	handles.Lock()
	path := h.path
	handles.Unlock()
	if c.side != nil {
		// The commits counted since the last second pass made the frames the log gained
		// since then: all of it if it started over at the first of them, what it holds
		// beyond the second pass's frames if a reader kept it from starting over.
		var busy, frames, copied int64
		if c.side.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied) == nil {
			grown := frames
			if seq, ok := walSequence(path); ok && c.reset.known && seq == c.reset.seq {
				grown = frames - c.reset.frames
			}
			c.every.Store(nextEvery(c.every.Load(), commits, busy, grown))
		}
	}
	// A pass that ends behind the newest frame does not sync the database file; the
	// second would, at the gate, with all of the first's pages still to write. They
	// are written out here, beside the writers, and so are the log's frames appended
	// meanwhile: the second pass's syncs are then of a few pages each.
	// The database file through the descriptor held for it: closing one of its own would
	// drop this process's locks on it (heldfile.go). The log carries no lock.
	h.file.f.Sync() // an error is left to SQLite's own sync, at the gate
	syncFile(path + "-wal")
	if beforeSecondPass != nil {
		beforeSecondPass()
	}
	select {
	case h.gate <- struct{}{}:
		var busy, frames, copied int64
		err := db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied)
		c.commits.Store(0) // the next commit starts the log over, unless a reader holds it
		seq, ok := walSequence(path)
		c.reset.known, c.reset.seq, c.reset.frames = err == nil && busy == 0 && ok, seq, frames
		<-h.gate
	case <-c.stopped():
		// Closing: the pages copied so far stay copied, the rest stay in the log, and
		// SQLite folds the log into the file when the last connection closes.
	}
	c.mu.Lock()
	c.running = false
	c.mu.Unlock()
}

// walSequence is the checkpoint sequence number in the header of the log of the
// database at path (its bytes 12–15, see SQLite's file format): it changes each time the
// log starts over. false: the log has no header to read. Opening and closing the log is
// safe beside the connections (heldfile.go): SQLite takes no lock on it.
func walSequence(path string) (uint32, bool) {
	f, err := os.Open(path + "-wal")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	var hdr [16]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		return 0, false
	}
	return binary.BigEndian.Uint32(hdr[12:16]), true
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
	close(c.stopped())
	c.wg.Wait()
	if c.side != nil {
		c.side.Close()
	}
}
