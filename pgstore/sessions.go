package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/internal/sqlstore"
	"github.com/sema-agent/sema/session"
)

// Sessions is the session store on PostgreSQL, a session.AdminStore (see the package
// doc for what it guarantees across processes). Get it from DB.Sessions.
type Sessions struct {
	db *DB
}

var (
	_ session.AdminStore    = (*Sessions)(nil)
	_ session.BatchAppender = (*Sessions)(nil)
)

// Close does nothing: the store shares its DB with the history store, and DB.Close ends
// both. It is there because session.Store has it.
func (s *Sessions) Close() error { return nil }

const sessionCols = `id, root, fs_id, scope, created_at, created_ns, updated_at, updated_ns, parent_id, fork_of, fork_at,
	model, mode, effective_mode, pre_plan_mode, title, head`

// touch moves a session's last activity on, never back and always past its previous
// value, so two writes in one microsecond still order (see touch in session/memory.go).
const touch = `updated_at = GREATEST(updated_at + interval '1 microsecond', clock_timestamp()), updated_ns = 0`

// sq is the statements this store shares with the SQLite one (see package sqlstore).
var sq = sqlstore.Postgres.Session()

func scanSession(r sqlstore.Scanner, s *session.Session) error {
	var created, updated time.Time
	var cns, uns int16
	err := r.Scan(&s.ID, &s.Root, &s.FSID, &s.Scope, &created, &cns, &updated, &uns, &s.ParentID, &s.ForkOf, &s.ForkAt,
		&s.Model, &s.Mode, &s.EffectiveMode, &s.PrePlanMode, &s.Title, &s.Head)
	s.CreatedAt, s.UpdatedAt = joinTime(created, cns), joinTime(updated, uns)
	return err
}

func getSession(ctx context.Context, q querier, id string, lock string) (session.Session, error) {
	s, err := sqlstore.One(q.QueryRow(ctx, `SELECT `+sessionCols+` FROM sema_sessions WHERE id = $1`+lock, id), scanSession)
	if errors.Is(err, pgx.ErrNoRows) {
		return session.Session{}, session.NotFound(id)
	}
	return s, err
}

// Create stores a new session, minting its id when none is given; a zero CreatedAt is
// the database's now (see session.Store.Create).
func (s *Sessions) Create(ctx context.Context, in session.Session) (session.Session, error) {
	in, err := session.CheckCreate(in, time.Time{})
	if err != nil {
		return session.Session{}, err
	}
	var created any // NULL: the database's clock
	var ns int16
	if !in.CreatedAt.IsZero() {
		created, ns = splitTime(in.CreatedAt)
	}
	var out session.Session
	err = s.db.run(ctx, func(q querier) error {
		var err error
		out, err = sqlstore.One(q.QueryRow(ctx, `INSERT INTO sema_sessions (id, root, fs_id, scope, created_at, created_ns, updated_at, updated_ns,
				parent_id, fork_of, fork_at, model, mode, effective_mode, pre_plan_mode, title)
			SELECT $1, $2, $3, $4, t.at, $6, t.at, $6, $7, $8, $9, $10, $11, $12, $13, $14
			FROM (SELECT COALESCE($5::timestamptz, clock_timestamp()) AS at) t
			RETURNING `+sessionCols,
			in.ID, in.Root, in.FSID, in.Scope, created, ns, in.ParentID, in.ForkOf, in.ForkAt,
			in.Model, in.Mode, in.EffectiveMode, in.PrePlanMode, in.Title), scanSession)
		if isUnique(err) {
			return session.Exists(in.ID)
		}
		return err
	})
	if err != nil {
		return session.Session{}, err
	}
	return out, nil
}

// CreateLeased stores a new session held by holder, with its first leg running (see
// session.Opener): two statements sent at once, which run as one implicit transaction —
// one round trip where Create, AcquireLease and StartLeg take three.
func (s *Sessions) CreateLeased(ctx context.Context, in session.Session, holder string, ttl time.Duration) (session.Session, session.Leg, error) {
	in, err := session.CheckCreate(in, time.Time{})
	if err != nil {
		return session.Session{}, session.Leg{}, err
	}
	if err := session.CheckLease(in.ID, holder, ttl, true); err != nil {
		return session.Session{}, session.Leg{}, err
	}
	var created any // NULL: the database's clock
	var ns int16
	if !in.CreatedAt.IsZero() {
		created, ns = splitTime(in.CreatedAt)
	}
	legID := session.NewID()
	var out session.Session
	var leg session.Leg
	err = s.db.run(ctx, func(q querier) error {
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO sema_sessions (id, root, fs_id, scope, created_at, created_ns, updated_at, updated_ns,
				parent_id, fork_of, fork_at, model, mode, effective_mode, pre_plan_mode, title, last_leg, lease_holder, lease_expires)
			SELECT $1, $2, $3, $4, t.at, $6, t.at, $6, $7, $8, $9, $10, $11, $12, $13, $14, 1, $15,
				clock_timestamp() + $16::bigint * interval '1 microsecond'
			FROM (SELECT COALESCE($5::timestamptz, clock_timestamp()) AS at) t
			RETURNING `+sessionCols,
			in.ID, in.Root, in.FSID, in.Scope, created, ns, in.ParentID, in.ForkOf, in.ForkAt,
			in.Model, in.Mode, in.EffectiveMode, in.PrePlanMode, in.Title, holder, ttl.Microseconds())
		b.Queue(`INSERT INTO sema_legs (`+sqlstore.LegCols+`) VALUES ($1, $2, 1, clock_timestamp(), NULL, $3) RETURNING `+sqlstore.LegCols,
			legID, in.ID, string(sema.StatusRunning))
		br := q.SendBatch(ctx, b)
		var err error
		if out, err = sqlstore.One(br.QueryRow(), scanSession); err == nil {
			leg, err = sqlstore.One(br.QueryRow(), scanLeg)
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if isUnique(err) {
			return session.Exists(in.ID)
		}
		return err
	})
	if err != nil {
		return session.Session{}, session.Leg{}, err
	}
	return out, leg, nil
}

// Get returns the session with the given id (see session.Store.Get).
func (s *Sessions) Get(ctx context.Context, id string) (session.Session, error) {
	var out session.Session
	err := s.db.run(ctx, func(q querier) error {
		var err error
		out, err = getSession(ctx, q, id, "")
		return err
	})
	return out, err
}

// Update changes the session's Model, Mode, EffectiveMode, PrePlanMode and Title through
// fn, in one transaction that holds the session's row (see session.Store.Update). fn may
// run again when the database aborts the transaction for a race.
func (s *Sessions) Update(ctx context.Context, id string, fn func(*session.Session) error) (session.Session, error) {
	var out session.Session
	err := s.db.tx(ctx, func(tx pgx.Tx) error {
		cur, err := getSession(ctx, tx, id, " FOR UPDATE")
		if err != nil {
			return err
		}
		next, err := session.ApplyUpdate(cur, fn, time.Time{})
		if err != nil {
			return err
		}
		out, err = sqlstore.One(tx.QueryRow(ctx, `UPDATE sema_sessions SET model = $2, mode = $3, effective_mode = $4, pre_plan_mode = $5,
			title = $6, `+touch+` WHERE id = $1 RETURNING `+sessionCols,
			id, next.Model, next.Mode, next.EffectiveMode, next.PrePlanMode, next.Title), scanSession)
		return err
	})
	if err != nil {
		return session.Session{}, err
	}
	return out, nil
}

// List returns the sessions f selects, most recently updated first (see
// session.Admin.List).
func (s *Sessions) List(ctx context.Context, f session.Filter) ([]session.Session, error) {
	// n breaks ties in creation order, as SQLite's rowid does.
	query, args := sqlstore.Postgres.ListSessions(sessionCols, "updated_at DESC, updated_ns DESC, n DESC", f.Root, f.RootsOnly, f.Limit)
	var out []session.Session
	err := s.db.run(ctx, func(q querier) error {
		rows, err := q.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		out, err = sqlstore.Collect(rows, scanSession)
		return err
	})
	return out, err
}

// Newest returns the most recently updated root session at root (see
// session.Admin.Newest).
func (s *Sessions) Newest(ctx context.Context, root string) (session.Session, error) {
	l, err := s.List(ctx, session.Filter{Root: root, RootsOnly: true, Limit: 1})
	if err != nil {
		return session.Session{}, err
	}
	if len(l) == 0 {
		return session.Session{}, session.NoSessionAt(root)
	}
	return l[0], nil
}

// Fork copies the session's chain ending at atEntry ("" = the head), with the legs its
// entries belong to, into a new session in one transaction (see session.Store.Fork). The
// payloads are copied inside the database.
func (s *Sessions) Fork(ctx context.Context, id, atEntry string) (session.Session, error) {
	var out session.Session
	err := s.db.tx(ctx, func(tx pgx.Tx) error {
		src, err := getSession(ctx, tx, id, "")
		if err != nil {
			return err
		}
		chain, err := transcript(ctx, tx, src, atEntry)
		if err != nil {
			return err
		}
		f := src
		f.ID, f.ForkOf, f.ForkAt, f.Head = session.NewID(), id, "", ""
		oldLegs, newLegs := []string{}, []string{}
		legMap := map[string]string{}
		for _, e := range chain {
			if e.LegID != "" && legMap[e.LegID] == "" {
				legMap[e.LegID] = session.NewID()
				oldLegs, newLegs = append(oldLegs, e.LegID), append(newLegs, legMap[e.LegID])
			}
		}
		olds, nids, legs, parents := make([]string, len(chain)), make([]string, len(chain)), make([]string, len(chain)), make([]string, len(chain))
		idMap := map[string]string{}
		for i, e := range chain {
			olds[i], nids[i], legs[i], parents[i] = e.ID, session.NewID(), legMap[e.LegID], idMap[e.ParentID]
			idMap[e.ID] = nids[i]
		}
		if len(chain) > 0 {
			f.ForkAt, f.Head = chain[len(chain)-1].ID, nids[len(nids)-1]
		}
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO sema_sessions (id, root, fs_id, scope, created_at, updated_at, parent_id, fork_of, fork_at,
				model, mode, effective_mode, pre_plan_mode, title, head, last_seq)
			SELECT $1, $2, $3, $4, t.at, t.at, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14 FROM (SELECT clock_timestamp() AS at) t`,
			f.ID, f.Root, f.FSID, f.Scope, f.ParentID, f.ForkOf, f.ForkAt, f.Model, f.Mode, f.EffectiveMode, f.PrePlanMode, f.Title,
			f.Head, len(chain))
		// A fork keeps the numbers of the legs it copies and goes on from the highest.
		b.Queue(`WITH copied AS (
				INSERT INTO sema_legs (id, session_id, number, started_at, ended_at, status)
				SELECT m.nid, $1, l.number, l.started_at, l.ended_at, l.status
				FROM unnest($2::text[], $3::text[]) AS m(old, nid) JOIN sema_legs l ON l.id = m.old
				RETURNING number
			)
			UPDATE sema_sessions SET last_leg = (SELECT COALESCE(MAX(number), 0) FROM copied) WHERE id = $1`,
			f.ID, oldLegs, newLegs)
		b.Queue(`INSERT INTO sema_entries (session_id, seq, id, leg_id, parent_id, kind, payload, created_at)
			SELECT $1, m.ord, m.nid, NULLIF(m.leg, ''), NULLIF(m.parent, ''), e.kind, e.payload, e.created_at
			FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS m(old, nid, leg, parent, ord)
			JOIN sema_entries e ON e.id = m.old`,
			f.ID, olds, nids, legs, parents)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		out, err = getSession(ctx, tx, f.ID, "")
		return err
	})
	if err != nil {
		return session.Session{}, err
	}
	return out, nil
}

// Prune deletes the sessions last updated before olderThan, with their legs, entries and
// checkpoints, and returns their ids sorted (see session.Admin.Prune).
func (s *Sessions) Prune(ctx context.Context, olderThan time.Time) ([]string, error) {
	cut, ns := splitTime(olderThan)
	var pruned []string
	err := s.db.run(ctx, func(q querier) error {
		rows, err := q.Query(ctx, `DELETE FROM sema_sessions WHERE (updated_at, updated_ns) < ($1, $2) RETURNING id`, cut, ns)
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

func scanLeg(r sqlstore.Scanner, l *session.Leg) error {
	var started time.Time
	var ended *time.Time
	var status string
	err := r.Scan(&l.ID, &l.SessionID, &l.Number, &started, &ended, &status)
	l.StartedAt, l.EndedAt, l.Status = started.UTC(), utc(ended), sema.Status(status)
	return err
}

// StartLeg opens the session's next leg, running (see session.Store.StartLeg). The number
// comes from a counter on the session's row, so legs started at once by several processes
// get distinct numbers.
func (s *Sessions) StartLeg(ctx context.Context, sessionID string) (session.Leg, error) {
	id := session.NewID()
	var out session.Leg
	err := s.db.run(ctx, func(q querier) error {
		var err error
		out, err = sqlstore.One(q.QueryRow(ctx, `WITH s AS (
				UPDATE sema_sessions SET last_leg = last_leg + 1, `+touch+` WHERE id = $1
				RETURNING last_leg, clock_timestamp() AS at
			)
			INSERT INTO sema_legs (`+sqlstore.LegCols+`) SELECT $2, $1, s.last_leg, s.at, NULL, $3 FROM s
			RETURNING `+sqlstore.LegCols,
			sessionID, id, string(sema.StatusRunning)), scanLeg)
		if errors.Is(err, pgx.ErrNoRows) {
			return session.NotFound(sessionID)
		}
		return err
	})
	if err != nil {
		return session.Leg{}, err
	}
	return out, nil
}

// EndLeg closes a running leg with its final status (see session.Store.EndLeg). The leg
// ends by one conditional update, so of two EndLegs of one leg exactly one succeeds.
func (s *Sessions) EndLeg(ctx context.Context, legID string, status sema.Status) (session.Leg, error) {
	var out session.Leg
	err := s.db.run(ctx, func(q querier) error {
		if bad := session.CheckEndStatus(status); bad != nil {
			// As the SQLite store: an unknown leg is reported before a bad status.
			if _, err := sqlstore.One(q.QueryRow(ctx, sq.LegByID, legID), scanLeg); errors.Is(err, pgx.ErrNoRows) {
				return session.LegNotFound("", legID)
			} else if err != nil {
				return err
			}
			return bad
		}
		var err error
		out, err = sqlstore.One(q.QueryRow(ctx, `WITH l AS (
				UPDATE sema_legs SET ended_at = clock_timestamp(), status = $2 WHERE id = $1 AND ended_at IS NULL
				RETURNING `+sqlstore.LegCols+`
			), t AS (
				UPDATE sema_sessions SET `+touch+` WHERE id = (SELECT session_id FROM l)
			)
			SELECT `+sqlstore.LegCols+` FROM l`, legID, string(status)), scanLeg)
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		l, err := sqlstore.One(q.QueryRow(ctx, sq.LegByID, legID), scanLeg)
		if errors.Is(err, pgx.ErrNoRows) {
			return session.LegNotFound("", legID)
		}
		if err != nil {
			return err
		}
		return session.LegEnded(l)
	})
	if err != nil {
		return session.Leg{}, err
	}
	return out, nil
}

// Legs lists the session's legs in number order (see session.Store.Legs).
func (s *Sessions) Legs(ctx context.Context, sessionID string) ([]session.Leg, error) {
	var out []session.Leg
	err := s.db.run(ctx, func(q querier) error {
		if _, err := getSession(ctx, q, sessionID, ""); err != nil {
			return err
		}
		rows, err := q.Query(ctx, sq.LegsOf, sessionID)
		if err != nil {
			return err
		}
		defer rows.Close()
		out, err = sqlstore.Collect(rows, scanLeg)
		return err
	})
	return out, err
}

// Append commits one transcript entry and returns its id (see session.Store.Append).
func (s *Sessions) Append(ctx context.Context, e session.Entry) (string, error) {
	ids, err := s.AppendBatch(ctx, []session.Entry{e})
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// leaseCTE locks the row of a write's claimed session ($10) and reads its lease. FOR
// SHARE makes a lease change of another transaction wait for this one's commit, and
// reads the newest committed lease, not the one of the statement's snapshot: a takeover
// that committed while the write waited for its lock is seen.
const leaseCTE = `lease AS (
		SELECT lease_holder, lease_expires FROM sema_sessions WHERE id = $10 FOR SHARE
	)`

// claimLive holds when the write has no claim, or its holder ($11) holds a live lease.
const claimLive = `($10 = '' OR EXISTS (SELECT 1 FROM lease WHERE lease.lease_holder = $11 AND lease.lease_expires > clock_timestamp()))`

// qAppend commits a batch of entries in one statement, so an append costs one round trip
// and is atomic by itself. The statement locks the session's row first (cur); a
// concurrent append of the same session waits there and then reads the head and last_seq
// the first one left, which is what keeps seq gapless and the chain linear across
// processes. The update moves the head and the counter only when every leg and every
// given parent belongs to the session; otherwise nothing is inserted and the caller
// finds out which check failed.
//
// Parameters: $1 session, $2 the batch's last id (the new head), $3 the batch's size,
// and per entry $4 leg, $5 the parent given, $6 id, $7 the entry it follows by default
// (the batch's previous one; empty for the first, which follows the session's head), $8
// kind, $9 payload; $10 and $11 the claim's session and holder (empty without a claim).
const qAppend = `WITH cur AS (
		SELECT id, head FROM sema_sessions WHERE id = $1 FOR UPDATE
	), ` + leaseCTE + `, s AS (
		UPDATE sema_sessions t SET head = $2, last_seq = t.last_seq + $3, ` + touch + `
		FROM cur
		WHERE t.id = cur.id AND ` + claimLive + `
		  AND NOT EXISTS (SELECT 1 FROM unnest($4::text[]) AS g(leg)
		                  WHERE g.leg <> '' AND NOT EXISTS (SELECT 1 FROM sema_legs l WHERE l.id = g.leg AND l.session_id = $1))
		  AND NOT EXISTS (SELECT 1 FROM unnest($5::text[]) AS p(id)
		                  WHERE p.id <> '' AND NOT EXISTS (SELECT 1 FROM sema_entries x WHERE x.id = p.id AND x.session_id = $1))
		RETURNING cur.head AS prev_head, t.last_seq - $3 AS prev_seq, clock_timestamp() AS at
	)
	INSERT INTO sema_entries (session_id, seq, id, leg_id, parent_id, kind, payload, created_at)
	SELECT $1, s.prev_seq + m.ord, m.id, NULLIF(m.leg, ''), COALESCE(NULLIF(m.parent, ''), NULLIF(m.follows, ''), NULLIF(s.prev_head, '')),
		m.kind, m.payload, s.at
	FROM s, unnest($6::text[], $4::text[], $5::text[], $7::text[], $8::text[], $9::bytea[])
		WITH ORDINALITY AS m(id, leg, parent, follows, kind, payload, ord)`

// AppendBatch commits the entries in order in one statement and returns their ids (see
// session.BatchAppender).
func (s *Sessions) AppendBatch(ctx context.Context, es []session.Entry) ([]string, error) {
	return s.AppendBatchWith(ctx, es, nil)
}

// AppendBatchWith is AppendBatch that also runs the caller's statements (also: writes
// to its own tables in this database) in the entries' transaction: they commit with the
// entries or not at all, for one commit — one WAL flush — instead of two. They run after
// the entries are inserted, and only when they are; their failure rolls the entries
// back and is returned. Everything is sent at once, in one implicit transaction: the
// entries' statement, a guard that fails unless it inserted the batch, and also's
// statements — one round trip. When the guard fails (the append was refused, or raced a
// commit it must see), the batch is tried in an explicit transaction that says why, or
// appends once the race is over. A nil or empty also is AppendBatch.
func (s *Sessions) AppendBatchWith(ctx context.Context, es []session.Entry, also *pgx.Batch) ([]string, error) {
	checked, err := session.CheckBatch(es)
	if err != nil || len(es) == 0 {
		return nil, err
	}
	n := len(es)
	payloads := make([][]byte, n) // bytea, not json: the bytes are kept exactly
	for i, p := range checked {
		payloads[i] = p
	}
	ids, legs, parents, follows, kinds := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, e := range es {
		ids[i], legs[i], parents[i], kinds[i] = session.NewID(), e.LegID, e.ParentID, e.Kind
		if i > 0 {
			follows[i] = ids[i-1]
		}
	}
	sid := es[0].SessionID
	claimSession, claimHolder := claimArgs(es[0].Claim)
	args := []any{sid, ids[n-1], n, legs, parents, ids, follows, kinds, payloads, claimSession, claimHolder}
	appendIn := func(q querier) error {
		for range attempts {
			tag, err := q.Exec(ctx, qAppend, args...)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == int64(n) {
				return nil
			}
			if err := appendRefusal(ctx, q, es); err != nil {
				return err
			}
			// Every check passes now: the session or a parent was committed between the
			// statement's snapshot and this look. Append again.
		}
		return fmt.Errorf("pgstore: the append to session %q did not commit; retry it", sid)
	}
	if also == nil || also.Len() == 0 {
		err = s.db.run(ctx, appendIn)
	} else {
		err = s.db.run(ctx, func(q querier) error { return appendAtOnce(ctx, q, args, sid, ids[n-1], also) })
		if guardFailed(err) {
			err = s.db.tx(ctx, func(tx pgx.Tx) error {
				if err := appendIn(tx); err != nil {
					return err
				}
				return tx.SendBatch(ctx, copyBatch(nil, also)).Close()
			})
		}
	}
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// qAppended fails (division by zero) unless the entry $2, a batch's last, is in session
// $1: after qAppend in one transaction, it stops the statements after it when the append
// inserted nothing. The count is read at run time, so the division is never folded
// into an error at planning.
const qAppended = `SELECT 1 / count(*)::int FROM sema_entries WHERE session_id = $1 AND id = $2`

// appendAtOnce sends qAppend (args), its guard and also's statements in one batch: one
// implicit transaction, committed at its end unless a statement fails.
func appendAtOnce(ctx context.Context, q querier, args []any, sid, last string, also *pgx.Batch) error {
	b := &pgx.Batch{}
	b.Queue(qAppend, args...)
	b.Queue(qAppended, sid, last)
	copyBatch(b, also)
	br := q.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		br.Close()
		return err
	}
	if _, err := br.Exec(); err != nil {
		br.Close()
		return errAppendGuard{err}
	}
	return br.Close()
}

// errAppendGuard is qAppended's failure: the batch's append inserted nothing.
type errAppendGuard struct{ err error }

func (e errAppendGuard) Error() string {
	return "pgstore: the append inserted nothing: " + e.err.Error()
}

func guardFailed(err error) bool {
	var g errAppendGuard
	return errors.As(err, &g)
}

// copyBatch queues from's statements on to (a new batch when to is nil): a batch is
// sent only once.
func copyBatch(to, from *pgx.Batch) *pgx.Batch {
	if to == nil {
		to = &pgx.Batch{}
	}
	for _, qq := range from.QueuedQueries {
		to.Queue(qq.SQL, qq.Arguments...)
	}
	return to
}

// appendRefusal says why qAppend inserted nothing, checking as the SQLite store does: the
// session, then each entry in order, its leg before its parent.
func appendRefusal(ctx context.Context, q querier, es []session.Entry) error {
	sid := es[0].SessionID
	var want []string
	for _, e := range es {
		want = append(want, e.LegID, e.ParentID)
	}
	var exists bool
	var legs, entries []string
	if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sema_sessions WHERE id = $1),
			ARRAY(SELECT id FROM sema_legs WHERE session_id = $1 AND id = ANY($2)),
			ARRAY(SELECT id FROM sema_entries WHERE session_id = $1 AND id = ANY($2))`, sid, want).Scan(&exists, &legs, &entries); err != nil {
		return err
	}
	if !exists {
		return session.NotFound(sid)
	}
	if err := claimRefusal(ctx, q, es[0].Claim); err != nil {
		return err
	}
	for _, e := range es {
		if e.LegID != "" && !slices.Contains(legs, e.LegID) {
			return session.LegNotFound(sid, e.LegID)
		}
		if e.ParentID != "" && !slices.Contains(entries, e.ParentID) {
			return session.EntryNotFound(sid, e.ParentID)
		}
	}
	return nil
}

func claimArgs(c *session.Claim) (sessionID, holder string) {
	if c == nil {
		return "", ""
	}
	return c.SessionID, c.Holder
}

// claimRefusal says whether a write's claim is why it inserted nothing.
func claimRefusal(ctx context.Context, q querier, c *session.Claim) error {
	if c == nil {
		return nil
	}
	var live bool
	if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sema_sessions WHERE id = $1 AND lease_holder = $2 AND lease_expires > clock_timestamp())`,
		c.SessionID, c.Holder).Scan(&live); err != nil {
		return err
	}
	if !live {
		return session.ClaimLost(*c)
	}
	return nil
}

// Transcript returns the chain of entries from the root to head ("" = the session's
// head; see session.Store.Transcript).
func (s *Sessions) Transcript(ctx context.Context, sessionID, head string) ([]session.Entry, error) {
	var out []session.Entry
	err := s.db.run(ctx, func(q querier) error {
		ss, err := getSession(ctx, q, sessionID, "")
		if err != nil {
			return err
		}
		out, err = transcript(ctx, q, ss, head)
		return err
	})
	return out, err
}

func scanEntry(r sqlstore.Scanner, e *session.Entry) error {
	var payload []byte
	var created time.Time
	err := r.Scan(&e.ID, &e.SessionID, &e.LegID, &e.Seq, &e.ParentID, &e.Kind, &payload, &created)
	e.Payload, e.CreatedAt = json.RawMessage(payload), created.UTC()
	return err
}

// transcript returns the chain from the root to head in one recursive query.
func transcript(ctx context.Context, q querier, ss session.Session, head string) ([]session.Entry, error) {
	if head == "" {
		head = ss.Head
		if head == "" {
			return nil, nil
		}
	}
	rows, err := q.Query(ctx, sq.Chain, head, ss.ID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, scanEntry)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, session.EntryNotFound(ss.ID, head)
	}
	return out, nil
}

func scanCheckpoint(r sqlstore.Scanner, c *session.Checkpoint) error {
	var args, decision []byte
	var gate string
	var created time.Time
	var claimed *time.Time
	err := r.Scan(&c.ID, &c.SessionID, &c.LegID, &c.Tool, &args, &c.ArgsSHA256, &gate, &c.Mode, &c.PrePlanMode,
		&created, &claimed, &decision)
	if err != nil {
		return err
	}
	c.Args, c.Gate, c.CreatedAt, c.ClaimedAt = json.RawMessage(args), session.Gate(gate), created.UTC(), utc(claimed)
	if decision != nil {
		var d session.Decision
		if err := json.Unmarshal(decision, &d); err != nil {
			return err
		}
		c.Decision = &d
	}
	return nil
}

// Park stores a pending tool call with its canonical arguments and their sha256, in one
// statement with the session's activity (see session.Store.Park).
func (s *Sessions) Park(ctx context.Context, in session.Checkpoint) (session.Checkpoint, error) {
	c, err := session.CheckPark(in, time.Time{})
	if err != nil {
		return session.Checkpoint{}, err
	}
	claim := c.Claim
	claimSession, claimHolder := claimArgs(claim)
	c.Claim = nil
	err = s.db.run(ctx, func(q querier) error {
		var created time.Time
		err := q.QueryRow(ctx, `WITH `+leaseCTE+`, s AS (
				UPDATE sema_sessions SET `+touch+`
				WHERE id = $2 AND ($3 = '' OR EXISTS (SELECT 1 FROM sema_legs WHERE id = $3 AND session_id = $2)) AND `+claimLive+`
				RETURNING clock_timestamp() AS at
			)
			INSERT INTO sema_checkpoints (id, session_id, leg_id, tool, args, args_sha256, gate, mode, pre_plan_mode, created_at)
			SELECT $1, $2, NULLIF($3, ''), $4, $5, $6, $7, $8, $9, s.at FROM s
			RETURNING created_at`,
			c.ID, c.SessionID, c.LegID, c.Tool, []byte(c.Args), c.ArgsSHA256, string(c.Gate), c.Mode, c.PrePlanMode, claimSession, claimHolder).Scan(&created)
		if errors.Is(err, pgx.ErrNoRows) {
			if _, err := getSession(ctx, q, c.SessionID, ""); err != nil {
				return err
			}
			if err := claimRefusal(ctx, q, claim); err != nil {
				return err
			}
			return session.LegNotFound(c.SessionID, c.LegID)
		}
		c.CreatedAt = created.UTC()
		return err
	})
	if err != nil {
		return session.Checkpoint{}, err
	}
	return c, nil
}

// Checkpoint returns the checkpoint with the given id (see session.Store.Checkpoint).
func (s *Sessions) Checkpoint(ctx context.Context, id string) (session.Checkpoint, error) {
	var out session.Checkpoint
	err := s.db.run(ctx, func(q querier) error {
		var err error
		out, err = getCheckpoint(ctx, q, id)
		return err
	})
	return out, err
}

func getCheckpoint(ctx context.Context, q querier, id string) (session.Checkpoint, error) {
	c, err := sqlstore.One(q.QueryRow(ctx, sq.CheckpointByID, id), scanCheckpoint)
	if errors.Is(err, pgx.ErrNoRows) {
		return session.Checkpoint{}, session.CheckpointNotFound(id)
	}
	return c, err
}

// Checkpoints lists the session's checkpoints, oldest first, claimed ones included (see
// session.Admin.Checkpoints).
func (s *Sessions) Checkpoints(ctx context.Context, sessionID string) ([]session.Checkpoint, error) {
	var out []session.Checkpoint
	err := s.db.run(ctx, func(q querier) error {
		if _, err := getSession(ctx, q, sessionID, ""); err != nil {
			return err
		}
		rows, err := q.Query(ctx, `SELECT `+sqlstore.CheckpointCols+` FROM sema_checkpoints WHERE session_id = $1 ORDER BY created_at, n`, sessionID)
		if err != nil {
			return err
		}
		defer rows.Close()
		out, err = sqlstore.Collect(rows, scanCheckpoint)
		return err
	})
	return out, err
}

// ClaimCheckpoint records d as the checkpoint's answer, at most once (see
// session.Store.ClaimCheckpoint). The claim is one conditional update of the checkpoint's
// row: of any number of claims, from any processes, the database lets the first take the
// row and every later one match nothing.
func (s *Sessions) ClaimCheckpoint(ctx context.Context, id string, d session.Decision) (session.Checkpoint, error) {
	d, err := session.CheckDecision(d)
	if err != nil {
		return session.Checkpoint{}, err
	}
	blob, err := json.Marshal(d)
	if err != nil {
		return session.Checkpoint{}, err
	}
	var out session.Checkpoint
	err = s.db.run(ctx, func(q querier) error {
		var err error
		out, err = sqlstore.One(q.QueryRow(ctx, `WITH c AS (
				UPDATE sema_checkpoints SET claimed_at = clock_timestamp(), decision = $2 WHERE id = $1 AND claimed_at IS NULL
				RETURNING `+sqlstore.CheckpointCols+`
			), t AS (
				UPDATE sema_sessions SET `+touch+` WHERE id = (SELECT session_id FROM c)
			)
			SELECT * FROM c`, id, blob), scanCheckpoint)
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		c, err := getCheckpoint(ctx, q, id)
		if err != nil {
			return err
		}
		return session.AlreadyClaimed(c)
	})
	if err != nil {
		return session.Checkpoint{}, err
	}
	return out, nil
}

// AcquireLease makes holder the session's writer until ttl from now, unless another
// holder's lease runs (see session.Store.AcquireLease). The lease is taken by one
// conditional update of the session's row, judged by the database's clock, so holders on
// machines whose clocks disagree still see one expiry.
func (s *Sessions) AcquireLease(ctx context.Context, sessionID, holder string, ttl time.Duration) (session.Lease, error) {
	return s.lease(ctx, sessionID, holder, ttl, false)
}

// RenewLease moves holder's lease on to ttl from now (see session.Store.RenewLease).
func (s *Sessions) RenewLease(ctx context.Context, sessionID, holder string, ttl time.Duration) (session.Lease, error) {
	return s.lease(ctx, sessionID, holder, ttl, true)
}

func (s *Sessions) lease(ctx context.Context, sessionID, holder string, ttl time.Duration, renew bool) (session.Lease, error) {
	if err := session.CheckLease(sessionID, holder, ttl, true); err != nil {
		return session.Lease{}, err
	}
	// A renewal matches only its own holder, expired or not; an acquisition also a free
	// or expired lease. Of two acquirers that find the session free, the second waits for
	// the first's row lock and then sees its holder.
	cond := `lease_holder = $2 OR lease_holder = '' OR lease_expires <= clock_timestamp()`
	if renew {
		cond = `lease_holder = $2`
	}
	var out session.Lease
	err := s.db.run(ctx, func(q querier) error {
		for range attempts {
			var expires time.Time
			err := q.QueryRow(ctx, `UPDATE sema_sessions SET lease_holder = $2, lease_expires = clock_timestamp() + $3::bigint * interval '1 microsecond'
				WHERE id = $1 AND (`+cond+`) RETURNING lease_expires`, sessionID, holder, ttl.Microseconds()).Scan(&expires)
			if err == nil {
				out = session.Lease{SessionID: sessionID, Holder: holder, ExpiresAt: expires.UTC()}
				return nil
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			var cur string
			var until *time.Time
			var free bool
			err = q.QueryRow(ctx, `SELECT lease_holder, lease_expires, `+cond+` FROM sema_sessions WHERE id = $1`, sessionID, holder).Scan(&cur, &until, &free)
			switch {
			case errors.Is(err, pgx.ErrNoRows):
				return session.NotFound(sessionID)
			case err != nil:
				return err
			case renew:
				return session.LeaseLost(sessionID, holder)
			case !free:
				return session.Busy(sessionID, cur, utc(until))
			}
			// The lease was released or ran out between the two statements: try again.
		}
		return session.Busy(sessionID, "", time.Now())
	})
	if err != nil {
		return session.Lease{}, err
	}
	return out, nil
}

// ReleaseLease frees the session when holder holds its lease (see
// session.Store.ReleaseLease).
func (s *Sessions) ReleaseLease(ctx context.Context, sessionID, holder string) error {
	if err := session.CheckLease(sessionID, holder, 0, false); err != nil {
		return err
	}
	return s.db.run(ctx, func(q querier) error {
		tag, err := q.Exec(ctx, `UPDATE sema_sessions SET lease_holder = '', lease_expires = NULL WHERE id = $1 AND lease_holder = $2`, sessionID, holder)
		if err != nil || tag.RowsAffected() == 1 {
			return err
		}
		_, err = getSession(ctx, q, sessionID, "")
		return err
	})
}
