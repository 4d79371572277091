package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the driver the stores use, to make a database as another program would

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/session/sqlitedb"
	"github.com/sema-agent/sema/statedir"
)

// cli runs the command line in process, with stdin, and returns the exit code and the
// two streams apart.
func cli(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errw bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errw)
	return code, out.String(), errw.String()
}

// scriptedRun records a session in home with the built-in scripted model: one Write,
// then an answer. It returns the session's id.
func scriptedRun(t *testing.T, home, root string) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(script, []byte(`{"turns":[
		{"tool_calls":[{"name":"Write","input":{"file_path":"a.txt","content":"x"}}]},
		{"text":"done"}]}`), 0o644)
	code, out, errw := cli(t, "", "run", "--home", home, "--cwd", root, "--sandbox", "off", "--model", "scripted/"+script,
		"--permission-mode", "acceptEdits", "--output-format", "json", "write a.txt")
	if code != exitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errw)
	}
	var res struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.SessionID == "" {
		t.Fatalf("run printed no session id (%v): %s", err, out)
	}
	return res.SessionID
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// jsonError reads the one JSON object a command printed on stdout and returns its
// error's code.
func jsonError(t *testing.T, stdout string) string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(stdout))
	var doc struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("stdout is not a JSON object (%v): %q", err, stdout)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("stdout holds more than one JSON value: %q", stdout)
	}
	return doc.Error.Code
}

// stateCommands are the commands that open the state directory, each as a person
// would type it (a session id where one is needed).
func stateCommands(script string) [][]string {
	return [][]string{
		{"sessions", "list"},
		{"sessions", "show", "some-session"},
		{"sessions", "prune", "--older-than", "0d", "--yes"},
		{"rewind", "some-session", "--to", "1"},
		{"run", "--sandbox", "off", "--model", "scripted/" + script, "hello"},
	}
}

// A sema.db that is not sema's stops every command that opens the state directory with
// exit 1 and store.corrupt, a sentence naming the file and the way out, and the file
// untouched; a program asking for JSON gets one object with the code.
func TestCorruptStateDirectory(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	script := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(script, []byte(`{"turns":[{"text":"done"}]}`), 0o644)
	for _, tc := range []struct {
		name string
		make func(t *testing.T, db string)
	}{
		{"a text file", func(t *testing.T, db string) {
			os.WriteFile(db, []byte("these are my notes, not a database\n"), 0o600)
		}},
		{"another program's SQLite database", func(t *testing.T, db string) {
			raw, err := sql.Open("sqlite", "file:"+(&url.URL{Path: db}).EscapedPath())
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			if _, err := raw.Exec(`CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me')`); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			db := filepath.Join(home, statedir.DatabaseName)
			tc.make(t, db)
			before := fileSum(t, db)
			for _, args := range stateCommands(script) {
				args = append(args, "--home", home)
				code, out, errw := cli(t, "", args...)
				if code != exitError || !strings.Contains(errw, "(store.corrupt)") || !strings.Contains(errw, db) ||
					!strings.Contains(errw, "--home DIR or SEMA_HOME=DIR") || !strings.Contains(errw, "Move it aside") {
					t.Fatalf("%v: exit %d, want 1 with store.corrupt and the way out\nstdout: %s\nstderr: %s", args, code, out, errw)
				}
				if out != "" {
					t.Fatalf("%v: text output printed %q on stdout", args, out)
				}
				code, out, _ = cli(t, "", append(args, "--output-format", "json")...)
				if code != exitError || jsonError(t, out) != sqlitedb.CodeCorrupt {
					t.Fatalf("%v --output-format json: exit %d, stdout %s", args, code, out)
				}
				if fileSum(t, db) != before {
					t.Fatalf("%v changed %s", args, db)
				}
			}
			entries, _ := os.ReadDir(home)
			if len(entries) != 1 {
				t.Fatalf("files beside the database after the refusals: %v", entries)
			}
		})
	}
}

// A database another process holds locked is waited for, then the command exits 1 with
// store.locked, saying another sema process holds it.
func TestLockedStateDirectory(t *testing.T) {
	// Not parallel: it shortens the package's busy timeout.
	t.Setenv("HOME", t.TempDir())
	prev := storeOptions
	storeOptions = sqlitedb.Options{BusyTimeout: 100 * time.Millisecond}
	t.Cleanup(func() { storeOptions = prev })

	home, root := t.TempDir(), t.TempDir()
	scriptedRun(t, home, root)
	db := filepath.Join(home, statedir.DatabaseName)
	raw, err := sql.Open("sqlite", "file:"+(&url.URL{Path: db}).EscapedPath())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	conn, err := raw.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), `ROLLBACK`)

	// Reading goes on beside a writer.
	if code, out, errw := cli(t, "", "sessions", "list", "--all", "--home", home); code != exitOK {
		t.Fatalf("list beside a writer: exit %d\n%s%s", code, out, errw)
	}
	start := time.Now()
	code, out, errw := cli(t, "", "sessions", "prune", "--older-than", "0d", "--yes", "--home", home)
	if code != exitError || !strings.Contains(errw, "(store.locked)") || !strings.Contains(errw, "another sema process holds the state database "+db) {
		t.Fatalf("prune under a held lock: exit %d\nstdout: %s\nstderr: %s", code, out, errw)
	}
	if took := time.Since(start); took < 100*time.Millisecond || took > 10*time.Second {
		t.Fatalf("prune gave up after %v; the busy timeout is 100ms", took)
	}
	script := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(script, []byte(`{"turns":[{"text":"done"}]}`), 0o644)
	code, out, errw = cli(t, "", "run", "--home", home, "--cwd", root, "--sandbox", "off", "--model", "scripted/"+script, "--output-format", "json", "hello")
	if code != exitError || jsonError(t, out) != sqlitedb.CodeLocked || !strings.Contains(errw, "another sema process holds the state database") {
		t.Fatalf("run under a held lock: exit %d\nstdout: %s\nstderr: %s", code, out, errw)
	}
}

// A state directory sema cannot write exits 1 with store.readonly naming it. Root
// passes every permission check, so there the situation cannot be made; the mapping of
// SQLite's SQLITE_READONLY is tested in package sqlitedb without permissions.
func TestReadOnlyStateDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root, which file permissions do not stop: a read-only state directory cannot be made here (package sqlitedb tests the SQLITE_READONLY mapping)")
	}
	t.Setenv("HOME", t.TempDir())
	home, root := t.TempDir(), t.TempDir()
	scriptedRun(t, home, root)
	if err := os.Chmod(home, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(home, 0o700) })
	db := filepath.Join(home, statedir.DatabaseName)
	before := fileSum(t, db)
	code, out, errw := cli(t, "", "sessions", "list", "--home", home, "--output-format", "json")
	if code != exitError || jsonError(t, out) != sqlitedb.CodeReadOnly || !strings.Contains(errw, db) || !strings.Contains(errw, "make it writable") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errw)
	}
	if fileSum(t, db) != before {
		t.Fatal("the database changed")
	}
}

// A session that is not there is one error, session.not_found, with one exit code, 2,
// from every command that names a session; in JSON, one object with the code.
func TestMissingSessionSameExitEverywhere(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	home, root := t.TempDir(), t.TempDir()
	id := scriptedRun(t, home, root) // a store that exists and holds another session
	script := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(script, []byte(`{"turns":[{"text":"done"}]}`), 0o644)
	for _, args := range [][]string{
		{"run", "--resume", "no-such-session", "--cwd", root, "--sandbox", "off", "--model", "scripted/" + script, "go on"},
		{"sessions", "show", "no-such-session"},
		{"rewind", "no-such-session", "--to", "1"},
		{"rewind", "no-such-session", "--to", "1", "--dry-run"},
		{"approve", "no-such-session", "--checkpoint", "c", "--allow", "--sandbox", "off", "--model", "scripted/" + script},
	} {
		args = append(args, "--home", home)
		code, out, errw := cli(t, "", args...)
		if code != exitUsage || !strings.Contains(errw, "(session.not_found)") {
			t.Fatalf("%v: exit %d, want %d with session.not_found\nstdout: %s\nstderr: %s", args, code, exitUsage, out, errw)
		}
		code, out, _ = cli(t, "", append(args, "--output-format", "json")...)
		if code != exitUsage || jsonError(t, out) != "session.not_found" {
			t.Fatalf("%v --output-format json: exit %d, stdout %s", args, code, out)
		}
	}
	// A turn the session never had is refused the same way.
	for _, args := range [][]string{
		{"rewind", id, "--to", "99", "--home", home},
		{"rewind", id, "--to", "99", "--files", "--dry-run", "--home", home},
	} {
		code, out, _ := cli(t, "", append(args, "--output-format", "json")...)
		if code != exitUsage || jsonError(t, out) != "history.turn_invalid" {
			t.Fatalf("%v: exit %d, stdout %s", args, code, out)
		}
	}
}

func TestExitCodeTable(t *testing.T) {
	t.Parallel()
	for code, want := range map[string]int{
		"session.not_found":          exitUsage,
		"checkpoint.not_found":       exitUsage,
		"config.home_invalid":        exitUsage,
		"cli.usage":                  exitUsage,
		"session.busy":               exitBusy,
		"store.corrupt":              exitError,
		"store.readonly":             exitError,
		"store.locked":               exitError,
		"store.schema_too_new":       exitError,
		"store.open_failed":          exitError,
		"history.partial_restore":    exitError,
		"some.code_nobody_mapped_42": exitError,
	} {
		if got := exitCode(&sema.Error{Code: code}, exitError); got != want {
			t.Errorf("exitCode(%s) = %d, want %d", code, got, want)
		}
	}
	// A fault of the store exits 1 whatever wraps it.
	wrapped := &sema.Error{Code: "session.record_failed", Err: &sema.Error{Code: "store.locked"}}
	if got := exitCode(wrapped, exitUsage); got != exitError {
		t.Errorf("a wrapped store.locked exits %d, want 1", got)
	}
}

// TestNewSessionOnAnUnusableStateRunsNoTool: a new session's state directory opens beside
// the leg's preparation and first request. A --home that names a file is still refused
// first (exit 2, config.home_invalid, saying what to pass); a database that cannot be
// used fails the leg with its own code and its way out (exit 1) before any tool runs,
// and is left as it was.
func TestNewSessionOnAnUnusableStateRunsNoTool(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	script := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(script, []byte(`{"turns":[
		{"tool_calls":[{"name":"Write","input":{"file_path":"a.txt","content":"x"}}]},
		{"text":"done"}]}`), 0o644)
	runIn := func(home string) (string, int, string, string) {
		root := t.TempDir()
		code, out, errw := cli(t, "", "run", "--home", home, "--cwd", root, "--sandbox", "off", "--model", "scripted/"+script,
			"--permission-mode", "acceptEdits", "--output-format", "json", "write a.txt")
		return root, code, out, errw
	}

	file := filepath.Join(t.TempDir(), "not-a-dir")
	os.WriteFile(file, []byte("x"), 0o600)
	root, code, out, errw := runIn(file)
	if code != exitUsage || jsonError(t, out) != statedir.CodeDirInvalid || !strings.Contains(errw, "is a file, not a directory; pass --home DIR") {
		t.Fatalf("a file as --home: exit %d\nstdout: %s\nstderr: %s", code, out, errw)
	}
	if _, err := os.Stat(filepath.Join(root, "a.txt")); !os.IsNotExist(err) {
		t.Fatal("the Write ran although the state directory was refused")
	}

	home := t.TempDir()
	db := filepath.Join(home, statedir.DatabaseName)
	os.WriteFile(db, []byte("these are somebody's notes, not a database\n"), 0o600)
	before := fileSum(t, db)
	root, code, out, errw = runIn(home)
	if code != exitError || jsonError(t, out) != sqlitedb.CodeCorrupt || !strings.Contains(errw, "Move it aside") {
		t.Fatalf("a database that is not one: exit %d\nstdout: %s\nstderr: %s", code, out, errw)
	}
	if _, err := os.Stat(filepath.Join(root, "a.txt")); !os.IsNotExist(err) {
		t.Fatal("the Write ran although the session could not be stored")
	}
	if fileSum(t, db) != before {
		t.Fatal("the database that is not one was changed")
	}
}

// TestRefusedRunMakesNoStateDirectory: a run the command line refuses — a model script
// that does not exist, a --permission-mode no one knows — creates neither the state
// directory nor its database, though the directory is otherwise opened beside the run's
// preparation.
func TestRefusedRunMakesNoStateDirectory(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	for _, args := range [][]string{
		{"--model", "scripted/" + filepath.Join(t.TempDir(), "missing.json")},
		{"--model", "scripted/x.json", "--permission-mode", "sideways"},
	} {
		home := filepath.Join(t.TempDir(), "state")
		code, out, errw := cli(t, "", append(append([]string{"run", "--home", home, "--cwd", t.TempDir(), "--sandbox", "off"}, args...), "hello")...)
		if code == exitOK {
			t.Fatalf("%v: the run was not refused\n%s%s", args, out, errw)
		}
		if _, err := os.Stat(home); !os.IsNotExist(err) {
			t.Fatalf("%v: a refused run made its state directory (%v)\nstderr: %s", args, err, errw)
		}
	}
}
