package session

// schema is the session store's migration list (see sqlitedb.Migrate): step i moves the
// schema from version i to i+1. Released steps are never edited; a change is a new step.
//
// Times are Unix nanoseconds (UTC); 0 means "not yet" (ended_at, claimed_at).
var schema = []string{
	// 1: sessions, legs, the transcript and checkpoints.
	`CREATE TABLE sessions (
		id            TEXT PRIMARY KEY,
		root          TEXT NOT NULL,
		fs_id         TEXT NOT NULL DEFAULT '',
		scope         TEXT NOT NULL DEFAULT '',
		created_at    INTEGER NOT NULL,
		updated_at    INTEGER NOT NULL,
		parent_id     TEXT NOT NULL DEFAULT '',
		fork_of       TEXT NOT NULL DEFAULT '',
		fork_at       TEXT NOT NULL DEFAULT '',
		model         TEXT NOT NULL DEFAULT '',
		mode          TEXT NOT NULL DEFAULT '',
		pre_plan_mode TEXT NOT NULL DEFAULT '',
		title         TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX sessions_by_root ON sessions (root);

	CREATE TABLE legs (
		id         TEXT PRIMARY KEY,
		session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
		number     INTEGER NOT NULL,
		started_at INTEGER NOT NULL,
		ended_at   INTEGER NOT NULL DEFAULT 0,
		status     TEXT NOT NULL,
		UNIQUE (session_id, number)
	);

	-- An append writes two b-tree pages and nothing else: the entry, keyed by
	-- (session_id, seq), and its id. The session's head and next seq are its entry with
	-- the highest seq, and its last activity that entry's created_at, so the sessions row
	-- is not rewritten per entry. leg_id and parent_id are checked by the store (same
	-- session, existing) on append and go with the session; foreign keys on them would
	-- need two more indexes written per entry.
	CREATE TABLE entries (
		session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
		seq        INTEGER NOT NULL,
		id         TEXT NOT NULL UNIQUE,
		leg_id     TEXT,
		parent_id  TEXT,
		kind       TEXT NOT NULL,
		payload    BLOB NOT NULL,
		created_at INTEGER NOT NULL,
		PRIMARY KEY (session_id, seq)
	) WITHOUT ROWID;

	CREATE TABLE checkpoints (
		id            TEXT PRIMARY KEY,
		session_id    TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
		leg_id        TEXT,
		tool          TEXT NOT NULL,
		args          BLOB NOT NULL,
		args_sha256   TEXT NOT NULL,
		gate          TEXT NOT NULL,
		mode          TEXT NOT NULL DEFAULT '',
		pre_plan_mode TEXT NOT NULL DEFAULT '',
		created_at    INTEGER NOT NULL,
		claimed_at    INTEGER NOT NULL DEFAULT 0,
		decision      BLOB
	);
	CREATE INDEX checkpoints_by_session ON checkpoints (session_id, created_at);`,
	// 2: the writer's lease on a session (AcquireLease): who holds it and until when.
	// An empty holder or a past expiry means the session is free. The lease lives on the
	// session's row so that taking it is one conditional UPDATE.
	`ALTER TABLE sessions ADD COLUMN lease_holder TEXT NOT NULL DEFAULT '';
	ALTER TABLE sessions ADD COLUMN lease_expires INTEGER NOT NULL DEFAULT 0;`,
	// 3: the mode the newest leg ran in (Session.EffectiveMode), for listings.
	`ALTER TABLE sessions ADD COLUMN effective_mode TEXT NOT NULL DEFAULT '';`,
}
