package sqlitedb_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/session/sqlitedb"
)

func sum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// CheckFile reads and judges; it never writes, and OpenAttached refuses what it
// refuses before a pragma or a migration could touch the file.
func TestCheckFile(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	s := sqlitedb.Schema{Component: "c", Steps: []string{step1}}

	ours := filepath.Join(dir, "ours.db")
	db, err := sqlitedb.OpenAttached(ctx, ours, sqlitedb.Options{}, s)
	if err != nil {
		t.Fatal(err)
	}
	sqlitedb.Close(db)

	fresh := filepath.Join(dir, "fresh.db") // opened, nothing created in it yet
	db = open(t, fresh, sqlitedb.Options{})
	sqlitedb.Close(db)

	empty := filepath.Join(dir, "empty.db")
	os.WriteFile(empty, nil, 0o600)

	text := filepath.Join(dir, "text.db")
	os.WriteFile(text, []byte("not a database at all, but long enough to be read as a header; long enough, really.....\n"), 0o600)

	foreign := filepath.Join(dir, "foreign.db")
	raw, err := sql.Open("sqlite", "file:"+(&url.URL{Path: foreign}).EscapedPath())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`CREATE TABLE a (x); CREATE TABLE b (x); CREATE TABLE c (x); CREATE TABLE d (x)`); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	for _, tc := range []struct {
		name, path, reason string
	}{
		{"a missing file", filepath.Join(dir, "missing.db"), ""},
		{"an empty file", empty, sqlitedb.ReasonEmpty},
		{"a database with nothing in it", fresh, ""},
		{"a store's file", ours, ""},
		{"a text file", text, sqlitedb.ReasonNotSQLite},
		{"another program's database", foreign, sqlitedb.ReasonForeign},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before [32]byte
			if tc.reason != "" {
				before = sum(t, tc.path)
			}
			err := sqlitedb.CheckFile(tc.path, 0)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("CheckFile = %v", err)
				}
				return
			}
			var se *sema.Error
			if !sema.IsCode(err, sqlitedb.CodeCorrupt) || !asError(err, &se) || se.Detail["reason"] != tc.reason || se.Detail["path"] != tc.path {
				t.Fatalf("CheckFile = %v (%v), want %s (%s)", err, se, sqlitedb.CodeCorrupt, tc.reason)
			}
			if _, err := sqlitedb.OpenAttached(ctx, tc.path, sqlitedb.Options{}, s); !sema.IsCode(err, sqlitedb.CodeCorrupt) {
				t.Fatalf("OpenAttached = %v, want %s", err, sqlitedb.CodeCorrupt)
			}
			if sum(t, tc.path) != before {
				t.Fatal("the file changed")
			}
		})
	}
}

func asError(err error, se **sema.Error) bool {
	e, ok := err.(*sema.Error)
	*se = e
	return ok
}

// A database SQLite itself refuses to write (here a read-only connection, mode=ro,
// which needs no file permissions and so works as root too) fails with store.readonly
// in a transaction and in a plain statement, wrapping SQLite's error; and nothing is
// written.
func TestReadOnlyConnection(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "ro.db")
	db, err := sqlitedb.OpenAttached(ctx, path, sqlitedb.Options{}, sqlitedb.Schema{Component: "c", Steps: []string{step1}})
	if err != nil {
		t.Fatal(err)
	}
	sqlitedb.Close(db)
	before := sum(t, path)

	ro, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sqlitedb.Close(ro) })
	insert := `INSERT INTO t1 VALUES (1)`
	err = sqlitedb.Tx(ctx, ro, func(q sqlitedb.Querier) error {
		_, err := q.ExecContext(ctx, insert)
		return err
	})
	if !sema.IsCode(err, sqlitedb.CodeReadOnly) {
		t.Fatalf("Tx on a read-only connection = %v, want %s", err, sqlitedb.CodeReadOnly)
	}
	if _, err := sqlitedb.Reader(ro).ExecContext(ctx, insert); !sema.IsCode(err, sqlitedb.CodeReadOnly) {
		t.Fatalf("a statement on a read-only connection = %v, want %s", err, sqlitedb.CodeReadOnly)
	}
	// Reads go on.
	if _, err := sqlitedb.Reader(ro).QueryContext(ctx, `SELECT x FROM t1`); err != nil {
		t.Fatalf("a read on a read-only connection: %v", err)
	}
	sqlitedb.Close(ro)
	if sum(t, path) != before {
		t.Fatal("the file changed")
	}
}

// A lock held past the busy timeout is store.locked, naming the file Open opened.
func TestTxLockedNamesTheFile(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "locked.db")
	holder := open(t, path, sqlitedb.Options{})
	hasty := open(t, path, sqlitedb.Options{BusyTimeout: 50e6})
	conn, err := holder.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), `ROLLBACK`)
	err = sqlitedb.Tx(ctx, hasty, func(q sqlitedb.Querier) error { return nil })
	var se *sema.Error
	if !sema.IsCode(err, sqlitedb.CodeLocked) || !sqlitedb.IsBusy(err) || !asError(err, &se) || se.Detail["path"] != path || se.Detail["waited"] != "50ms" {
		t.Fatalf("Tx under a held lock = %v (%v), want %s naming %s", err, se, sqlitedb.CodeLocked, path)
	}
}
