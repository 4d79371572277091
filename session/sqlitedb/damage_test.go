package sqlitedb_test

import (
	"database/sql"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/session/sqlitedb"
)

// indexed is a store's file with a table and an index over it, closed, and the page
// size it was written with.
func indexed(t *testing.T) (string, int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "indexed.db")
	db, err := sqlitedb.OpenAttached(t.Context(), path, sqlitedb.Options{}, sqlitedb.Schema{Component: "c", Steps: []string{
		`CREATE TABLE items (id TEXT PRIMARY KEY, body TEXT NOT NULL)`,
	}})
	if err != nil {
		t.Fatal(err)
	}
	err = sqlitedb.Tx(t.Context(), db, func(q sqlitedb.Querier) error {
		for i := range 200 {
			if _, err := q.ExecContext(t.Context(), `INSERT INTO items VALUES (?, ?)`, fmt.Sprintf("item-%04d", i), strings.Repeat("b", 40)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sqlitedb.Close(db)
	if _, err := os.Stat(path + "-wal"); err == nil {
		t.Fatal("a -wal file stayed after the last connection closed")
	}
	b, _ := os.ReadFile(path)
	return path, int(binary.BigEndian.Uint16(b[16:18]))
}

// A file whose structure holds but whose index no longer matches its table — a byte of a
// key flipped, the damage quick_check passes — is refused as damaged, naming what SQLite
// found, and left as it was; so is a file cut short.
func TestCheckFileRefusesDamage(t *testing.T) {
	t.Parallel()
	path, pageSize := indexed(t)
	good, _ := os.ReadFile(path)
	if err := sqlitedb.CheckFile(path, 0); err != nil {
		t.Fatalf("CheckFile on the sound file = %v", err)
	}
	for _, tc := range []struct {
		name   string
		damage func(b []byte) []byte
	}{
		{"a key flipped in a table row", func(b []byte) []byte {
			// The last row's key, as the table's leaf page holds it; its index entry
			// keeps the old key.
			i := strings.LastIndex(string(b), "item-0199"+strings.Repeat("b", 40))
			if i < 0 {
				t.Fatal("the row is not in the file")
			}
			b[i+8] = '8'
			return b
		}},
		{"cut at a page boundary", func(b []byte) []byte { return b[:len(b)-pageSize] }},
		{"cut inside a page", func(b []byte) []byte { return b[:len(b)-pageSize/2] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			damaged := filepath.Join(t.TempDir(), "damaged.db")
			b := tc.damage(append([]byte(nil), good...))
			if err := os.WriteFile(damaged, b, 0o600); err != nil {
				t.Fatal(err)
			}
			before := sum(t, damaged)
			err := sqlitedb.CheckFile(damaged, 0)
			var se *sema.Error
			if !sema.IsCode(err, sqlitedb.CodeCorrupt) || !asError(err, &se) || se.Detail["reason"] != sqlitedb.ReasonDamaged || se.Detail["damage"] == "" {
				t.Fatalf("CheckFile = %v, want %s (%s) saying what is damaged", err, sqlitedb.CodeCorrupt, sqlitedb.ReasonDamaged)
			}
			if _, err := sqlitedb.OpenAttached(t.Context(), damaged, sqlitedb.Options{}, sqlitedb.Schema{Component: "c"}); !sema.IsCode(err, sqlitedb.CodeCorrupt) {
				t.Fatalf("OpenAttached = %v, want %s", err, sqlitedb.CodeCorrupt)
			}
			if sum(t, damaged) != before {
				t.Fatal("the damaged file changed")
			}
			entries, _ := os.ReadDir(filepath.Dir(damaged))
			if len(entries) != 1 {
				t.Fatalf("files beside the refused one: %v", entries)
			}
		})
	}
}

// A new file is placed whole: never empty at its path, nothing left beside it, and
// processes (here connections) creating it at once all open the one file placed.
func TestOpenCreatesTheFileWhole(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "new.db")
	var wg sync.WaitGroup
	errs := make([]error, 8)
	dbs := make([]*sql.DB, 8)
	for i := range dbs {
		wg.Go(func() { dbs[i], errs[i] = sqlitedb.Open(path, sqlitedb.Options{}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("opener %d: %v", i, err)
		}
	}
	if _, err := dbs[0].Exec(`CREATE TABLE t (x); INSERT INTO t VALUES (42)`); err != nil {
		t.Fatal(err)
	}
	for i, db := range dbs {
		var x int
		if err := db.QueryRow(`SELECT x FROM t`).Scan(&x); err != nil || x != 42 {
			t.Fatalf("opener %d does not see the row the first wrote (%v): each opened a file of its own", i, err)
		}
		sqlitedb.Close(db)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Size() == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the placed file: %v, %v", fi, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("files beside the database after creating it: %v", entries)
	}
}

// A write the disk has no room for is io.disk_full, naming the file, wrapping SQLite's
// SQLITE_FULL — not an uncoded error a caller would take for its own mistake. SQLite's
// max_page_count makes the disk full without a small filesystem.
func TestFullDiskIsCoded(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "full.db")
	db := open(t, path, sqlitedb.Options{})
	if _, err := db.Exec(`CREATE TABLE t (b BLOB)`); err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1) // the page limit is the connection's
	if _, err := db.Exec(`PRAGMA max_page_count = 8`); err != nil {
		t.Fatal(err)
	}
	err := sqlitedb.Tx(ctx, db, func(q sqlitedb.Querier) error {
		_, err := q.ExecContext(ctx, `INSERT INTO t VALUES (zeroblob(100000))`)
		return err
	})
	var se *sema.Error
	if !sema.IsCode(err, sema.CodeDiskFull) || !asError(err, &se) || se.Detail["path"] != path {
		t.Fatalf("a write past the disk's room = %v, want %s naming %s", err, sema.CodeDiskFull, path)
	}
	if _, err := sqlitedb.Reader(db).ExecContext(ctx, `INSERT INTO t VALUES (zeroblob(100000))`); !sema.IsCode(err, sema.CodeDiskFull) {
		t.Fatalf("a statement past the disk's room = %v, want %s", err, sema.CodeDiskFull)
	}
}

// A byte of a table's CREATE statement flipped — a record integrity_check reads as well
// formed — is refused when the store attaches, before any statement written against the
// real schema could write half a change; the file is left as it was.
func TestAttachRefusesADamagedSchema(t *testing.T) {
	t.Parallel()
	path, _ := indexed(t)
	b, _ := os.ReadFile(path)
	i := strings.Index(string(b), "body TEXT NOT NULL")
	if i < 0 || strings.Count(string(b), "body TEXT NOT NULL") != 1 {
		t.Fatal("the table's statement is not in the file once")
	}
	b[i+3] = 'z' // bodz
	os.WriteFile(path, b, 0o600)
	if err := sqlitedb.CheckFile(path, 0); err != nil {
		t.Fatalf("CheckFile = %v; integrity_check was expected to pass this damage", err)
	}
	before := sum(t, path)
	steps := []string{`CREATE TABLE items (id TEXT PRIMARY KEY, body TEXT NOT NULL)`}
	known, err := sqlitedb.WantShape(t.Context(), sqlitedb.Schema{Component: "c", Steps: steps})
	if err != nil {
		t.Fatal(err)
	}
	// Replayed from the steps, and known ahead (Schema.Shape): the same refusal.
	for _, shape := range []map[string]string{nil, known} {
		_, err := sqlitedb.OpenAttached(t.Context(), path, sqlitedb.Options{}, sqlitedb.Schema{Component: "c", Steps: steps, Shape: shape})
		var se *sema.Error
		if !sema.IsCode(err, sqlitedb.CodeCorrupt) || !asError(err, &se) || !strings.Contains(fmt.Sprint(se.Detail["damage"]), "table items has (id TEXT 0 - 1, bodz TEXT 1 - 0") {
			t.Fatalf("OpenAttached (shape known ahead: %v) = %v, want %s naming the table", shape != nil, err, sqlitedb.CodeCorrupt)
		}
		if sum(t, path) != before {
			t.Fatal("the file changed")
		}
	}
}
