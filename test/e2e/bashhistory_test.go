package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// genPy creates, changes and deletes files: a generator run through Bash, whose changes
// the runner cannot see into and records by walking the roots.
const genPy = `import os
open("made.txt", "w").write("generated\n")
open("data.txt", "a").write("appended\n")
os.chmod("data.txt", 0o600)
os.remove("doomed.txt")
`

// Bash changes are file history: `sema rewind --to N` restores what `sed -i` and a
// Python generator created, changed and deleted, with the sandbox off and on.
func TestRewindRestoresBashChanges(t *testing.T) {
	py := "/usr/bin/python3"
	if _, err := exec.LookPath(py); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	for _, sb := range []string{"off", "auto"} {
		t.Run("sandbox-"+sb, func(t *testing.T) {
			orig := map[string]string{"conf.txt": "mode=old\n", "data.txt": "line1\n", "doomed.txt": "bye\n", "gen.py": genPy,
				".gitignore": "cache/\n", "cache/junk": "ignored\n"}
			dir := writeTree(t, orig)
			env := append(home(t), "PATH=/usr/bin:/bin")
			script := writeScript(t, `{"turns":[
				{"tool_calls":[{"name":"Bash","input":{"command":"sed -i 's/old/new/' conf.txt"}}]},
				{"tool_calls":[{"name":"Bash","input":{"command":"python3 gen.py && echo more >> cache/junk"}}]},
				{"text":"done"}]}`)
			r := sema(t, dir, env, "", "run", "--model", "scripted/"+script, "--sandbox", sb, "--allowed-tools", "Bash",
				"--permission-mode", "acceptEdits", "--output-format", "json", "generate")
			if r.code != 0 {
				t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			obj := jsonResult(t, r.stdout)
			sid := obj["session_id"].(string)
			if b, _ := os.ReadFile(filepath.Join(dir, "made.txt")); string(b) != "generated\n" {
				t.Fatalf("the generator did not run: %s", r.stdout)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "conf.txt")); string(b) != "mode=new\n" {
				t.Fatalf("sed did not run: conf.txt %q", b)
			}
			sh := obj["manifest"].(map[string]any)["shell"].(map[string]any)
			if sh["in_file_history"] != true {
				t.Errorf("manifest shell facts %v: Bash changes are recorded", sh)
			}
			// Turn 2 alone: the generator's changes go, sed's (turn 1) stay.
			r = sema(t, dir, env, "", "rewind", sid, "--to", "2", "--files")
			if r.code != 0 {
				t.Fatalf("rewind to 2: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "conf.txt")); string(b) != "mode=new\n" {
				t.Errorf("rewind to 2 undid turn 1's sed: conf.txt %q", b)
			}
			if _, err := os.Stat(filepath.Join(dir, "made.txt")); !os.IsNotExist(err) {
				t.Error("made.txt survived the rewind to 2")
			}
			r = sema(t, dir, env, "", "rewind", sid, "--to", "1", "--files")
			if r.code != 0 {
				t.Fatalf("rewind: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			for _, name := range []string{"conf.txt", "data.txt", "doomed.txt", "made.txt"} {
				if !strings.Contains(r.stdout, name) {
					t.Errorf("the ledger does not list %s:\n%s", name, r.stdout)
				}
			}
			for name, want := range orig {
				if name == "cache/junk" {
					continue // ignored by .gitignore: not in history
				}
				if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
					t.Errorf("%s after the rewind: %q, %v; want %q", name, b, err, want)
				}
			}
			if fi, err := os.Stat(filepath.Join(dir, "data.txt")); err != nil || fi.Mode().Perm() != 0o644 {
				t.Errorf("data.txt's mode after the rewind: %v %v", fi, err)
			}
			if _, err := os.Stat(filepath.Join(dir, "made.txt")); !os.IsNotExist(err) {
				t.Error("made.txt survived the rewind")
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "cache/junk")); string(b) != "ignored\nmore\n" {
				t.Errorf("an ignored file was rewound: %q", b)
			}
		})
	}
}
