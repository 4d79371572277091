package statedir

import (
	"context"
	_ "embed"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/session/sqlitedb"
)

// freshImage is the state database as the session and history stores' migration steps
// make it, from none: a new state directory's database is placed from it rather than
// made by parsing every step (sqlitedb.Options.Image). TestFreshImageIsCurrent checks
// it against a database the steps make, and rewrites it with -update.
//
//go:embed fresh.db
var freshImage []byte

// DatabaseName is the name of the SQLite file, inside the state directory, that holds
// the session store and the file-history store.
const DatabaseName = "sema.db"

// Codes of the errors Open returns itself. Errors the stores return with a code of their
// own (sqlitedb.CodeSchemaTooNew, and the faults of the file below) pass through
// unchanged.
const (
	// CodeDirInvalid refuses a state directory that is not given, cannot be resolved to
	// an absolute path, cannot be created (for a reason other than permissions, which is
	// CodeReadOnly), or is not a directory. It is the code the command line reports for
	// a bad --home, which names this directory.
	CodeDirInvalid = "config.home_invalid"
	// CodeOpenFailed reports a database in the state directory that cannot be opened
	// for a reason none of the codes below names (the database is a directory, a disk
	// error). The cause is wrapped.
	CodeOpenFailed = "store.open_failed"
)

// The faults of the database file, which the stores report under these codes whether
// they meet them at Open or later (see package sqlitedb). Each says what to do: move a
// file aside, make it writable, or wait for the process that holds it; opening another
// state directory is the way out of all three.
const (
	// CodeCorrupt: DatabaseName is not a SQLite file, is another program's SQLite
	// database, or is damaged. Open changes nothing in it.
	CodeCorrupt = sqlitedb.CodeCorrupt
	// CodeReadOnly: the directory or the database cannot be written (permissions, a
	// read-only file system).
	CodeReadOnly = sqlitedb.CodeReadOnly
	// CodeLocked: another process kept the database locked past the busy timeout
	// (sqlitedb.Options.BusyTimeout).
	CodeLocked = sqlitedb.CodeLocked
)

// Dir is an open state directory: its path and the two stores on its database. It is
// safe for concurrent use by many runners and goroutines, as its stores are. Close it
// when the last runner using it is done.
type Dir struct {
	path     string
	sessions *session.SQLiteStore
	history  *history.SQLite

	closeOnce sync.Once
	closeErr  error
}

// Open opens the state directory dir, creating it (and its parents) when missing, with
// the default SQLite settings. It is OpenWith(ctx, dir, sqlitedb.Options{}).
func Open(ctx context.Context, dir string) (*Dir, error) {
	return OpenWith(ctx, dir, sqlitedb.Options{})
}

// OpenWith opens the state directory dir with explicit SQLite settings (a busy timeout,
// durable commits); the zero Options are the defaults Open uses. A relative dir is taken
// from the working directory. The session store is opened on dir/DatabaseName and the
// history store attached to the same database, migrating both when needed; when any
// step fails, what was opened is closed again. A DatabaseName that is not sema's is
// refused with CodeCorrupt before anything is written to it; a directory or database
// that cannot be written fails with CodeReadOnly, one locked by another process past
// the busy timeout with CodeLocked.
func OpenWith(ctx context.Context, dir string, opts sqlitedb.Options) (*Dir, error) {
	abs, err := Make(dir)
	if err != nil {
		return nil, err
	}
	if opts.Image == nil {
		opts.Image = freshImage
	}
	ss, err := session.OpenSQLiteWith(filepath.Join(abs, DatabaseName), opts)
	if err != nil {
		return nil, openFailed(abs, err)
	}
	hs, err := history.NewSQLite(ctx, ss.DB())
	if err != nil {
		ss.Close()
		return nil, openFailed(abs, err)
	}
	return &Dir{path: abs, sessions: ss, history: hs}, nil
}

// Make resolves the state directory dir to the absolute path Open uses and creates it
// (and its parents) when missing: the first of Open's steps, and the only ones a bad
// --home fails (CodeDirInvalid; CodeReadOnly when permissions forbid creating it). A
// host that opens the directory beside other work (session.Deferred) makes it first, so
// such a directory is refused before anything else is done.
func Make(dir string) (string, error) {
	if dir == "" {
		return "", sema.Errorf(CodeDirInvalid, "no state directory given; name the directory that keeps sessions and file history")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", sema.Errorf(CodeDirInvalid, "cannot resolve the state directory %q: %w", dir, err).With("path", dir)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
			return "", sema.Errorf(CodeReadOnly, "cannot create the state directory %s: %w; make its parent writable, or open another state directory", abs, err).With("path", abs)
		}
		return "", sema.Errorf(CodeDirInvalid, "cannot create the state directory %s: %w", abs, err).With("path", abs)
	}
	return abs, nil
}

// openFailed gives an uncoded failure to open the database its code; a coded one (a
// schema too new) already says what to do and keeps its code.
func openFailed(dir string, err error) error {
	if sema.CodeOf(err) != "" {
		return err
	}
	path := filepath.Join(dir, DatabaseName)
	return sema.Errorf(CodeOpenFailed, "cannot open the state database %s: %w", path, err).With("path", path)
}

// Path returns the state directory, absolute and clean: the value for
// agent.Deps.StateDir.
func (d *Dir) Path() string { return d.path }

// Sessions returns the session store. It lives until Close.
func (d *Dir) Sessions() *session.SQLiteStore { return d.sessions }

// History returns the file-history store, on the session store's database. It lives
// until Close.
func (d *Dir) History() *history.SQLite { return d.history }

// Close closes both stores and the database they share. Calls on the stores after Close
// fail; a second Close returns the first one's result.
func (d *Dir) Close() error {
	d.closeOnce.Do(func() {
		// History first: it sits on the session store's database, which the session
		// store's Close closes.
		d.closeErr = errors.Join(d.history.Close(), d.sessions.Close())
	})
	return d.closeErr
}

// Resolve names the state directory: flag (the command line's --home), else $SEMA_HOME,
// else ~/.sema, made absolute. It does not create it. With no home directory to find it
// in, it is "" and no error: there is no state to keep or protect.
func Resolve(flag string) (string, error) {
	dir := flag
	if dir == "" {
		dir = os.Getenv("SEMA_HOME")
	}
	if dir == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", nil
		}
		dir = filepath.Join(h, ".sema")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", sema.Errorf(CodeDirInvalid, "cannot resolve the state directory %q: %v", dir, err)
	}
	return abs, nil
}
