package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/session/sqlitedb"
	"github.com/sema-agent/sema/session/storetest"
)

func openSQLite(t *testing.T, path string) *session.SQLiteStore {
	t.Helper()
	s, err := session.OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		new  func(t *testing.T) session.AdminStore
	}{
		{"Memory", func(t *testing.T) session.AdminStore { return session.NewMemory() }},
		{"SQLite", func(t *testing.T) session.AdminStore { return openSQLite(t, filepath.Join(t.TempDir(), "sema.db")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			storetest.Run(t, tc.new)
			storetest.RunAdmin(t, tc.new)
		})
	}
}

func TestMemoryClosedRefuses(t *testing.T) {
	t.Parallel()
	m := session.NewMemory()
	s, err := m.Create(t.Context(), session.Session{Root: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Get(t.Context(), s.ID); !sema.IsCode(err, session.CodeClosed) {
		t.Fatalf("Get after Close: %v, want %s", err, session.CodeClosed)
	}
	if _, err := m.Append(t.Context(), session.Entry{SessionID: s.ID, Kind: "user"}); !sema.IsCode(err, session.CodeClosed) {
		t.Fatalf("Append after Close: %v, want %s", err, session.CodeClosed)
	}
}

func TestSQLitePersists(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "sema.db")
	s := openSQLite(t, path)
	a, err := s.Create(ctx, session.Session{Root: "/w", Mode: "plan"})
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.Append(ctx, session.Entry{SessionID: a.ID, Kind: "user", Payload: json.RawMessage(`{"text":"hi"}`)})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Park(ctx, session.Checkpoint{SessionID: a.ID, Tool: "Write", Args: json.RawMessage(`{"b":1,"a":2}`), Gate: session.GatePlanReview})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	r := openSQLite(t, path)
	got, err := r.Transcript(ctx, a.ID, "")
	if err != nil || len(got) != 1 || got[0].ID != id || string(got[0].Payload) != `{"text":"hi"}` {
		t.Fatalf("after reopen: %+v, %v", got, err)
	}
	// Another process answers the parked call.
	claimed, err := r.ClaimCheckpoint(ctx, c.ID, session.Decision{Verdict: session.VerdictAllow})
	if err != nil || string(claimed.Args) != `{"a":2,"b":1}` || claimed.ArgsSHA256 != c.ArgsSHA256 {
		t.Fatalf("claim after reopen: %+v, %v", claimed, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("database file mode %v, %v; want 0600", fi.Mode(), err)
	}
}

func TestSQLiteSettings(t *testing.T) {
	t.Parallel()
	s := openSQLite(t, filepath.Join(t.TempDir(), "sema.db"))
	for _, tc := range []struct{ pragma, want string }{
		{"journal_mode", "wal"},
		{"foreign_keys", "1"},
		{"busy_timeout", "10000"},
		{"synchronous", "1"}, // NORMAL
	} {
		var got string
		if err := s.DB().QueryRowContext(t.Context(), "PRAGMA "+tc.pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("PRAGMA %s = %s, want %s", tc.pragma, got, tc.want)
		}
	}
}

func TestSchemaTooNewRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sema.db")
	s := openSQLite(t, path)
	if _, err := s.DB().Exec(`UPDATE schema_version SET version = version + 1 WHERE component = 'session'`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err := session.OpenSQLite(path)
	if !sema.IsCode(err, sqlitedb.CodeSchemaTooNew) {
		t.Fatalf("opening a newer schema: %v, want %s", err, sqlitedb.CodeSchemaTooNew)
	}
}

// The multi-process test: several copies of this test binary append to one session in
// one file while goroutines of this process do too. Every append must land, in one
// chain, with no SQLITE_BUSY surfacing.

const (
	helperEnv  = "SEMA_SESSION_TEST_HELPER"
	helperDB   = "SEMA_SESSION_TEST_DB"
	helperSess = "SEMA_SESSION_TEST_SESSION"
	helperN    = "SEMA_SESSION_TEST_N"
)

// TestAppendHelperProcess is not a test: it is the body of a helper process, run only
// when the multi-process test starts this binary with helperEnv set.
func TestAppendHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("helper process for TestMultiProcessAppend")
	}
	s, err := session.OpenSQLite(os.Getenv(helperDB))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	n, _ := strconv.Atoi(os.Getenv(helperN))
	sid := os.Getenv(helperSess)
	leg, err := s.StartLeg(context.Background(), sid)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for i := range n {
		if _, err := s.Append(context.Background(), session.Entry{SessionID: sid, LegID: leg.ID, Kind: "user",
			Payload: json.RawMessage(fmt.Sprintf(`{"pid":%d,"i":%d}`, os.Getpid(), i))}); err != nil {
			fmt.Fprintln(os.Stderr, "append:", err)
			os.Exit(3)
		}
	}
	s.Close()
	os.Exit(0)
}

func TestMultiProcessAppend(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts helper processes")
	}
	path := filepath.Join(t.TempDir(), "sema.db")
	s := openSQLite(t, path)
	a, err := s.Create(t.Context(), session.Session{Root: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	const procs, perProc, goroutines, perGoroutine = 3, 100, 4, 40

	var wg sync.WaitGroup
	errs := make(chan error, procs+goroutines)
	for range procs {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestAppendHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), helperEnv+"=1", helperDB+"="+path, helperSess+"="+a.ID, helperN+"="+strconv.Itoa(perProc))
		wg.Go(func() {
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("helper process: %v\n%s", err, out)
			}
		})
	}
	for range goroutines {
		wg.Go(func() {
			for i := range perGoroutine {
				if _, err := s.Append(t.Context(), session.Entry{SessionID: a.ID, Kind: "assistant",
					Payload: json.RawMessage(strconv.Itoa(i))}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	storetest.CheckLinear(t, s, a.ID, procs*perProc+goroutines*perGoroutine)
	legs, err := s.Legs(t.Context(), a.ID)
	if err != nil || len(legs) != procs {
		t.Fatalf("legs %v, %v: each process started one", legs, err)
	}
	for i, l := range legs {
		if l.Number != i+1 {
			t.Fatalf("leg numbers %v: want 1..%d without gaps", legs, procs)
		}
	}
}
