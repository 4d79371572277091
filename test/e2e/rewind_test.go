package e2e

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fileState is a file as a person would check it: its bytes and its mode.
type fileState struct {
	Content string
	Mode    fs.FileMode
}

// tree reads every regular file under dir.
func tree(t *testing.T, dir string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = fileState{string(b), fi.Mode().Perm()}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The agent edits f; the person then appends a line. A rewind refuses to overwrite the
// person's line and shows it as a diff; --force overwrites it; --undo brings it back —
// with the file the rewind deleted and the mode the person set — byte for byte.
func TestRewindNeverDestroysWhatItDidNotMake(t *testing.T) {
	dir := writeTree(t, map[string]string{"f.txt": "alpha\nbeta\n", "run.sh": "#!/bin/sh\necho v0\n"})
	if err := os.Chmod(filepath.Join(dir, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	start := tree(t, dir)
	env := home(t)
	script := writeScript(t, `{"turns":[
		{"tool_calls":[{"name":"Read","input":{"file_path":"f.txt"}},{"name":"Read","input":{"file_path":"run.sh"}}]},
		{"tool_calls":[
			{"name":"Edit","input":{"file_path":"f.txt","old_string":"beta","new_string":"BETA"}},
			{"name":"Edit","input":{"file_path":"run.sh","old_string":"v0","new_string":"v1"}},
			{"name":"Write","input":{"file_path":"made.txt","content":"made by the agent\n"}}]},
		{"text":"done"}]}`)
	r := sema(t, dir, env, "", "run", "--model", "scripted/"+script, "--permission-mode", "acceptEdits", "--output-format", "json", "edit f")
	if r.code != 0 {
		t.Fatalf("run: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	sid := jsonResult(t, r.stdout)["session_id"].(string)
	if got := tree(t, dir)["f.txt"].Content; got != "alpha\nBETA\n" {
		t.Fatalf("f.txt after the run = %q", got)
	}

	// The person appends a line and tightens a mode.
	f := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(f, []byte("alpha\nBETA\nthe person's line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "run.sh"), 0o700); err != nil {
		t.Fatal(err)
	}
	before := tree(t, dir)

	r = sema(t, dir, env, "", "rewind", sid, "--files", "--to", "1")
	if r.code == 0 {
		t.Fatalf("a rewind over the person's edit succeeded:\n%s", r.stdout)
	}
	for _, want := range []string{"conflict  " + f, "changed outside the agent since its last write at turn 2", "-the person's line", "+beta", "--force"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the refused rewind's output lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "history.partial_restore") {
		t.Errorf("stderr: %s", r.stderr)
	}
	if d := cmp.Diff(before, tree(t, dir)); d != "" {
		t.Fatalf("a refused rewind changed the tree (-before +after):\n%s", d)
	}

	// The dry run shows each file's diff; --stat only counts; JSON is the ledger.
	r = sema(t, dir, env, "", "rewind", sid, "--files", "--to", "1", "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "@@") || !strings.Contains(r.stdout, "-made by the agent") || !strings.Contains(r.stdout, "-the person's line") {
		t.Fatalf("dry run: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = sema(t, dir, env, "", "rewind", sid, "--files", "--to", "1", "--dry-run", "--stat")
	if r.code != 0 || strings.Contains(r.stdout, "@@") || !strings.Contains(r.stdout, "(+1 -2)") {
		t.Fatalf("dry run --stat: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = sema(t, dir, env, "", "rewind", sid, "--files", "--to", "1", "--dry-run", "--output-format", "json", "--diff")
	var doc struct {
		DryRun bool `json:"dry_run"`
		Files  []struct {
			Path, Action, Reason, Diff string
			Added, Removed             int
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 0 || !doc.DryRun {
		t.Fatalf("json dry run: %d %v\n%s", r.code, err, r.stdout)
	}
	actions := map[string]string{}
	for _, e := range doc.Files {
		rel, _ := filepath.Rel(dir, e.Path)
		actions[rel] = e.Action
		if rel == "f.txt" && (e.Added != 1 || e.Removed != 2 || !strings.Contains(e.Diff, "-the person's line") || e.Reason == "") {
			t.Errorf("f.txt in the JSON ledger: %+v", e)
		}
	}
	if d := cmp.Diff(map[string]string{"f.txt": "conflict", "run.sh": "restored", "made.txt": "deleted"}, actions); d != "" {
		t.Errorf("JSON actions (-want +got):\n%s", d)
	}
	if d := cmp.Diff(before, tree(t, dir)); d != "" {
		t.Fatalf("a dry run changed the tree:\n%s", d)
	}

	r = sema(t, dir, env, "", "rewind", sid, "--files", "--to", "1", "--force")
	if r.code != 0 {
		t.Fatalf("forced rewind: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if d := cmp.Diff(start, tree(t, dir)); d != "" {
		t.Fatalf("the tree after the forced rewind (-start +after):\n%s", d)
	}

	r = sema(t, dir, env, "", "rewind", sid, "--undo")
	if r.code != 0 {
		t.Fatalf("undo: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if d := cmp.Diff(before, tree(t, dir)); d != "" {
		t.Fatalf("the tree after the undo (-before the rewind +after):\n%s", d)
	}
}
