package sqlitedb

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sema-agent/sema"
	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Codes of the faults of a database file itself: what the person who keeps the file
// must act on, whatever the store was doing when it met them.
const (
	// CodeCorrupt refuses a file a store does not recognize as its own: not a SQLite
	// file, a SQLite database of another program (tables, and no schema_version), or a
	// damaged one. The file is never changed; the detail's "reason" is "not_sqlite",
	// "foreign" or "damaged", and "path" names the file.
	CodeCorrupt = "store.corrupt"
	// CodeReadOnly reports a file, or the directory it is in, that cannot be written:
	// no permission, a read-only file system, SQLite's SQLITE_READONLY. The detail's
	// "path" names the file.
	CodeReadOnly = "store.readonly"
	// CodeLocked reports a file another connection (another process) kept locked for
	// longer than the busy timeout. The detail's "path" names the file and "waited" the
	// timeout.
	CodeLocked = "store.locked"
)

// Reasons in the detail ("reason") of a CodeCorrupt error.
const (
	// ReasonNotSQLite: the file is not an SQLite database.
	ReasonNotSQLite = "not_sqlite"
	// ReasonForeign: an SQLite database of another program, without sema's schema.
	ReasonForeign = "foreign"
	// ReasonDamaged: an SQLite database that cannot be read as one.
	ReasonDamaged = "damaged"
)

// sqliteHeader opens every SQLite database file (the format's first 16 bytes).
const sqliteHeader = "SQLite format 3\x00"

// CheckFile reports, reading only, whether the file at path can be a sema store's own
// file: missing or empty (a new file), or a SQLite database that is empty or holds a
// schema_version table (see Migrate). Anything else fails with CodeCorrupt and stays as
// it was: the stores' pragmas (WAL) and migrations would otherwise rewrite a stranger's
// file. A file that cannot be read fails with CodeReadOnly, one locked past busy with
// CodeLocked. OpenAttached calls it before it opens a file; a store that shares a
// database its caller opened (Attach) is not checked, since that file may hold the
// caller's own tables.
func CheckFile(path string, busy time.Duration) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	fi, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fault(abs, busy, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("open database %s: not a regular file", abs)
	}
	if fi.Size() == 0 {
		return nil
	}
	f, err := os.Open(abs)
	if err != nil {
		return fault(abs, busy, err)
	}
	var head [100]byte
	n, err := io.ReadFull(f, head[:])
	f.Close()
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return fault(abs, busy, err)
	}
	if n < len(head) || !bytes.HasPrefix(head[:], []byte(sqliteHeader)) {
		return corrupt(abs, ReasonNotSQLite, "it is not a SQLite database")
	}
	tables, err := userTables(abs, head, busy)
	if err != nil {
		return fault(abs, busy, err)
	}
	if len(tables) == 0 {
		return nil // a database nothing was created in yet
	}
	for _, t := range tables {
		if t == "schema_version" {
			return nil
		}
	}
	shown := tables
	if len(shown) > 3 {
		shown = append(shown[:3:3], "…")
	}
	return corrupt(abs, ReasonForeign, "it is a SQLite database of another program (tables "+strings.Join(shown, ", ")+", none of sema's)").
		With("tables", tables)
}

// userTables lists the tables of the database at abs through a read-only connection.
// A file in WAL mode (header bytes 18 and 19 are 2) whose -wal and -shm files are absent
// is read as immutable: nobody has it open, the file alone is the database, and SQLite
// then creates no -wal and -shm files beside a file that is not sema's.
func userTables(abs string, head [100]byte, busy time.Duration) ([]string, error) {
	q := url.Values{}
	q.Set("mode", "ro")
	q.Set("_pragma", "busy_timeout("+fmt.Sprint(busy.Milliseconds())+")")
	if head[18] == 2 && !exists(abs+"-wal") && !exists(abs+"-shm") {
		q.Set("immutable", "1")
	}
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: abs}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	defer db.Close()
	ctx := context.Background()
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, rows.Err()
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func corrupt(path, reason, why string) *sema.Error {
	return sema.Errorf(CodeCorrupt, "%s cannot be a sema store: %s; it is left as it is — move it aside, or use another file", path, why).
		With("path", path).With("reason", reason)
}

// withPath names the file in e's detail when it is known (a database not opened by Open
// has no path on record).
func withPath(e *sema.Error, path string) *sema.Error {
	if path == "" {
		return e
	}
	return e.With("path", path)
}

// fault gives err the code of a fault of the file at path when it is one (see
// CodeCorrupt, CodeReadOnly, CodeLocked), wrapping it; any other error, and one that
// already has a code, is returned as it is. busy is the timeout a lock was waited for.
func fault(path string, busy time.Duration, err error) error {
	if err == nil || sema.CodeOf(err) != "" {
		return err
	}
	name := path
	if name == "" {
		name = "the database"
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return withPath(sema.Errorf(CodeLocked, "%s is locked by another process (another sema run, or a program in a write transaction on it) and stayed locked past the busy timeout of %s: %w; try again when it is done",
				name, busy, err), path).With("waited", busy.String())
		case sqlite3.SQLITE_READONLY:
			return readOnly(name, path, err)
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			e := sema.Errorf(CodeCorrupt, "%s cannot be a sema store: it is damaged (%s); it is left as it is — move it aside, or use another file", name, sqliteMessage(se))
			e.Err = err
			return withPath(e, path).With("reason", ReasonDamaged)
		}
		return err
	}
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
		return readOnly(name, path, err)
	}
	return err
}

func readOnly(name, path string, err error) error {
	return withPath(sema.Errorf(CodeReadOnly, "cannot write %s: %w; make the file and its directory writable, or use another file", name, err), path)
}

// sqliteMessage is the driver's text without the numeric code it appends.
func sqliteMessage(se *sqlite.Error) string {
	msg := se.Error()
	if i := strings.LastIndex(msg, " ("); i > 0 && strings.HasSuffix(msg, ")") {
		return msg[:i]
	}
	return msg
}
