package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/internal/sqlstore"
)

// History is the history.Store on PostgreSQL. Get it from DB.History.
type History struct {
	db *DB
}

var _ history.Store = (*History)(nil)

// Close does nothing: the store shares its DB with the session store, and DB.Close ends
// both. It is there because history.Store has it.
func (h *History) Close() error { return nil }

// hq is the statements this store shares with the SQLite one (see package sqlstore).
var hq = sqlstore.Postgres.History()

const (
	qMint = `INSERT INTO sema_history_boundaries (scope, turn, kind, created_at) VALUES ($1, $2, $3, clock_timestamp())
		RETURNING id, created_at`
	// qDropOrphan deletes a blob no record uses any more. It runs as a statement of its
	// own after the record's delete, which only a later statement of the transaction sees.
	qDropOrphan = `DELETE FROM sema_history_blobs b WHERE b.sum = ANY($1)
		AND NOT EXISTS (SELECT 1 FROM sema_history_records r WHERE r.sum = b.sum)`
)

func scanRecord(r sqlstore.Scanner, rec *history.Record) error {
	var mode int64
	var created time.Time
	err := r.Scan(&rec.ID, &rec.Scope, &rec.Boundary, &rec.Turn, &rec.Key, &rec.Existed, &rec.Sum, &mode, &rec.Size, &rec.After, &rec.Pending, &created)
	rec.Mode, rec.CreatedAt = fs.FileMode(mode)&history.ModeBits, created.UTC()
	rec.Lost = rec.Existed && rec.Sum == ""
	return err
}

// MintBoundary adds a boundary for turn (≥ 1) to scope and returns it with its ID (see
// history.Store.MintBoundary). IDs come from one sequence, so a later mint has a larger
// ID across the store.
func (h *History) MintBoundary(ctx context.Context, scope string, turn int) (history.Boundary, error) {
	if err := history.CheckScope(scope); err != nil {
		return history.Boundary{}, err
	}
	if err := history.CheckTurn(turn); err != nil {
		return history.Boundary{}, err
	}
	b := history.Boundary{Scope: scope, Turn: turn, Kind: history.KindTurn}
	err := h.db.run(ctx, func(q querier) error {
		var created time.Time
		err := q.QueryRow(ctx, qMint, scope, turn, string(b.Kind)).Scan(&b.ID, &created)
		b.CreatedAt = created.UTC()
		return err
	})
	if err != nil {
		return history.Boundary{}, err
	}
	return b, nil
}

// Boundaries returns the scope's boundaries in mint order; none is not an error (see
// history.Store.Boundaries).
func (h *History) Boundaries(ctx context.Context, scope string) ([]history.Boundary, error) {
	var out []history.Boundary
	err := h.db.run(ctx, func(q querier) error {
		rows, err := q.Query(ctx, hq.Boundaries, scope)
		if err != nil {
			return err
		}
		defer rows.Close()
		out, err = sqlstore.Collect(rows, func(r sqlstore.Scanner, b *history.Boundary) error {
			var kind string
			var created time.Time
			err := r.Scan(&b.ID, &b.Scope, &b.Turn, &kind, &created)
			b.Kind, b.CreatedAt = history.BoundaryKind(kind), created.UTC()
			return err
		})
		return err
	})
	return out, err
}

// Lookup returns the record of key at the scope's newest boundary, and false when there is
// none (see history.Store.Lookup).
func (h *History) Lookup(ctx context.Context, scope, key string) (history.Record, bool, error) {
	var out history.Record
	var found bool
	err := h.db.run(ctx, func(q querier) error {
		var err error
		out, err = sqlstore.One(q.QueryRow(ctx, hq.Lookup, scope, key), scanRecord)
		found = err == nil
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	})
	if err != nil || !found {
		return history.Record{}, false, err
	}
	return out, true, nil
}

// errTaken rolls back an Insert whose record another writer stored first.
var errTaken = errors.New("pgstore: the record was stored by another writer")

// Insert stores rec and its content at the scope's newest boundary, in one transaction,
// or returns the record already there for the key and false (see history.Store.Insert).
// Of writers racing on one key, the unique (scope, boundary, key) lets one insert; the
// others roll back, their blob with them, and return its record.
func (h *History) Insert(ctx context.Context, rec history.Record, content []byte) (history.Record, bool, error) {
	rec, err := history.PrepareInsert(rec, content)
	if err != nil {
		return history.Record{}, false, err
	}
	if content == nil {
		content = []byte{} // an empty file has an empty blob, not NULL
	}
	var sumArg any
	if rec.Existed && !rec.Lost {
		sumArg = rec.Sum
	}
	for range attempts {
		if prev, ok, err := h.Lookup(ctx, rec.Scope, rec.Key); err != nil || ok {
			return prev, false, err
		}
		out := rec
		err := h.db.tx(ctx, func(tx pgx.Tx) error {
			if rec.Existed && !rec.Lost {
				if _, err := tx.Exec(ctx, hq.PutBlob, rec.Sum, rec.Size, content); err != nil {
					return err
				}
			}
			var created time.Time
			err := tx.QueryRow(ctx, `INSERT INTO sema_history_records (scope, boundary, turn, key, existed, sum, mode, size, after, created_at)
				SELECT $1, COALESCE(b.id, 0), COALESCE(b.turn, 0), $2, $3, $4, $5, $6, NULL, clock_timestamp()
				FROM (SELECT 1) AS one LEFT JOIN LATERAL (
					SELECT id, turn FROM sema_history_boundaries WHERE scope = $1 ORDER BY id DESC LIMIT 1
				) AS b ON true
				ON CONFLICT (scope, boundary, key) DO NOTHING
				RETURNING id, boundary, turn, created_at`,
				rec.Scope, rec.Key, rec.Existed, sumArg, int64(rec.Mode), rec.Size).Scan(&out.ID, &out.Boundary, &out.Turn, &created)
			if errors.Is(err, pgx.ErrNoRows) {
				return errTaken
			}
			out.CreatedAt = created.UTC()
			return err
		})
		if errors.Is(err, errTaken) {
			continue // the other writer's record is committed: Lookup finds it
		}
		if err != nil {
			return history.Record{}, false, err
		}
		return out, true, nil
	}
	return history.Record{}, false, fmt.Errorf("pgstore: the record of %s in scope %q kept changing under concurrent writers; retry", rec.Key, rec.Scope)
}

// Records returns the scope's records at boundaries with ID ≥ from, by boundary, then ID
// (see history.Store.Records).
func (h *History) Records(ctx context.Context, scope string, from int64) ([]history.Record, error) {
	var out []history.Record
	err := h.db.run(ctx, func(q querier) error {
		rows, err := q.Query(ctx, hq.RecordsFrom, scope, from)
		if err != nil {
			return err
		}
		defer rows.Close()
		out, err = sqlstore.Collect(rows, scanRecord)
		return err
	})
	return out, err
}

// Blob returns the bytes stored under sum, or an error with history.CodeBlobMissing (see
// history.Store.Blob).
func (h *History) Blob(ctx context.Context, sum string) ([]byte, error) {
	var data []byte
	err := h.db.run(ctx, func(q querier) error {
		err := q.QueryRow(ctx, hq.Blob, sum).Scan(&data)
		if errors.Is(err, pgx.ErrNoRows) {
			return history.BlobMissing(sum)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// Delete removes the record with id, and its blob when no other record uses it; a missing
// id is not an error (see history.Store.Delete).
func (h *History) Delete(ctx context.Context, id int64) error {
	return h.db.tx(ctx, func(tx pgx.Tx) error {
		var sum *string
		err := tx.QueryRow(ctx, hq.DeleteRecord, id).Scan(&sum)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && sum == nil) {
			return nil
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, qDropOrphan, []string{*sum})
		return err
	})
}

// SetAfter sets the After of the record with id; a missing id is not an error (see
// history.Store.SetAfter).
func (h *History) SetAfter(ctx context.Context, id int64, after string) error {
	if err := history.CheckAfter(after); err != nil {
		return err
	}
	return h.db.run(ctx, func(q querier) error {
		_, err := q.Exec(ctx, hq.SetAfter, id, after)
		return err
	})
}

// SetPending sets the Pending of the record with id; a missing id is not an error (see
// history.Store.SetPending).
func (h *History) SetPending(ctx context.Context, id int64, after string) error {
	if err := history.CheckAfter(after); err != nil {
		return err
	}
	return h.db.run(ctx, func(q querier) error {
		_, err := q.Exec(ctx, hq.SetPending, id, after)
		return err
	})
}

// blobChunk bounds the bytes of blobs one statement of MintRewind sends, so a rewind of
// many large files is not one message of hundreds of megabytes.
const blobChunk = 8 << 20

// MintRewind mints a rewind boundary in scope and stores the saved states' blobs and
// records at it, in one transaction (see history.Store.MintRewind).
func (h *History) MintRewind(ctx context.Context, scope string, turn int, saved []history.Saved) (history.Boundary, []history.Record, error) {
	saved, err := history.PrepareSaved(scope, turn, saved)
	if err != nil {
		return history.Boundary{}, nil, err
	}
	// Blobs once each, in sum order: two rewinds that share blobs then lock their rows in
	// the same order and cannot deadlock.
	type blob struct {
		sum  string
		size int64
		data []byte
	}
	var blobs []blob
	seen := map[string]bool{}
	for _, sv := range saved {
		if r := sv.Record; r.Existed && !seen[r.Sum] {
			seen[r.Sum] = true
			data := sv.Content
			if data == nil {
				data = []byte{}
			}
			blobs = append(blobs, blob{r.Sum, r.Size, data})
		}
	}
	slices.SortFunc(blobs, func(a, b blob) int { return strings.Compare(a.sum, b.sum) })
	n := len(saved)
	keys, sums, afters := make([]string, n), make([]string, n), make([]string, n)
	existed, modes, sizes := make([]bool, n), make([]int64, n), make([]int64, n)
	for i, sv := range saved {
		r := sv.Record
		keys[i], existed[i], sums[i], modes[i], sizes[i], afters[i] = r.Key, r.Existed, r.Sum, int64(r.Mode), r.Size, r.After
	}

	var b history.Boundary
	var out []history.Record
	err = h.db.tx(ctx, func(tx pgx.Tx) error {
		b = history.Boundary{Scope: scope, Turn: turn, Kind: history.KindRewind}
		var created time.Time
		if err := tx.QueryRow(ctx, qMint, scope, turn, string(b.Kind)).Scan(&b.ID, &created); err != nil {
			return err
		}
		b.CreatedAt = created.UTC()
		for start := 0; start < len(blobs); {
			var cs []string
			var zs []int64
			var ds [][]byte
			for size := 0; start < len(blobs) && (len(ds) == 0 || size+len(blobs[start].data) <= blobChunk); start++ {
				cs, zs, ds = append(cs, blobs[start].sum), append(zs, blobs[start].size), append(ds, blobs[start].data)
				size += len(blobs[start].data)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO sema_history_blobs (sum, size, data)
				SELECT * FROM unnest($1::text[], $2::bigint[], $3::bytea[]) ON CONFLICT (sum) DO NOTHING`, cs, zs, ds); err != nil {
				return err
			}
		}
		out = make([]history.Record, n)
		at := make(map[string]int, n) // keys are unique in saved
		for i, sv := range saved {
			out[i], at[sv.Record.Key] = sv.Record, i
			out[i].Boundary, out[i].Turn = b.ID, b.Turn
		}
		// Rows are inserted, and their ids drawn, in the order given; RETURNING promises no
		// order, so each id is matched by key.
		rows, err := tx.Query(ctx, `INSERT INTO sema_history_records (scope, boundary, turn, key, existed, sum, mode, size, after, created_at)
			SELECT $1, $2, $3, m.key, m.existed, NULLIF(m.sum, ''), m.mode, m.size, NULLIF(m.after, ''), clock_timestamp()
			FROM unnest($4::text[], $5::boolean[], $6::text[], $7::bigint[], $8::bigint[], $9::text[]) WITH ORDINALITY
				AS m(key, existed, sum, mode, size, after, ord)
			ORDER BY m.ord
			RETURNING id, key, created_at`, scope, b.ID, b.Turn, keys, existed, sums, modes, sizes, afters)
		if err != nil {
			return err
		}
		defer rows.Close()
		got := 0
		for rows.Next() {
			var id int64
			var key string
			if err := rows.Scan(&id, &key, &created); err != nil {
				return err
			}
			i, ok := at[key]
			if !ok {
				return fmt.Errorf("pgstore: the insert returned a key it was not given: %q", key)
			}
			out[i].ID, out[i].CreatedAt = id, created.UTC()
			got++
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if got != n {
			return fmt.Errorf("pgstore: %d of %d saved records were stored", got, n)
		}
		return nil
	})
	if err != nil {
		return history.Boundary{}, nil, err
	}
	return b, out, nil
}

// CarryFork copies from's boundaries and records into to once, and returns how many
// records it copied, 0 on a repeat (see history.Store.CarryFork). The mark of the carry
// is inserted first, so of two carries into one scope the second waits for the first and
// then finds it done.
func (h *History) CarryFork(ctx context.Context, from, to string) (int, error) {
	if err := history.CheckScope(from); err != nil {
		return 0, err
	}
	if err := history.CheckScope(to); err != nil {
		return 0, err
	}
	if from == to {
		return 0, nil
	}
	var n int
	err := h.db.tx(ctx, func(tx pgx.Tx) error {
		n = 0
		tag, err := tx.Exec(ctx, `INSERT INTO sema_history_carries (to_scope, from_scope, created_at) VALUES ($1, $2, clock_timestamp())
			ON CONFLICT (to_scope) DO NOTHING`, to, from)
		if err != nil || tag.RowsAffected() == 0 {
			return err // carried before
		}
		var taken bool
		if err := tx.QueryRow(ctx, hq.ScopeTaken, to).Scan(&taken); err != nil {
			return err
		}
		if taken {
			return history.CarryConflict(from, to)
		}
		rows, err := tx.Query(ctx, hq.BoundariesToCopy, from)
		if err != nil {
			return err
		}
		type old struct {
			id      int64
			turn    int
			kind    string
			created time.Time
		}
		olds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (old, error) {
			var o old
			err := r.Scan(&o.id, &o.turn, &o.kind, &o.created)
			return o, err
		})
		if err != nil {
			return err
		}
		// One insert per boundary, sent together: each copy's new id pairs with its
		// original by the order of the results.
		b := &pgx.Batch{}
		for _, o := range olds {
			b.Queue(hq.InsertBoundary, to, o.turn, o.kind, o.created)
		}
		oldIDs, newIDs := []int64{0}, []int64{0}
		br := tx.SendBatch(ctx, b)
		for _, o := range olds {
			var nid int64
			if err := br.QueryRow().Scan(&nid); err != nil {
				br.Close()
				return err
			}
			oldIDs, newIDs = append(oldIDs, o.id), append(newIDs, nid)
		}
		if err := br.Close(); err != nil {
			return err
		}
		tag, err = tx.Exec(ctx, `INSERT INTO sema_history_records (scope, boundary, turn, key, existed, sum, mode, size, after, pending, created_at)
			SELECT $2, m.nid, r.turn, r.key, r.existed, r.sum, r.mode, r.size, r.after, r.pending, r.created_at
			FROM sema_history_records r JOIN unnest($3::bigint[], $4::bigint[]) AS m(old, nid) ON r.boundary = m.old
			WHERE r.scope = $1
			ORDER BY r.boundary, r.id`, from, to, oldIDs, newIDs)
		if err != nil {
			return err
		}
		n = int(tag.RowsAffected())
		return nil
	})
	return n, err
}

// Forget drops scope's boundaries and records, the blobs they alone used, and the note
// that a fork was carried into scope (see history.Store.Forget).
func (h *History) Forget(ctx context.Context, scope string) error {
	return h.db.tx(ctx, func(tx pgx.Tx) error {
		var sums []string
		if err := tx.QueryRow(ctx, `WITH gone AS (DELETE FROM sema_history_records WHERE scope = $1 RETURNING sum)
			SELECT COALESCE(array_agg(DISTINCT sum) FILTER (WHERE sum IS NOT NULL), '{}') FROM gone`, scope).Scan(&sums); err != nil {
			return err
		}
		for _, stmt := range []string{
			hq.ForgetBoundaries,
			hq.ForgetCarries,
		} {
			if _, err := tx.Exec(ctx, stmt, scope); err != nil {
				return err
			}
		}
		if len(sums) == 0 {
			return nil
		}
		_, err := tx.Exec(ctx, qDropOrphan, sums)
		return err
	})
}
