package sqlitedb

import (
	"context"
	"database/sql/driver"
	"sync"

	sqlite "modernc.org/sqlite"
)

// A statement that database/sql runs without preparing it (DB.QueryContext, Tx.ExecContext:
// every statement of River's SQLite driver, and a store's statements that are not among
// its Queries) reaches the driver as text, and the driver parses it, runs it and throws
// the compiled program away. Under the service's load SQLite's parser was an eighth of
// the CPU. A keepingConn keeps the compiled program of each text it ran, per connection,
// and runs the text again on it: SQLite re-compiles a kept statement by itself when the
// schema changed under it (sqlite3_prepare_v2), and a kept statement holds no lock
// between runs (the driver resets it when a run ends).

// keptPerConn bounds the statements one connection keeps; the least recently used is
// let go first. The stores and River together run well under a hundred distinct texts.
const keptPerConn = 128

// keepingConnector opens the driver's connections as keepingConns.
type keepingConnector struct{ driver.Connector }

func (c keepingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	inner, ok := conn.(fullConn)
	if !ok {
		return conn, nil // a driver without the interfaces below: nothing is kept
	}
	return &keepingConn{fullConn: inner, kept: map[string]*keptStmt{}}, nil
}

// fullConn is every optional interface the driver's connections implement; a wrapper
// that hid one would change database/sql's behaviour (see sqlite.NewConnector).
type fullConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// fullStmt is what a kept statement must do: run with a context.
type fullStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

// fullRows is every interface the driver's rows implement, which keptRows forwards.
type fullRows interface {
	driver.Rows
	driver.RowsColumnTypeDatabaseTypeName
	driver.RowsColumnTypeLength
	driver.RowsColumnTypeNullable
	driver.RowsColumnTypePrecisionScale
	driver.RowsColumnTypeScanType
}

// keepingConn is a driver connection that keeps the statements run through it as text.
// database/sql never uses one connection from two goroutines at once; the mutex keeps
// the bookkeeping right should a Rows be closed from another goroutine all the same.
type keepingConn struct {
	fullConn
	mu   sync.Mutex
	kept map[string]*keptStmt
	tick uint64
}

// keptStmt is one kept statement: busy while a Rows from it is open (a second run of
// the same text then gets a statement of its own), used the tick it last ran at.
type keptStmt struct {
	stmt fullStmt
	busy bool
	used uint64
	// dropped is set when the statement was let go while busy: the Rows' Close
	// finalizes it.
	dropped bool
}

// Unwrap returns the driver's connection (sqlite.Limit looks through a wrapper so).
func (c *keepingConn) Unwrap() driver.Conn { return c.fullConn }

// take returns the kept statement for query, compiling and keeping it when there is
// none, marked busy; nil when the kept one is busy or it does not compile (the caller
// then runs the text the driver's own way, which reports the error).
func (c *keepingConn) take(ctx context.Context, query string) *keptStmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick++
	if k := c.kept[query]; k != nil {
		if k.busy {
			return nil
		}
		k.busy, k.used = true, c.tick
		return k
	}
	st, err := c.fullConn.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	fs, ok := st.(fullStmt)
	if !ok {
		st.Close()
		return nil
	}
	if len(c.kept) >= keptPerConn {
		c.evictLocked()
	}
	k := &keptStmt{stmt: fs, busy: true, used: c.tick}
	c.kept[query] = k
	return k
}

// evictLocked lets go of the least recently used statement that is not running.
func (c *keepingConn) evictLocked() {
	var oldest string
	var at uint64
	for q, k := range c.kept {
		if !k.busy && (oldest == "" || k.used < at) {
			oldest, at = q, k.used
		}
	}
	if k := c.kept[oldest]; oldest != "" && k != nil {
		delete(c.kept, oldest)
		k.stmt.Close()
	}
}

// give hands k back after a run; a run that failed lets the statement go, so that no
// state a failure left in it reaches the next run.
func (c *keepingConn) give(query string, k *keptStmt, failed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k.busy = false
	switch {
	case k.dropped:
		k.stmt.Close()
	case failed:
		if c.kept[query] == k {
			delete(c.kept, query)
		}
		k.stmt.Close()
	}
}

func (c *keepingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	k := c.take(ctx, query)
	if k == nil {
		return c.fullConn.ExecContext(ctx, query, args)
	}
	res, err := k.stmt.ExecContext(ctx, args)
	c.give(query, k, err != nil)
	return res, err
}

func (c *keepingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	k := c.take(ctx, query)
	if k == nil {
		return c.fullConn.QueryContext(ctx, query, args)
	}
	rows, err := k.stmt.QueryContext(ctx, args)
	if err != nil {
		c.give(query, k, true)
		return nil, err
	}
	fr, ok := rows.(fullRows)
	if !ok {
		// Not the driver's rows: keep nothing of this text.
		rows.Close()
		c.give(query, k, true)
		return c.fullConn.QueryContext(ctx, query, args)
	}
	return &keptRows{fullRows: fr, c: c, query: query, k: k}, nil
}

// Close finalizes the kept statements, then closes the connection. One a Rows still
// reads is finalized when that Rows closes.
func (c *keepingConn) Close() error {
	c.mu.Lock()
	for q, k := range c.kept {
		delete(c.kept, q)
		if k.busy {
			k.dropped = true
			continue
		}
		k.stmt.Close()
	}
	c.mu.Unlock()
	return c.fullConn.Close()
}

// keptRows is a kept statement's Rows: closing it hands the statement back.
type keptRows struct {
	fullRows
	c      *keepingConn
	query  string
	k      *keptStmt
	closed bool
}

func (r *keptRows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.fullRows.Close()
	r.c.give(r.query, r.k, err != nil)
	return err
}

// keepingConnectorFor is the connector Open uses for dsn.
func keepingConnectorFor(dsn string) (driver.Connector, error) {
	base, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return keepingConnector{base}, nil
}
