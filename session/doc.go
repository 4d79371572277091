// Package session is the durable memory of a stateless runner: every fact a task needs to
// continue in another call, or another process, lives in a [Store] — the session's
// metadata and lineage, its legs, its transcript and its parked approvals (checkpoints).
// [OpenSQLite] is the default store (one file, shared safely by many goroutines and many
// processes); [NewMemory] is the same contract in memory for tests and embedded use. A
// new store is done when it passes the conformance suite in package storetest.
//
// Invariants every Store keeps:
//   - The transcript is append-only. Each entry is committed in its own transaction, so
//     an entry that Append returned for survives a crash of the process, and an entry
//     never half-exists. Entries get a per-session sequence number 1, 2, 3, … with no
//     gaps and no duplicates, however many writers append at once.
//   - Entries form a tree by their parent: an Append without a parent follows the
//     session's head (the entry appended last), so concurrent appenders build one chain
//     and no write is lost; an Append with an earlier parent starts a branch (agent.Resume.At).
//     Transcript returns exactly one chain, root first.
//   - A checkpoint holds the exact pending tool call: its canonical JSON arguments and
//     their sha256, computed by the store, never re-derived later. It is claimed at most
//     once: of any number of concurrent claims exactly one succeeds and every other gets
//     "checkpoint.already_claimed".
//   - A fork is a new session that owns a copy of the chain it was cut from; the original
//     is never changed by its forks.
//   - A database written by a newer schema is refused ("store.schema_too_new"), never
//     read half-understood.
//
// Errors a caller acts on are *sema.Error values with the codes listed in this package
// (CodeNotFound, CodeAlreadyClaimed, …).
package session
