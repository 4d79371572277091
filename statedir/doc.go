// Package statedir opens sema's state directory: the one place a deployment keeps what
// outlives a run. [Open] makes the directory when it is missing and opens, on a single
// SQLite file in it ([DatabaseName]), both durable stores — the session store (package
// session) and the file-history store (package history). agent.Deps.WithStateDir puts
// the two stores and the directory itself into an agent.Deps, so the runner records
// sessions and file history and, in the same stroke, refuses every tool access to the
// directory that holds them. (The method is the runner's, so this package, which only
// opens the stores, does not import it.)
//
// Why one constructor: the three seats belong together. A deployment that set
// Deps.Store and Deps.History but forgot Deps.StateDir would let a tool read the
// transcripts and pre-images of every session, or rewrite them; one that opened history
// on another file would split a session's facts across two files that can be backed up
// and pruned apart. Opening the directory through this package leaves neither mistake
// a line to be written in.
//
// Invariants:
//   - The directory is created readable by its owner only (0700), and the database file
//     too (0600): it holds transcripts and file contents. An existing directory keeps
//     the permissions it has.
//   - Both stores share one *sql.DB, so their writers queue behind one lock and one
//     busy timeout instead of failing each other with SQLITE_BUSY.
//   - A file written by a newer version of sema is refused ("store.schema_too_new"),
//     never read half-understood; nothing stays open after Open fails.
//   - A database file that is not sema's — not SQLite, another program's SQLite
//     database, one SQLite's integrity_check finds damaged, one of zero bytes — is
//     refused ("store.corrupt") and never modified: it is read, through a read-only
//     connection, before any pragma or migration could write to it. The way out is
//     the person's: move the file aside (it is evidence; the next Open then starts a
//     new store), or open another directory. A new database is created whole, so an
//     empty file is never one sema is still making.
//   - Dir.Path is absolute and clean, as agent.Deps.StateDir requires.
//
// Errors a caller acts on are *sema.Error values: [CodeDirInvalid] when the directory is
// not given or cannot be made, [CodeCorrupt], [CodeReadOnly] and [CodeLocked] for the
// faults of the database file (at Open and at any later call of the stores),
// [CodeOpenFailed] when the database cannot be opened for another reason, and the
// stores' own codes (sqlitedb.CodeSchemaTooNew) unchanged.
package statedir
