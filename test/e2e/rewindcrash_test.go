package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sema-agent/sema/session/sqlitedb"
)

// A forced rewind, its undo, then a plain rewind: the undo put the person's line back,
// so the plain rewind (and its dry run) is a conflict that changes nothing; forced
// again it is undoable again, and redoing it by a second undo asks for force too.
func TestRewindAfterForceAndUndoIsAConflictAgain(t *testing.T) {
	dir := writeTree(t, map[string]string{"f.txt": "alpha\nbeta\n"})
	env := home(t)
	script := writeScript(t, `{"turns":[
		{"tool_calls":[{"name":"Read","input":{"file_path":"f.txt"}}]},
		{"tool_calls":[{"name":"Edit","input":{"file_path":"f.txt","old_string":"beta","new_string":"BETA"}}]},
		{"text":"done"}]}`)
	r := sema(t, dir, env, "", "run", "--model", "scripted/"+script, "--permission-mode", "acceptEdits", "--output-format", "json", "edit f")
	if r.code != 0 {
		t.Fatalf("run: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	sid := jsonResult(t, r.stdout)["session_id"].(string)
	f := filepath.Join(dir, "f.txt")
	const person = "alpha\nBETA\nthe person's line\n"
	if err := os.WriteFile(f, []byte(person), 0o644); err != nil {
		t.Fatal(err)
	}
	read := func() string {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	refused := func(step string, args ...string) {
		t.Helper()
		dry := sema(t, dir, env, "", append(args, "--dry-run")...)
		if dry.code != 0 || !strings.Contains(dry.stdout, "conflict  "+f) {
			t.Fatalf("%s: the dry run does not show the conflict: %d\n%s\n%s", step, dry.code, dry.stdout, dry.stderr)
		}
		r := sema(t, dir, env, "", args...)
		if r.code == 0 || !strings.Contains(r.stderr, "history.partial_restore") || !strings.Contains(r.stdout, "conflict  "+f) {
			t.Fatalf("%s without --force over the person's line: exit %d\n%s\n%s", step, r.code, r.stdout, r.stderr)
		}
		if got := read(); got != person {
			t.Fatalf("%s: a refused rewind left f.txt = %q", step, got)
		}
	}
	ok := func(step string, want string, args ...string) {
		t.Helper()
		r := sema(t, dir, env, "", args...)
		if r.code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", step, r.code, r.stdout, r.stderr)
		}
		if got := read(); got != want {
			t.Fatalf("%s: f.txt = %q, want %q", step, got, want)
		}
	}
	refused("the first rewind", "rewind", sid, "--files", "--to", "1")
	ok("the forced rewind", "alpha\nbeta\n", "rewind", sid, "--files", "--to", "1", "--force")
	ok("its undo", person, "rewind", sid, "--undo")
	refused("the rewind after the undo", "rewind", sid, "--files", "--to", "1")
	refused("the redo", "rewind", sid, "--undo")
	ok("the forced rewind again", "alpha\nbeta\n", "rewind", sid, "--files", "--to", "1", "--force")
	ok("a rewind with nothing to do", "alpha\nbeta\n", "rewind", sid, "--files", "--to", "1")
	ok("the undo again", person, "rewind", sid, "--undo")
	refused("a last rewind", "rewind", sid, "--files", "--to", "1")
}

// A run killed with SIGKILL at random moments while it writes file after file: every
// file then holds its old bytes or the agent's, and a rewind to the start restores them
// all without --force — a write that landed before its outcome was recorded is the
// agent's, not a person's edit. SEMA_SOAK=1 runs more trials.
func TestRewindAfterKillNeedsNoForce(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes repeatedly")
	}
	trials := 4
	if os.Getenv("SEMA_SOAK") != "" {
		trials = 40
	}
	const files = 20
	oldBody := strings.Repeat("old line\n", 500)
	newBody := strings.Repeat("new line\n", 500)
	var turns []string
	for i := range files {
		name := fmt.Sprintf("f%02d.txt", i)
		turns = append(turns,
			fmt.Sprintf(`{"tool_calls":[{"name":"Read","input":{"file_path":%q}}]}`, name),
			fmt.Sprintf(`{"tool_calls":[{"name":"Write","input":{"file_path":%q,"content":%q}}]}`, name, newBody))
	}
	turns = append(turns, `{"text":"all written"}`)
	script := writeScript(t, `{"turns":[`+strings.Join(turns, ",")+`]}`)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	unconfirmed := 0
	for trial := range trials {
		dir := t.TempDir()
		state := filepath.Join(t.TempDir(), "state")
		env := []string{"SEMA_HOME=" + state, "SEMA_SESSION_LEASE=1s"}
		start := map[string]string{}
		for i := range files {
			name := fmt.Sprintf("f%02d.txt", i)
			if err := os.WriteFile(filepath.Join(dir, name), []byte(oldBody), 0o644); err != nil {
				t.Fatal(err)
			}
			start[name] = oldBody
		}
		cmd := exec.Command(semaBin, "run", "--model", "scripted/"+script, "--permission-mode", "acceptEdits", "--output-format", "json", "rewrite")
		cmd.Dir = dir
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}, env...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// After the first write landed (so the session exists), at a random moment.
		waitFor(t, func() bool {
			b, _ := os.ReadFile(filepath.Join(dir, "f00.txt"))
			return string(b) == newBody
		})
		delay := time.Duration(rng.IntN(80)) * time.Millisecond
		time.Sleep(delay)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()

		written := 0
		for i := range files {
			b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("f%02d.txt", i)))
			if err != nil || (string(b) != oldBody && string(b) != newBody) {
				t.Fatalf("trial %d: f%02d.txt is torn (%d bytes, err %v)", trial, i, len(b), err)
			}
			if string(b) == newBody {
				written++
			}
		}
		n := unconfirmedWrites(t, filepath.Join(state, "sema.db"), dir, newBody)
		unconfirmed += n
		r := sema(t, dir, env, "", "sessions", "list", "--output-format", "json")
		var list struct {
			Sessions []struct {
				ID string `json:"id"`
			} `json:"sessions"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list.Sessions) != 1 {
			t.Fatalf("trial %d: sessions list: %v\n%s\n%s", trial, err, r.stdout, r.stderr)
		}
		sid := list.Sessions[0].ID
		// The killed run's lease (1s) must run out first.
		for deadline := time.Now().Add(15 * time.Second); ; {
			r = sema(t, dir, env, "", "rewind", sid, "--files", "--to", "1")
			if !strings.Contains(r.stderr, "session.busy") || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if r.code != 0 {
			t.Fatalf("trial %d (killed %v after the first write; %d files written, %d of them unconfirmed): the rewind without --force: exit %d\n%s\n%s",
				trial, delay, written, n, r.code, r.stdout, r.stderr)
		}
		if d := cmp.Diff(start, readFiles(t, dir, files)); d != "" {
			t.Fatalf("trial %d: the tree after the rewind (-start +got):\n%s", trial, d)
		}
	}
	t.Logf("%d trials; %d killed between a write and its confirmation", trials, unconfirmed)
}

// unconfirmedWrites counts the files under dir holding body whose newest history record
// has no confirmed after-image: writes the kill cut off from their SetAfter.
func unconfirmedWrites(t *testing.T, dbPath, dir, body string) int {
	t.Helper()
	db, err := sqlitedb.Open(dbPath, sqlitedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sqlitedb.Close(db)
	rows, err := db.Query(`SELECT key FROM history_records r WHERE after IS NULL
		AND id = (SELECT MAX(id) FROM history_records WHERE key = r.key)`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var key string
		if err := rows.Scan(&key); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(key); err == nil && string(b) == body && strings.HasPrefix(key, dir) {
			n++
		}
	}
	return n
}

func readFiles(t *testing.T, dir string, n int) map[string]string {
	out := map[string]string{}
	for i := range n {
		name := fmt.Sprintf("f%02d.txt", i)
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		out[name] = string(b)
	}
	return out
}
