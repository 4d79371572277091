// Package sqlitedb opens SQLite files the way sema's stores need them and runs their
// write transactions and schema migrations. The session store and the file-history store
// both build on it, so one database file can hold both and their writers cooperate.
//
// Invariants:
//   - A database opened by [Open] is in WAL mode with a busy timeout and foreign keys on,
//     so readers never block the writer and a second process waits for a lock instead of
//     failing with SQLITE_BUSY.
//   - [Tx] runs one write transaction that takes the write lock at BEGIN (BEGIN
//     IMMEDIATE on a database from Open), so a transaction never fails half-way because
//     another connection wrote first. Writers of one *sql.DB queue in process before they
//     touch SQLite's lock; writers of other processes wait on SQLite's busy handler.
//   - [Migrate] applies a component's schema steps in one transaction, records the version
//     in the schema_version table, and refuses a file written by a newer schema with
//     "store.schema_too_new" instead of reading what it does not understand.
//   - A store never changes a file it does not recognize: [OpenAttached] first reads the
//     file ([CheckFile]) and refuses one that is not SQLite, is another program's
//     database, is damaged (PRAGMA integrity_check) or is empty ("store.corrupt"),
//     before any pragma or migration could write to it. [Open] creates a new file
//     whole, so an empty one is never a store being made.
//   - The faults of the file itself carry codes wherever they surface (opening, a
//     transaction, a read): "store.corrupt", "store.readonly" (no permission, a
//     read-only file system, SQLITE_READONLY) and "store.locked" (another process held
//     the lock past the busy timeout); so do the host's: "io.disk_full", "io.no_memory",
//     "io.fd_exhausted" (see sema.HostFault).
//   - A connection of a database from [Open] keeps the compiled statement of each text
//     run through it unprepared (up to 128, see keptstmt.go): River's driver runs all its
//     statements so, and SQLite then parsed every one at every call.
//   - A store declares its share of a file as a [Schema] and reaches the file only through
//     [OpenAttached] (a file it owns) or [Attach] (a file it shares), so every store of a
//     file runs with the same pragmas, versioning and prepared statements.
package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/session/storecode"
	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Options tunes Open. The zero value is the default every store uses.
type Options struct {
	// BusyTimeout is how long a statement waits for a lock held by another connection
	// or process before it fails. Zero means 10 seconds.
	BusyTimeout time.Duration
	// Durable makes every commit reach the disk before it returns (synchronous=FULL).
	// The default, synchronous=NORMAL under WAL, keeps every committed transaction
	// across a crash of the process at any instant and never corrupts the file; only a
	// power loss or an operating system crash may drop the newest commits.
	Durable bool
	// Image, when not empty, is what a missing file is created as instead of an empty
	// database: a database file whose tables are exactly those the migration steps of
	// the schemas that attach to it make, at the versions it records (a store's test
	// checks its image against a file made by the steps). Attaching a schema the image
	// holds at its current version then runs neither a migration nor the shape check:
	// SQLite parsing every step's statements was most of a first run's store cost.
	Image []byte
}

func (o Options) busyTimeout() time.Duration {
	if o.BusyTimeout > 0 {
		return o.BusyTimeout
	}
	return 10 * time.Second
}

// Codes shared by the stores (package storecode), named here too for the callers of
// this package.
const (
	// CodeSchemaTooNew refuses a database written by a newer version of sema.
	CodeSchemaTooNew = storecode.SchemaTooNew
	// CodeClosed answers a call on a store that was closed.
	CodeClosed = storecode.Closed
)

// Open opens (creating when absent) the SQLite database at path. A new file is created
// whole (see create: never a file of zero bytes, even across a crash) and readable by
// its owner only, because it holds transcripts and file contents; SQLite gives its -wal
// and -shm files the same permissions. The parent directory must exist.
func Open(path string, opts Options) (*sql.DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	// A creation killed half-way left its temporary files, never a file at abs.
	removeStale(abs)
	created := false
	if _, err := os.Lstat(abs); errors.Is(err, fs.ErrNotExist) {
		if created, err = create(abs, opts.Image); err != nil {
			return nil, fault(abs, opts.busyTimeout(), fmt.Errorf("create database: %w", err))
		}
	}
	// Held open from before the first connection to after the last (heldfile.go).
	file, writeErr, err := hold(abs)
	if err == nil && writeErr != nil {
		file.release()
		err = writeErr
	}
	if err != nil {
		return nil, fault(abs, opts.busyTimeout(), fmt.Errorf("open database: %w", err))
	}

	syncMode := "NORMAL"
	if opts.Durable {
		syncMode = "FULL"
	}
	q := url.Values{}
	q.Set("_pragma", "busy_timeout("+strconv.FormatInt(opts.busyTimeout().Milliseconds(), 10)+")")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous("+syncMode+")")
	q.Add("_pragma", walPragma()) // checkpoints beside the writers: see checkpoint.go
	q.Set("_txlock", "immediate")
	// A file: URI with an escaped path keeps a '?' or '#' in a directory name from being
	// read as the start of the parameters.
	dsn := "file:" + (&url.URL{Path: abs}).EscapedPath() + "?" + q.Encode()
	connector, err := keepingConnectorFor(dsn)
	if err != nil {
		file.release()
		return nil, err
	}
	db := sql.OpenDB(connector)
	h := handleFor(db)
	handles.Lock()
	h.file = file // Close releases it
	handles.Unlock()
	// WAL lets readers run beside the one writer; a handful of connections is enough,
	// and keeping them idle spares re-running the pragmas on every call.
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	if err := db.PingContext(context.Background()); err != nil {
		Close(db)
		return nil, fault(abs, opts.busyTimeout(), fmt.Errorf("open database %s: %w", abs, err))
	}
	handles.Lock()
	h.path, h.busy, h.created, h.fromImage = abs, opts.busyTimeout(), created, created && len(opts.Image) > 0
	h.ckpt.on, h.ckpt.dsn = true, dsn
	handles.Unlock()
	return db, nil
}

// Schema is one store's share of a database file: the name its version is recorded
// under, its migrations and the statements it runs often. The session store and the
// file-history store each declare one, so both reach a file through the same steps
// (Open's pragmas, Migrate's versioning, Prepare) whether they own it or share it.
type Schema struct {
	// Component names the store in the schema_version table ("session", "history"). It
	// must be unique among the stores that share a file.
	Component string
	// Steps are the store's migrations, as Migrate takes them.
	Steps []string
	// Queries are the statements prepared when the store attaches (see Prepare). Nil:
	// none; every statement is then parsed when it runs. Without a Shape, one that does
	// not compile refuses the attach; with one, they are compiled beside the rest of the
	// opening (the store's tests run each against that shape), and one that does not
	// compile fails where it runs.
	Queries []string
	// Shape, when not nil, is the shape Steps give a fresh database (WantShape), known
	// ahead: the check at attach compares the file's tables with it instead of replaying
	// every step in an in-memory database, which was most of what opening an existing
	// file cost a process. The store's test checks it against WantShape.
	Shape map[string]string
}

// Attach readies db for the store s describes: it migrates s.Component's tables, checks
// that they are the tables s.Steps make (a file whose schema text was damaged is refused
// with CodeCorrupt), and prepares s.Queries. A store built on a database someone else opened (and will close)
// calls it. db should come from Open, whose pragmas the stores' transactions rely on.
func Attach(ctx context.Context, db *sql.DB, s Schema) error {
	h := handleFor(db)
	handles.Lock()
	created, fromImage := h.created, h.fromImage
	handles.Unlock()
	if !created && s.Shape == nil {
		// The shape its steps give is worked out while the file is migrated (it replays
		// them in an in-memory database: most of the check's cost).
		go wantShape(context.WithoutCancel(ctx), s)
	}
	fromZero, current, err := migrate(ctx, db, s.Component, s.Steps)
	if err != nil {
		return err
	}
	// A file this process made empty and whose tables of s its own steps just made, in
	// one transaction, has the shape they give: there is nothing the check could find.
	// Nor in one it placed from an image that holds s at its current version: the
	// image's tables are the steps' (Options.Image).
	if !(created && fromZero) && !(fromImage && current) {
		if err := checkShape(ctx, db, s); err != nil {
			return err
		}
	}
	if s.Shape != nil {
		// The file has the shape the store's statements are written for (checked above,
		// or made by the image or the steps), and the store's tests run every one of them
		// against that shape: they are compiled beside the rest of the opening. One run
		// before it is compiled is compiled then (stmt), or parsed in a transaction.
		h.preparing.Add(1)
		go func() {
			defer h.preparing.Done()
			h.prepare(context.WithoutCancel(ctx), db, s.Queries)
		}()
		return nil
	}
	return schemaFault(h, s.Component, h.prepare(ctx, db, s.Queries))
}

// OpenAttached opens the database at path with opts (see Open) and attaches s to it. The
// caller owns the database and closes it with Close; when attaching fails, the database
// is closed before the error returns, so a refused file (CodeSchemaTooNew) is not kept
// open. The file is the store's own: one that CheckFile does not recognize is refused
// with CodeCorrupt before anything is written to it.
func OpenAttached(ctx context.Context, path string, opts Options, s Schema) (*sql.DB, error) {
	if err := CheckFile(path, opts.busyTimeout()); err != nil {
		return nil, err
	}
	db, err := Open(path, opts)
	if err != nil {
		return nil, err
	}
	if err := Attach(ctx, db, s); err != nil {
		Close(db)
		return nil, err
	}
	return db, nil
}

// Querier runs statements: a transaction body's view (Tx) or a reader's (Reader).
// Statements are prepared once per connection and reused, so a hot statement is not
// parsed again on every call.
type Querier interface {
	// ExecContext runs a statement that returns no rows, as sql.DB.ExecContext does.
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	// QueryContext runs a query that returns rows, as sql.DB.QueryContext does; the
	// caller closes the rows.
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	// QueryRowContext runs a query expected to return at most one row, as
	// sql.DB.QueryRowContext does; errors surface at Scan.
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// handle is what this process keeps per *sql.DB: the gate that serializes its writers
// and its prepared statements, and the file and busy timeout that name a fault (both
// zero for a database Open did not open). Close drops it.
type handle struct {
	gate  chan struct{}
	stmts sync.Map // query → *sql.Stmt
	path  string
	busy  time.Duration
	// created: Open made the file and placed it (create won), empty or from
	// Options.Image: every table in it was made by the image, a migration of this
	// process, or one of another process that opened it since.
	created bool
	// fromImage: what Open placed was Options.Image, not an empty database.
	fromImage bool
	// preparing counts the statements being compiled beside an opening (Attach); Close
	// waits for them.
	preparing sync.WaitGroup
	// ckpt checkpoints the write-ahead log beside the writers (a database from Open).
	ckpt checkpointer
	// file is the database file held open for the connections (a database from Open).
	file *heldFile

	// The writes waiting for a group (Grouped), and the one whose caller leads the next.
	gmu    sync.Mutex
	queue  []*groupWrite
	leader *groupWrite
}

var handles = struct {
	sync.Mutex
	m map[*sql.DB]*handle
}{m: map[*sql.DB]*handle{}}

func handleFor(db *sql.DB) *handle {
	handles.Lock()
	defer handles.Unlock()
	h, ok := handles.m[db]
	if !ok {
		h = &handle{gate: make(chan struct{}, 1)}
		handles.m[db] = h
	}
	return h
}

// fault codes err as a fault of h's file (see CodeCorrupt, CodeReadOnly, CodeLocked).
func (h *handle) fault(err error) error {
	if err == nil {
		return nil
	}
	handles.Lock()
	path, busy := h.path, h.busy
	handles.Unlock()
	if busy == 0 {
		busy = Options{}.busyTimeout()
	}
	return fault(path, busy, err)
}

// Close closes db and forgets what this package kept for it (its prepared statements and
// writer gate). Close a database from Open with it rather than with db.Close.
func Close(db *sql.DB) error {
	handles.Lock()
	h := handles.m[db]
	delete(handles.m, db)
	handles.Unlock()
	if h != nil {
		h.preparing.Wait()
		h.ckpt.close()
		h.stmts.Range(func(_, s any) bool {
			s.(*sql.Stmt).Close()
			return true
		})
	}
	err := db.Close()
	if h != nil {
		h.file.release() // after the connections: see heldfile.go
	}
	return err
}

func (h *handle) stmt(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	if s, ok := h.stmts.Load(query); ok {
		return s.(*sql.Stmt), nil
	}
	s, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if prev, loaded := h.stmts.LoadOrStore(query, s); loaded {
		s.Close()
		return prev.(*sql.Stmt), nil
	}
	return s, nil
}

// Prepare compiles queries once for db, so Tx and Reader run them without parsing them
// again. A store calls it when it opens, with the statements it runs often. Inside Tx a
// statement that was not prepared still runs, parsed on the spot: preparing it there
// would need a second connection while the transaction holds one.
func Prepare(ctx context.Context, db *sql.DB, queries ...string) error {
	return handleFor(db).prepare(ctx, db, queries)
}

func (h *handle) prepare(ctx context.Context, db *sql.DB, queries []string) error {
	for _, q := range queries {
		if _, err := h.stmt(ctx, db, q); err != nil {
			return fmt.Errorf("prepare %q: %w", q, err)
		}
	}
	return nil
}

// Reader returns a Querier for statements outside a transaction (each one atomic on
// its own), with the same prepared-statement reuse as Tx.
func Reader(db *sql.DB) Querier { return reader{db: db, h: handleFor(db)} }

type reader struct {
	db *sql.DB
	h  *handle
}

func (r reader) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	s, err := r.h.stmt(ctx, r.db, query)
	if err != nil {
		return nil, r.h.fault(err)
	}
	res, err := s.ExecContext(ctx, args...)
	return res, r.h.fault(err)
}

func (r reader) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	s, err := r.h.stmt(ctx, r.db, query)
	if err != nil {
		return nil, r.h.fault(err)
	}
	rows, err := s.QueryContext(ctx, args...)
	return rows, r.h.fault(err)
}

func (r reader) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	s, err := r.h.stmt(ctx, r.db, query)
	if err != nil {
		// Unprepared, the query reports the same error through the Row.
		return r.db.QueryRowContext(ctx, query, args...)
	}
	return s.QueryRowContext(ctx, args...)
}

// InTx returns a Querier for a transaction on db that the caller began and ends itself
// (one a library hands its own *sql.Tx to, as a job queue does to enqueue in it), with
// the same prepared-statement reuse as Tx: a query Prepare compiled runs without parsing,
// any other is parsed on the spot.
func InTx(tx *sql.Tx, db *sql.DB) Querier { return txq{tx: tx, db: db, h: handleFor(db)} }

type txq struct {
	tx *sql.Tx
	db *sql.DB
	h  *handle
}

// stmt returns the prepared form of query bound to the transaction's connection, or nil
// when query was never prepared.
func (t txq) stmt(ctx context.Context, query string) *sql.Stmt {
	if s, ok := t.h.stmts.Load(query); ok {
		return t.tx.StmtContext(ctx, s.(*sql.Stmt))
	}
	return nil
}

func (t txq) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if s := t.stmt(ctx, query); s != nil {
		return s.ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, query, args...)
}

func (t txq) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s := t.stmt(ctx, query); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, query, args...)
}

func (t txq) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if s := t.stmt(ctx, query); s != nil {
		return s.QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, query, args...)
}

// Tx runs fn inside one write transaction: BEGIN, fn, COMMIT; an error or a panic in fn,
// or a context that ends before the commit, rolls everything back. On a database from
// Open, BEGIN is BEGIN IMMEDIATE, so the write lock is taken (waiting up to the busy
// timeout) before fn reads anything. fn may be run again when SQLite still reports the
// database busy, so it must have no effect outside the transaction other than assigning
// its results. A lock still held by another connection after the busy timeout's wait
// fails with CodeLocked; a file that cannot be written, with CodeReadOnly; a damaged
// one, with CodeCorrupt (each wraps SQLite's error, so IsBusy still sees it).
func Tx(ctx context.Context, db *sql.DB, fn func(q Querier) error) error {
	h := handleFor(db)
	select {
	case h.gate <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-h.gate }()
	return h.retrying(ctx, db, fn)
}

// retryBusy runs run until it does not fail with SQLite's BUSY. SQLite answers BUSY
// without waiting in a few cases (a snapshot that moved under a deferred transaction, WAL
// recovery by another process); a short pause and a fresh transaction cure them. A BUSY
// that comes after the busy timeout's full wait is the answer: another writer holds the
// lock for too long.
func retryBusy(ctx context.Context, run func() error) error {
	for attempt := 0; ; attempt++ {
		start := time.Now()
		err := run()
		if !IsBusy(err) || time.Since(start) > time.Second || attempt == 4 || ctx.Err() != nil {
			return err
		}
		select {
		case <-time.After(time.Duration(attempt+1) * 5 * time.Millisecond):
		case <-ctx.Done():
			return err
		}
	}
}

func tx(ctx context.Context, db *sql.DB, h *handle, fn func(q Querier) error) (err error) {
	t, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	committed := false
	defer func() {
		if !committed {
			t.Rollback()
		}
	}()
	if err := fn(txq{tx: t, db: db, h: h}); err != nil {
		return err
	}
	if err := t.Commit(); err != nil {
		return err
	}
	committed = true
	h.committed(db)
	return nil
}

// IsBusy reports whether err is SQLite's "database is locked" (SQLITE_BUSY or
// SQLITE_LOCKED, with any extended code).
func IsBusy(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	c := se.Code() & 0xff
	return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
}

// IsConstraint reports whether err is a violated constraint (a duplicate primary or
// unique key, a foreign key that points nowhere).
func IsConstraint(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT
}

// Migrate brings component's schema up to len(steps): step i (0-based) moves the schema
// from version i to i+1. The steps missing from the recorded version run in order in one
// transaction together with the new version number, so a failing step leaves the file as
// it was. A file whose recorded version is above len(steps) was written by a newer sema
// and is refused with CodeSchemaTooNew. Steps must never be edited once released: a new
// change is a new step at the end.
func Migrate(ctx context.Context, db *sql.DB, component string, steps []string) error {
	_, _, err := migrate(ctx, db, component, steps)
	return err
}

// migrate is Migrate; fromZero reports that this call made every step of component, from
// none, in one transaction, and current that the file already held every step.
func migrate(ctx context.Context, db *sql.DB, component string, steps []string) (fromZero, current bool, err error) {
	// The common case, an up-to-date file, needs no write lock.
	var v int
	err = db.QueryRowContext(ctx, `SELECT version FROM schema_version WHERE component = ?`, component).Scan(&v)
	if err == nil && v == len(steps) {
		return false, true, nil
	}
	if err == nil && v > len(steps) {
		return false, false, tooNew(component, v, len(steps))
	}
	err = Tx(ctx, db, func(tq Querier) error {
		// Schema statements run unprepared: they change what a prepared one would see.
		q := tq.(txq).tx
		if _, err := q.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
			component TEXT PRIMARY KEY,
			version INTEGER NOT NULL,
			updated_at INTEGER NOT NULL)`); err != nil {
			return err
		}
		var v int
		err := q.QueryRowContext(ctx, `SELECT version FROM schema_version WHERE component = ?`, component).Scan(&v)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if v > len(steps) {
			return tooNew(component, v, len(steps))
		}
		fromZero = v == 0 && len(steps) > 0
		for i := v; i < len(steps); i++ {
			if _, err := q.ExecContext(ctx, steps[i]); err != nil {
				return fmt.Errorf("migrate %s to version %d: %w", component, i+1, err)
			}
		}
		_, err = q.ExecContext(ctx, `INSERT INTO schema_version (component, version, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (component) DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at`,
			component, len(steps), time.Now().UnixNano())
		return err
	})
	return fromZero && err == nil, false, err
}

func tooNew(component string, have, know int) error {
	return sema.Errorf(CodeSchemaTooNew,
		"the database holds %s schema version %d but this build knows only up to %d; open it with a newer sema or point the store at another file",
		component, have, know).With("component", component).With("version", have).With("supported", know)
}
