// Package sqlstore holds what the SQLite stores (package session's SQLiteStore, package
// history's SQLite) and the PostgreSQL stores (package pgstore) say the same way: the
// statements whose text and meaning agree on both engines, each written once (with the
// session listing's filter, [Dialect.ListSessions]), the [Dialect] that spells a
// statement for one engine, and [Collect] and [One], which read a statement's rows into
// a store's own types through the store's scanner.
//
// A statement here is written as PostgreSQL reads it: numbered parameters ($1, $2, …)
// and the PostgreSQL store's table names (sema_…). The SQLite dialect turns $n into ?n
// and drops the sema_ of a table's name, so one text serves both files' schemas.
//
// What is not here differs by design, not by spelling, and stays with its store: the
// SQLite stores write in a transaction that holds the file's write lock from its start
// and check, then write; the PostgreSQL stores decide each race in one statement on the
// row it contends for (a CTE with a conditional UPDATE … RETURNING, a row lock, arrays
// through unnest) and retry what the database aborted. Their times differ too (Unix
// nanoseconds minted by the process against timestamptz from the database's clock),
// and with them every statement that writes or orders by a time.
//
// The package imports no database driver: each store keeps its own driver and its own
// reading of a driver's errors (no rows, unique violations, busy).
package sqlstore

import (
	"strconv"
	"strings"
)

// Dialect spells a statement for one engine (see the package doc).
type Dialect struct {
	// mark starts a numbered parameter: '$' for PostgreSQL, '?' for SQLite.
	mark byte
	// prefixed keeps the sema_ of table names; the SQLite schemas name their tables
	// without it.
	prefixed bool
}

var (
	// Postgres is PostgreSQL's dialect: statements are used as written.
	Postgres = Dialect{mark: '$', prefixed: true}
	// SQLite is SQLite's dialect: $n becomes ?n (SQLite's numbered parameter, which may
	// stand more than once, as $n may) and sema_name becomes name.
	SQLite = Dialect{mark: '?'}
)

// tablePrefix is what the PostgreSQL store's table names start with.
const tablePrefix = "sema_"

// SQL returns stmt spelled for d. It rewrites outside string literals only, so a
// literal that holds "$1" or "sema_" is kept.
func (d Dialect) SQL(stmt string) string {
	if d == Postgres {
		return stmt
	}
	var b strings.Builder
	b.Grow(len(stmt))
	quoted := false
	for i := 0; i < len(stmt); i++ {
		c := stmt[i]
		switch {
		case c == '\'':
			quoted = !quoted // '' inside a literal closes and reopens it: still inside
		case quoted:
		case c == '$' && i+1 < len(stmt) && isDigit(stmt[i+1]):
			c = d.mark
		case !d.prefixed && strings.HasPrefix(stmt[i:], tablePrefix) && (i == 0 || !isWord(stmt[i-1])):
			i += len(tablePrefix) - 1
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// param is d's spelling of the nth parameter.
func (d Dialect) param(n int) string {
	return string(d.mark) + strconv.Itoa(n)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isWord(c byte) bool {
	return c == '_' || isDigit(c) || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// Scanner is a row a statement returned: *sql.Row, *sql.Rows, pgx.Row and pgx.Rows all
// are.
type Scanner interface {
	Scan(dest ...any) error
}

// Rows is a statement's result read row by row: *sql.Rows and pgx.Rows both are. The
// caller closes it (the two drivers' Close differ).
type Rows interface {
	Scanner
	Next() bool
	Err() error
}

// Collect reads every row of rows with scan, in order, each straight into its element
// of the slice it returns (a row scanned into a variable of its own would cost that
// variable's allocation per row: Scan's destinations escape). No rows is a nil slice, as
// a loop that appends returns; an error returns no rows.
func Collect[T any](rows Rows, scan func(Scanner, *T) error) ([]T, error) {
	var out []T
	for rows.Next() {
		var zero T
		out = append(out, zero)
		if err := scan(rows, &out[len(out)-1]); err != nil {
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// One reads the row r holds with scan; the driver's no-rows error comes back as it is.
func One[T any](r Scanner, scan func(Scanner, *T) error) (T, error) {
	var v T
	err := scan(r, &v)
	return v, err
}

// ScanString reads a row of one text column.
func ScanString(r Scanner, s *string) error {
	return r.Scan(s)
}
