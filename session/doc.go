// Package session is the durable memory of a stateless runner: every fact a task needs to
// continue in another call, or another process, lives in a [Store] — the session's
// metadata and lineage, its legs, its transcript and its parked approvals (checkpoints).
// [OpenSQLite] is the default store (one file, shared safely by many goroutines and many
// processes); [NewMemory] is the same contract in memory for tests and embedded use.
//
// The contract comes in two parts. [Store] is what the runner (package agent) and a
// server running its tasks call: sessions, legs, transcript, checkpoints one at a time,
// leases. [Admin] is what administration calls: listing and finding sessions, listing a
// session's checkpoints, pruning (the sema sessions commands, sema --continue). A store
// made only to serve runs implements Store and passes storetest.Run; an [AdminStore]
// passes storetest.RunAdmin too. Every store in this module is an AdminStore. Code that
// administers sessions takes an AdminStore; code handed only a Store asks [AsAdmin].
// Optional capabilities a runner uses when it finds them ([BatchAppender]) are interfaces
// of their own, so a store that lacks one still serves runs.
//
// The methods keep positional parameters rather than one request struct each. What is
// likely to grow already travels in a struct (Session, Entry, Checkpoint, Decision,
// Filter), which takes a new field without a new signature; the rest are ids and a ttl,
// which name what a call acts on. A new capability comes as a new optional interface, as
// AppendBatch did, so that a store written against today's interfaces keeps compiling and
// keeps serving runs.
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
