package session

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/internal/sqlstore"
	"github.com/sema-agent/sema/session/sqlitedb"
)

// SQLiteStore is the default Store: one SQLite file in WAL mode that any number of
// goroutines and processes may share. Each write is one transaction that takes the
// write lock at its start; a writer of another process waits for it (up to the busy
// timeout) instead of failing.
type SQLiteStore struct {
	db  *sql.DB
	r   sqlitedb.Querier // prepared reads outside a transaction
	own bool
}

var _ Store = (*SQLiteStore)(nil)

// OpenSQLite opens, creating and migrating when needed, the session store at path (the
// runner's default is $SEMA_HOME/sema.db). The parent directory must exist.
func OpenSQLite(path string) (*SQLiteStore, error) {
	return OpenSQLiteWith(path, sqlitedb.Options{})
}

// OpenSQLiteWith is OpenSQLite with explicit SQLite options.
func OpenSQLiteWith(path string, opts sqlitedb.Options) (*SQLiteStore, error) {
	db, err := sqlitedb.OpenAttached(context.Background(), path, opts, sqliteSchema)
	if err != nil {
		return nil, err
	}
	return &SQLiteStore{db: db, r: sqlitedb.Reader(db), own: true}, nil
}

// NewSQLite builds the store on a database the caller opened (see sqlitedb.Open for the
// settings it needs) and migrates its schema. Close does not close db.
func NewSQLite(ctx context.Context, db *sql.DB) (*SQLiteStore, error) {
	if err := sqlitedb.Attach(ctx, db, sqliteSchema); err != nil {
		return nil, err
	}
	return &SQLiteStore{db: db, r: sqlitedb.Reader(db)}, nil
}

// DB returns the database, so the file-history store can share the file.
func (s *SQLiteStore) DB() *sql.DB { return s.db }

// Close closes the database when OpenSQLite or OpenSQLiteWith opened it; a store built
// by NewSQLite leaves the caller's database open.
func (s *SQLiteStore) Close() error {
	if s.own {
		return sqlitedb.Close(s.db)
	}
	return nil
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// sessionCols reads a session; head and the last activity come from its newest entry
// (see the entries table in schema.go).
const sessionCols = `id, root, fs_id, scope, created_at, parent_id, fork_of, fork_at, model, mode, effective_mode, pre_plan_mode, title,
	COALESCE((SELECT e.id FROM entries e WHERE e.session_id = sessions.id ORDER BY e.seq DESC LIMIT 1), ''),
	` + lastActivity

const lastActivity = `MAX(updated_at, COALESCE((SELECT e.created_at FROM entries e WHERE e.session_id = sessions.id
	ORDER BY e.seq DESC LIMIT 1), 0))`

// The statements run on every append and read, prepared once when the store opens.
const (
	qGetSession = `SELECT ` + sessionCols + ` FROM sessions WHERE id = ?`
	// qAppendCheck reads, in one statement, what an append needs: the session's head and
	// last seq, and whether the leg (?2) and the parent (?3) belong to it ('' = none given).
	// No row means no such session.
	qAppendCheck = `SELECT
		COALESCE((SELECT id FROM entries WHERE session_id = ?1 ORDER BY seq DESC LIMIT 1), ''),
		COALESCE((SELECT seq FROM entries WHERE session_id = ?1 ORDER BY seq DESC LIMIT 1), 0),
		?2 = '' OR EXISTS (SELECT 1 FROM legs WHERE id = ?2 AND session_id = ?1),
		?3 = '' OR EXISTS (SELECT 1 FROM entries WHERE id = ?3 AND session_id = ?1)
		FROM sessions WHERE id = ?1`
	qLegOf  = `SELECT 1 FROM legs WHERE id = ? AND session_id = ?`
	qInsert = `INSERT INTO entries (session_id, seq, id, leg_id, parent_id, kind, payload, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
)

// The statements every leg runs once or twice: its session's opening, lease, end and mode.
const (
	qSetLease = `UPDATE sessions SET lease_holder = ?, lease_expires = ? WHERE id = ?`
	qNextLeg  = `SELECT COALESCE(MAX(number), 0) + 1 FROM legs WHERE session_id = ?`
	qStartLeg = `INSERT INTO legs (` + sqlstore.LegCols + `) VALUES (?, ?, ?, ?, 0, ?)`
	qEndLeg   = `UPDATE legs SET ended_at = ?, status = ? WHERE id = ?`
	qSetMode  = `UPDATE sessions SET model = ?, mode = ?, effective_mode = ?, pre_plan_mode = ?, title = ? WHERE id = ?`
	// The claim is one conditional UPDATE, as a checkpoint's is: of two transactions that
	// find the session free, the second sees the first one's holder and matches nothing.
	// A renewal matches only its own holder, expired or not.
	qAcquire = `UPDATE sessions SET lease_holder = ?3, lease_expires = ?2 WHERE id = ?1 AND (lease_holder = ?3 OR lease_holder = '' OR lease_expires <= ?4)`
	qRenew   = `UPDATE sessions SET lease_holder = ?3, lease_expires = ?2 WHERE id = ?1 AND lease_holder = ?3`
	qLeaseOf = `SELECT lease_holder, lease_expires FROM sessions WHERE id = ?`
	qRelease = `UPDATE sessions SET lease_holder = '', lease_expires = 0 WHERE id = ? AND lease_holder = ?`
)

// hotQueries are prepared once when the store opens: a service runs them for every
// turn or leg, and a statement not prepared is parsed again in every transaction.
var hotQueries = []string{qGetSession, qAppendCheck, qLegOf, qInsert, sq.Chain, qClaim,
	insertSession, touchSQL, qSetLease, qNextLeg, qStartLeg, sq.LegByID, qEndLeg, qSetMode, qAcquire, qRenew, qLeaseOf, qRelease}

// sqliteSchema is the session store's share of a database file.
var sqliteSchema = sqlitedb.Schema{Component: "session", Steps: schema, Queries: hotQueries, Shape: sqliteShape}

// sq is the statements this store shares with pgstore's (see package sqlstore).
var sq = sqlstore.SQLite.Session()

func scanSession(r sqlstore.Scanner, s *Session) error {
	var created, updated int64
	err := r.Scan(&s.ID, &s.Root, &s.FSID, &s.Scope, &created, &s.ParentID, &s.ForkOf, &s.ForkAt,
		&s.Model, &s.Mode, &s.EffectiveMode, &s.PrePlanMode, &s.Title, &s.Head, &updated)
	s.CreatedAt, s.UpdatedAt = fromNanos(created), fromNanos(updated)
	return err
}

func getSession(ctx context.Context, q sqlitedb.Querier, id string) (Session, error) {
	s, err := sqlstore.One(q.QueryRowContext(ctx, qGetSession, id), scanSession)
	if errors.Is(err, sql.ErrNoRows) {
		return Session{}, NotFound(id)
	}
	return s, err
}

// touchSQL moves updated_at forward, never back (see touch in memory.go).
const touchSQL = `UPDATE sessions SET updated_at = MAX(updated_at + 1, ?) WHERE id = ?`

const insertSession = `INSERT INTO sessions (id, root, fs_id, scope, created_at, updated_at, parent_id, fork_of, fork_at,
	model, mode, effective_mode, pre_plan_mode, title) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// Create stores a new session, minting its id when none is given (see [Store.Create]).
func (s *SQLiteStore) Create(ctx context.Context, in Session) (Session, error) {
	in, err := CheckCreate(in, time.Now().UTC())
	if err != nil {
		return Session{}, err
	}
	err = sqlitedb.Tx(ctx, s.db, func(q sqlitedb.Querier) error { return insertNew(ctx, q, in) })
	if err != nil {
		return Session{}, err
	}
	return s.Get(ctx, in.ID)
}

// insertNew inserts the checked new session in, inside a transaction; an id taken is
// CodeExists.
func insertNew(ctx context.Context, q sqlitedb.Querier, in Session) error {
	_, err := q.ExecContext(ctx, insertSession,
		in.ID, in.Root, in.FSID, in.Scope, nanos(in.CreatedAt), nanos(in.UpdatedAt), in.ParentID, in.ForkOf, in.ForkAt,
		in.Model, in.Mode, in.EffectiveMode, in.PrePlanMode, in.Title)
	if sqlitedb.IsConstraint(err) {
		return Exists(in.ID)
	}
	return err
}

// CreateLeased stores a new session held by holder, with its first leg running, in one
// transaction (see [Opener]).
func (s *SQLiteStore) CreateLeased(ctx context.Context, in Session, holder string, ttl time.Duration) (Session, Leg, error) {
	in, err := CheckCreate(in, time.Now().UTC())
	if err != nil {
		return Session{}, Leg{}, err
	}
	if err := CheckLease(in.ID, holder, ttl, true); err != nil {
		return Session{}, Leg{}, err
	}
	var out Session
	var leg Leg
	err = sqlitedb.Grouped(ctx, s.db, func(q sqlitedb.Querier) error {
		if err := insertNew(ctx, q, in); err != nil {
			return err
		}
		if _, err := q.ExecContext(ctx, qSetLease,
			holder, time.Now().Add(ttl).UnixNano(), in.ID); err != nil {
			return err
		}
		if leg, err = startLeg(ctx, q, in.ID); err != nil {
			return err
		}
		out, err = getSession(ctx, q, in.ID)
		return err
	})
	if err != nil {
		return Session{}, Leg{}, err
	}
	return out, leg, nil
}

// Get returns the session with the given id (see [Store.Get]).
func (s *SQLiteStore) Get(ctx context.Context, id string) (Session, error) {
	return getSession(ctx, s.r, id)
}

// Update changes the session's Model, Mode, EffectiveMode, PrePlanMode and Title through fn, atomically
// (see [Store.Update]).
func (s *SQLiteStore) Update(ctx context.Context, id string, fn func(*Session) error) (Session, error) {
	var out Session
	err := sqlitedb.Tx(ctx, s.db, func(q sqlitedb.Querier) error {
		cur, err := getSession(ctx, q, id)
		if err != nil {
			return err
		}
		next, err := ApplyUpdate(cur, fn, cur.UpdatedAt)
		if err != nil {
			return err
		}
		if _, err := q.ExecContext(ctx, qSetMode,
			next.Model, next.Mode, next.EffectiveMode, next.PrePlanMode, next.Title, id); err != nil {
			return err
		}
		if _, err := q.ExecContext(ctx, touchSQL, time.Now().UnixNano(), id); err != nil {
			return err
		}
		out, err = getSession(ctx, q, id)
		return err
	})
	return out, err
}

// List returns the sessions f selects, most recently updated first (see [Store.List]).
func (s *SQLiteStore) List(ctx context.Context, f Filter) ([]Session, error) {
	query, args := sqlstore.SQLite.ListSessions(sessionCols, lastActivity+" DESC, rowid DESC", f.Root, f.RootsOnly, f.Limit)
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return sqlstore.Collect(rows, scanSession)
}

// Newest returns the most recently updated root session at root (see [Store.Newest]).
func (s *SQLiteStore) Newest(ctx context.Context, root string) (Session, error) {
	l, err := s.List(ctx, Filter{Root: root, RootsOnly: true, Limit: 1})
	if err != nil {
		return Session{}, err
	}
	if len(l) == 0 {
		return Session{}, NoSessionAt(root)
	}
	return l[0], nil
}

// Fork copies the session's chain ending at atEntry ("" = the head) into a new session
// (see [Store.Fork]).
func (s *SQLiteStore) Fork(ctx context.Context, id, atEntry string) (Session, error) {
	var out Session
	err := sqlitedb.Tx(ctx, s.db, func(q sqlitedb.Querier) error {
		src, err := getSession(ctx, q, id)
		if err != nil {
			return err
		}
		chain, err := transcript(ctx, q, src, atEntry)
		if err != nil {
			return err
		}
		now := time.Now().UnixNano()
		f := src
		f.ID, f.ForkOf, f.ForkAt = NewID(), id, ""
		if len(chain) > 0 {
			f.ForkAt = chain[len(chain)-1].ID
		}
		if _, err := q.ExecContext(ctx, insertSession,
			f.ID, f.Root, f.FSID, f.Scope, now, now, f.ParentID, f.ForkOf, f.ForkAt,
			f.Model, f.Mode, f.EffectiveMode, f.PrePlanMode, f.Title); err != nil {
			return err
		}
		legMap := map[string]string{}
		for _, e := range chain {
			if e.LegID == "" || legMap[e.LegID] != "" {
				continue
			}
			nid := NewID()
			legMap[e.LegID] = nid
			if _, err := q.ExecContext(ctx, `INSERT INTO legs (id, session_id, number, started_at, ended_at, status)
				SELECT ?, ?, number, started_at, ended_at, status FROM legs WHERE id = ?`, nid, f.ID, e.LegID); err != nil {
				return err
			}
		}
		idMap := map[string]string{}
		for i, e := range chain {
			nid := NewID()
			idMap[e.ID] = nid
			if _, err := q.ExecContext(ctx, qInsert, f.ID, i+1, nid, nullable(legMap[e.LegID]), nullable(idMap[e.ParentID]),
				e.Kind, []byte(e.Payload), nanos(e.CreatedAt)); err != nil {
				return err
			}
		}
		out, err = getSession(ctx, q, f.ID)
		return err
	})
	return out, err
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Prune deletes the sessions last updated before olderThan, with their legs, entries and
// checkpoints, and returns their ids sorted (see [Store.Prune]).
func (s *SQLiteStore) Prune(ctx context.Context, olderThan time.Time) ([]string, error) {
	var pruned []string
	err := sqlitedb.Tx(ctx, s.db, func(q sqlitedb.Querier) error {
		pruned = nil
		rows, err := q.QueryContext(ctx, `DELETE FROM sessions WHERE `+lastActivity+` < ? RETURNING id`, olderThan.UnixNano())
		if err != nil {
			return err
		}
		defer rows.Close()
		pruned, err = sqlstore.Collect(rows, sqlstore.ScanString)
		return err
	})
	slices.Sort(pruned)
	return pruned, err
}

func scanLeg(r sqlstore.Scanner, l *Leg) error {
	var started, ended int64
	err := r.Scan(&l.ID, &l.SessionID, &l.Number, &started, &ended, &l.Status)
	l.StartedAt, l.EndedAt = fromNanos(started), fromNanos(ended)
	return err
}

// StartLeg opens the session's next leg, running (see [Store.StartLeg]).
func (s *SQLiteStore) StartLeg(ctx context.Context, sessionID string) (Leg, error) {
	var out Leg
	err := sqlitedb.Grouped(ctx, s.db, func(q sqlitedb.Querier) error {
		var err error
		out, err = startLeg(ctx, q, sessionID)
		return err
	})
	if err != nil {
		return Leg{}, err
	}
	return out, nil
}

// startLeg opens the session's next leg inside a transaction.
func startLeg(ctx context.Context, q sqlitedb.Querier, sessionID string) (Leg, error) {
	r, err := q.ExecContext(ctx, touchSQL, time.Now().UnixNano(), sessionID)
	if err != nil {
		return Leg{}, err
	}
	if n, err := r.RowsAffected(); err != nil || n == 0 {
		return Leg{}, cmpErr(err, NotFound(sessionID))
	}
	var n int
	if err := q.QueryRowContext(ctx, qNextLeg, sessionID).Scan(&n); err != nil {
		return Leg{}, err
	}
	out := Leg{ID: NewID(), SessionID: sessionID, Number: n, StartedAt: time.Now().UTC(), Status: sema.StatusRunning}
	if _, err := q.ExecContext(ctx, qStartLeg,
		out.ID, sessionID, n, nanos(out.StartedAt), out.Status); err != nil {
		return Leg{}, err
	}
	out.StartedAt = fromNanos(nanos(out.StartedAt))
	return out, nil
}

// EndLeg closes a running leg with its final status (see [Store.EndLeg]).
func (s *SQLiteStore) EndLeg(ctx context.Context, legID string, status sema.Status) (Leg, error) {
	var out Leg
	err := sqlitedb.Grouped(ctx, s.db, func(q sqlitedb.Querier) error {
		l, err := sqlstore.One(q.QueryRowContext(ctx, sq.LegByID, legID), scanLeg)
		if errors.Is(err, sql.ErrNoRows) {
			return LegNotFound("", legID)
		}
		if err != nil {
			return err
		}
		if err := checkLegEnd(l, status); err != nil {
			return err
		}
		now := time.Now().UnixNano()
		if _, err := q.ExecContext(ctx, qEndLeg, now, status, legID); err != nil {
			return err
		}
		if _, err := q.ExecContext(ctx, touchSQL, now, l.SessionID); err != nil {
			return err
		}
		l.EndedAt, l.Status = fromNanos(now), status
		out = l
		return nil
	})
	return out, err
}

// Legs lists the session's legs in number order (see [Store.Legs]).
func (s *SQLiteStore) Legs(ctx context.Context, sessionID string) ([]Leg, error) {
	if _, err := s.Get(ctx, sessionID); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, sq.LegsOf, sessionID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return sqlstore.Collect(rows, scanLeg)
}

// Append commits one transcript entry and returns its id (see [Store.Append]).
func (s *SQLiteStore) Append(ctx context.Context, e Entry) (string, error) {
	ids, err := s.AppendBatch(ctx, []Entry{e})
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

var _ BatchAppender = (*SQLiteStore)(nil)

// AppendBatch commits the entries in order in one transaction and returns their ids (see
// [BatchAppender]): a turn's entries cost one commit, not one each. Batches appended at
// the same moment (many sessions of one service) share a commit, each in a savepoint of
// its own (sqlitedb.Grouped): one batch's refusal is its own.
func (s *SQLiteStore) AppendBatch(ctx context.Context, es []Entry) ([]string, error) {
	payloads, err := CheckBatch(es)
	if err != nil || len(es) == 0 {
		return nil, err
	}
	ids := make([]string, len(es))
	for i := range ids {
		ids[i] = NewID()
	}
	err = sqlitedb.Grouped(ctx, s.db, func(q sqlitedb.Querier) error {
		if err := checkClaim(ctx, q, es[0].SessionID, es[0].Claim); err != nil {
			return err
		}
		var head string
		var seq int64
		for i, e := range es {
			var legOK, parentOK bool
			if i == 0 || e.LegID != es[i-1].LegID || e.ParentID != "" {
				var h string
				var sq int64
				err := q.QueryRowContext(ctx, qAppendCheck, e.SessionID, e.LegID, e.ParentID).Scan(&h, &sq, &legOK, &parentOK)
				switch {
				case err != nil:
					return cmpErr(err, NotFound(e.SessionID))
				case !legOK:
					return LegNotFound(e.SessionID, e.LegID)
				case !parentOK:
					return EntryNotFound(e.SessionID, e.ParentID)
				}
				if i == 0 {
					head, seq = h, sq
				}
			}
			parent := e.ParentID
			if parent == "" {
				parent = head
			}
			seq++
			if _, err := q.ExecContext(ctx, qInsert, e.SessionID, seq, ids[i], nullable(e.LegID), nullable(parent), e.Kind,
				[]byte(payloads[i]), time.Now().UnixNano()); err != nil {
				return err
			}
			head = ids[i]
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// qClaim reads whether the written session (?1) exists and whether holder ?3 holds a
// live lease on the claimed session (?2) at ?4.
const qClaim = `SELECT EXISTS (SELECT 1 FROM sessions WHERE id = ?1),
	EXISTS (SELECT 1 FROM sessions WHERE id = ?2 AND lease_holder = ?3 AND lease_expires > ?4)`

// checkClaim refuses, inside the write's transaction, a write to sessionID whose claim
// is not live (see Claim). The transaction holds the write lock from its start, so no
// other process takes the lease before the write commits.
func checkClaim(ctx context.Context, q sqlitedb.Querier, sessionID string, c *Claim) error {
	if c == nil {
		return nil
	}
	var exists, live bool
	if err := q.QueryRowContext(ctx, qClaim, sessionID, c.SessionID, c.Holder, time.Now().UnixNano()).Scan(&exists, &live); err != nil {
		return err
	}
	switch {
	case !exists:
		return NotFound(sessionID)
	case !live:
		return ClaimLost(*c)
	}
	return nil
}

// cmpErr maps sql.ErrNoRows to the coded error a caller acts on and keeps any other.
func cmpErr(err, notFound error) error {
	if err == nil || errors.Is(err, sql.ErrNoRows) {
		return notFound
	}
	return err
}

func exists(ctx context.Context, q sqlitedb.Querier, query string, args ...any) error {
	var one int
	return q.QueryRowContext(ctx, query, args...).Scan(&one)
}

// Transcript returns the chain of entries from the root to head ("" = the session's
// head; see [Store.Transcript]).
func (s *SQLiteStore) Transcript(ctx context.Context, sessionID, head string) ([]Entry, error) {
	ss, err := s.Get(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	return transcript(ctx, s.r, ss, head)
}

func scanEntry(r sqlstore.Scanner, e *Entry) error {
	var payload []byte
	var created int64
	err := r.Scan(&e.ID, &e.SessionID, &e.LegID, &e.Seq, &e.ParentID, &e.Kind, &payload, &created)
	e.Payload, e.CreatedAt = json.RawMessage(payload), fromNanos(created)
	return err
}

// transcript returns the chain from the root to head in one recursive query.
func transcript(ctx context.Context, q sqlitedb.Querier, ss Session, head string) ([]Entry, error) {
	if head == "" {
		head = ss.Head
		if head == "" {
			return nil, nil
		}
	}
	rows, err := q.QueryContext(ctx, sq.Chain, head, ss.ID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, scanEntry)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, EntryNotFound(ss.ID, head)
	}
	return out, nil
}

func scanCheckpoint(r sqlstore.Scanner, c *Checkpoint) error {
	var args, decision []byte
	var created, claimed int64
	err := r.Scan(&c.ID, &c.SessionID, &c.LegID, &c.Tool, &args, &c.ArgsSHA256, &c.Gate, &c.Mode, &c.PrePlanMode,
		&created, &claimed, &decision)
	if err != nil {
		return err
	}
	c.Args, c.CreatedAt, c.ClaimedAt = json.RawMessage(args), fromNanos(created), fromNanos(claimed)
	if decision != nil {
		var d Decision
		if err := json.Unmarshal(decision, &d); err != nil {
			return err
		}
		c.Decision = &d
	}
	return nil
}

// Park stores a pending tool call with its canonical arguments and their sha256 (see
// [Store.Park]).
func (s *SQLiteStore) Park(ctx context.Context, in Checkpoint) (Checkpoint, error) {
	c, err := CheckPark(in, time.Now().UTC())
	if err != nil {
		return Checkpoint{}, err
	}
	err = sqlitedb.Tx(ctx, s.db, func(q sqlitedb.Querier) error {
		if _, err := getSession(ctx, q, c.SessionID); err != nil {
			return err
		}
		if err := checkClaim(ctx, q, c.SessionID, c.Claim); err != nil {
			return err
		}
		if c.LegID != "" {
			if err := exists(ctx, q, qLegOf, c.LegID, c.SessionID); err != nil {
				return cmpErr(err, LegNotFound(c.SessionID, c.LegID))
			}
		}
		if _, err := q.ExecContext(ctx, `INSERT INTO checkpoints (id, session_id, leg_id, tool, args, args_sha256, gate, mode,
			pre_plan_mode, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.ID, c.SessionID, nullable(c.LegID), c.Tool, []byte(c.Args), c.ArgsSHA256, c.Gate, c.Mode, c.PrePlanMode,
			nanos(c.CreatedAt)); err != nil {
			return err
		}
		_, err := q.ExecContext(ctx, touchSQL, time.Now().UnixNano(), c.SessionID)
		return err
	})
	if err != nil {
		return Checkpoint{}, err
	}
	c.CreatedAt, c.Claim = fromNanos(nanos(c.CreatedAt)), nil
	return c, nil
}

// Checkpoint returns the checkpoint with the given id (see [Store.Checkpoint]).
func (s *SQLiteStore) Checkpoint(ctx context.Context, id string) (Checkpoint, error) {
	c, err := sqlstore.One(s.r.QueryRowContext(ctx, sq.CheckpointByID, id), scanCheckpoint)
	if errors.Is(err, sql.ErrNoRows) {
		return Checkpoint{}, CheckpointNotFound(id)
	}
	return c, err
}

// Checkpoints lists the session's checkpoints, oldest first, claimed ones included (see
// [Store.Checkpoints]).
func (s *SQLiteStore) Checkpoints(ctx context.Context, sessionID string) ([]Checkpoint, error) {
	if _, err := s.Get(ctx, sessionID); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+sqlstore.CheckpointCols+` FROM checkpoints WHERE session_id = ?
		ORDER BY created_at, rowid`, sessionID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return sqlstore.Collect(rows, scanCheckpoint)
}

// ClaimCheckpoint records d as the checkpoint's answer, at most once (see
// [Store.ClaimCheckpoint]).
func (s *SQLiteStore) ClaimCheckpoint(ctx context.Context, id string, d Decision) (Checkpoint, error) {
	d, err := CheckDecision(d)
	if err != nil {
		return Checkpoint{}, err
	}
	blob, err := json.Marshal(d)
	if err != nil {
		return Checkpoint{}, err
	}
	var out Checkpoint
	err = sqlitedb.Tx(ctx, s.db, func(q sqlitedb.Querier) error {
		now := time.Now().UnixNano()
		// The claim is one conditional UPDATE: whichever transaction runs it first sees
		// claimed_at = 0 and takes the row; every later one matches nothing.
		r, err := q.ExecContext(ctx, `UPDATE checkpoints SET claimed_at = ?, decision = ? WHERE id = ? AND claimed_at = 0`, now, blob, id)
		if err != nil {
			return err
		}
		n, err := r.RowsAffected()
		if err != nil {
			return err
		}
		c, err := sqlstore.One(q.QueryRowContext(ctx, sq.CheckpointByID, id), scanCheckpoint)
		if errors.Is(err, sql.ErrNoRows) {
			return CheckpointNotFound(id)
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return AlreadyClaimed(c)
		}
		if _, err := q.ExecContext(ctx, touchSQL, now, c.SessionID); err != nil {
			return err
		}
		out = c
		return nil
	})
	return out, err
}

// AcquireLease makes holder the session's writer until ttl from now, unless another
// holder's lease runs (see [Store.AcquireLease]).
func (s *SQLiteStore) AcquireLease(ctx context.Context, sessionID, holder string, ttl time.Duration) (Lease, error) {
	return s.lease(ctx, sessionID, holder, ttl, false)
}

// RenewLease moves holder's lease on ttl from now (see [Store.RenewLease]).
func (s *SQLiteStore) RenewLease(ctx context.Context, sessionID, holder string, ttl time.Duration) (Lease, error) {
	return s.lease(ctx, sessionID, holder, ttl, true)
}

func (s *SQLiteStore) lease(ctx context.Context, sessionID, holder string, ttl time.Duration, renew bool) (Lease, error) {
	if err := CheckLease(sessionID, holder, ttl, true); err != nil {
		return Lease{}, err
	}
	var out Lease
	err := sqlitedb.Grouped(ctx, s.db, func(q sqlitedb.Querier) error {
		t := time.Now()
		expires := t.Add(ttl)
		claim := qAcquire
		if renew {
			claim = qRenew
		}
		r, err := q.ExecContext(ctx, claim, sessionID, expires.UnixNano(), holder, t.UnixNano())
		if err != nil {
			return err
		}
		n, err := r.RowsAffected()
		if err != nil {
			return err
		}
		if n == 1 {
			out = Lease{SessionID: sessionID, Holder: holder, ExpiresAt: fromNanos(expires.UnixNano())}
			return nil
		}
		var cur string
		var until int64
		err = q.QueryRowContext(ctx, qLeaseOf, sessionID).Scan(&cur, &until)
		switch {
		case err != nil:
			return cmpErr(err, NotFound(sessionID))
		case renew:
			return LeaseLost(sessionID, holder)
		default:
			return Busy(sessionID, cur, fromNanos(until))
		}
	})
	return out, err
}

// ReleaseLease frees the session when holder holds its lease (see [Store.ReleaseLease]).
func (s *SQLiteStore) ReleaseLease(ctx context.Context, sessionID, holder string) error {
	if err := CheckLease(sessionID, holder, 0, false); err != nil {
		return err
	}
	return sqlitedb.Grouped(ctx, s.db, func(q sqlitedb.Querier) error {
		if _, err := getSession(ctx, q, sessionID); err != nil {
			return err
		}
		_, err := q.ExecContext(ctx, qRelease, sessionID, holder)
		return err
	})
}
