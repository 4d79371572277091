package sqlitedb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// countingConnector counts the statements the driver compiles for its connections.
type countingConnector struct {
	driver.Connector
	prepared *atomic.Int64
}

func (c countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return countingConn{fullConn: conn.(fullConn), prepared: c.prepared}, nil
}

type countingConn struct {
	fullConn
	prepared *atomic.Int64
}

func (c countingConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	c.prepared.Add(1)
	return c.fullConn.PrepareContext(ctx, q)
}

// keepingDB opens a database file whose connections keep statements, counting the
// statements compiled through the keeping path.
func keepingDB(t testing.TB, conns int) (*sql.DB, *atomic.Int64) {
	t.Helper()
	base, err := keepingConnectorFor("file:" + filepath.Join(t.TempDir(), "k.db") + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	n := new(atomic.Int64)
	inner := base.(keepingConnector).Connector
	db := sql.OpenDB(keepingConnector{countingConnector{Connector: inner, prepared: n}})
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL UNIQUE)`); err != nil {
		t.Fatal(err)
	}
	return db, n
}

// A text run again on its connection runs on the statement compiled the first time.
func TestKeptStatementIsCompiledOnce(t *testing.T) {
	db, prepared := keepingDB(t, 1)
	before := prepared.Load()
	for i := range 20 {
		if _, err := db.Exec(`INSERT INTO t (k, v) VALUES (?, ?)`, i, fmt.Sprint("v", i)); err != nil {
			t.Fatal(err)
		}
		var v string
		if err := db.QueryRow(`SELECT v FROM t WHERE k = ?`, i).Scan(&v); err != nil || v != fmt.Sprint("v", i) {
			t.Fatalf("row %d: %q, %v", i, v, err)
		}
	}
	if n := prepared.Load() - before; n != 2 {
		t.Fatalf("two texts run twenty times each were compiled %d times, want 2", n)
	}
}

// A second run of a text whose Rows is still open gets a statement of its own: the
// first Rows reads on undisturbed.
func TestKeptStatementBusyRunsApart(t *testing.T) {
	db, _ := keepingDB(t, 1)
	for i := range 5 {
		if _, err := db.Exec(`INSERT INTO t (k, v) VALUES (?, ?)`, i, fmt.Sprint("v", i)); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := db.Begin() // one connection for both runs
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	const q = `SELECT k FROM t WHERE k >= ? ORDER BY k`
	outer, err := tx.Query(q, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for outer.Next() {
		var k int
		if err := outer.Scan(&k); err != nil {
			t.Fatal(err)
		}
		got = append(got, k)
		// The same text, other arguments, while the outer Rows reads.
		var inner []int
		rows, err := tx.Query(q, 3)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var j int
			rows.Scan(&j)
			inner = append(inner, j)
		}
		rows.Close()
		if fmt.Sprint(inner) != "[3 4]" {
			t.Fatalf("the inner run read %v", inner)
		}
	}
	if err := outer.Err(); err != nil {
		t.Fatal(err)
	}
	outer.Close()
	if fmt.Sprint(got) != "[0 1 2 3 4]" {
		t.Fatalf("the outer run read %v while the same text ran inside it", got)
	}
}

// A kept statement sees the schema as it is now, and a run that failed leaves nothing
// behind for the next.
func TestKeptStatementAfterSchemaChangeAndFailure(t *testing.T) {
	db, _ := keepingDB(t, 1)
	if _, err := db.Exec(`INSERT INTO t (k, v) VALUES (1, 'a')`); err != nil {
		t.Fatal(err)
	}
	cols := func() int {
		rows, err := db.Query(`SELECT * FROM t`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		c, _ := rows.Columns()
		return len(c)
	}
	if n := cols(); n != 2 {
		t.Fatalf("%d columns", n)
	}
	if _, err := db.Exec(`ALTER TABLE t ADD COLUMN w TEXT`); err != nil {
		t.Fatal(err)
	}
	if n := cols(); n != 3 {
		t.Fatalf("after a column was added the kept statement reads %d columns, want 3", n)
	}
	const ins = `INSERT INTO t (k, v) VALUES (?, ?)`
	if _, err := db.Exec(ins, 2, "a"); err == nil {
		t.Fatal("a duplicate value was inserted")
	}
	if _, err := db.Exec(ins, 2, "b"); err != nil {
		t.Fatalf("the text that failed once fails again: %v", err)
	}
}

// However many texts run, a connection keeps at most keptPerConn statements, and every
// text still answers right.
func TestKeptStatementsAreBounded(t *testing.T) {
	db, _ := keepingDB(t, 1)
	for i := range keptPerConn + 40 {
		var n int
		if err := db.QueryRow(fmt.Sprintf(`SELECT %d + ?`, i), 1).Scan(&n); err != nil || n != i+1 {
			t.Fatalf("text %d: %d, %v", i, n, err)
		}
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Raw(func(c any) error {
		k := c.(*keepingConn)
		k.mu.Lock()
		defer k.mu.Unlock()
		if len(k.kept) > keptPerConn {
			t.Errorf("a connection keeps %d statements, over %d", len(k.kept), keptPerConn)
		}
		return nil
	})
}

// Many goroutines on a pool, each reading while it writes, all through kept statements:
// every row written is read back as written (run with -race).
func TestKeptStatementsConcurrent(t *testing.T) {
	db, _ := keepingDB(t, 4)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				k := g*1000 + i
				v := fmt.Sprintf("g%d-%d", g, i)
				if _, err := db.Exec(`INSERT INTO t (k, v) VALUES (?, ?)`, k, v); err != nil {
					errs <- err
					return
				}
				var got string
				if err := db.QueryRow(`SELECT v FROM t WHERE k = ?`, k).Scan(&got); err != nil || got != v {
					errs <- fmt.Errorf("row %d: %q, %v", k, got, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// A text value bound to a kept statement is the value read back, run after run: the
// binding of one run never leaks into the next.
func FuzzKeptStatementBinding(f *testing.F) {
	f.Add("hello", "world")
	f.Add("", "\x00")
	f.Add("a'b", "--")
	db, _ := keepingDB(f, 1)
	var k atomic.Int64
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, v := range []string{a, b} {
			id := k.Add(1)
			if _, err := db.Exec(`INSERT INTO t (k, v) VALUES (?, ?)`, id, fmt.Sprint(id, ":", v)); err != nil {
				t.Fatal(err)
			}
			var got string
			if err := db.QueryRow(`SELECT v FROM t WHERE k = ?`, id).Scan(&got); err != nil || got != fmt.Sprint(id, ":", v) {
				t.Fatalf("row %d holds %q, want %q (%v)", id, got, fmt.Sprint(id, ":", v), err)
			}
		}
	})
}
