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
	"slices"
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
	// "foreign", "damaged" or "empty", "path" names the file, and for a damaged one
	// "damage" says what SQLite found.
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
	// ReasonDamaged: an SQLite database that cannot be read as one, or that SQLite's
	// own check (PRAGMA integrity_check) finds damaged.
	ReasonDamaged = "damaged"
	// ReasonEmpty: a file of zero bytes. A store creates its file whole (see Open), so
	// an empty one is a file that lost its contents, not a new store.
	ReasonEmpty = "empty"
)

// sqliteHeader opens every SQLite database file (the format's first 16 bytes).
const sqliteHeader = "SQLite format 3\x00"

// CheckFile reports, reading only, whether the file at path can be a sema store's own
// file: missing (a new file), or a sound SQLite database that is empty or holds a
// schema_version table (see Migrate). Anything else fails with CodeCorrupt and stays as
// it was: the stores' pragmas (WAL) and migrations would otherwise rewrite a stranger's
// file, and a write into a damaged one spreads the damage. Sound is what SQLite's PRAGMA
// integrity_check says of the file and its -wal: every page of every b-tree readable and
// well-formed, and every index holding exactly its table's rows, which costs a read of
// the whole file (about 1 ms per MB from the page cache). A file of zero bytes is
// refused too (ReasonEmpty): Open creates a file whole, so an empty one lost what it
// held. A file that cannot be read fails with CodeReadOnly, one locked past busy with
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
		return corrupt(abs, ReasonEmpty, "it is empty (0 bytes), and sema creates its database whole, so this one lost what it held")
	}
	// Held, not opened and closed: this process may have connections on the file, whose
	// locks a close would drop (heldfile.go); so may the check's own below.
	file, _, err := hold(abs)
	if err != nil {
		return fault(abs, busy, err)
	}
	defer file.release()
	var head [100]byte
	n, err := file.f.ReadAt(head[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return fault(abs, busy, err)
	}
	if n < len(head) || !bytes.HasPrefix(head[:], []byte(sqliteHeader)) {
		return corrupt(abs, ReasonNotSQLite, "it is not a SQLite database")
	}
	tables, problems, err := inspect(abs, head, busy)
	if err != nil {
		return fault(abs, busy, err)
	}
	ours := len(tables) == 0 // a database nothing was created in yet
	for _, t := range tables {
		ours = ours || t == "schema_version"
	}
	if ours && len(problems) > 0 {
		shown := problems
		if len(shown) > 3 {
			shown = append(shown[:3:3], "…")
		}
		damage := "SQLite's check: " + strings.Join(shown, "; ")
		return corrupt(abs, ReasonDamaged, "it is damaged ("+damage+")").With("damage", damage).With("problems", problems)
	}
	if ours {
		return nil
	}
	shown := tables
	if len(shown) > 3 {
		shown = append(shown[:3:3], "…")
	}
	return corrupt(abs, ReasonForeign, "it is a SQLite database of another program (tables "+strings.Join(shown, ", ")+", none of sema's)").
		With("tables", tables)
}

// inspect lists the tables of the database at abs and, when one is schema_version (a
// store's file; another program's is refused unread), what PRAGMA integrity_check finds
// wrong with it (nil when nothing), through a read-only connection. A file in WAL mode
// (header bytes 18 and 19 are 2) whose -wal and -shm files are absent is read as
// immutable: nobody has it open, the file alone is the database, and SQLite then
// creates no -wal and -shm files beside a file that is not sema's.
func inspect(abs string, head [100]byte, busy time.Duration) (tables, problems []string, err error) {
	q := url.Values{}
	q.Set("mode", "ro")
	q.Set("_pragma", "busy_timeout("+fmt.Sprint(busy.Milliseconds())+")")
	if head[18] == 2 && !exists(abs+"-wal") && !exists(abs+"-shm") {
		q.Set("immutable", "1")
	}
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: abs}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return nil, nil, err
	}
	defer db.Close()
	// One connection: the check then reads the snapshot the tables were listed from.
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	tables, err = strings1(ctx, db, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`)
	if err != nil || !slices.Contains(tables, "schema_version") {
		return tables, nil, err
	}
	// integrity_check, not quick_check, though it costs twice as much: most bytes of a
	// store's file that can flip without breaking a page's structure are keys (an
	// entry's id, a session's), and only integrity_check compares each index with its
	// table, where such a flip shows ("row 4 missing from index ..."). quick_check
	// passed 16 of 20 damaging flips in trials on a real state database.
	lines, err := strings1(ctx, db, `PRAGMA integrity_check`)
	if err != nil {
		var se *sqlite.Error
		if errors.As(err, &se) && (se.Code()&0xff == sqlite3.SQLITE_CORRUPT || se.Code()&0xff == sqlite3.SQLITE_NOTADB) {
			return tables, []string{sqliteMessage(se)}, nil
		}
		return tables, nil, err
	}
	if len(lines) == 1 && lines[0] == "ok" {
		return tables, nil, nil
	}
	return tables, lines, nil
}

// strings1 runs a query of one text column and returns its rows.
func strings1(ctx context.Context, db *sql.DB, query string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
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
// CodeCorrupt, CodeReadOnly, CodeLocked), or of the host's when the machine ran out of
// what the file needed (sema.CodeDiskFull, sema.CodeFDExhausted, sema.CodeNoMemory),
// wrapping it; any other error, and one that already has a code, is returned as it is.
// busy is the timeout a lock was waited for.
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
		case sqlite3.SQLITE_FULL:
			return host(sema.CodeDiskFull, "cannot write %s: %s; the disk holding it is full — free space and run again", name, path, se, err)
		case sqlite3.SQLITE_NOMEM:
			return host(sema.CodeNoMemory, "cannot use %s: %s; free memory or raise the limit, and run again", name, path, se, err)
		case sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_IOERR:
			// SQLite keeps the errno to itself (see host_unix.go).
			if fdExhausted() {
				return host(sema.CodeFDExhausted, "cannot open %s: %s; the process ran out of file descriptors — raise the limit (ulimit -n) and run again", name, path, se, err)
			}
			if path != "" && diskFull(path) {
				return host(sema.CodeDiskFull, "cannot write %s: %s; the disk holding it is full — free space and run again", name, path, se, err)
			}
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			e := sema.Errorf(CodeCorrupt, "%s cannot be a sema store: it is damaged (%s); it is left as it is — move it aside, or use another file", name, sqliteMessage(se))
			e.Err = err
			return withPath(e, path).With("reason", ReasonDamaged).With("damage", sqliteMessage(se))
		}
		return err
	}
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
		return readOnly(name, path, err)
	}
	if hf := sema.HostFault(err, "use "+name); hf != nil {
		return withPath(hf, path)
	}
	return err
}

// host codes SQLite's error se as a fault of the host; format has the file's name and
// SQLite's words as its two verbs.
func host(code, format, name, path string, se *sqlite.Error, err error) error {
	e := sema.Errorf(code, format, name, sqliteMessage(se))
	e.Err = err
	return withPath(e, path)
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

// schemaFault codes a failure to prepare a store's statements on a file whose recorded
// schema version is current. The statements were written against that version's
// tables, so when SQLite cannot compile one ("no such column"), the schema the file
// holds is not what its version says: damage integrity_check does not see (see
// shape.go). A lock or an I/O error keeps its own code.
func schemaFault(h *handle, component string, err error) error {
	if err == nil {
		return nil
	}
	var se *sqlite.Error
	if !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_ERROR {
		return h.fault(err)
	}
	return schemaDamage(h, component, sqliteMessage(se), err)
}

// schemaDamage is CodeCorrupt for a file whose component tables are not those of the
// schema version it records; what says how they differ, err is the cause (or nil).
func schemaDamage(h *handle, component, what string, err error) error {
	handles.Lock()
	path := h.path
	handles.Unlock()
	name := path
	if name == "" {
		name = "the database"
	}
	damage := fmt.Sprintf("the %s tables are not those of the schema version it records: %s", component, what)
	e := sema.Errorf(CodeCorrupt, "%s cannot be a sema store: it is damaged (%s); it is left as it is — move it aside, or use another file", name, damage)
	e.Err = err
	return withPath(e, path).With("reason", ReasonDamaged).With("damage", damage)
}
