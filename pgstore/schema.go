package pgstore

// sessionSteps are the session store's migrations (see component).
//
// Times are timestamptz from the database's clock; NULL means "not yet" (ended_at,
// claimed_at) or "none" (lease_expires). created_ns and updated_ns hold the nanoseconds
// below the microsecond of a time a caller gave (Session.CreatedAt), which timestamptz
// cannot keep; the store's own times have none.
var sessionSteps = []string{
	// 1: sessions, legs, the transcript and checkpoints.
	//
	// The sessions row is where writers of one session meet: an append, a leg's start
	// and a lease each update it with a condition, and the row lock orders them. It
	// carries the head and the counters (last_seq, last_leg) for that reason; updated_at
	// is the last activity, moved on by every write but a lease's. No index covers the
	// columns those writes change, and the table leaves room on its pages, so the updates
	// can stay heap-only (HOT) and rewrite no index.
	`CREATE TABLE sema_sessions (
		id             text PRIMARY KEY,
		n              bigint GENERATED ALWAYS AS IDENTITY,
		root           text NOT NULL,
		fs_id          text NOT NULL DEFAULT '',
		scope          text NOT NULL DEFAULT '',
		created_at     timestamptz NOT NULL,
		created_ns     smallint NOT NULL DEFAULT 0,
		updated_at     timestamptz NOT NULL,
		updated_ns     smallint NOT NULL DEFAULT 0,
		parent_id      text NOT NULL DEFAULT '',
		fork_of        text NOT NULL DEFAULT '',
		fork_at        text NOT NULL DEFAULT '',
		model          text NOT NULL DEFAULT '',
		mode           text NOT NULL DEFAULT '',
		effective_mode text NOT NULL DEFAULT '',
		pre_plan_mode  text NOT NULL DEFAULT '',
		title          text NOT NULL DEFAULT '',
		head           text NOT NULL DEFAULT '',
		last_seq       bigint NOT NULL DEFAULT 0,
		last_leg       integer NOT NULL DEFAULT 0,
		lease_holder   text NOT NULL DEFAULT '',
		lease_expires  timestamptz
	) WITH (fillfactor = 80);
	CREATE INDEX sema_sessions_by_root ON sema_sessions (root);

	CREATE TABLE sema_legs (
		id         text PRIMARY KEY,
		session_id text NOT NULL REFERENCES sema_sessions (id) ON DELETE CASCADE,
		number     integer NOT NULL,
		started_at timestamptz NOT NULL,
		ended_at   timestamptz,
		status     text NOT NULL,
		UNIQUE (session_id, number)
	);

	-- leg_id and parent_id are checked by the store (same session, existing) when an
	-- entry is appended and go with the session; foreign keys on them would cost two
	-- more index lookups per entry.
	CREATE TABLE sema_entries (
		session_id text NOT NULL REFERENCES sema_sessions (id) ON DELETE CASCADE,
		seq        bigint NOT NULL,
		id         text NOT NULL UNIQUE,
		leg_id     text,
		parent_id  text,
		kind       text NOT NULL,
		payload    bytea NOT NULL,
		created_at timestamptz NOT NULL,
		PRIMARY KEY (session_id, seq)
	);

	CREATE TABLE sema_checkpoints (
		id            text PRIMARY KEY,
		n             bigint GENERATED ALWAYS AS IDENTITY,
		session_id    text NOT NULL REFERENCES sema_sessions (id) ON DELETE CASCADE,
		leg_id        text,
		tool          text NOT NULL,
		args          bytea NOT NULL,
		args_sha256   text NOT NULL,
		gate          text NOT NULL,
		mode          text NOT NULL DEFAULT '',
		pre_plan_mode text NOT NULL DEFAULT '',
		created_at    timestamptz NOT NULL,
		claimed_at    timestamptz,
		decision      bytea
	);
	CREATE INDEX sema_checkpoints_by_session ON sema_checkpoints (session_id, created_at, n);`,
}

// historySteps are the file-history store's migrations (see component).
var historySteps = []string{
	// 1: content-addressed blobs, boundaries, first-touch records, fork carries.
	// Boundary 0 is "before the scope's first boundary" and has no row, so records.boundary
	// has no foreign key. after NULL means unknown (see history.Record.After).
	`CREATE TABLE sema_history_blobs (
		sum  text PRIMARY KEY,
		size bigint NOT NULL,
		data bytea NOT NULL
	);
	CREATE TABLE sema_history_boundaries (
		id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		scope      text NOT NULL,
		turn       integer NOT NULL,
		kind       text NOT NULL,
		created_at timestamptz NOT NULL
	);
	CREATE INDEX sema_history_boundaries_by_scope ON sema_history_boundaries (scope, id);
	CREATE TABLE sema_history_records (
		id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		scope      text NOT NULL,
		boundary   bigint NOT NULL,
		turn       integer NOT NULL,
		key        text NOT NULL,
		existed    boolean NOT NULL,
		sum        text REFERENCES sema_history_blobs (sum),
		mode       bigint NOT NULL,
		size       bigint NOT NULL,
		after      text,
		created_at timestamptz NOT NULL,
		UNIQUE (scope, boundary, key)
	);
	CREATE INDEX sema_history_records_by_sum ON sema_history_records (sum);
	CREATE TABLE sema_history_carries (
		to_scope   text PRIMARY KEY,
		from_scope text NOT NULL,
		created_at timestamptz NOT NULL
	);`,
	// 2: what a write that began was to leave at a record's key, until its outcome is
	// confirmed (see history.Record.Pending).
	`ALTER TABLE sema_history_records ADD COLUMN pending text;`,
}
