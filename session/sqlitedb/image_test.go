package sqlitedb_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/session/sqlitedb"
)

// imageOf makes a database file with s attached and returns its bytes: an image as a
// store's build embeds one.
func imageOf(t *testing.T, s sqlitedb.Schema) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "image.db")
	db, err := sqlitedb.OpenAttached(t.Context(), path, sqlitedb.Options{}, s)
	if err != nil {
		t.Fatal(err)
	}
	if err := sqlitedb.Close(db); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestImageBehindTheSteps: a file placed from an image that holds a schema at an older
// version gets the steps the image lacks, and then the shape check — which finds a
// table of the image that is not what the steps make.
func TestImageBehindTheSteps(t *testing.T) {
	t.Parallel()
	image := imageOf(t, sqlitedb.Schema{Component: "c", Steps: []string{step1}})

	// The image holds step 1; the schema has two: step 2 runs on the placed file.
	path := filepath.Join(t.TempDir(), "placed.db")
	db, err := sqlitedb.OpenAttached(t.Context(), path, sqlitedb.Options{Image: image}, sqlitedb.Schema{Component: "c", Steps: []string{step1, step2}})
	if err != nil {
		t.Fatal(err)
	}
	if v := version(t, db, "c"); v != 2 || !tableExists(t, db, "t2") {
		t.Fatalf("version %d, t2 %v: want the missing step run on the image", v, tableExists(t, db, "t2"))
	}
	var rows int
	db.QueryRow(`SELECT COUNT(*) FROM t1`).Scan(&rows)
	if rows != 1 {
		t.Fatalf("t1 has %d rows after step 2, want 1", rows)
	}
	sqlitedb.Close(db)

	// An image whose step-1 table is not what this schema's step 1 makes, behind by a
	// step: the shape check runs and refuses it.
	other := sqlitedb.Schema{Component: "c", Steps: []string{`CREATE TABLE t1 (x INTEGER, extra TEXT)`, `CREATE TABLE t2 (y INTEGER)`}}
	_, err = sqlitedb.OpenAttached(t.Context(), filepath.Join(t.TempDir(), "wrong.db"), sqlitedb.Options{Image: image}, other)
	if code := sema.CodeOf(err); code != sqlitedb.CodeCorrupt {
		t.Fatalf("an image whose table differs from the steps: %v (code %q), want %s", err, code, sqlitedb.CodeCorrupt)
	}
}

// TestImageNotPlacedOverAFile: an image is what a missing file is created as; an
// existing database is opened as it is.
func TestImageNotPlacedOverAFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "existing.db")
	s := sqlitedb.Schema{Component: "c", Steps: []string{step1}}
	db, err := sqlitedb.OpenAttached(t.Context(), path, sqlitedb.Options{}, s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO t1 VALUES (7)`); err != nil {
		t.Fatal(err)
	}
	sqlitedb.Close(db)
	image := imageOf(t, sqlitedb.Schema{Component: "c", Steps: []string{step1, step2}})
	db, err = sqlitedb.OpenAttached(t.Context(), path, sqlitedb.Options{Image: image}, sqlitedb.Schema{Component: "c", Steps: []string{step1, step2}})
	if err != nil {
		t.Fatal(err)
	}
	defer sqlitedb.Close(db)
	var n int
	db.QueryRow(`SELECT COUNT(*) FROM t1 WHERE x = 7`).Scan(&n)
	if n != 1 {
		t.Fatal("the existing file's row is gone: the image was placed over it")
	}
}
