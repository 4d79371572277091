package statedir_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the driver the stores use, to make files as another program would

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/session/sqlitedb"
	"github.com/sema-agent/sema/statedir"
)

// snapshot is every file in dir with its sha256, so a test can tell that a refused Open
// changed nothing: no byte of the database, no -wal or -shm file left beside it.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			out[e.Name()] = "dir"
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = fmt.Sprintf("%x", sha256.Sum256(b))
	}
	return out
}

func sameFiles(t *testing.T, before, after map[string]string) {
	t.Helper()
	for name, sum := range after {
		if before[name] != sum {
			t.Errorf("%s changed or appeared (%s → %s)", name, before[name], sum)
		}
	}
	for name := range before {
		if _, ok := after[name]; !ok {
			t.Errorf("%s disappeared", name)
		}
	}
}

// foreignDB makes path a SQLite database of another program, as that program would:
// the same driver, its own table, its own journal mode.
func foreignDB(t *testing.T, path, journal string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?_pragma=journal_mode("+journal+")")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('keep me')`); err != nil {
		t.Fatal(err)
	}
}

// tables lists the tables of the closed database at path, reading it as immutable so
// that the reading leaves no -wal or -shm file.
func tables(t *testing.T, path string) []string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=ro&immutable=1")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		names = append(names, n)
	}
	return names
}

// A sema.db that is not sema's is refused with store.corrupt, names the file, and is
// left byte for byte as it was — no pragma, no migration, no -wal or -shm beside it.
func TestOpenRefusesAFileThatIsNotSemas(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		make   func(t *testing.T, db string)
		reason string
	}{
		{"a text file", func(t *testing.T, db string) {
			os.WriteFile(db, []byte("my notes, which happen to be called sema.db; long enough to fill a SQLite header and more\n"), 0o600)
		}, sqlitedb.ReasonNotSQLite},
		{"a short text file", func(t *testing.T, db string) { os.WriteFile(db, []byte("hi\n"), 0o600) }, sqlitedb.ReasonNotSQLite},
		{"another program's SQLite database", func(t *testing.T, db string) { foreignDB(t, db, "DELETE") }, sqlitedb.ReasonForeign},
		{"another program's SQLite database in WAL mode", func(t *testing.T, db string) { foreignDB(t, db, "WAL") }, sqlitedb.ReasonForeign},
		{"a damaged sema database", func(t *testing.T, db string) {
			d, err := statedir.Open(t.Context(), filepath.Dir(db))
			if err != nil {
				t.Fatal(err)
			}
			d.Close()
			// Overwrite the schema's page past the 100-byte header: the file still says
			// SQLite, and its tables cannot be read.
			f, err := os.OpenFile(db, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt([]byte(strings.Repeat("\xff", 3000)), 100)
			f.Close()
		}, sqlitedb.ReasonDamaged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			db := filepath.Join(dir, statedir.DatabaseName)
			tc.make(t, db)
			before := snapshot(t, dir)
			var wantTables []string
			if tc.reason == sqlitedb.ReasonForeign {
				wantTables = tables(t, db)
			}

			d, err := statedir.Open(t.Context(), dir)
			if err == nil {
				d.Close()
				t.Fatal("Open succeeded")
			}
			if !sema.IsCode(err, statedir.CodeCorrupt) {
				t.Fatalf("error = %v, want %s", err, statedir.CodeCorrupt)
			}
			var se *sema.Error
			if !sema.IsCode(err, statedir.CodeCorrupt) || !asError(err, &se) || se.Detail["reason"] != tc.reason || se.Detail["path"] != db {
				t.Fatalf("detail = %v, want reason %s and path %s", se.Detail, tc.reason, db)
			}
			if !strings.Contains(se.Message, db) || !strings.Contains(se.Message, "move it aside") {
				t.Fatalf("the message does not name the file and the way out: %s", se.Message)
			}
			sameFiles(t, before, snapshot(t, dir))
			if wantTables != nil {
				if got := tables(t, db); !slices.Equal(got, wantTables) {
					t.Fatalf("tables %v after Open, want %v", got, wantTables)
				}
			}
		})
	}
}

func asError(err error, se **sema.Error) bool {
	e, ok := err.(*sema.Error)
	*se = e
	return ok
}

// A file written by a newer sema keeps its own code and its bytes: the refusal comes
// before any migration writes.
func TestOpenSchemaTooNewChangesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := open(t, dir)
	if _, err := d.Sessions().DB().Exec(`UPDATE schema_version SET version = version + 1`); err != nil {
		t.Fatal(err)
	}
	d.Close()
	before := snapshot(t, dir)
	if _, err := statedir.Open(t.Context(), dir); !sema.IsCode(err, sqlitedb.CodeSchemaTooNew) {
		t.Fatalf("error = %v, want %s", err, sqlitedb.CodeSchemaTooNew)
	}
	sameFiles(t, before, snapshot(t, dir))
}

// A lock another process holds is waited for (up to the busy timeout, and no longer),
// then reported as store.locked — at Open when the file needs its tables, and at a
// store's first write otherwise. The database is as the holder left it.
func TestOpenLocked(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const wait = 200 * time.Millisecond
	hold := func(t *testing.T, path string) {
		t.Helper()
		db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?_pragma=journal_mode(WAL)")
		if err != nil {
			t.Fatal(err)
		}
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			conn.ExecContext(context.Background(), `ROLLBACK`)
			conn.Close()
			db.Close()
		})
	}
	locked := func(t *testing.T, err error, path string, took time.Duration) {
		t.Helper()
		if !sema.IsCode(err, statedir.CodeLocked) {
			t.Fatalf("error = %v, want %s", err, statedir.CodeLocked)
		}
		if !sqlitedb.IsBusy(err) {
			t.Fatalf("store.locked does not wrap SQLite's busy error: %v", err)
		}
		var se *sema.Error
		if !asError(err, &se) || se.Detail["path"] != path {
			t.Fatalf("detail = %v, want path %s", se, path)
		}
		if took < wait || took > wait+5*time.Second {
			t.Fatalf("gave up after %v; the busy timeout is %v", took, wait)
		}
	}

	t.Run("at open, when the tables are still to be made", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		path := filepath.Join(dir, statedir.DatabaseName)
		hold(t, path) // a sema starting at the same instant, say, in its first migration
		before := snapshot(t, dir)
		start := time.Now()
		d, err := statedir.OpenWith(ctx, dir, sqlitedb.Options{BusyTimeout: wait})
		if err == nil {
			d.Close()
			t.Fatal("Open succeeded under another process's write lock")
		}
		locked(t, err, path, time.Since(start))
		after := snapshot(t, dir)
		if before[statedir.DatabaseName] != after[statedir.DatabaseName] {
			t.Fatal("the database changed")
		}
	})

	t.Run("at the first write", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		path := filepath.Join(dir, statedir.DatabaseName)
		open(t, dir).Close()
		hold(t, path)
		d, err := statedir.OpenWith(ctx, dir, sqlitedb.Options{BusyTimeout: wait})
		if err != nil {
			t.Fatalf("reading while another process writes: %v", err) // WAL: readers never wait
		}
		defer d.Close()
		if _, err := d.Sessions().List(ctx, session.Filter{}); err != nil {
			t.Fatalf("List under a write lock: %v", err)
		}
		start := time.Now()
		_, err = d.Sessions().Create(ctx, session.Session{Root: "/w"})
		locked(t, err, path, time.Since(start))
	})
}

// Permissions: a state directory or database sema cannot write is store.readonly,
// named, and left as it was. Root passes every permission check, so there the test
// cannot make the situation; TestReadOnlyConnection in package sqlitedb covers the
// mapping of SQLite's own SQLITE_READONLY without needing permissions.
func TestOpenReadOnly(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root, which file permissions do not stop: a read-only directory cannot be made here (the SQLITE_READONLY mapping is tested in package sqlitedb)")
	}
	t.Parallel()
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string) (open, blocked string)
	}{
		{"a read-only directory with a database", func(t *testing.T, dir string) (string, string) {
			open(t, dir).Close()
			chmod(t, dir, 0o500)
			return dir, filepath.Join(dir, statedir.DatabaseName)
		}},
		{"a read-only database file", func(t *testing.T, dir string) (string, string) {
			open(t, dir).Close()
			chmod(t, filepath.Join(dir, statedir.DatabaseName), 0o400)
			return dir, filepath.Join(dir, statedir.DatabaseName)
		}},
		{"an empty read-only directory", func(t *testing.T, dir string) (string, string) {
			chmod(t, dir, 0o500)
			return dir, filepath.Join(dir, statedir.DatabaseName)
		}},
		{"a state directory to be made in a read-only one", func(t *testing.T, dir string) (string, string) {
			chmod(t, dir, 0o500)
			return filepath.Join(dir, "state"), filepath.Join(dir, "state")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			target, blocked := tc.setup(t, dir)
			before := snapshot(t, dir)
			d, err := statedir.Open(t.Context(), target)
			if err == nil {
				d.Close()
				t.Fatal("Open succeeded")
			}
			var se *sema.Error
			if !sema.IsCode(err, statedir.CodeReadOnly) || !asError(err, &se) || se.Detail["path"] != blocked {
				t.Fatalf("error = %v (%v), want %s naming %s", err, se, statedir.CodeReadOnly, blocked)
			}
			sameFiles(t, before, snapshot(t, dir))
		})
	}
}

// chmod sets a mode for the test and restores the owner's write permission after it,
// so the temporary directory can be removed.
func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(path, 0o700) })
}
