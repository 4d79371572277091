package statedir_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/session/sqlitedb"
	"github.com/sema-agent/sema/statedir"
)

func open(t *testing.T, dir string) *statedir.Dir {
	t.Helper()
	d, err := statedir.Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestOpenCreatesAndReopens(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "a", "b", "state")
	d := open(t, dir)
	if d.Path() != dir {
		t.Fatalf("Path = %q, want %q", d.Path(), dir)
	}
	s, err := d.Sessions().Create(ctx, session.Session{Root: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.History().MintBoundary(ctx, s.ID, 1); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
	if _, err := d.Sessions().Get(ctx, s.ID); err == nil {
		t.Fatal("the session store answers after Close")
	}
	if _, err := d.History().Boundaries(ctx, s.ID); err == nil {
		t.Fatal("the history store answers after Close")
	}

	// Both stores' facts are in the one file and survive a reopen.
	again := open(t, dir)
	if _, err := again.Sessions().Get(ctx, s.ID); err != nil {
		t.Fatalf("the session is gone after a reopen: %v", err)
	}
	if bs, err := again.History().Boundaries(ctx, s.ID); err != nil || len(bs) != 1 {
		t.Fatalf("history after a reopen: %v %v", bs, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if filepath.Ext(e.Name()) == ".db" && e.Name() != statedir.DatabaseName {
			t.Fatalf("a second database %s in the state directory", e.Name())
		}
	}
}

func TestOpenRelativeAndExisting(t *testing.T) {
	// No t.Parallel: t.Chdir changes the process's working directory.
	base := t.TempDir()
	t.Chdir(base)
	if err := os.Mkdir("state", 0o755); err != nil {
		t.Fatal(err)
	}
	d := open(t, "state/./")
	if want := filepath.Join(base, "state"); d.Path() != want {
		t.Fatalf("Path = %q, want %q", d.Path(), want)
	}
	fi, err := os.Stat("state")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o755 {
		t.Fatalf("an existing directory's mode changed to %v", fi.Mode().Perm())
	}
}

func TestOpenRefusals(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	notDB := filepath.Join(base, "not-a-db")
	if err := os.MkdirAll(notDB, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(notDB, statedir.DatabaseName), []byte("this is not a SQLite file, not at all; it is long enough to have a header"), 0o600); err != nil {
		t.Fatal(err)
	}
	dbIsDir := filepath.Join(base, "db-is-dir")
	if err := os.MkdirAll(filepath.Join(dbIsDir, statedir.DatabaseName), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dir, code string
	}{
		{"no directory", "", statedir.CodeDirInvalid},
		{"a file is in the way", file, statedir.CodeDirInvalid},
		{"below a file", filepath.Join(file, "state"), statedir.CodeDirInvalid},
		{"the database is not SQLite", notDB, statedir.CodeCorrupt},
		{"the database is a directory", dbIsDir, statedir.CodeOpenFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := statedir.Open(t.Context(), tc.dir)
			if err == nil {
				d.Close()
				t.Fatal("Open succeeded")
			}
			if !sema.IsCode(err, tc.code) {
				t.Fatalf("error = %v, want code %s", err, tc.code)
			}
		})
	}
}

// A file a newer sema wrote keeps the stores' own code, so a caller can tell "upgrade"
// from "fix the directory".
func TestOpenSchemaTooNew(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := open(t, dir)
	if _, err := d.Sessions().DB().Exec(`UPDATE schema_version SET version = version + 1 WHERE component = 'history'`); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := statedir.Open(t.Context(), dir); !sema.IsCode(err, sqlitedb.CodeSchemaTooNew) {
		t.Fatalf("error = %v, want %s", err, sqlitedb.CodeSchemaTooNew)
	}
}
