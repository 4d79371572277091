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
)

// killedBashFiles is the workspace a killed command works on: files it edits in place
// (sed -i) and files it removes, one pair at a time, so a kill at a random moment
// leaves some of each done and some not.
const killedBashPairs = 6

func killedBashTree() map[string]string {
	files := map[string]string{}
	for i := range killedBashPairs {
		files[fmt.Sprintf("edit%d.txt", i)] = fmt.Sprintf("version one of file %d\n", i)
		files[fmt.Sprintf("rm%d.txt", i)] = fmt.Sprintf("removed later %d\n", i)
	}
	return files
}

// killedBashCommand announces itself, then edits and removes one pair of files every
// 60 ms, named one by one (a removal through a variable is a question for a person).
func killedBashCommand() string {
	cmd := "echo started > .started"
	for i := range killedBashPairs {
		cmd += fmt.Sprintf("; sed -i 's/one/two/' edit%d.txt; rm rm%d.txt; sleep 0.06", i, i)
	}
	return cmd + "; sleep 30"
}

// A `sema run` killed with SIGKILL or SIGHUP while a Bash command removes and edits
// files: what the command did is restorable. After SIGKILL the next `sema rewind`
// records it from the durable snapshot first; after SIGHUP, which ends the run like
// SIGTERM, the command's own walk recorded it and a plain rewind restores it. A rewind
// never reports a file restored that it did not restore, and with --force returns every
// file to its bytes before the command; --undo then gives back what the command left. SEMA_SOAK=1 runs 20 trials per signal and sandbox mode.
func TestKilledBashCommandIsRewindable(t *testing.T) {
	trials := 2
	if os.Getenv("SEMA_SOAK") != "" {
		trials = 20
	}
	for _, sb := range []string{"off", "auto"} {
		for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGHUP} {
			t.Run(fmt.Sprintf("sandbox-%s/%s", sb, sig), func(t *testing.T) {
				lost := 0
				for i := range trials {
					delay := time.Duration(rand.IntN(420)) * time.Millisecond
					if !killedBashTrial(t, sb, sig, delay) {
						lost++
					}
					if t.Failed() {
						t.Fatalf("trial %d (kill %v after the command started) failed", i, delay)
					}
				}
				t.Logf("%d trials, %d with files unrestorable", trials, lost)
			})
		}
	}
}

// killedBashTrial runs one trial and reports whether every file came back.
func killedBashTrial(t *testing.T, sb string, sig syscall.Signal, delay time.Duration) bool {
	t.Helper()
	orig := killedBashTree()
	dir := writeTree(t, orig)
	env := append(home(t), "SEMA_SESSION_LEASE=2s")
	in, _ := json.Marshal(killedBashCommand())
	script := writeScript(t, `{"turns":[{"tool_calls":[{"name":"Bash","input":{"command":`+string(in)+`}}]},{"text":"done"}]}`)
	run := exec.Command(semaBin, "run", "--model", "scripted/"+script, "--sandbox", sb, "--allowed-tools", "Bash", "--output-format", "json", "edit and remove")
	run.Dir = dir
	run.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, ".started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			run.Process.Kill()
			run.Wait()
			t.Fatal("the command never started")
		}
	}
	time.Sleep(delay)
	run.Process.Signal(sig)
	run.Wait()
	os.Remove(filepath.Join(dir, ".started"))
	// The command's process group dies with sema; give it a moment to be gone.
	time.Sleep(200 * time.Millisecond)
	left := snapshotTree(t, dir)

	r := sema(t, dir, env, "", "sessions", "list", "--output-format", "json")
	var list struct {
		Sessions []struct {
			ID string `json:"id"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list.Sessions) != 1 {
		t.Fatalf("sessions list: %v\n%s\n%s", err, r.stdout, r.stderr)
	}
	sid := list.Sessions[0].ID

	// A plain rewind: what it calls restored or deleted is so; what it cannot restore
	// without destroying bytes it does not know to be the agent's is a conflict, and the
	// rewind then changes nothing and exits non-zero.
	r = semaFree(t, dir, env, "rewind", sid, "--to", "1", "--files", "--output-format", "json")
	var led struct {
		Applied   bool     `json:"applied"`
		Recovered []string `json:"recovered"`
		Files     []struct {
			Path   string `json:"path"`
			Action string `json:"action"`
		} `json:"files"`
		Error *struct{ Code string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &led); err != nil {
		t.Fatalf("rewind: exit %d, %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	changed := 0
	for name, want := range orig {
		if left[name] != want {
			changed++
		}
	}
	switch {
	case sig == syscall.SIGKILL && changed > 0 && len(led.Recovered) == 0:
		t.Errorf("the killed command changed %d file(s) but the rewind recorded none first: %s", changed, r.stdout)
	case sig == syscall.SIGHUP && r.code != 0:
		// A hangup ends the run as SIGTERM does: the command is stopped and its walk
		// records what it left, so a plain rewind restores everything.
		t.Errorf("rewind after a hangup: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, f := range led.Files {
		name := filepath.Base(f.Path)
		b, err := os.ReadFile(filepath.Join(dir, name))
		switch f.Action {
		case "restored":
			if led.Applied && (err != nil || string(b) != orig[name]) {
				t.Errorf("%s reported restored but holds %q (%v)", name, b, err)
			}
		case "conflict":
			if r.code == 0 {
				t.Errorf("a rewind with a conflict (%s) exited 0", name)
			}
		}
	}

	// --force restores every file the command touched to its bytes before the command.
	r = sema(t, dir, env, "", "rewind", sid, "--to", "1", "--files", "--force")
	if r.code != 0 {
		t.Fatalf("rewind --force: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	now := snapshotTree(t, dir)
	ok := true
	for name, want := range orig {
		if now[name] != want {
			ok = false
			t.Errorf("after rewind --force, %s holds %q; want %q (it held %q after the kill)", name, now[name], want, left[name])
		}
	}
	for name := range now {
		if _, ok := orig[name]; !ok {
			t.Errorf("after rewind --force, %s is there; the command did not leave it", name)
		}
	}
	if sameTree(left, orig) {
		return ok // the signal came before the command changed anything: nothing to undo
	}
	// And --force is undoable: the files as the kill left them come back.
	r = sema(t, dir, env, "", "rewind", sid, "--undo")
	if r.code != 0 {
		t.Fatalf("rewind --undo: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if back := snapshotTree(t, dir); !sameTree(back, left) {
		t.Errorf("--undo after --force: %v; want the tree as the kill left it %v", back, left)
	}
	return ok
}

// semaFree runs sema until it does not find the session busy (exit 5): the killed
// run's lease, for as long as it blocks the session.
func semaFree(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		r := sema(t, dir, env, "", args...)
		if r.code != 5 || time.Now().After(deadline) {
			return r
		}
	}
}

// snapshotTree maps each regular file directly in dir (dot files aside) to its bytes.
func snapshotTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range ents {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

func sameTree(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
