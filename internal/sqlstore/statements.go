package sqlstore

import "strings"

// Columns a store's own statements name as well as the shared ones. They hold neither
// a table's name nor a parameter, so they read the same in both dialects.
const (
	// LegCols are a leg's columns in the order the stores scan them.
	LegCols = `id, session_id, number, started_at, ended_at, status`
	// CheckpointCols are a checkpoint's columns in the order the stores scan them; the
	// alias names the COALESCE, which PostgreSQL's ClaimCheckpoint selects from a CTE.
	CheckpointCols = `id, session_id, COALESCE(leg_id, '') AS leg_id, tool, args, args_sha256, gate, mode, pre_plan_mode,
	created_at, claimed_at, decision`
	// RecordCols are a file-history record's columns in the order the stores scan them.
	RecordCols = `id, scope, boundary, turn, key, existed, COALESCE(sum, ''), mode, size, COALESCE(after, ''), COALESCE(pending, ''), created_at`
)

// SessionSQL is the session stores' shared statements, spelled for one dialect.
type SessionSQL struct {
	LegByID        string // $1 leg
	LegsOf         string // $1 session; in number order
	CheckpointByID string // $1 checkpoint
	// Chain reads the transcript from the root to entry $1 of session $2 by walking
	// parent links; a parent always has a smaller seq than its child, so seq order is
	// chain order. No row means no such entry in the session.
	Chain string
}

// Session returns the session stores' shared statements spelled for d.
func (d Dialect) Session() SessionSQL {
	return SessionSQL{
		LegByID:        d.SQL(`SELECT ` + LegCols + ` FROM sema_legs WHERE id = $1`),
		LegsOf:         d.SQL(`SELECT ` + LegCols + ` FROM sema_legs WHERE session_id = $1 ORDER BY number`),
		CheckpointByID: d.SQL(`SELECT ` + CheckpointCols + ` FROM sema_checkpoints WHERE id = $1`),
		Chain: d.SQL(`WITH RECURSIVE chain (id, parent_id) AS (
		SELECT id, parent_id FROM sema_entries WHERE id = $1 AND session_id = $2
		UNION ALL
		SELECT e.id, e.parent_id FROM sema_entries e JOIN chain c ON e.id = c.parent_id
	)
	SELECT e.id, e.session_id, COALESCE(e.leg_id, ''), e.seq, COALESCE(e.parent_id, ''), e.kind, e.payload, e.created_at
	FROM sema_entries e JOIN chain c ON e.id = c.id ORDER BY e.seq`),
	}
}

// HistorySQL is the file-history stores' shared statements, spelled for one dialect.
type HistorySQL struct {
	// Lookup reads the record of key $2 at scope $1's newest boundary (0 before the
	// first).
	Lookup string
	// RecordsFrom reads scope $1's records at boundaries ≥ $2, by boundary, then id.
	RecordsFrom string
	// Boundaries reads scope $1's boundaries in mint order, with their scope.
	Boundaries string
	// BoundariesToCopy reads scope $1's boundaries in mint order, as a fork's carry
	// copies them.
	BoundariesToCopy string
	// InsertBoundary adds a boundary ($1 scope, $2 turn, $3 kind, $4 created) and
	// returns its id.
	InsertBoundary string
	// Blob reads the bytes stored under sum $1.
	Blob string
	// PutBlob stores $3 under sum $1 with size $2, unless that sum is stored.
	PutBlob string
	// DeleteRecord deletes record $1 and returns its sum (NULL when it has no blob).
	DeleteRecord string
	// SetAfter and SetPending set record $1's after-image and pending one to $2;
	// SetAfter also clears the pending one, which it confirms.
	SetAfter, SetPending string
	// ScopeTaken reads whether scope $1 holds a boundary or a record.
	ScopeTaken string
	// ForgetBoundaries and ForgetCarries delete scope $1's boundaries and the note of a
	// fork carried into it.
	ForgetBoundaries, ForgetCarries string
}

// History returns the file-history stores' shared statements spelled for d.
func (d Dialect) History() HistorySQL {
	const newestBoundary = `COALESCE((SELECT id FROM sema_history_boundaries WHERE scope = $1 ORDER BY id DESC LIMIT 1), 0)`
	return HistorySQL{
		Lookup:           d.SQL(`SELECT ` + RecordCols + ` FROM sema_history_records WHERE scope = $1 AND key = $2 AND boundary = ` + newestBoundary),
		RecordsFrom:      d.SQL(`SELECT ` + RecordCols + ` FROM sema_history_records WHERE scope = $1 AND boundary >= $2 ORDER BY boundary, id`),
		Boundaries:       d.SQL(`SELECT id, scope, turn, kind, created_at FROM sema_history_boundaries WHERE scope = $1 ORDER BY id`),
		BoundariesToCopy: d.SQL(`SELECT id, turn, kind, created_at FROM sema_history_boundaries WHERE scope = $1 ORDER BY id`),
		InsertBoundary:   d.SQL(`INSERT INTO sema_history_boundaries (scope, turn, kind, created_at) VALUES ($1, $2, $3, $4) RETURNING id`),
		Blob:             d.SQL(`SELECT data FROM sema_history_blobs WHERE sum = $1`),
		PutBlob:          d.SQL(`INSERT INTO sema_history_blobs (sum, size, data) VALUES ($1, $2, $3) ON CONFLICT (sum) DO NOTHING`),
		DeleteRecord:     d.SQL(`DELETE FROM sema_history_records WHERE id = $1 RETURNING sum`),
		SetAfter:         d.SQL(`UPDATE sema_history_records SET after = $2, pending = NULL WHERE id = $1`),
		SetPending:       d.SQL(`UPDATE sema_history_records SET pending = $2 WHERE id = $1`),
		ScopeTaken: d.SQL(`SELECT EXISTS (SELECT 1 FROM sema_history_boundaries WHERE scope = $1)
			OR EXISTS (SELECT 1 FROM sema_history_records WHERE scope = $1)`),
		ForgetBoundaries: d.SQL(`DELETE FROM sema_history_boundaries WHERE scope = $1`),
		ForgetCarries:    d.SQL(`DELETE FROM sema_history_carries WHERE to_scope = $1`),
	}
}

// ListSessions returns the statement that lists sessions, and its arguments: cols of
// the sessions at root (every root when empty), only those without a parent when
// rootsOnly, in order, at most limit of them when limit > 0. cols and order are the
// store's own (its schema keeps last activity its own way), spelled for d.
func (d Dialect) ListSessions(cols, order, root string, rootsOnly bool, limit int) (string, []any) {
	var where []string
	var args []any
	if root != "" {
		args = append(args, root)
		where = append(where, "root = "+d.param(len(args)))
	}
	if rootsOnly {
		where = append(where, "parent_id = ''")
	}
	query := `SELECT ` + cols + ` FROM ` + d.SQL(`sema_sessions`)
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY " + order
	if limit > 0 {
		args = append(args, limit)
		query += " LIMIT " + d.param(len(args))
	}
	return query, args
}
