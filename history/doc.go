// Package history keeps file history for rewind: before a write tool first changes a
// file after a boundary (the start of a turn), the file's pre-image is recorded, so the
// workspace can later be returned to the start of any recorded turn.
//
// The pieces:
//   - A [Store] keeps boundaries, first-touch [Record]s and content-addressed blobs. It
//     knows nothing about files; [OpenSQLite] / [NewSQLite] keep it in the session
//     store's SQLite file (package statedir opens both on one file), [NewMemory] in
//     memory. A new Store is done when it passes the conformance suite in package
//     historytest.
//   - [Files] binds a store to one env.ExecutionEnv and is what the runner uses: [Files.Track]
//     before a write, [Files.Wrote] after it succeeded, [Files.Annul] when it failed,
//     [Files.Rewind] to restore and [Files.Undo] to take the last rewind back.
//     Every file access goes through the env, never the os package.
//   - [ResolveScope], [FilesystemIdentity] and [RefuseChildRewind] decide where a run
//     records and whether it may rewind.
//
// Invariants:
//   - A scope (a session id) holds boundaries in mint order. A record belongs to the
//     newest boundary of its scope when it was made (boundary 0 before the first one).
//   - At most one record per (scope, boundary, path): the first touch. Later Tracks of
//     the same path in the same boundary add nothing and report minted=false.
//   - A record is durable before Track returns it; Track fails instead of letting a write
//     go on unprotected when it cannot record (the write lane's default then refuses the
//     edit).
//   - A blob is stored once per sha256, however many records and scopes use it, and is
//     deleted with the last record that uses it.
//   - Rewind checks every file before it changes any: a refused rewind has touched
//     nothing.
//   - Bash changes are recorded too, through package treestate: a stat-cache snapshot of
//     the write roots before a command not proved read-only, a walk after it, and the
//     same first-touch records for what it created, changed or deleted.
//   - Rewind never overwrites bytes the agent did not leave: a file whose content is not
//     the After (or the Pending: a write begun, its outcome never confirmed) of its
//     newest record that explains it is a conflict unless forced.
//   - What a rewind leaves is the agent's (its After) only when it was: a turn's
//     pre-image, or a state a rewind saved while it was the agent's. Bytes a forced
//     rewind overwrote stay someone else's when an undo (or a rewind) puts them back,
//     so every later rewind over them is a conflict again until forced.
//   - Rewind saves every file it will change (a rewind boundary, one transaction) before
//     changing any, so Undo can return there; a rewind that cannot save changes nothing.
package history
