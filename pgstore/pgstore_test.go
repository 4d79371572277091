package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/history/historytest"
	"github.com/sema-agent/sema/pgstore"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/session/storetest"
)

// dsn returns the address of the test database, or skips t without one (fails it when
// SEMA_REQUIRE_POSTGRES=1, as CI sets, so a missing database is not a silent pass).
func dsn(t testing.TB) string {
	t.Helper()
	d := os.Getenv("SEMA_TEST_POSTGRES")
	if d != "" {
		return d
	}
	const how = "set SEMA_TEST_POSTGRES=postgres://USER@HOST:PORT/DATABASE?sslmode=disable to run the PostgreSQL store's tests " +
		"(each test creates and drops a schema of its own there)"
	if os.Getenv("SEMA_REQUIRE_POSTGRES") == "1" {
		t.Fatal("SEMA_REQUIRE_POSTGRES=1 but no database: " + how)
	}
	t.Skip(how)
	return ""
}

// newSchema creates an empty schema of a random name for one test and drops it, with
// everything in it, when the test ends. Tests touch no other schema.
func newSchema(t testing.TB) string {
	t.Helper()
	d := dsn(t)
	var b [6]byte
	rand.Read(b[:])
	name := "t_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, d)
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+name+" CASCADE"); err != nil {
			t.Error(err)
		}
	})
	return name
}

// newPool connects a pool whose connections see schema first: the pool of one process of
// a deployment. It closes when the test ends.
func newPool(t testing.TB, schema string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	// The suites run subtests in parallel, each with a pool: a few connections each keep
	// the total under the server's max_connections.
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func newDB(t testing.TB, schema string) *pgstore.DB {
	t.Helper()
	db, err := pgstore.New(context.Background(), newPool(t, schema))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestSessionStore(t *testing.T) {
	t.Parallel()
	dsn(t)
	newStore := func(t *testing.T) session.AdminStore { return newDB(t, newSchema(t)).Sessions() }
	storetest.Run(t, newStore)
	storetest.RunAdmin(t, newStore)
}

func TestHistoryStore(t *testing.T) {
	t.Parallel()
	dsn(t)
	historytest.Run(t, func(t *testing.T) history.Store { return newDB(t, newSchema(t)).History() })
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if !sema.IsCode(err, code) {
		t.Fatalf("error = %v, want code %s", err, code)
	}
}

// schemaDSN is the test database's address with schema as its search_path.
func schemaDSN(t testing.TB, schema string) string {
	sep := "?"
	if strings.Contains(dsn(t), "?") {
		sep = "&"
	}
	return dsn(t) + sep + "search_path=" + schema
}

// TestOpen: Open reaches the schema a search_path in the address names, migrates it, and
// Close closes the pool it made; New leaves the caller's pool open.
func TestOpen(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	ctx := t.Context()
	db, err := pgstore.Open(ctx, schemaDSN(t, schema))
	if err != nil {
		t.Fatal(err)
	}
	s, err := db.Sessions().Create(ctx, session.Session{Root: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM `+schema+`.sema_sessions WHERE id = $1`, s.ID).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the session is not in schema %s: %d rows, %v", schema, n, err)
	}
	pool := db.Pool()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pool.Ping(ctx); err == nil {
		t.Fatal("Close left the pool Open made open")
	}
	_, err = db.Sessions().Get(ctx, s.ID)
	wantCode(t, err, pgstore.CodeClosed)
	_, err = db.History().Boundaries(ctx, "S")
	wantCode(t, err, pgstore.CodeClosed)

	own := newPool(t, schema)
	db2, err := pgstore.New(ctx, own)
	if err != nil {
		t.Fatal(err)
	}
	db2.Close()
	if err := own.Ping(ctx); err != nil {
		t.Fatalf("Close closed the caller's pool: %v", err)
	}
}

// TestOpenWithPoolSize: OpenWith sizes the pool where the connection string is silent,
// the string's own pool_max_conns wins, and a negative size is refused by name.
func TestOpenWithPoolSize(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	ctx := t.Context()
	base := schemaDSN(t, schema)
	for _, tc := range []struct {
		name string
		dsn  string
		o    pgstore.Options
		want int32
	}{
		{"silent string", base, pgstore.Options{MaxConns: 13}, 13},
		{"the string's size wins", base + "&pool_max_conns=3", pgstore.Options{MaxConns: 13}, 3},
		{"zero keeps pgxpool's default", base, pgstore.Options{}, int32(max(4, runtime.NumCPU()))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := pgstore.OpenWith(ctx, tc.dsn, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if got := db.Pool().Config().MaxConns; got != tc.want {
				t.Fatalf("pool of %d connections, want %d", got, tc.want)
			}
		})
	}
	_, err := pgstore.OpenWith(ctx, base, pgstore.Options{MaxConns: -1})
	wantCode(t, err, pgstore.CodeOpenFailed)
}

// TestOpenRefusals: an address that does not parse or does not answer is refused with
// store.open_failed, and the message never holds the password.
func TestOpenRefusals(t *testing.T) {
	t.Parallel()
	const secret = "s3cret-pw"
	for _, tc := range []struct{ name, dsn string }{
		{"does not parse", "postgres://sema:" + secret + "@[::1/db"},
		{"bad key=value", "host=127.0.0.1 password=" + secret + " port=notanumber"},
		{"nobody listens", "postgres://sema:" + secret + "@127.0.0.1:1/db?connect_timeout=2"},
		{"a pool size that is no number", "postgres://sema:" + secret + "@127.0.0.1:1/db?pool_max_conns=many"},
		{"a pool of none", "host=127.0.0.1 password=" + secret + " pool_max_conns=0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pgstore.Open(t.Context(), tc.dsn)
			wantCode(t, err, pgstore.CodeOpenFailed)
			if strings.Contains(err.Error(), secret) || strings.Contains(sema.MessageOf(err), secret) {
				t.Fatalf("the error shows the password: %v", err)
			}
			if strings.Contains(tc.dsn, "pool_max_conns") && !strings.Contains(sema.MessageOf(err), "pool_max_conns") {
				t.Fatalf("a bad pool size is refused without naming it: %v", err)
			}
			t.Log(err)
		})
	}
}

func versions(t *testing.T, pool *pgxpool.Pool) map[string]int {
	t.Helper()
	rows, err := pool.Query(t.Context(), `SELECT component, version FROM sema_schema_version`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for rows.Next() {
		var c string
		var v int
		if err := rows.Scan(&c, &v); err != nil {
			t.Fatal(err)
		}
		out[c] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSchemaTooNew: a database a newer sema migrated is refused, and nothing in it is
// changed — not even the steps of a component this build could apply.
func TestSchemaTooNew(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	pool := newPool(t, schema)
	newDB(t, schema)
	before := versions(t, pool)
	if before["session"] < 1 || before["history"] < 1 {
		t.Fatalf("versions after a migration: %v", before)
	}
	// A newer sema's session schema, and history not yet created.
	if _, err := pool.Exec(ctx, `UPDATE sema_schema_version SET version = 99 WHERE component = 'session';
		DELETE FROM sema_schema_version WHERE component = 'history';
		DROP TABLE sema_history_records, sema_history_blobs, sema_history_boundaries, sema_history_carries`); err != nil {
		t.Fatal(err)
	}
	_, err := pgstore.New(ctx, pool)
	wantCode(t, err, pgstore.CodeSchemaTooNew)
	if got := versions(t, pool); got["session"] != 99 || got["history"] != 0 {
		t.Fatalf("a refused database was changed: versions %v", got)
	}
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('sema_history_records') IS NOT NULL`).Scan(&exists); err != nil || exists {
		t.Fatalf("a refused database got the history tables (%v, %v)", exists, err)
	}
}

// TestConcurrentMigrate: processes that start at once against an empty schema all
// succeed, and the schema is migrated once (a step run twice would fail: its CREATE TABLEs
// have no IF NOT EXISTS).
func TestConcurrentMigrate(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	const processes = 8
	pools := make([]*pgxpool.Pool, processes)
	for i := range pools {
		pools[i] = newPool(t, schema)
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, processes)
	for i := range processes {
		wg.Go(func() {
			<-start
			db, err := pgstore.New(t.Context(), pools[i])
			if err == nil {
				_, err = db.Sessions().Create(t.Context(), session.Session{Root: fmt.Sprint("/p", i)})
			}
			errs[i] = err
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("process %d: %v", i, err)
		}
	}
	got := versions(t, pools[0])
	if len(got) != 2 || got["session"] < 1 || got["history"] < 1 {
		t.Fatalf("versions after concurrent migrations: %v", got)
	}
	var n int
	if err := pools[0].QueryRow(t.Context(), `SELECT count(*) FROM sema_sessions`).Scan(&n); err != nil || n != processes {
		t.Fatalf("%d sessions (%v), want one per process", n, err)
	}
}

// TestClaimAcrossPools: racers in separate pools — as separate processes or machines would
// be — claiming one checkpoint: exactly one wins, every other gets
// checkpoint.already_claimed, and the stored decision is the winner's. The same for a
// lease on one session.
func TestClaimAcrossPools(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	const racers = 8
	stores := make([]*pgstore.Sessions, racers)
	for i := range stores {
		stores[i] = newDB(t, schema).Sessions()
	}
	a, err := stores[0].Create(ctx, session.Session{Root: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	race := func(fn func(i int) error) []error {
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make([]error, racers)
		for i := range racers {
			wg.Go(func() {
				<-start
				errs[i] = fn(i)
			})
		}
		close(start)
		wg.Wait()
		return errs
	}
	winner := func(errs []error, loser string) int {
		t.Helper()
		w := -1
		for i, err := range errs {
			switch {
			case err == nil && w >= 0:
				t.Fatalf("racers %d and %d both won", w, i)
			case err == nil:
				w = i
			case !sema.IsCode(err, loser):
				t.Fatalf("racer %d: %v", i, err)
			}
		}
		if w < 0 {
			t.Fatal("nobody won")
		}
		return w
	}
	for round := range 10 {
		c, err := stores[round%racers].Park(ctx, session.Checkpoint{SessionID: a.ID, Tool: "Bash",
			Args: json.RawMessage(`{"command":"make"}`), Gate: session.GateToolPermission})
		if err != nil {
			t.Fatal(err)
		}
		w := winner(race(func(i int) error {
			_, err := stores[i].ClaimCheckpoint(ctx, c.ID, session.Decision{Verdict: session.VerdictAllow, Reason: fmt.Sprint(i)})
			return err
		}), session.CodeAlreadyClaimed)
		got, err := stores[(w+1)%racers].Checkpoint(ctx, c.ID)
		if err != nil || got.Decision == nil || got.Decision.Reason != fmt.Sprint(w) {
			t.Fatalf("round %d: stored decision %+v (%v), the winner was %d", round, got.Decision, err, w)
		}

		s, err := stores[0].Create(ctx, session.Session{Root: "/w"})
		if err != nil {
			t.Fatal(err)
		}
		winner(race(func(i int) error {
			_, err := stores[i].AcquireLease(ctx, s.ID, fmt.Sprint("racer-", i), time.Minute)
			return err
		}), session.CodeBusy)
	}
}

// TestConcurrentAppendAcrossPools: appenders in separate pools build one chain with
// gapless sequence numbers.
func TestConcurrentAppendAcrossPools(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	const writers, each = 6, 30
	stores := make([]*pgstore.Sessions, writers)
	for i := range stores {
		stores[i] = newDB(t, schema).Sessions()
	}
	a, err := stores[0].Create(ctx, session.Session{Root: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				es := []session.Entry{{SessionID: a.ID, Kind: "assistant"}, {SessionID: a.ID, Kind: "tool_results", Payload: json.RawMessage(fmt.Sprint(i))}}
				if _, err := stores[w].AppendBatch(ctx, es); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	storetest.CheckLinear(t, stores[0], a.ID, writers*each*2)
}

// TestBlobOneRowPerSum: identical content recorded in two scopes is one blob row, which
// goes with the last record that uses it.
func TestBlobOneRowPerSum(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	db := newDB(t, schema)
	h := db.History()
	count := func() int {
		var n int
		if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM sema_history_blobs`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	same := []byte("the same bytes\n")
	var recs []history.Record
	for _, scope := range []string{"S", "T"} {
		for _, key := range []string{"/w/a", "/w/b"} {
			r, _, err := h.Insert(ctx, history.Record{Scope: scope, Key: key, Existed: true, Mode: 0o644}, same)
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, r)
		}
	}
	if _, _, err := h.MintRewind(ctx, "S", 0, []history.Saved{{Record: history.Record{Key: "/w/c", Existed: true}, Content: same}}); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Fatalf("%d blob rows for one content, want 1", n)
	}
	if err := h.Forget(ctx, "S"); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Fatalf("%d blob rows while T still uses the content, want 1", n)
	}
	for _, r := range recs[2:] {
		if err := h.Delete(ctx, r.ID); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(); n != 0 {
		t.Fatalf("%d blob rows after the last record went, want 0", n)
	}
}

// TestTimesAcrossStores: a caller's CreatedAt with nanoseconds reads back Equal, and the
// store's own times are in UTC.
func TestTimesAcrossStores(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newDB(t, newSchema(t)).Sessions()
	then := time.Date(1969, 7, 20, 20, 17, 40, 123456789, time.FixedZone("X", 3600))
	a, err := s.Create(ctx, session.Session{Root: "/w", CreatedAt: then})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !got.CreatedAt.Equal(then) || !got.UpdatedAt.Equal(then) || got.CreatedAt.Location() != time.UTC {
		t.Fatalf("CreatedAt %v UpdatedAt %v, want %v in UTC", got.CreatedAt, got.UpdatedAt, then)
	}
	// Pruning compares to the nanosecond.
	if ids, err := s.Prune(ctx, then); err != nil || len(ids) != 0 {
		t.Fatalf("Prune(then) = %v %v, want nothing: the session is not older than then", ids, err)
	}
	if ids, err := s.Prune(ctx, then.Add(time.Nanosecond)); err != nil || len(ids) != 1 {
		t.Fatalf("Prune(then+1ns) = %v %v, want the session", ids, err)
	}
}

// TestAppendBatchWith: the caller's writes in AppendBatchWith's transaction commit with
// the entries or not at all — their failure leaves no entry, a refused append keeps none
// of them and says why — and with nil it is AppendBatch.
func TestAppendBatchWith(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	db := newDB(t, schema)
	pool := newPool(t, schema)
	ctx := t.Context()
	if _, err := pool.Exec(ctx, `CREATE TABLE side (n INT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	s := db.Sessions()
	sess, err := s.Create(ctx, session.Session{Root: "/r"})
	if err != nil {
		t.Fatal(err)
	}
	entries := func(kinds ...string) []session.Entry {
		var es []session.Entry
		for _, k := range kinds {
			es = append(es, session.Entry{SessionID: sess.ID, Kind: k, Payload: json.RawMessage(`{}`)})
		}
		return es
	}
	side := func(n int) *pgx.Batch {
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO side (n) VALUES ($1)`, n)
		return b
	}
	count := func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, q, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	state := func() (entries, sides int) {
		return count(`SELECT count(*) FROM sema_entries WHERE session_id = $1`, sess.ID), count(`SELECT count(*) FROM side`)
	}

	if _, err := s.AppendBatchWith(ctx, entries("assistant", "call_started"), side(1)); err != nil {
		t.Fatal(err)
	}
	if e, n := state(); e != 2 || n != 1 {
		t.Fatalf("after a committed batch: %d entries, %d side rows; want 2 and 1", e, n)
	}
	// The caller's write fails (its row is taken): the entries are not stored either.
	if _, err := s.AppendBatchWith(ctx, entries("tool_results"), side(1)); err == nil {
		t.Fatal("a batch whose side write failed committed")
	}
	if e, n := state(); e != 2 || n != 1 {
		t.Fatalf("after a failed side write: %d entries, %d side rows; want 2 and 1 (nothing of the batch)", e, n)
	}
	// The append is refused (a lease it does not hold): the caller's writes are not kept,
	// and the refusal says why, as AppendBatch's does.
	refused := entries("tool_results")
	refused[0].Claim = &session.Claim{SessionID: sess.ID, Holder: "someone"}
	_, err = s.AppendBatchWith(ctx, refused, side(2))
	wantCode(t, err, session.CodeLeaseLost)
	if e, n := state(); e != 2 || n != 1 {
		t.Fatalf("after a refused append: %d entries, %d side rows; want 2 and 1", e, n)
	}
	// An entry whose parent is not in the session: refused by name, nothing kept.
	orphan := entries("tool_results")
	orphan[0].ParentID = "no-such-entry"
	_, err = s.AppendBatchWith(ctx, orphan, side(3))
	wantCode(t, err, session.CodeEntryNotFound)
	if e, n := state(); e != 2 || n != 1 {
		t.Fatalf("after an append with a missing parent: %d entries, %d side rows; want 2 and 1", e, n)
	}
	ids, err := s.AppendBatchWith(ctx, entries("tool_results"), nil)
	if err != nil || len(ids) != 1 {
		t.Fatalf("with nil: %v, %v", ids, err)
	}
	tr, err := s.Transcript(ctx, sess.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range tr {
		kinds = append(kinds, e.Kind)
	}
	if got := strings.Join(kinds, ","); got != "assistant,call_started,tool_results" {
		t.Fatalf("transcript %s; want assistant,call_started,tool_results", got)
	}
}
