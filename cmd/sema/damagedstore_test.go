package main

import (
	"bytes"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sema-agent/sema/session/sqlitedb"
	"github.com/sema-agent/sema/statedir"
)

// damaged is a state directory with something to damage: sessions with writes, one
// parked on a question, and file history. Its database is copied for each trial.
type damaged struct {
	db, root, session, parked, checkpoint, script string
}

func damagedBase(t *testing.T) damaged {
	t.Helper()
	home, root := t.TempDir(), t.TempDir()
	var d damaged
	for range 4 {
		d.session = scriptedRun(t, home, root)
	}
	dir := t.TempDir()
	d.script = filepath.Join(dir, "done.json")
	os.WriteFile(d.script, []byte(`{"turns":[{"text":"done"}]}`), 0o644)
	park := filepath.Join(dir, "park.json")
	os.WriteFile(park, []byte(`{"turns":[{"tool_calls":[{"name":"Write","input":{"file_path":"b.txt","content":"y"}}]},{"text":"written"}]}`), 0o644)
	code, out, errw := cli(t, "", "run", "--home", home, "--cwd", root, "--sandbox", "off", "--model", "scripted/"+park,
		"--on-ask", "park", "--output-format", "json", "write b.txt")
	var parked struct {
		SessionID  string `json:"session_id"`
		Checkpoint struct {
			ID string `json:"id"`
		} `json:"checkpoint"`
	}
	if code != exitAwaiting || json.Unmarshal([]byte(out), &parked) != nil || parked.Checkpoint.ID == "" {
		t.Fatalf("parking run: exit %d\n%s\n%s", code, out, errw)
	}
	d.parked, d.checkpoint, d.root = parked.SessionID, parked.Checkpoint.ID, root
	d.db = filepath.Join(home, statedir.DatabaseName)
	if _, err := os.Stat(d.db + "-wal"); err == nil {
		t.Fatal("a -wal file stayed beside the database after every command ended")
	}
	return d
}

// commands are the commands of the trials, each as a person types them: every one
// opens the state directory, and all but list and show write to it.
func (d damaged) commands() [][]string {
	run := []string{"--cwd", d.root, "--sandbox", "off", "--model", "scripted/" + d.script, "--permission-mode", "acceptEdits"}
	return [][]string{
		append([]string{"run"}, append(run, "hello")...),
		append([]string{"run", "--resume", d.session}, append(run, "go on")...),
		append([]string{"run", "--continue"}, append(run, "go on")...),
		{"sessions", "show", d.session},
		{"sessions", "show", d.session, "--output-format", "text"},
		{"sessions", "list", "--all"},
		{"rewind", d.session, "--to", "1", "--force"},
		append([]string{"approve", d.parked, "--checkpoint", d.checkpoint, "--allow"}, run...),
	}
}

// homeWith makes a new state directory holding a copy of db.
func homeWith(t *testing.T, db []byte) (home, path string) {
	t.Helper()
	home = t.TempDir()
	path = filepath.Join(home, statedir.DatabaseName)
	if err := os.WriteFile(path, db, 0o600); err != nil {
		t.Fatal(err)
	}
	return home, path
}

// integrity is SQLite's own verdict on the database bytes db ("ok" when sound), read
// from a copy through an immutable connection.
func integrity(t *testing.T, db []byte) string {
	t.Helper()
	_, path := homeWith(t, db)
	raw, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=ro&immutable=1")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var lines []string
	rows, err := raw.Query(`PRAGMA integrity_check`)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		rows.Scan(&s)
		lines = append(lines, s)
	}
	if err := rows.Err(); err != nil {
		return err.Error()
	}
	return strings.Join(lines, "; ")
}

var stderrCode = regexp.MustCompile(`\(([a-z_]+\.[a-z_]+)\)\n`)

// outcome is what one command did to one damaged copy.
type outcome struct {
	code          int
	errCode       string
	changed       bool
	stdout        string
	stderr        string
	invalidOutput bool
}

func runOn(t *testing.T, db []byte, args []string) outcome {
	t.Helper()
	home, path := homeWith(t, db)
	args = append(args, "--home", home)
	if !slices.Contains(args, "--output-format") {
		args = append(args, "--output-format", "json")
	}
	code, out, errw := cli(t, "", args...)
	after, err := os.ReadFile(path)
	o := outcome{code: code, stdout: out, stderr: errw, changed: err != nil || !bytes.Equal(after, db)}
	var doc struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal([]byte(out), &doc)
	o.errCode = doc.Error.Code
	if m := stderrCode.FindStringSubmatch(errw); doc.Error.Code == "" && m != nil {
		o.errCode = m[1] // text output: the code closes the error's line
	}
	o.invalidOutput = !utf8.ValidString(out) || !utf8.ValidString(errw)
	return o
}

// The rule for a damaged database, every command alike: one that SQLite's
// integrity_check does not pass is refused with store.corrupt, exit 1, and left byte
// for byte as it was; a byte flipped where SQLite keeps nothing changes no outcome's
// soundness. Each trial flips one random byte of a random page of a real state
// database (a copy), then runs every command on a fresh copy of that damage.
func TestBitFlippedStateDatabase(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	trials := 12
	if s := os.Getenv("SEMA_FLIP_TRIALS"); s != "" {
		trials, _ = strconv.Atoi(s)
	}
	seed := uint64(os.Getpid())
	if s := os.Getenv("SEMA_FLIP_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (SEMA_FLIP_SEED replays it), %d trials (SEMA_FLIP_TRIALS)", seed, trials)
	rng := rand.New(rand.NewPCG(seed, 0))
	d := damagedBase(t)
	base, err := os.ReadFile(d.db)
	if err != nil {
		t.Fatal(err)
	}
	pageSize := int(binary.BigEndian.Uint16(base[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	pages := len(base) / pageSize
	damagedTrials, refusals := 0, 0
	soundOutcomes := map[string]int{}
	// About one flip in ten damages what SQLite checks (most land in free space or in a
	// record's content); flips go on past the asked number until three have, so every
	// run tries the refusal.
	for trial := 0; trial < trials || damagedTrials < 3; trial++ {
		if trial == 400 {
			t.Fatalf("400 flips and only %d damaged the database", damagedTrials)
		}
		db := bytes.Clone(base)
		// Page 1 after its 100-byte header too: the schema lives there.
		page := rng.IntN(pages)
		off := page*pageSize + rng.IntN(pageSize)
		if page == 0 {
			off = 100 + rng.IntN(pageSize-100)
		}
		db[off] ^= byte(1 + rng.IntN(255))
		verdict := integrity(t, db)
		sound := verdict == "ok"
		if !sound {
			damagedTrials++
		}
		for _, args := range d.commands() {
			o := runOn(t, db, args)
			where := fmt.Sprintf("trial %d (byte %d of page %d, integrity_check: %.80s): %v", trial, off, page+1, verdict, args[:2])
			if o.invalidOutput {
				t.Errorf("%s printed invalid UTF-8\nstdout: %q\nstderr: %q", where, o.stdout, o.stderr)
			}
			if sound {
				// A flip SQLite cannot see (a byte of a transcript's text, of a stored
				// call's arguments) may change what a command finds, never how it says so.
				soundOutcomes[fmt.Sprintf("%s %s: exit %d %s", args[0], strings.Split(args[1], "-")[0], o.code, o.errCode)]++
				if o.code != exitOK && (o.errCode == "" || o.errCode == codeUsage || o.errCode == codeUnexpected) {
					t.Errorf("%s on a sound database: exit %d, code %q\nstderr: %s", where, o.code, o.errCode, o.stderr)
				}
				continue
			}
			if o.code != exitError || o.errCode != sqlitedb.CodeCorrupt || o.changed {
				t.Errorf("%s on a damaged database: exit %d, code %q, file changed %v; want exit 1, store.corrupt, unchanged\nstderr: %s",
					where, o.code, o.errCode, o.changed, o.stderr)
				continue
			}
			refusals++
		}
	}
	t.Logf("outcomes where integrity_check passed: %v", soundOutcomes)
	t.Logf("%d trials damaged the database as integrity_check sees it; %d refusals", damagedTrials, refusals)
}

// A sema.db of zero bytes is not a new store (sema creates its database whole), and one
// cut short is damaged: every command refuses both with store.corrupt, exit 1, names
// the way out that keeps the evidence, and leaves the file as it was — the empty one is
// not turned into an empty store.
func TestEmptyOrTruncatedStateDatabase(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	d := damagedBase(t)
	base, err := os.ReadFile(d.db)
	if err != nil {
		t.Fatal(err)
	}
	pageSize := int(binary.BigEndian.Uint16(base[16:18]))
	for _, tc := range []struct {
		name string
		db   []byte
	}{
		{"empty", nil},
		{"cut to its first half", base[:len(base)/2]},
		{"cut by a page", base[:len(base)-pageSize]},
		{"cut inside its first page", base[:pageSize/2]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, args := range d.commands() {
				o := runOn(t, tc.db, args)
				if o.code != exitError || o.errCode != sqlitedb.CodeCorrupt || o.changed {
					t.Fatalf("%v: exit %d, code %q, file changed %v; want exit 1, store.corrupt, unchanged\nstdout: %s\nstderr: %s",
						args[:2], o.code, o.errCode, o.changed, o.stdout, o.stderr)
				}
				if !strings.Contains(o.stderr, "Move it aside") || !strings.Contains(o.stderr, "--home DIR") {
					t.Fatalf("%v: the refusal does not say how to start afresh and keep the file: %s", args[:2], o.stderr)
				}
			}
			// The way out the refusal names: the file moved aside as it says, the next
			// run starts a new store, and the evidence stays as it was.
			home, path := homeWith(t, tc.db)
			_, _, errw := cli(t, "", "sessions", "list", "--home", home)
			aside := path + ".damaged"
			if !strings.Contains(errw, "(mv "+shellQuote(path)+" "+shellQuote(aside)+")") {
				t.Fatalf("the refusal does not name the move: %s", errw)
			}
			if err := os.Rename(path, aside); err != nil {
				t.Fatal(err)
			}
			id := scriptedRun(t, home, t.TempDir())
			code, out, errw := cli(t, "", "sessions", "list", "--all", "--home", home, "--output-format", "json")
			if code != exitOK || !strings.Contains(out, id) || strings.Contains(out, d.session) {
				t.Fatalf("after moving the file aside: exit %d\n%s\n%s", code, out, errw)
			}
			if kept, err := os.ReadFile(aside); err != nil || !bytes.Equal(kept, tc.db) {
				t.Fatalf("the file moved aside changed (%v)", err)
			}
		})
	}
}

// `sessions show` prints only valid UTF-8, text and json alike, from a store that holds
// bytes that are not: a workspace whose path is not UTF-8 (valid on Linux), a transcript
// byte damaged where SQLite's checks cannot see it, and a line cut for width inside a
// character. Text shows an invalid byte of a path as \xNN, so it can still be read.
func TestShowPrintsValidUTF8(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	home := t.TempDir()
	root := filepath.Join(t.TempDir(), "ws\xff")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Skipf("this file system refuses a name that is not UTF-8: %v", err)
	}
	script := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(script, []byte(`{"turns":[{"text":"an answer to damage"}]}`), 0o644)
	prompt := strings.Repeat("a", 199) + "ééé" // the shown line is cut at byte 200, inside an é
	code, out, errw := cli(t, "", "run", "--home", home, "--cwd", root, "--sandbox", "off", "--model", "scripted/"+script, "--output-format", "json", prompt)
	var res struct {
		SessionID string `json:"session_id"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errw)
	}
	raw, err := sql.Open("sqlite", "file:"+(&url.URL{Path: filepath.Join(home, statedir.DatabaseName)}).EscapedPath())
	if err != nil {
		t.Fatal(err)
	}
	// One byte of the answer's text, inside its JSON string, turned into one that is
	// not UTF-8 (integrity_check cannot see it: a record's content is not checked).
	r, err := raw.Exec(`UPDATE entries SET payload = CAST(replace(CAST(payload AS TEXT), 'to damage', 'to dam' || CAST(x'ff' AS TEXT) || 'ge') AS BLOB) WHERE kind = 'assistant'`)
	if n, _ := r.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("damaging the answer: %v (%d rows)", err, n)
	}
	raw.Close()
	for _, format := range []string{"text", "json"} {
		code, out, errw := cli(t, "", "sessions", "show", res.SessionID, "--home", home, "--output-format", format)
		if code != exitOK {
			t.Fatalf("%s: exit %d\n%s", format, code, errw)
		}
		if !utf8.ValidString(out) {
			t.Fatalf("%s output is not UTF-8: %q", format, out)
		}
		// The answer's text is decoded from its JSON, which already puts U+FFFD for the
		// byte; the path is shown as stored.
		if format == "text" && (!strings.Contains(out, `ws\xff`) || !strings.Contains(out, "to dam\ufffdge") || !strings.Contains(out, strings.Repeat("a", 199)+"…")) {
			t.Fatalf("text output does not show the bytes escaped: %s", out)
		}
		if format == "json" && !json.Valid([]byte(out)) {
			t.Fatalf("json output is not JSON: %s", out)
		}
	}
}
