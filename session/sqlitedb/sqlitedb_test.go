package sqlitedb_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/session/sqlitedb"
)

func open(t *testing.T, path string, opts sqlitedb.Options) *sql.DB {
	t.Helper()
	db, err := sqlitedb.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sqlitedb.Close(db) })
	return db
}

func version(t *testing.T, db *sql.DB, component string) int {
	t.Helper()
	var v int
	err := db.QueryRow(`SELECT version FROM schema_version WHERE component = ?`, component).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func tableExists(t *testing.T, db *sql.DB, name string) bool {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// Steps that fail when run twice, so a re-applied step is caught.
var (
	step1 = `CREATE TABLE t1 (x INTEGER)`
	step2 = `CREATE TABLE t2 (y INTEGER); INSERT INTO t1 VALUES (1)`
	bad3  = `CREATE TABLE t3 (z INTEGER); INSERT INTO missing VALUES (1)`
)

func TestMigrate(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := open(t, filepath.Join(t.TempDir(), "m.db"), sqlitedb.Options{})

	for _, tc := range []struct {
		name        string
		steps       []string
		wantCode    string
		wantErr     bool
		wantVersion int
		wantTables  map[string]bool
	}{
		{"fresh", []string{step1}, "", false, 1, map[string]bool{"t1": true, "t2": false}},
		{"same again is a no-op", []string{step1}, "", false, 1, nil},
		{"one step more", []string{step1, step2}, "", false, 2, map[string]bool{"t2": true}},
		{"up to date", []string{step1, step2}, "", false, 2, nil},
		{"failing step rolls back", []string{step1, step2, bad3}, "", true, 2, map[string]bool{"t3": false}},
		{"older build refused", []string{step1}, sqlitedb.CodeSchemaTooNew, true, 2, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := sqlitedb.Migrate(ctx, db, "c", tc.steps)
			if tc.wantErr != (err != nil) {
				t.Fatalf("Migrate: %v", err)
			}
			if tc.wantCode != "" && !sema.IsCode(err, tc.wantCode) {
				t.Fatalf("Migrate: %v, want %s", err, tc.wantCode)
			}
			if v := version(t, db, "c"); v != tc.wantVersion {
				t.Fatalf("version %d, want %d", v, tc.wantVersion)
			}
			for name, want := range tc.wantTables {
				if got := tableExists(t, db, name); got != want {
					t.Fatalf("table %s exists = %v, want %v", name, got, want)
				}
			}
		})
	}
	var rows int
	if err := db.QueryRow(`SELECT COUNT(*) FROM t1`).Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("step 2 ran %d times (%v), want once", rows, err)
	}
	// Components version independently in one file.
	if err := sqlitedb.Migrate(ctx, db, "other", []string{`CREATE TABLE o1 (x)`}); err != nil {
		t.Fatal(err)
	}
	if version(t, db, "other") != 1 || version(t, db, "c") != 2 {
		t.Fatal("components share a version")
	}
}

// Two processes opening a fresh file at once migrate it once.
func TestMigrateConcurrentOpeners(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "m.db")
	const openers = 4
	dbs := make([]*sql.DB, openers)
	for i := range dbs {
		dbs[i] = open(t, path, sqlitedb.Options{})
	}
	var wg sync.WaitGroup
	errs := make([]error, openers)
	for i, db := range dbs {
		wg.Go(func() { errs[i] = sqlitedb.Migrate(t.Context(), db, "c", []string{step1, step2}) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var rows int
	if err := dbs[0].QueryRow(`SELECT COUNT(*) FROM t1`).Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("step 2 ran %d times (%v), want once", rows, err)
	}
}

func TestTx(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := open(t, filepath.Join(t.TempDir(), "tx.db"), sqlitedb.Options{})
	if _, err := db.Exec(`CREATE TABLE t (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		var n int
		if err := db.QueryRow(`SELECT COUNT(*) FROM t`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	insert := func(q sqlitedb.Querier) error {
		_, err := q.ExecContext(ctx, `INSERT INTO t VALUES (1)`)
		return err
	}
	boom := errors.New("boom")
	if err := sqlitedb.Tx(ctx, db, func(q sqlitedb.Querier) error { insert(q); return boom }); !errors.Is(err, boom) {
		t.Fatalf("Tx = %v", err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the panic was swallowed")
			}
		}()
		sqlitedb.Tx(ctx, db, func(q sqlitedb.Querier) error { insert(q); panic("in tx") })
	}()
	if n := count(); n != 0 {
		t.Fatalf("a failed or panicking transaction left %d rows", n)
	}
	// The connections are still usable after the rollbacks.
	for range 10 {
		if err := sqlitedb.Tx(ctx, db, insert); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(); n != 10 {
		t.Fatalf("%d rows, want 10", n)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := sqlitedb.Tx(cctx, db, insert); !errors.Is(err, context.Canceled) {
		t.Fatalf("Tx with a cancelled context = %v", err)
	}
}

// A writer of another connection (another process) waits for the lock; with a tiny busy
// timeout the wait ends in an error IsBusy recognizes, never a hang.
func TestTxBusy(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "busy.db")
	holder := open(t, path, sqlitedb.Options{})
	patient := open(t, path, sqlitedb.Options{})
	hasty := open(t, path, sqlitedb.Options{BusyTimeout: time.Millisecond})
	if _, err := holder.Exec(`CREATE TABLE t (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	locked, release := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- sqlitedb.Tx(ctx, holder, func(q sqlitedb.Querier) error {
			close(locked)
			<-release
			_, err := q.ExecContext(ctx, `INSERT INTO t VALUES (1)`)
			return err
		})
	}()
	<-locked
	err := sqlitedb.Tx(ctx, hasty, func(q sqlitedb.Querier) error { return nil })
	if !sqlitedb.IsBusy(err) {
		t.Fatalf("Tx against a held lock with a 1ms timeout = %v, want busy", err)
	}
	waited := make(chan error, 1)
	go func() {
		waited <- sqlitedb.Tx(ctx, patient, func(q sqlitedb.Querier) error {
			_, err := q.ExecContext(ctx, `INSERT INTO t VALUES (2)`)
			return err
		})
	}()
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatalf("a waiting writer failed instead of waiting: %v", err)
	}
	if sqlitedb.IsBusy(errors.New("database is locked")) {
		t.Fatal("IsBusy matched a plain error by its text")
	}
}

func TestOpenPathAndMode(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "odd ?dir# 100%")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "sema.db")
	db := open(t, path, sqlitedb.Options{})
	if _, err := db.Exec(`CREATE TABLE t (x)`); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("the database is not at %s: %v", path, err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}
	if _, err := sqlitedb.Open(filepath.Join(t.TempDir(), "missing", "sema.db"), sqlitedb.Options{}); err == nil {
		t.Fatal("Open in a missing directory succeeded")
	}
}

// Two stores attach to one file through the same steps: each gets its own version row,
// and a file written by a newer schema is refused whether the store owns it or shares it.
func TestAttach(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "shared.db")
	a := sqlitedb.Schema{Component: "a", Steps: []string{step1}, Queries: []string{`SELECT x FROM t1`}}
	b := sqlitedb.Schema{Component: "b", Steps: []string{`CREATE TABLE b1 (y)`}}
	db, err := sqlitedb.OpenAttached(ctx, path, sqlitedb.Options{}, a)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sqlitedb.Close(db) })
	if err := sqlitedb.Attach(ctx, db, b); err != nil {
		t.Fatal(err)
	}
	if version(t, db, "a") != 1 || version(t, db, "b") != 1 || !tableExists(t, db, "b1") {
		t.Fatal("attaching two schemas did not migrate both")
	}
	// Attaching again is the up-to-date case: nothing re-runs (step1 would fail twice).
	if err := sqlitedb.Attach(ctx, db, a); err != nil {
		t.Fatalf("re-attaching an up-to-date schema: %v", err)
	}

	// A query that does not compile refuses the attach, before the store uses the file.
	broken := sqlitedb.Schema{Component: "c", Queries: []string{`SELECT nothing FROM nowhere`}}
	if err := sqlitedb.Attach(ctx, db, broken); err == nil {
		t.Fatal("Attach prepared a statement over a missing table")
	}

	if _, err := db.Exec(`UPDATE schema_version SET version = 5 WHERE component = 'a'`); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlitedb.OpenAttached(ctx, path, sqlitedb.Options{}, a); !sema.IsCode(err, sqlitedb.CodeSchemaTooNew) {
		t.Fatalf("OpenAttached on a newer schema: %v, want %s", err, sqlitedb.CodeSchemaTooNew)
	}
	if err := sqlitedb.Attach(ctx, db, a); !sema.IsCode(err, sqlitedb.CodeSchemaTooNew) {
		t.Fatalf("Attach on a newer schema: %v, want %s", err, sqlitedb.CodeSchemaTooNew)
	}
}

// TestInTx: a Querier on a transaction the caller began runs prepared and unprepared
// statements inside it, on its one connection — a rollback discards both, a commit keeps
// both — and never waits for a second connection (the pool has one).
func TestInTx(t *testing.T) {
	ctx := context.Background()
	db := open(t, filepath.Join(t.TempDir(), "intx.db"), sqlitedb.Options{})
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)`); err != nil {
		t.Fatal(err)
	}
	const prepared = `INSERT INTO kv (k, v) VALUES (?, ?)`
	if err := sqlitedb.Prepare(ctx, db, prepared); err != nil {
		t.Fatal(err)
	}
	write := func(commit bool, k string) {
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		tx, err := db.BeginTx(tctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		q := sqlitedb.InTx(tx, db)
		if _, err := q.ExecContext(tctx, prepared, k+"-prepared", "1"); err != nil {
			t.Fatal(err)
		}
		if _, err := q.ExecContext(tctx, `INSERT INTO kv (k, v) VALUES (?, '2')`, k+"-parsed"); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := q.QueryRowContext(tctx, `SELECT COUNT(*) FROM kv WHERE k LIKE ?`, k+"%").Scan(&n); err != nil || n != 2 {
			t.Fatalf("inside the transaction: %d rows, %v", n, err)
		}
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	write(false, "undone")
	write(true, "kept")
	var keys []string
	rows, err := sqlitedb.Reader(db).QueryContext(ctx, `SELECT k FROM kv ORDER BY k`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		rows.Scan(&k)
		keys = append(keys, k)
	}
	if len(keys) != 2 || keys[0] != "kept-parsed" || keys[1] != "kept-prepared" {
		t.Fatalf("rows after a rollback and a commit: %v", keys)
	}
}

// TestAttachWithShapePreparesBeside: a schema with a known shape is compiled beside the
// opening, so Attach returns before its statements are; Close waits for them (the race
// detector watches), and a statement that does not compile fails where it runs.
func TestAttachWithShapePreparesBeside(t *testing.T) {
	ctx := t.Context()
	steps := []string{`CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)`}
	shape, err := sqlitedb.WantShape(ctx, sqlitedb.Schema{Component: "kv", Steps: steps})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		s := sqlitedb.Schema{Component: "kv", Steps: steps, Shape: shape,
			Queries: []string{`SELECT v FROM kv WHERE k = ?`, `INSERT INTO kv (k, v) VALUES (?, ?)`, `SELECT nothing FROM nowhere`}}
		db, err := sqlitedb.OpenAttached(ctx, filepath.Join(t.TempDir(), fmt.Sprint(i, ".db")), sqlitedb.Options{}, s)
		if err != nil {
			t.Fatalf("attach %d: %v", i, err)
		}
		r := sqlitedb.Reader(db)
		if _, err := r.ExecContext(ctx, `INSERT INTO kv (k, v) VALUES (?, ?)`, "a", "1"); err != nil {
			t.Fatal(err)
		}
		if _, err := r.QueryContext(ctx, `SELECT nothing FROM nowhere`); err == nil {
			t.Fatal("a statement over a missing table ran")
		}
		if i%2 == 0 {
			time.Sleep(time.Millisecond)
		}
		if err := sqlitedb.Close(db); err != nil {
			t.Fatal(err)
		}
	}
}
