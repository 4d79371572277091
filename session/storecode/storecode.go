// Package storecode holds the codes every store answers with, whatever it keeps its data
// in: the SQLite stores, the memory stores and the PostgreSQL stores refuse a database
// written by a newer sema, and a call after Close, with the same code. It imports
// nothing, so a store that is not SQLite names these codes without depending on the
// SQLite driver.
package storecode

// Codes shared by the stores.
const (
	// SchemaTooNew refuses a database written by a newer version of sema; nothing is
	// changed in it.
	SchemaTooNew = "store.schema_too_new"
	// Closed answers a call on a store that was closed.
	Closed = "store.closed"
)
