package sqlitedb

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// checkpointSettings sets the checkpoints beside the writers to start every `every`
// commits (the tests' commits append four or five frames each), with SQLite's own
// checkpoint out of reach (so only they can keep the log short), for one test.
func checkpointSettings(t *testing.T, every int64) {
	t.Helper()
	oldEvery, oldPages, oldBackstop := checkpointCommits, walCheckpointPages, walBackstopPages
	checkpointCommits, walCheckpointPages, walBackstopPages = every, 4*every, 1<<30
	t.Cleanup(func() { checkpointCommits, walCheckpointPages, walBackstopPages = oldEvery, oldPages, oldBackstop })
}

// countCheckpoints counts the checkpoints started beside the writers during one test.
func countCheckpoints(t *testing.T) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	onCheckpoint = func() { n.Add(1) }
	t.Cleanup(func() { onCheckpoint = nil })
	return &n
}

// walStarts is the log's checkpoint sequence number (walSequence): it counts the times
// the log started over.
func walStarts(t *testing.T, path string) uint32 {
	t.Helper()
	seq, ok := walSequence(path)
	if !ok {
		t.Fatalf("%s-wal has no header", path)
	}
	return seq
}

const payloadBytes = 4096

// writeSteadily runs writers goroutines that each commit perWriter rows of
// payloadBytes through write, all at once, so that commits keep arriving while every
// checkpoint runs. It returns the largest log seen after a commit.
func writeSteadily(t *testing.T, path string, writers, perWriter int, write func(id string, payload []byte) error) int64 {
	t.Helper()
	var maxWAL atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			payload := make([]byte, payloadBytes)
			for i := range perWriter {
				if err := write(fmt.Sprintf("w%d-%d", w, i), payload); err != nil {
					errs <- err
					return
				}
				if fi, err := os.Stat(path + "-wal"); err == nil {
					for {
						m := maxWAL.Load()
						if fi.Size() <= m || maxWAL.CompareAndSwap(m, fi.Size()) {
							break
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return maxWAL.Load()
}

// expectShortLog checks that the log started over (at least four times) since it was
// at starts: it never held the whole stream, whose 8 MiB of rows are over 20 MiB of the
// log's frames (each commit's table, overflow and index pages), all of it in the log
// when it never starts over. Here every checkpoint but the last is followed by a start,
// 9–32 in all; how large the log grows before the first depends on how busy the machine
// is (3–6 MiB alone, up to 18 MiB beside the rest of the test suite), so only the starts
// are held to a number.
func expectShortLog(t *testing.T, path string, starts uint32, maxWAL, checkpoints int64) {
	t.Helper()
	over := walStarts(t, path) - starts
	if checkpoints == 0 || over < 4 {
		t.Errorf("%d checkpoints beside the writers; the log started over %d times (and grew to %d bytes); want it to start over at least 4 times", checkpoints, over, maxWAL)
	}
}

// rowsTable and insertRow are the tests' table and their one write to it.
const (
	rowsTable = `CREATE TABLE IF NOT EXISTS w (id TEXT PRIMARY KEY, p BLOB NOT NULL)`
	insertRow = `INSERT INTO w (id, p) VALUES (?, ?)`
)

// openRows opens the database at path (Open, so with its checkpoints) with the tests'
// table. The caller closes it.
func openRows(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(rowsTable); err != nil {
		Close(db)
		t.Fatal(err)
	}
	return db
}

// txWriter writes a row in a transaction of its own (Tx); groupedWriter, in a group's
// (Grouped).
func txWriter(db *sql.DB) func(id string, payload []byte) error {
	return func(id string, payload []byte) error {
		return Tx(context.Background(), db, func(q Querier) error {
			_, err := q.ExecContext(context.Background(), insertRow, id, payload)
			return err
		})
	}
}

func groupedWriter(db *sql.DB) func(id string, payload []byte) error {
	return func(id string, payload []byte) error {
		return Grouped(context.Background(), db, func(q Querier) error {
			_, err := q.ExecContext(context.Background(), insertRow, id, payload)
			return err
		})
	}
}

// checkRows checks that db holds every row writeSteadily wrote, and that the file is
// sound.
func checkRows(t *testing.T, db *sql.DB, want int) {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM w`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != want {
		t.Fatalf("the database holds %d rows, want %d", n, want)
	}
	checkSound(t, db, "after the writes")
}

// TestCheckpointsKeepTheLogShortUnderSteadyCommits: with SQLite's own checkpoint out of
// reach, a steady stream of commits from several writers writes 8 MiB, and the log
// starts over again and again, so it never holds the whole stream. A checkpoint whose
// one pass ran beside the writers ended behind the newest frame every time: the log
// never started over and held the whole stream; so it did with no checkpoints beside
// the writers at all.
func TestCheckpointsKeepTheLogShortUnderSteadyCommits(t *testing.T) {
	checkpointSettings(t, 16)
	started := countCheckpoints(t)
	path := filepath.Join(t.TempDir(), "c.db")
	db := openRows(t, path)
	defer Close(db)
	starts := walStarts(t, path)
	const writers, perWriter = 8, 256 // 2,048 rows of 4 KiB: 8 MiB
	maxWAL := writeSteadily(t, path, writers, perWriter, txWriter(db))
	expectShortLog(t, path, starts, maxWAL, started.Load())
	checkRows(t, db, writers*perWriter)
	var backstop int
	if err := db.QueryRow(`PRAGMA wal_autocheckpoint`).Scan(&backstop); err != nil || backstop != walBackstopPages {
		t.Errorf("wal_autocheckpoint = %d (%v), want the backstop %d", backstop, err, walBackstopPages)
	}
}

// TestCheckpointsCountGroupedCommits: writes that share a group's transaction count as
// one commit, and keep the log short the same way.
func TestCheckpointsCountGroupedCommits(t *testing.T) {
	checkpointSettings(t, 8)
	started := countCheckpoints(t)
	path := filepath.Join(t.TempDir(), "c.db")
	db := openRows(t, path)
	defer Close(db)
	starts := walStarts(t, path)
	const writers, perWriter = 8, 256
	maxWAL := writeSteadily(t, path, writers, perWriter, groupedWriter(db))
	expectShortLog(t, path, starts, maxWAL, started.Load())
	checkRows(t, db, writers*perWriter)
}

// TestCheckpointsOfASingleConnectionPool: a database whose pool has one connection (the
// service's serve.db, shared with its queue) and whose writers begin their own
// transactions and report them with Committed. The first pass runs on a connection of
// its own, so it does not wait for the pool's; the second takes the pool's one
// connection, and so runs with no other writer of this process. Without Committed the
// log grows with what is written.
func TestCheckpointsOfASingleConnectionPool(t *testing.T) {
	for _, report := range []bool{true, false} {
		t.Run(fmt.Sprintf("committed=%v", report), func(t *testing.T) {
			checkpointSettings(t, 16)
			started := countCheckpoints(t)
			path := filepath.Join(t.TempDir(), "c.db")
			db := openRows(t, path)
			defer Close(db)
			db.SetMaxOpenConns(1)
			starts := walStarts(t, path)
			const writers, perWriter = 4, 512
			maxWAL := writeSteadily(t, path, writers, perWriter, func(id string, payload []byte) error {
				tx, err := db.BeginTx(context.Background(), nil)
				if err != nil {
					return err
				}
				if _, err := tx.Exec(insertRow, id, payload); err != nil {
					tx.Rollback()
					return err
				}
				if err := tx.Commit(); err != nil {
					return err
				}
				if report {
					Committed(db)
				}
				return nil
			})
			if report {
				expectShortLog(t, path, starts, maxWAL, started.Load())
			} else if started.Load() != 0 || walStarts(t, path) != starts || maxWAL < 16<<20 {
				// The calibration: unreported commits are left to SQLite's own checkpoint.
				t.Errorf("unreported commits: %d checkpoints, the log started over %d times and grew to %d bytes; want none, none and the whole stream", started.Load(), walStarts(t, path)-starts, maxWAL)
			}
			checkRows(t, db, writers*perWriter)
		})
	}
}

// TestCloseWaitsForACheckpoint: a database closed while its checkpoint runs (or is
// about to) closes cleanly, and the file opened again holds every committed row.
// Repeated, so that Close lands in each pass.
func TestCloseWaitsForACheckpoint(t *testing.T) {
	checkpointSettings(t, 4)
	started := countCheckpoints(t)
	dir := t.TempDir()
	for round := range 20 {
		path := filepath.Join(dir, fmt.Sprintf("c%d.db", round))
		db := openRows(t, path)
		writeSteadily(t, path, 2, 8+round, txWriter(db))
		if err := Close(db); err != nil {
			t.Fatalf("round %d: close: %v", round, err)
		}
		if Committed(db); len(handlesOf(db)) != 0 {
			t.Fatalf("round %d: a commit reported after Close made the database a handle again", round)
		}
		again, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		checkRows(t, again, 2*(8+round))
		Close(again)
	}
	if started.Load() == 0 {
		t.Fatal("no checkpoint started beside the writers")
	}
}

// handlesOf returns db's handle, if this package keeps one.
func handlesOf(db *sql.DB) []*handle {
	handles.Lock()
	defer handles.Unlock()
	if h, ok := handles.m[db]; ok {
		return []*handle{h}
	}
	return nil
}

// TestCheckpointsBesideALongReader: a reader that keeps its snapshot open holds the
// log's pages it needs; the checkpoints copy what they can, start again only as the
// log grows (not after every commit), and once the reader is gone the log starts over.
func TestCheckpointsBesideALongReader(t *testing.T) {
	checkpointSettings(t, 16)
	started := countCheckpoints(t)
	path := filepath.Join(t.TempDir(), "c.db")
	db := openRows(t, path)
	defer Close(db)
	put := txWriter(db)
	writeSteadily(t, path, 1, 8, put) // a first row or few, for the reader's snapshot
	reader, err := db.BeginTx(context.Background(), &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var before int
	if err := reader.QueryRow(`SELECT count(*) FROM w`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	pinnedAt, startedBefore := walStarts(t, path), started.Load()
	// One writer that lets each checkpoint finish before its next commit: every
	// checkpoint then measures the log, and their count is the rate's, not the machine's.
	payload := make([]byte, payloadBytes)
	for i := range 512 {
		if err := put(fmt.Sprintf("r%d", i), payload); err != nil {
			t.Fatal(err)
		}
		waitCheckpoint(t, db)
	}
	// The log cannot start over while the reader needs its first frames.
	if got := walStarts(t, path); got != pinnedAt {
		t.Errorf("the log started over %d times under a reader that needed it", got-pinnedAt)
	}
	// It grew by every frame of those commits, and a checkpoint started each time it
	// had grown by about walCheckpointPages: measured by the log's growth since the
	// last second pass, not by its whole size over the commits counted since, which
	// under a reader kept growing while the count started over, and the checkpoints
	// came every minCheckpointCommits commits.
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	frames := (fi.Size() - 32) / (4096 + 24)
	if n, most := started.Load()-startedBefore, 2*frames/walCheckpointPages+2; n == 0 || n > most {
		t.Errorf("%d checkpoints while a log of %d frames grew under the reader; want at least one, at most %d", n, frames, most)
	}
	// The reader's snapshot is still whole.
	var still int
	if err := reader.QueryRow(`SELECT count(*) FROM w`).Scan(&still); err != nil || still != before {
		t.Fatalf("the long reader sees %d rows (%v), want its snapshot's %d", still, err, before)
	}
	reader.Rollback()
	writeSteadily(t, path, 4, 64, func(id string, p []byte) error { return put("after"+id, p) })
	// Whether a checkpoint finished during those commits depends on the machine; one run
	// now, with no reader, copies the whole log, and the next commit starts it over.
	checkpointNow(t, db)
	if err := put("last", []byte{0}); err != nil {
		t.Fatal(err)
	}
	if walStarts(t, path) == pinnedAt {
		t.Errorf("the log did not start over once the reader had left (%d checkpoints in all)", started.Load())
	}
	checkRowsAtLeast(t, db, 8+512+256+1)
}

// waitCheckpoint waits for db's running checkpoint, if any, to end.
func waitCheckpoint(t *testing.T, db *sql.DB) {
	t.Helper()
	h := handlesOf(db)[0]
	for {
		h.ckpt.mu.Lock()
		running := h.ckpt.running
		h.ckpt.mu.Unlock()
		if !running {
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// checkpointNow waits for db's running checkpoint, if any, then runs one to its end.
func checkpointNow(t *testing.T, db *sql.DB) {
	t.Helper()
	h := handlesOf(db)[0]
	for {
		h.ckpt.mu.Lock()
		if !h.ckpt.running {
			h.ckpt.running = true
			h.ckpt.wg.Add(1)
			h.ckpt.mu.Unlock()
			break
		}
		h.ckpt.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	h.checkpoint(db, 1)
}

func checkRowsAtLeast(t *testing.T, db *sql.DB, want int) {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM w`).Scan(&n); err != nil || n < want {
		t.Fatalf("the database holds %d rows (%v), want at least %d", n, err, want)
	}
}

// checkpointLoop, in a child process (SQLITEDB_CHECKPOINT_LOOP names a database),
// commits rows with a checkpoint beside the writers every two commits, printing each
// row's number once its commit has returned, until it is killed.
func init() {
	path := os.Getenv("SQLITEDB_CHECKPOINT_LOOP")
	if path == "" {
		return
	}
	checkpointCommits, walCheckpointPages, walBackstopPages = 2, 8, 1<<30
	db, err := Open(path, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	if _, err := db.Exec(rowsTable); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	payload, put := make([]byte, payloadBytes), txWriter(db)
	for i := 0; ; i++ {
		id := fmt.Sprintf("%d-%d", os.Getpid(), i)
		if err := put(id, payload); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		fmt.Println(id)
	}
}

// kill -9 at random moments of a writer whose checkpoints run beside it (one every two
// commits, so nearly always one under way): every commit it reported is in the file
// opened again, and the file is sound.
func TestCheckpointKilledLosesNoCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes for a few seconds")
	}
	path := filepath.Join(t.TempDir(), "k.db")
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), 2))
	var reported []string
	for range 12 {
		cmd, out := StartChild(t, "SQLITEDB_CHECKPOINT_LOOP="+path)
		lines := bufio.NewScanner(out)
		// Kill after a random number of reported commits (between 20 and 200).
		for n := 20 + rng.IntN(180); n > 0 && lines.Scan(); n-- {
			reported = append(reported, lines.Text())
		}
		cmd.Process.Signal(syscall.SIGKILL)
		for lines.Scan() { // what it reported before the kill landed
			reported = append(reported, lines.Text())
		}
		WaitKilled(t, cmd, "the writing process")
	}
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer Close(db)
	checkSound(t, db, "after the kills")
	for _, id := range reported {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM w WHERE id = ?`, id).Scan(&n); err != nil || n != 1 {
			t.Fatalf("commit %s was reported and is not in the file after the kills (%d, %v)", id, n, err)
		}
	}
	t.Logf("%d reported commits across 12 kills, all present", len(reported))
}

func TestCommitsPerCheckpoint(t *testing.T) {
	for _, c := range []struct{ prev, commits, busy, frames, want int64 }{
		{0, 128, 0, 1000, 128}, // as guessed
		{0, 128, 0, 4000, 32},  // grouped commits of many pages: sooner
		{0, 128, 0, 250, 512},  // commits of two pages: later
		{64, 1, 0, 1 << 20, minCheckpointCommits},
		{64, 1 << 20, 0, 1, maxCheckpointCommits},
		// Answers that measure nothing leave the rate as it was: another connection's
		// checkpoint under way (busy, no frames read), a log another one copied and
		// started over (no frames). Taken as a rate, they put checkpoints off for 65,536
		// commits, and the log grew to SQLite's own checkpoint.
		{64, 128, 1, -1, 64},
		{64, 128, 0, 0, 64},
		{0, 128, 1, -1, 0}, // still the first count
	} {
		if got := nextEvery(c.prev, c.commits, c.busy, c.frames); got != c.want {
			t.Errorf("nextEvery(%d before, %d commits, busy %d, %d frames) = %d, want %d", c.prev, c.commits, c.busy, c.frames, got, c.want)
		}
	}
}

// TestCloseDoesNotWaitForAWriter: a checkpoint waiting at the gate for its second pass,
// behind a writer that does not finish, gives the pass up when the database is closed,
// so Close returns. The writer then ends as it would have (database/sql lets a
// transaction under way finish), and the file holds its row exactly when it committed.
func TestCloseDoesNotWaitForAWriter(t *testing.T) {
	checkpointSettings(t, 1)
	atGate := make(chan struct{}, 1)
	beforeSecondPass = func() {
		select {
		case atGate <- struct{}{}:
		default:
		}
	}
	t.Cleanup(func() { beforeSecondPass = nil })
	path := filepath.Join(t.TempDir(), "c.db")
	db := openRows(t, path)
	held, release := make(chan struct{}), make(chan struct{})
	writerDone := make(chan error, 1)
	go func() {
		// The writer takes the gate before the checkpoint it starts reaches it.
		writerDone <- Tx(context.Background(), db, func(q Querier) error {
			if _, err := q.ExecContext(context.Background(), `INSERT INTO w (id, p) VALUES ('stuck', x'00')`); err != nil {
				return err
			}
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	// A commit elsewhere (not through the gate) starts a checkpoint, which then waits at
	// the gate the stuck writer holds.
	Committed(db)
	select {
	case <-atGate:
	case <-time.After(10 * time.Second):
		t.Fatal("no checkpoint went to the gate")
	}
	closed := make(chan error, 1)
	go func() { closed <- Close(db) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for the writer at the gate")
	}
	close(release)
	werr := <-writerDone
	again, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer Close(again)
	checkSound(t, again, "after Close gave up its checkpoint")
	var n int
	if err := again.QueryRow(`SELECT count(*) FROM w WHERE id = 'stuck'`).Scan(&n); err != nil || (werr == nil) != (n == 1) {
		t.Fatalf("the writer's transaction ended with %v and the file holds %d of its rows (%v)", werr, n, err)
	}
}
