package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/sema-agent/sema/internal/sqlstore"
	"github.com/sema-agent/sema/session/sqlitedb"
)

// schema is the history store's migration list (see sqlitedb.Migrate). Released steps
// are never edited; a change is a new step. Times are Unix nanoseconds (UTC).
var schema = []string{
	// 1: content-addressed blobs, boundaries, first-touch records, fork carries.
	`CREATE TABLE history_blobs (
		sum  TEXT PRIMARY KEY,
		size INTEGER NOT NULL,
		data BLOB NOT NULL
	);
	CREATE TABLE history_boundaries (
		id         INTEGER PRIMARY KEY AUTOINCREMENT,
		scope      TEXT NOT NULL,
		turn       INTEGER NOT NULL,
		created_at INTEGER NOT NULL
	);
	CREATE INDEX history_boundaries_by_scope ON history_boundaries (scope, id);
	CREATE TABLE history_records (
		id         INTEGER PRIMARY KEY AUTOINCREMENT,
		scope      TEXT NOT NULL,
		boundary   INTEGER NOT NULL,
		turn       INTEGER NOT NULL,
		key        TEXT NOT NULL,
		existed    INTEGER NOT NULL,
		sum        TEXT REFERENCES history_blobs (sum),
		mode       INTEGER NOT NULL,
		size       INTEGER NOT NULL,
		created_at INTEGER NOT NULL,
		UNIQUE (scope, boundary, key)
	);
	CREATE INDEX history_records_by_sum ON history_records (sum);
	CREATE TABLE history_carries (
		to_scope   TEXT PRIMARY KEY,
		from_scope TEXT NOT NULL,
		created_at INTEGER NOT NULL
	);`,
	// 2: what minted a boundary (a turn or a rewind), and what the agent last left at a
	// record's key. Records from before have no after-image: unknown, which a rewind
	// treats as "cannot tell who changed it".
	`ALTER TABLE history_boundaries ADD COLUMN kind TEXT NOT NULL DEFAULT 'turn';
	ALTER TABLE history_records ADD COLUMN after TEXT;`,
	// 3: what a write that began was to leave at a record's key, until its outcome is
	// confirmed (see Record.Pending).
	`ALTER TABLE history_records ADD COLUMN pending TEXT;`,
}

// SQLite is the history Store in a SQLite file, normally the session store's.
type SQLite struct {
	db  *sql.DB
	r   sqlitedb.Querier
	own bool
}

var _ Store = (*SQLite)(nil)

// OpenSQLite opens (creating and migrating when needed) a history store in its own
// database file. To share the session store's file, use NewSQLite with its DB, or
// package statedir, which opens both stores on one file.
func OpenSQLite(path string) (*SQLite, error) {
	db, err := sqlitedb.OpenAttached(context.Background(), path, sqlitedb.Options{}, sqliteSchema)
	if err != nil {
		return nil, err
	}
	return &SQLite{db: db, r: sqlitedb.Reader(db), own: true}, nil
}

// NewSQLite builds the store on an open database — typically the session store's
// (session.SQLiteStore.DB), so history and transcript live in one file — and migrates
// its tables. db should come from sqlitedb.Open. Close does not close db.
func NewSQLite(ctx context.Context, db *sql.DB) (*SQLite, error) {
	if err := sqlitedb.Attach(ctx, db, sqliteSchema); err != nil {
		return nil, err
	}
	return &SQLite{db: db, r: sqlitedb.Reader(db)}, nil
}

// Close closes the database when OpenSQLite opened it.
func (s *SQLite) Close() error {
	if s.own {
		return sqlitedb.Close(s.db)
	}
	return nil
}

// hq is the statements this store shares with pgstore's (see package sqlstore).
var hq = sqlstore.SQLite.History()

const (
	qNewest    = `SELECT id, turn FROM history_boundaries WHERE scope = ? ORDER BY id DESC LIMIT 1`
	qPutRecord = `INSERT INTO history_records (scope, boundary, turn, key, existed, sum, mode, size, after, pending, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULLIF(?, ''), NULLIF(?, ''), ?) RETURNING id`
	// qDropOrphan deletes a blob no record uses any more.
	qDropOrphan = `DELETE FROM history_blobs WHERE sum = ?1 AND NOT EXISTS (SELECT 1 FROM history_records WHERE sum = ?1)`
)

var hotQueries = []string{qNewest, hq.Lookup, hq.PutBlob, qPutRecord, hq.RecordsFrom, hq.Blob, qDropOrphan, hq.InsertBoundary, hq.SetAfter, hq.SetPending}

// sqliteSchema is the history store's share of a database file, beside the session
// store's.
var sqliteSchema = sqlitedb.Schema{Component: "history", Steps: schema, Queries: hotQueries, Shape: sqliteShape}

func fsMode(m uint32) fs.FileMode { return fs.FileMode(m) & ModeBits }

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

func scanRecord(r sqlstore.Scanner, rec *Record) error {
	var created int64
	var mode uint32
	err := r.Scan(&rec.ID, &rec.Scope, &rec.Boundary, &rec.Turn, &rec.Key, &rec.Existed, &rec.Sum, &mode, &rec.Size, &rec.After, &rec.Pending, &created)
	rec.Mode, rec.CreatedAt = fsMode(mode), fromNanos(created)
	rec.Lost = rec.Existed && rec.Sum == ""
	return err
}

// tx runs fn in one transaction (see sqlitedb.Tx) and reports a transaction that ctx's
// end cut off as what it is. database/sql rolls a transaction back as soon as the
// context it began with ends, and a commit that comes after that fails with
// sql.ErrTxDone, which reads as a fault of the store; the caller gets ctx's error
// instead (errors.Is finds context.Canceled or context.DeadlineExceeded), and nothing
// was stored.
func (s *SQLite) tx(ctx context.Context, fn func(q sqlitedb.Querier) error) error {
	err := sqlitedb.Tx(ctx, s.db, fn)
	if errors.Is(err, sql.ErrTxDone) && ctx.Err() != nil {
		return fmt.Errorf("%w: the transaction was rolled back, nothing was stored", ctx.Err())
	}
	return err
}

// MintBoundary implements Store.MintBoundary: it adds a boundary for turn (≥ 1) to
// scope and returns it with its ID.
func (s *SQLite) MintBoundary(ctx context.Context, scope string, turn int) (Boundary, error) {
	if err := CheckScope(scope); err != nil {
		return Boundary{}, err
	}
	if err := CheckTurn(turn); err != nil {
		return Boundary{}, err
	}
	b := Boundary{Scope: scope, Turn: turn, Kind: KindTurn, CreatedAt: now()}
	err := s.tx(ctx, func(q sqlitedb.Querier) error {
		return q.QueryRowContext(ctx, hq.InsertBoundary, scope, turn, string(b.Kind), b.CreatedAt.UnixNano()).Scan(&b.ID)
	})
	return b, err
}

// Boundaries implements Store.Boundaries, returning the scope's boundaries in mint
// order; none is not an error.
func (s *SQLite) Boundaries(ctx context.Context, scope string) ([]Boundary, error) {
	rows, err := s.r.QueryContext(ctx, hq.Boundaries, scope)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return sqlstore.Collect(rows, func(r sqlstore.Scanner, b *Boundary) error {
		var created int64
		err := r.Scan(&b.ID, &b.Scope, &b.Turn, &b.Kind, &created)
		b.CreatedAt = fromNanos(created)
		return err
	})
}

// Lookup implements Store.Lookup: the record of key at the scope's newest boundary,
// and false when there is none.
func (s *SQLite) Lookup(ctx context.Context, scope, key string) (Record, bool, error) {
	return lookup(ctx, s.r, scope, key)
}

func lookup(ctx context.Context, q sqlitedb.Querier, scope, key string) (Record, bool, error) {
	rec, err := sqlstore.One(q.QueryRowContext(ctx, hq.Lookup, scope, key), scanRecord)
	if errors.Is(err, sql.ErrNoRows) {
		return Record{}, false, nil
	}
	return rec, err == nil, err
}

// Insert implements Store.Insert: it stores rec and its content at the scope's newest
// boundary, or returns the record already there for the key and false.
func (s *SQLite) Insert(ctx context.Context, rec Record, content []byte) (Record, bool, error) {
	rec, err := PrepareInsert(rec, content)
	if err != nil {
		return Record{}, false, err
	}
	var out Record
	var minted bool
	err = s.tx(ctx, func(q sqlitedb.Querier) error {
		if prev, ok, err := lookup(ctx, q, rec.Scope, rec.Key); err != nil || ok {
			out, minted = prev, false
			return err
		}
		r := rec
		if err := q.QueryRowContext(ctx, qNewest, r.Scope).Scan(&r.Boundary, &r.Turn); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		var sumArg any
		if r.Existed && !r.Lost {
			if content == nil {
				content = []byte{} // an empty file has an empty blob, not NULL
			}
			if _, err := q.ExecContext(ctx, hq.PutBlob, r.Sum, r.Size, content); err != nil {
				return err
			}
			sumArg = r.Sum
		}
		r.CreatedAt = now()
		if err := q.QueryRowContext(ctx, qPutRecord, r.Scope, r.Boundary, r.Turn, r.Key, r.Existed, sumArg, uint32(r.Mode),
			r.Size, r.After, r.Pending, r.CreatedAt.UnixNano()).Scan(&r.ID); err != nil {
			return err
		}
		out, minted = r, true
		return nil
	})
	if err != nil {
		return Record{}, false, err
	}
	return out, minted, nil
}

// Records implements Store.Records: the scope's records at boundaries with ID ≥ from,
// by boundary, then ID.
func (s *SQLite) Records(ctx context.Context, scope string, from int64) ([]Record, error) {
	return records(ctx, s.r, scope, from)
}

func records(ctx context.Context, q sqlitedb.Querier, scope string, from int64) ([]Record, error) {
	rows, err := q.QueryContext(ctx, hq.RecordsFrom, scope, from)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return sqlstore.Collect(rows, scanRecord)
}

// Blob implements Store.Blob; it errs with CodeBlobMissing when the store holds no
// blob under that sum.
func (s *SQLite) Blob(ctx context.Context, sum string) ([]byte, error) {
	var data []byte
	err := s.r.QueryRowContext(ctx, hq.Blob, sum).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, BlobMissing(sum)
	}
	if data == nil && err == nil {
		data = []byte{}
	}
	return data, err
}

// blobsChunk bounds the sums one query asks for, well under SQLite's limit on a
// statement's parameters.
const blobsChunk = 500

// blobsOf implements blobsReader: a query per blobsChunk sums instead of one per sum.
func (s *SQLite) blobsOf(ctx context.Context, sums []string) (map[string][]byte, error) {
	sums = slices.Compact(slices.Sorted(slices.Values(sums)))
	out := make(map[string][]byte, len(sums))
	for chunk := range slices.Chunk(sums, blobsChunk) {
		args := make([]any, len(chunk))
		for i, sum := range chunk {
			args[i] = sum
		}
		rows, err := s.r.QueryContext(ctx, `SELECT sum, data FROM history_blobs WHERE sum IN (?`+strings.Repeat(", ?", len(chunk)-1)+`)`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var sum string
			var data []byte
			if err := rows.Scan(&sum, &data); err != nil {
				rows.Close()
				return nil, err
			}
			if data == nil {
				data = []byte{}
			}
			out[sum] = data
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Delete implements Store.Delete: it removes the record with id, and its blob when no
// other record uses it; a missing id is not an error.
func (s *SQLite) Delete(ctx context.Context, id int64) error {
	return s.tx(ctx, func(q sqlitedb.Querier) error {
		var sum sql.NullString
		err := q.QueryRowContext(ctx, hq.DeleteRecord, id).Scan(&sum)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil || !sum.Valid {
			return err
		}
		_, err = q.ExecContext(ctx, qDropOrphan, sum.String)
		return err
	})
}

// CarryFork implements Store.CarryFork: it copies from's boundaries and records into
// to once, and returns how many records it copied (0 on a repeat).
func (s *SQLite) CarryFork(ctx context.Context, from, to string) (int, error) {
	if err := CheckScope(from); err != nil {
		return 0, err
	}
	if err := CheckScope(to); err != nil {
		return 0, err
	}
	if from == to {
		return 0, nil
	}
	var n int
	err := s.tx(ctx, func(q sqlitedb.Querier) error {
		n = 0
		var one int
		err := q.QueryRowContext(ctx, `SELECT 1 FROM history_carries WHERE to_scope = ?`, to).Scan(&one)
		if err == nil {
			return nil // carried before
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		var taken bool
		if err := q.QueryRowContext(ctx, hq.ScopeTaken, to).Scan(&taken); err != nil {
			return err
		}
		if taken {
			return CarryConflict(from, to)
		}
		if _, err := q.ExecContext(ctx, `INSERT INTO history_carries (to_scope, from_scope, created_at) VALUES (?, ?, ?)`,
			to, from, now().UnixNano()); err != nil {
			return err
		}
		bs, err := q.QueryContext(ctx, hq.BoundariesToCopy, from)
		if err != nil {
			return err
		}
		type old struct {
			id, created int64
			turn        int
			kind        string
		}
		olds, err := sqlstore.Collect(bs, func(r sqlstore.Scanner, o *old) error {
			return r.Scan(&o.id, &o.turn, &o.kind, &o.created)
		})
		bs.Close()
		if err != nil {
			return err
		}
		ids := map[int64]int64{0: 0}
		for _, o := range olds {
			var nid int64
			if err := q.QueryRowContext(ctx, hq.InsertBoundary, to, o.turn, o.kind, o.created).Scan(&nid); err != nil {
				return err
			}
			ids[o.id] = nid
		}
		recs, err := records(ctx, q, from, 0)
		if err != nil {
			return err
		}
		for _, r := range recs {
			var sumArg any
			if r.Existed {
				sumArg = r.Sum
			}
			var id int64
			if err := q.QueryRowContext(ctx, qPutRecord, to, ids[r.Boundary], r.Turn, r.Key, r.Existed, sumArg, uint32(r.Mode),
				r.Size, r.After, r.Pending, r.CreatedAt.UnixNano()).Scan(&id); err != nil {
				return err
			}
		}
		n = len(recs)
		return nil
	})
	return n, err
}

// SetAfter implements Store.SetAfter: it sets the After of the record with id; a
// missing id is not an error.
func (s *SQLite) SetAfter(ctx context.Context, id int64, after string) error {
	if err := CheckAfter(after); err != nil {
		return err
	}
	return s.tx(ctx, func(q sqlitedb.Querier) error {
		_, err := q.ExecContext(ctx, hq.SetAfter, id, after)
		return err
	})
}

// SetPending implements Store.SetPending: it sets the Pending of the record with id; a
// missing id is not an error.
func (s *SQLite) SetPending(ctx context.Context, id int64, after string) error {
	if err := CheckAfter(after); err != nil {
		return err
	}
	return s.tx(ctx, func(q sqlitedb.Querier) error {
		_, err := q.ExecContext(ctx, hq.SetPending, id, after)
		return err
	})
}

// MintRewind implements Store.MintRewind: the rewind boundary, the saved states' blobs
// and their records in one transaction.
func (s *SQLite) MintRewind(ctx context.Context, scope string, turn int, saved []Saved) (Boundary, []Record, error) {
	saved, err := PrepareSaved(scope, turn, saved)
	if err != nil {
		return Boundary{}, nil, err
	}
	var b Boundary
	var out []Record
	err = s.tx(ctx, func(q sqlitedb.Querier) error {
		b = Boundary{Scope: scope, Turn: turn, Kind: KindRewind, CreatedAt: now()}
		if err := q.QueryRowContext(ctx, hq.InsertBoundary, scope, turn, string(b.Kind), b.CreatedAt.UnixNano()).Scan(&b.ID); err != nil {
			return err
		}
		out = make([]Record, len(saved))
		// Many rows per statement: a rewind saves hundreds of files, and a statement's
		// own cost, not its rows', is most of what one row at a time pays.
		var blobs []any
		seen := map[string]bool{}
		for _, sv := range saved {
			if r := sv.Record; r.Existed && !seen[r.Sum] {
				seen[r.Sum] = true
				content := sv.Content
				if content == nil {
					content = []byte{}
				}
				blobs = append(blobs, r.Sum, r.Size, content)
			}
		}
		for chunk := range slices.Chunk(blobs, 3*mintRows) {
			if _, err := q.ExecContext(ctx, `INSERT INTO history_blobs (sum, size, data) VALUES `+rowsOf("(?, ?, ?)", len(chunk)/3)+
				` ON CONFLICT (sum) DO NOTHING`, chunk...); err != nil {
				return err
			}
		}
		for start := 0; start < len(saved); start += mintRows {
			end := min(start+mintRows, len(saved))
			args := make([]any, 0, 10*(end-start))
			at := map[string]int{} // keys are unique in saved
			for i := start; i < end; i++ {
				r := saved[i].Record
				var sumArg any
				if r.Existed {
					sumArg = r.Sum
				}
				r.Boundary, r.Turn, r.CreatedAt = b.ID, b.Turn, now()
				args = append(args, scope, r.Boundary, r.Turn, r.Key, r.Existed, sumArg, uint32(r.Mode), r.Size, r.After, r.CreatedAt.UnixNano())
				out[i], at[r.Key] = r, i
			}
			// RETURNING gives the rows in no promised order: each id is matched by key.
			rows, err := q.QueryContext(ctx, `INSERT INTO history_records (scope, boundary, turn, key, existed, sum, mode, size, after, created_at) VALUES `+
				rowsOf("(?, ?, ?, ?, ?, ?, ?, ?, NULLIF(?, ''), ?)", end-start)+` RETURNING id, key`, args...)
			if err != nil {
				return err
			}
			n := 0
			for rows.Next() {
				var id int64
				var key string
				if err := rows.Scan(&id, &key); err != nil {
					rows.Close()
					return err
				}
				i, ok := at[key]
				if !ok {
					rows.Close()
					return fmt.Errorf("history: the insert returned a key it was not given: %q", key)
				}
				out[i].ID = id
				n++
			}
			if err := rows.Close(); err != nil {
				return err
			}
			if err := rows.Err(); err != nil {
				return err
			}
			if n != end-start {
				return fmt.Errorf("history: %d of %d saved records were stored", n, end-start)
			}
		}
		return nil
	})
	if err != nil {
		return Boundary{}, nil, err
	}
	return b, out, nil
}

// mintRows is how many rows MintRewind inserts per statement: ten parameters a record,
// well under SQLite's limit on a statement's parameters.
const mintRows = 200

// rowsOf is n copies of a VALUES row, comma-separated.
func rowsOf(row string, n int) string {
	return strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
}

// Forget implements Store.Forget: it drops scope's boundaries and records, the blobs
// no other record uses, and the note that a fork was carried into scope.
func (s *SQLite) Forget(ctx context.Context, scope string) error {
	return s.tx(ctx, func(q sqlitedb.Querier) error {
		for _, stmt := range []string{
			`DELETE FROM history_records WHERE scope = ?`,
			hq.ForgetBoundaries,
			hq.ForgetCarries,
		} {
			if _, err := q.ExecContext(ctx, stmt, scope); err != nil {
				return err
			}
		}
		_, err := q.ExecContext(ctx, `DELETE FROM history_blobs WHERE NOT EXISTS
			(SELECT 1 FROM history_records r WHERE r.sum = history_blobs.sum)`)
		return err
	})
}
