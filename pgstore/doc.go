// Package pgstore keeps sessions (transcripts, legs, leases, parked checkpoints) and file
// history (boundaries, first-touch records, deduplicated blobs) in PostgreSQL, for a
// deployment whose runners live in many processes on many machines. [Open] connects and
// migrates; [DB.Sessions] is a session.AdminStore and session.BatchAppender, [DB.History] a
// history.Store, both held to the same conformance suites (storetest, historytest) as the
// SQLite and memory stores, with the same error codes and sentences.
// [Sessions.AppendBatchWith] commits a caller's own statements (rows of its tables in the
// same database) with a batch of transcript entries: one implicit transaction, sent in one
// round trip, so the caller's rows and the entries are kept together or not at all.
//
// Invariants:
//   - Every table, index and the version table is named sema_…, so the database can be
//     shared with other software (a job queue's tables, say) without a collision.
//   - The schema is versioned per component ("session", "history") in
//     sema_schema_version. Missing steps run in one transaction under a transaction-scoped
//     advisory lock, so many processes starting at once against one database migrate it
//     once; a database whose recorded version is newer than this build knows is refused
//     with "store.schema_too_new" and left unchanged.
//   - Every write that another process could race is decided by one row: a transcript
//     append, a leg's start, a lease and a checkpoint's claim each update the row they
//     contend for with a condition and RETURNING, so the database's row lock — not a
//     mutex of this process — lets exactly one of any number of racers win, whichever
//     process or machine each runs on.
//   - Times the store mints come from the database's clock (clock_timestamp), so leases
//     and activity times written by machines whose clocks disagree compare correctly;
//     they are stored as timestamptz. A time a caller gives (Session.CreatedAt) keeps the
//     nanoseconds timestamptz cannot hold in a column beside it, so it reads back Equal.
//   - Transcript payloads, checkpoint arguments and blobs are stored as bytea: the exact
//     bytes given, never re-encoded (json and jsonb would reformat or refuse some).
//   - A blob is one row per sha256 and is deleted when the last record that uses it goes.
package pgstore
