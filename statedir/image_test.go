package statedir_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/statedir"

	_ "modernc.org/sqlite"
)

var update = flag.Bool("update", false, "rewrite fresh.db from the stores' migration steps")

// stepsMade makes a state database the way a build without an image does: the session
// store's and the history store's migration steps, from none, on a new file.
func stepsMade(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), statedir.DatabaseName)
	ss, err := session.OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := history.NewSQLite(context.Background(), ss.DB())
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(hs.Close(), ss.Close()); err != nil {
		t.Fatal(err)
	}
	return path
}

// schemaOf describes a database file: every object's CREATE statement and every
// component's recorded version, sorted.
func schemaOf(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var b strings.Builder
	for _, q := range []string{
		`SELECT type || ' ' || name || ': ' || COALESCE(sql, '') FROM sqlite_master ORDER BY type, name`,
		`SELECT component || ' version ' || version FROM schema_version ORDER BY component`,
		`PRAGMA journal_mode`,
	} {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(&b, line)
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// TestFreshImageIsCurrent: the image a new state directory's database is placed from
// holds exactly what the stores' migration steps make — every table and index, the same
// statements, the same versions, in WAL mode. A new migration step makes it fail until
// the image is made again with -update.
func TestFreshImageIsCurrent(t *testing.T) {
	made := stepsMade(t)
	if *update {
		data, err := os.ReadFile(made)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("fresh.db", data, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("wrote fresh.db; run the test again without -update (the image is embedded when the test builds)")
		return
	}
	d, err := statedir.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	placed := filepath.Join(d.Path(), statedir.DatabaseName)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	want, got := schemaOf(t, made), schemaOf(t, placed)
	if got != want {
		t.Fatalf("fresh.db is not what the migration steps make; run go test ./statedir -run TestFreshImageIsCurrent -update\nimage:\n%s\nsteps:\n%s", got, want)
	}
	if !strings.Contains(want, "wal") || !strings.Contains(want, "session version") || !strings.Contains(want, "history version") {
		t.Fatalf("the description misses what it compares:\n%s", want)
	}
	image, _ := os.ReadFile("fresh.db")
	placedBytes, _ := os.ReadFile(placed)
	if len(image) == 0 || !bytes.HasPrefix(image, []byte("SQLite format 3\x00")) {
		t.Fatalf("the image (%d bytes) is not a SQLite database", len(image))
	}
	// Placed, opened and closed, nothing was written to it: no step ran.
	if !bytes.Equal(placedBytes, image) {
		t.Fatalf("the new state database (%d bytes) is not the image (%d bytes): it was made or changed by the steps", len(placedBytes), len(image))
	}
}

// TestOpenRefusesADamagedStoreSchema: a byte of a store's CREATE statement flipped in an
// existing state database (a record integrity_check reads as well formed) is refused
// with CodeCorrupt, for each store, by the shape known ahead; the file is left as it was.
func TestOpenRefusesADamagedStoreSchema(t *testing.T) {
	for _, column := range []string{"lease_expires INTEGER", "existed    INTEGER"} {
		t.Run(column, func(t *testing.T) {
			dir := t.TempDir()
			d, err := statedir.Open(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			d.Close()
			path := filepath.Join(dir, statedir.DatabaseName)
			b, _ := os.ReadFile(path)
			// Every copy: the live record, and any a migration's rewrite left in a free page.
			if bytes.Count(b, []byte(column)) == 0 {
				t.Fatalf("%q is not in the file", column)
			}
			for i := bytes.Index(b, []byte(column)); i >= 0; i = bytes.Index(b, []byte(column)) {
				b[i+1] = 'z' // another column's name
			}
			os.WriteFile(path, b, 0o600)
			_, err = statedir.Open(context.Background(), dir)
			if sema.CodeOf(err) != statedir.CodeCorrupt {
				t.Fatalf("Open of a state database whose %q was damaged = %v, want %s", column, err, statedir.CodeCorrupt)
			}
			if !strings.Contains(fmt.Sprint(err), "has (") {
				t.Fatalf("the refusal does not come from the shape check (it names the table and its columns): %v", err)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, b) {
				t.Fatal("the refused file changed")
			}
		})
	}
}
