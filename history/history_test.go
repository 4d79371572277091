package history_test

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/env/envtest"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/history/historytest"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/session/storecode"
)

// storeCase makes an empty store; blobs counts its blob rows.
type storeCase struct {
	name  string
	new   func(t *testing.T) history.Store
	blobs func(t *testing.T, s history.Store) int
}

func storeCases() []storeCase {
	return []storeCase{
		{
			name:  "Memory",
			new:   func(t *testing.T) history.Store { return history.NewMemory() },
			blobs: func(t *testing.T, s history.Store) int { return s.(*history.Memory).BlobCount() },
		},
		{
			// History shares the session store's file, as a deployment runs it.
			name: "SQLite",
			new: func(t *testing.T) history.Store {
				ss, err := session.OpenSQLite(filepath.Join(t.TempDir(), "sema.db"))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { ss.Close() })
				hs, err := history.NewSQLite(t.Context(), ss.DB())
				if err != nil {
					t.Fatal(err)
				}
				sqlDBs.Store(hs, ss)
				return hs
			},
			blobs: func(t *testing.T, s history.Store) int {
				ss, _ := sqlDBs.Load(s)
				var n int
				if err := ss.(*session.SQLiteStore).DB().QueryRow(`SELECT COUNT(*) FROM history_blobs`).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			},
		},
	}
}

var sqlDBs sync.Map // *history.SQLite → the *session.SQLiteStore whose file it shares

// forEachStore runs fn as a parallel subtest per store.
func forEachStore(t *testing.T, fn func(t *testing.T, sc storeCase, s history.Store)) {
	t.Parallel()
	for _, sc := range storeCases() {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			fn(t, sc, sc.new(t))
		})
	}
}

func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if !sema.IsCode(err, code) {
		t.Fatalf("error = %v, want code %s", err, code)
	}
}

// workspace is an in-memory tree with a root directory.
func workspace(t *testing.T) (*envtest.Mem, string) {
	m := envtest.NewMem()
	check(t, m.MkdirAll("/w/src", 0o755))
	return m, "/w"
}

func write(t *testing.T, e env.ExecutionEnv, path, content string, perm fs.FileMode) {
	t.Helper()
	check(t, e.WriteFile(t.Context(), path, []byte(content), perm))
	check(t, e.Chmod(t.Context(), path, perm))
}

func TestTrackFirstTouchOncePerBoundary(t *testing.T) {
	forEachStore(t, func(t *testing.T, _ storeCase, s history.Store) {
		ctx := t.Context()
		e, _ := workspace(t)
		f := history.NewFiles(s, e)
		write(t, e, "/w/a.txt", "v0\n", 0o644)
		b1 := must(s.MintBoundary(ctx, "S", 1))(t)

		r1, minted, err := f.Track(ctx, "S", "/w/a.txt")
		check(t, err)
		if !minted || r1.Boundary != b1.ID || r1.Turn != 1 || r1.Key != "/w/a.txt" || r1.Scope != "S" {
			t.Fatalf("first Track = %+v minted=%v", r1, minted)
		}
		// The edit lands; later edits in the same turn add nothing and keep the pre-image.
		write(t, e, "/w/a.txt", "v1\n", 0o644)
		for range 3 {
			again, minted, err := f.Track(ctx, "S", "/w/a.txt")
			check(t, err)
			if minted || again != r1 {
				t.Fatalf("Track in the same boundary = %+v minted=%v, want the first record %+v", again, minted, r1)
			}
			write(t, e, "/w/a.txt", "v2\n", 0o644)
		}
		// Another scope is another history.
		if _, minted, _ := f.Track(ctx, "T", "/w/a.txt"); !minted {
			t.Fatal("a first touch in another scope was not recorded")
		}
		// The next boundary records the file again, with its state at that boundary.
		b2 := must(s.MintBoundary(ctx, "S", 2))(t)
		r2, minted, err := f.Track(ctx, "S", "/w/a.txt")
		check(t, err)
		if !minted || r2.Boundary != b2.ID || r2.Sum == r1.Sum {
			t.Fatalf("Track after a new boundary = %+v minted=%v", r2, minted)
		}
		data := must(s.Blob(ctx, r2.Sum))(t)
		if string(data) != "v2\n" {
			t.Fatalf("the second boundary's pre-image is %q, want v2", data)
		}
		recs := must(s.Records(ctx, "S", 0))(t)
		if len(recs) != 2 || recs[0].ID != r1.ID || recs[1].ID != r2.ID {
			t.Fatalf("records %+v", recs)
		}
		if got := must(s.Records(ctx, "S", b2.ID))(t); len(got) != 1 || got[0].ID != r2.ID {
			t.Fatalf("records from boundary 2: %+v", got)
		}
	})
}

func TestTrackPreImages(t *testing.T) {
	forEachStore(t, func(t *testing.T, _ storeCase, s history.Store) {
		ctx := t.Context()
		e, _ := workspace(t)
		write(t, e, "/w/script.sh", "#!/bin/sh\necho hi\n", 0o750)
		write(t, e, "/w/file", "x", 0o600)
		check(t, e.WriteFile(t.Context(), "/w/empty", nil, 0o644))
		check(t, e.Symlink("/w/file", "/w/link"))
		f := history.NewFiles(s, e)
		must(s.MintBoundary(ctx, "S", 1))(t)
		for _, tc := range []struct {
			name, key string
			want      history.Record
			code      string
		}{
			{"existing file", "/w/script.sh", history.Record{Existed: true, Mode: 0o750, Size: 18,
				Sum: sha("#!/bin/sh\necho hi\n")}, ""},
			{"empty file", "/w/empty", history.Record{Existed: true, Mode: 0o644, Sum: sha("")}, ""},
			{"missing file", "/w/new.txt", history.Record{}, ""},
			{"missing directory", "/w/no/such/dir/f", history.Record{}, ""},
			{"parent is a file", "/w/file/below", history.Record{}, ""},
			{"directory", "/w/src", history.Record{}, history.CodeNotAFile},
			{"symbolic link", "/w/link", history.Record{}, history.CodeNotAFile},
			{"relative key", "w/x", history.Record{}, history.CodeKeyInvalid},
			{"unclean key", "/w/../w/x", history.Record{}, history.CodeKeyInvalid},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got, minted, err := f.Track(ctx, "S", tc.key)
				if tc.code != "" {
					wantCode(t, err, tc.code)
					if _, ok, _ := s.Lookup(ctx, "S", tc.key); ok {
						t.Fatal("a refused Track left a record")
					}
					return
				}
				check(t, err)
				if !minted {
					t.Fatal("not minted")
				}
				if got.Existed != tc.want.Existed || got.Mode != tc.want.Mode || got.Size != tc.want.Size || got.Sum != tc.want.Sum {
					t.Fatalf("record %+v, want %+v", got, tc.want)
				}
			})
		}
		_, _, err := f.Track(ctx, "", "/w/x")
		wantCode(t, err, history.CodeScopeInvalid)
	})
}

func track(t *testing.T, f *history.Files, scope, key string) history.Record {
	t.Helper()
	rec, _, err := f.Track(t.Context(), scope, key)
	check(t, err)
	return rec
}

func sha(s string) string { return session.SHA256Hex([]byte(s)) }

// Track must fail — so the write lane refuses the edit — when it cannot record.
func TestTrackFailsClosed(t *testing.T) {
	forEachStore(t, func(t *testing.T, sc storeCase, s history.Store) {
		ctx := t.Context()
		mem, _ := workspace(t)
		write(t, mem, "/w/a.txt", "a", 0o644)
		faulty := envtest.NewFaulty(mem)
		f := history.NewFiles(s, faulty)
		must(s.MintBoundary(ctx, "S", 1))(t)

		undo := faulty.Inject(envtest.Errno(envtest.OpReadFile, "/w/a.txt", syscall.EACCES))
		_, _, err := f.Track(ctx, "S", "/w/a.txt")
		wantCode(t, err, history.CodeRecordFailed)
		if !errors.Is(err, syscall.EACCES) {
			t.Fatalf("the cause is lost: %v", err)
		}
		undo()
		faulty.Inject(envtest.Errno(envtest.OpLstat, "/w/b.txt", syscall.EIO))
		_, _, err = f.Track(ctx, "S", "/w/b.txt")
		wantCode(t, err, history.CodeRecordFailed)
		if recs := must(s.Records(ctx, "S", 0))(t); len(recs) != 0 {
			t.Fatalf("failed Tracks left records: %+v", recs)
		}

		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, _, err = f.Track(cctx, "S", "/w/a.txt"); !errors.Is(err, context.Canceled) {
			t.Fatalf("Track with a cancelled context = %v", err)
		}

		// A store that cannot write (here: closed under the tracker) fails the Track.
		if ss, ok := sqlDBs.Load(s); ok {
			check(t, ss.(*session.SQLiteStore).Close())
		} else {
			check(t, s.Close())
		}
		_, _, err = f.Track(ctx, "S", "/w/a.txt")
		wantCode(t, err, history.CodeRecordFailed)
	})
}

func TestTrackConcurrentMintsOnce(t *testing.T) {
	forEachStore(t, func(t *testing.T, _ storeCase, s history.Store) {
		ctx := t.Context()
		e, _ := workspace(t)
		write(t, e, "/w/a.txt", "a", 0o644)
		f := history.NewFiles(s, e)
		must(s.MintBoundary(ctx, "S", 1))(t)
		const n = 8
		var wg sync.WaitGroup
		minted := make([]bool, n)
		ids := make([]int64, n)
		for i := range n {
			wg.Go(func() {
				r, m, err := f.Track(ctx, "S", "/w/a.txt")
				if err != nil {
					t.Error(err)
				}
				minted[i], ids[i] = m, r.ID
			})
		}
		wg.Wait()
		if c := countTrue(minted); c != 1 {
			t.Fatalf("%d concurrent Tracks minted a record, want exactly 1", c)
		}
		for _, id := range ids {
			if id != ids[0] {
				t.Fatalf("Tracks returned different records: %v", ids)
			}
		}
	})
}

func countTrue(b []bool) int {
	n := 0
	for _, v := range b {
		if v {
			n++
		}
	}
	return n
}

func TestBlobDedup(t *testing.T) {
	forEachStore(t, func(t *testing.T, sc storeCase, s history.Store) {
		ctx := t.Context()
		e, _ := workspace(t)
		f := history.NewFiles(s, e)
		same := strings.Repeat("the same bytes\n", 100)
		for _, p := range []string{"/w/a", "/w/b", "/w/src/c"} {
			write(t, e, p, same, 0o644)
		}
		write(t, e, "/w/d", "different", 0o644)
		must(s.MintBoundary(ctx, "S", 1))(t)
		must(s.MintBoundary(ctx, "T", 1))(t)
		var recs []history.Record
		for _, scope := range []string{"S", "T"} {
			for _, p := range []string{"/w/a", "/w/b", "/w/src/c", "/w/d", "/w/absent"} {
				recs = append(recs, track(t, f, scope, p))
			}
		}
		if n := sc.blobs(t, s); n != 2 {
			t.Fatalf("%d blob rows for 2 distinct contents in 8 records, want 2", n)
		}
		// A blob lives while any record uses it, and goes with the last one.
		for _, r := range recs {
			if r.Key == "/w/d" {
				check(t, s.Delete(ctx, r.ID))
			}
		}
		if n := sc.blobs(t, s); n != 1 {
			t.Fatalf("%d blobs after deleting every record of the distinct content, want 1", n)
		}
		check(t, s.Delete(ctx, recs[0].ID))
		check(t, s.Delete(ctx, recs[0].ID)) // deleting a deleted record is not an error
		if n := sc.blobs(t, s); n != 1 {
			t.Fatalf("the shared blob went with one of its records: %d blobs", n)
		}
		data := must(s.Blob(ctx, sha(same)))(t)
		if string(data) != same {
			t.Fatal("blob bytes differ")
		}
		check(t, s.Forget(ctx, "S"))
		if n := sc.blobs(t, s); n != 1 {
			t.Fatalf("forgetting S dropped a blob T still uses: %d", n)
		}
		check(t, s.Forget(ctx, "T"))
		if n := sc.blobs(t, s); n != 0 {
			t.Fatalf("%d orphan blobs after forgetting every scope", n)
		}
		_, err := s.Blob(ctx, sha(same))
		wantCode(t, err, history.CodeBlobMissing)
		if bs := must(s.Boundaries(ctx, "S"))(t); len(bs) != 0 {
			t.Fatalf("Forget left boundaries %+v", bs)
		}
	})
}

func TestAnnul(t *testing.T) {
	type setup struct {
		exists bool   // the file exists before the edit
		after  string // what the failed write left: "same", "changed", "absent", "created", "unreadable"
		proof  history.Proof
	}
	for _, tc := range []struct {
		name        string
		s           setup
		wantAnnul   bool
		wantErrCode string
	}{
		{"proven drops the record", setup{true, "changed", history.ProofProven}, true, ""},
		{"proven drops an existed-not record", setup{false, "created", history.ProofProven}, true, ""},
		{"verify, bytes unchanged", setup{true, "same", history.ProofVerify}, true, ""},
		{"verify, bytes changed", setup{true, "changed", history.ProofVerify}, false, ""},
		{"verify, file gone", setup{true, "absent", history.ProofVerify}, false, ""},
		{"verify, unreadable", setup{true, "unreadable", history.ProofVerify}, false, ""},
		{"verify, still absent", setup{false, "absent", history.ProofVerify}, true, ""},
		{"verify, created after all", setup{false, "created", history.ProofVerify}, false, ""},
		{"unknown proof", setup{true, "same", "maybe"}, false, history.CodeProofInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, _ storeCase, s history.Store) {
				ctx := t.Context()
				mem, _ := workspace(t)
				faulty := envtest.NewFaulty(mem)
				f := history.NewFiles(s, faulty)
				const p = "/w/a.txt"
				if tc.s.exists {
					write(t, mem, p, "before", 0o644)
				}
				must(s.MintBoundary(ctx, "S", 1))(t)
				rec, minted, err := f.Track(ctx, "S", p)
				if err != nil || !minted {
					t.Fatalf("Track: %v minted=%v", err, minted)
				}
				switch tc.s.after {
				case "changed", "created":
					write(t, mem, p, "half-written", 0o644)
				case "absent":
					if tc.s.exists {
						check(t, mem.Remove(ctx, p))
					}
				case "unreadable":
					faulty.Inject(envtest.Errno(envtest.OpReadFile, p, syscall.EIO))
				}
				annulled, err := f.Annul(ctx, rec, tc.s.proof)
				if tc.wantErrCode != "" {
					wantCode(t, err, tc.wantErrCode)
				} else {
					check(t, err)
				}
				if annulled != tc.wantAnnul {
					t.Fatalf("annulled = %v, want %v", annulled, tc.wantAnnul)
				}
				_, kept, err := s.Lookup(ctx, "S", p)
				check(t, err)
				if kept == tc.wantAnnul {
					t.Fatalf("record kept = %v after annulled = %v", kept, annulled)
				}
				// An annulled first touch leaves the path untouched: the next edit is the
				// first touch again.
				if tc.wantAnnul {
					if _, minted, _ := f.Track(ctx, "S", p); !minted {
						t.Fatal("after an annul the next Track did not mint")
					}
				}
			})
		})
	}
}

func TestFilesystemIdentity(t *testing.T) {
	t.Parallel()
	m1, m2 := envtest.NewMem(), envtest.NewMem()
	u1, u2 := &unattested{Mem: m1}, &unattested{Mem: m2}
	for _, tc := range []struct {
		name      string
		a, b      env.ExecutionEnv
		wantEqual bool
	}{
		{"host is one tree", env.NewHost(), env.NewHost(), true},
		{"a named env is its name", m1, m1, true},
		{"two named trees differ", m1, m2, false},
		{"a wrapper keeps the name", envtest.NewFaulty(m1), m1, true},
		{"unattested: the same instance matches", u1, u1, true},
		{"unattested: another instance never matches", u1, u2, false},
		{"unattested values have no instance", unattestedValue{}, unattestedValue{}, false},
		{"unattested never matches the host", u1, env.NewHost(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := history.FilesystemIdentity(tc.a), history.FilesystemIdentity(tc.b)
			if a == "" || b == "" {
				t.Fatal("empty identity")
			}
			if (a == b) != tc.wantEqual {
				t.Fatalf("identities %q and %q: equal = %v, want %v", a, b, a == b, tc.wantEqual)
			}
		})
	}
	if got := history.FilesystemIdentity(env.NewHost()); got != env.HostIdentity {
		t.Fatalf("host identity %q", got)
	}
}

// unattested is an env that names no tree.
type unattested struct{ *envtest.Mem }

func (*unattested) Identity() string { return "" }

type unattestedValue struct{ unattested }

func (unattestedValue) Identity() string { return "" }

func TestResolveScope(t *testing.T) {
	t.Parallel()
	parent := &history.Lineage{Scope: "root-session", Root: "/w", FS: "host"}
	for _, tc := range []struct {
		name    string
		lineage *history.Lineage
		root    string
		fs      string
		want    string
	}{
		{"root run", nil, "/w", "host", "child"},
		{"same tree", parent, "/w", "host", "root-session"},
		{"other root", parent, "/w/sub", "host", "child"},
		{"other filesystem", parent, "/w", "sandbox:1", "child"},
		{"lineage without a scope", &history.Lineage{Root: "/w", FS: "host"}, "/w", "host", "child"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := history.ResolveScope(tc.lineage, tc.root, tc.fs, "child"); got != tc.want {
				t.Fatalf("ResolveScope = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRefuseOtherFilesystem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name              string
		recorded, current string
		refused           bool
	}{
		{"same tree", "host", "host", false},
		{"another tree", "host", "sandbox:1", true},
		{"no tree recorded", "", "host", true},
		{"no tree on either side", "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := history.RefuseOtherFilesystem("s1", tc.recorded, tc.current)
			if (err != nil) != tc.refused {
				t.Fatalf("refused = %v, want %v", err, tc.refused)
			}
			if err == nil {
				return
			}
			wantCode(t, err, history.CodeFilesystemMismatch)
			var se *sema.Error
			if !errors.As(err, &se) || se.Detail["recorded"] != tc.recorded || se.Detail["current"] != tc.current || !strings.Contains(se.Message, "another filesystem") {
				t.Fatalf("refusal %+v", se)
			}
		})
	}
}

func TestSQLiteSharesSessionFile(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "sema.db")
	ss, err := session.OpenSQLite(path)
	check(t, err)
	defer ss.Close()
	hs, err := history.NewSQLite(ctx, ss.DB())
	check(t, err)
	check(t, hs.Close()) // does not close the shared database
	if _, err := ss.Create(ctx, session.Session{Root: "/w"}); err != nil {
		t.Fatalf("the session store broke when the history store closed: %v", err)
	}
	var versions int
	check(t, ss.DB().QueryRow(`SELECT COUNT(*) FROM schema_version WHERE component IN ('session', 'history')`).Scan(&versions))
	if versions != 2 {
		t.Fatalf("%d schema versions recorded, want session and history", versions)
	}
	_, err = ss.DB().Exec(`UPDATE schema_version SET version = 99 WHERE component = 'history'`)
	check(t, err)
	_, err = history.NewSQLite(ctx, ss.DB())
	wantCode(t, err, storecode.SchemaTooNew)

	own, err := history.OpenSQLite(filepath.Join(t.TempDir(), "history.db"))
	check(t, err)
	must(own.MintBoundary(ctx, "S", 1))(t)
	check(t, own.Close())
	if _, err := own.Boundaries(ctx, "S"); err == nil {
		t.Fatal("a store opened by OpenSQLite still answers after Close")
	}
}

// Every store of the module passes the Store conformance suite: in memory, and in
// SQLite both on the session store's file (as a deployment runs it) and on a file of its
// own.
func TestConformance(t *testing.T) {
	t.Parallel()
	for _, sc := range storeCases() {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			historytest.Run(t, sc.new)
		})
	}
	t.Run("SQLiteOwnFile", func(t *testing.T) {
		t.Parallel()
		historytest.Run(t, func(t *testing.T) history.Store {
			hs, err := history.OpenSQLite(filepath.Join(t.TempDir(), "history.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { hs.Close() })
			return hs
		})
	})
}

// The session store and the history store write one file at once: neither sees
// SQLITE_BUSY and nothing is lost.
func TestSharedFileConcurrentWriters(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ss, err := session.OpenSQLite(filepath.Join(t.TempDir(), "sema.db"))
	check(t, err)
	defer ss.Close()
	hs, err := history.NewSQLite(ctx, ss.DB())
	check(t, err)
	sess := must(ss.Create(ctx, session.Session{Root: "/w"}))(t)
	e, _ := workspace(t)
	f := history.NewFiles(hs, e)
	must(hs.MintBoundary(ctx, sess.ID, 1))(t)
	const writers, each = 4, 25
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if _, err := ss.Append(ctx, session.Entry{SessionID: sess.ID, Kind: "user"}); err != nil {
					t.Error(err)
					return
				}
				p := filepath.Join("/w", "f-"+string(rune('a'+w))+"-"+string(rune('a'+i)))
				if _, minted, err := f.Track(ctx, sess.ID, p); err != nil || !minted {
					t.Errorf("Track %s: %v minted=%v", p, err, minted)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := len(must(ss.Transcript(ctx, sess.ID, ""))(t)); n != writers*each {
		t.Fatalf("%d entries, want %d", n, writers*each)
	}
	if n := len(must(hs.Records(ctx, sess.ID, 0))(t)); n != writers*each {
		t.Fatalf("%d records, want %d", n, writers*each)
	}
}
