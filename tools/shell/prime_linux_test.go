//go:build linux

package shell

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sema-agent/sema/env"
)

// A leg's confined commands share one policy, so each one's confinement is built ahead,
// in a spare, while the model thinks: the later commands take a primed spare, and what
// they do is what a command confined from scratch does (the working directory carries
// over, the protected place stays read-only, the root is written).
func TestConfinedCommandsAreReadiedAhead(t *testing.T) {
	f := newFix(t, sandboxed(t))
	f.put(".git/config", "[core]\n")
	f.bash("mkdir -p sub && cd sub")
	before := env.PrimedStarts()
	for i := range 3 {
		if !env.PrimedReady(f.set.scratch, 10*time.Second) {
			t.Fatalf("command %d: no primed spare became ready", i+1)
		}
		out := f.bash(`pwd; echo x >> ../made; echo y > ../.git/config 2>&1 || echo refused`)
		if !strings.Contains(out, f.path("sub")) || !strings.Contains(out, "refused") {
			t.Fatalf("command %d: %q", i+1, out)
		}
	}
	if got := env.PrimedStarts() - before; got != 3 {
		t.Fatalf("%d of 3 commands took a primed spare", got)
	}
	if b, _ := os.ReadFile(f.path("made")); string(b) != "x\nx\nx\n" {
		t.Fatalf("the commands' writes: %q", b)
	}
	if b, _ := os.ReadFile(f.path(".git/config")); string(b) != "[core]\n" {
		t.Fatalf("the protected file changed: %q", b)
	}
}

// A confinement built ahead can go stale: a read-only place is a mount in the spare's
// namespace, and a rename or removal of its path on the machine (the person's editor,
// git, a file tool) detaches that mount there, leaving the path writable in the view.
// The policy does not change (the path exists again), so it is the spare's own watch
// of its mounts that keeps it from being used; the command is confined from scratch.
//
// Calibration: a command whose view was built before the same rename — one that runs
// across it — does write into the new place.
func TestAStalePrimedViewIsNotUsed(t *testing.T) {
	f := newFix(t, sandboxed(t))
	f.put(".git/config", "[core]\n")
	swap := func() {
		t.Helper()
		if err := os.Rename(f.path(".git"), f.path(".git-"+time.Now().Format("150405.000000000"))); err != nil {
			t.Fatal(err)
		}
		f.put(".git/config", "[core]\n")
	}

	// Calibration, in a command that runs across the rename.
	id := f.start(`echo up > up; while [ ! -e gate ]; do sleep 0.01; done; echo stale > .git/through 2>/dev/null; echo finished > bg-done`)
	waitFile(t, f.path("up")) // running: its view is made
	swap()
	f.put("gate", "")
	f.until(id, "")
	waitFile(t, f.path("bg-done"))
	if _, err := os.Stat(f.path(".git/through")); err != nil {
		t.Skipf("calibration: a rename on the machine did not open the running command's view here (%v); nothing to show", err)
	}
	os.Remove(f.path(".git/through"))

	f.bash("true")
	if !env.PrimedReady(f.set.scratch, 10*time.Second) {
		t.Fatal("no primed spare became ready")
	}
	swap()
	before := env.PrimedStarts()
	out := f.bash(`echo stale > .git/through 2>&1 || echo refused`)
	if env.PrimedStarts() != before {
		t.Fatal("the stale primed spare was used")
	}
	if _, err := os.Stat(f.path(".git/through")); err == nil || !strings.Contains(out, "refused") {
		t.Fatalf("the command wrote into the protected place: %q", out)
	}
	// The next command is readied again, from the new place.
	if !env.PrimedReady(f.set.scratch, 10*time.Second) {
		t.Fatal("no primed spare after the stale one")
	}
	out = f.bash(`echo stale > .git/through 2>&1 || echo refused`)
	if env.PrimedStarts() != before+1 || !strings.Contains(out, "refused") {
		t.Fatalf("the spare readied after the rename: primed %d, %q", env.PrimedStarts()-before, out)
	}
}

// A confined command's working-directory report lives where the command may write (its
// temp directory, so that a leg's commands share one policy): it can put a link there
// in its place, to a file sema can read and the command cannot. The report is read
// without following a link, so nothing of that file reaches the answer.
//
// Calibration: the command does plant the link (a copy of it, kept), and a read that
// follows it gets the file.
func TestACwdReportReplacedByALinkIsNotFollowed(t *testing.T) {
	f := newFix(t, sandboxed(t))
	secret := filepath.Join(tempDir(t), "secret")
	if err := os.WriteFile(secret, []byte("the-secret-value"), 0o600); err != nil {
		t.Fatal(err)
	}
	plant := `trap - EXIT; for r in "$TMPDIR"/.sema-cwd-*; do ln -sfn ` + shq(secret) + ` "$r"; cp -P "$r" kept; done`
	r := f.call(context.Background(), NameBash, map[string]any{"command": plant})
	if strings.Contains(r.TextOf(), "the-secret-value") {
		t.Fatalf("the linked file reached the answer: %q", r.TextOf())
	}
	if to, err := os.Readlink(f.path("kept")); err != nil || to != secret {
		t.Fatalf("calibration: the command did not plant the link: %q %v (%s)", to, err, r.TextOf())
	}
	if b, err := os.ReadFile(f.path("kept")); err != nil || string(b) != "the-secret-value" {
		t.Fatalf("calibration: a read through the link does not get the file: %q %v", b, err)
	}
	// The next command still starts where the last known directory was.
	if out := f.bash("pwd"); strings.TrimSpace(out) != f.root {
		t.Fatalf("after the refused report the shell is in %q", out)
	}
}

// A helper runs a leg's commands one after another in the same namespaces (the second
// command's pid follows the first's in the namespace). What a command leaves running
// is ended with it all the same: a process that left its group, its session and its
// parent (setsid, in a subshell that exits) does not live on into the next command.
//
// Calibration: under plain bash the same line leaves a process that writes later.
func TestAHelperThatStaysEndsWhatEachCommandLeft(t *testing.T) {
	leave := `(setsid sh -c 'sleep 0.4; echo leaked > leak' &); echo $$`
	free := tempDir(t)
	cal := exec.Command("bash", "-c", leave)
	cal.Dir = free
	if out, err := cal.CombinedOutput(); err != nil {
		t.Fatalf("calibration: %v %s", err, out)
	}
	waitFile(t, filepath.Join(free, "leak"))
	f := newFix(t, sandboxed(t))
	f.bash("true")
	if !env.PrimedReady(f.set.scratch, 10*time.Second) {
		t.Fatal("no primed spare became ready")
	}
	first := strings.TrimSpace(f.bash(leave))
	second := strings.TrimSpace(f.bash(`sleep 0.7; echo $$; ls leak 2>&1 || true`))
	lines := strings.Split(second, "\n")
	if len(lines) < 2 || first == "" || lines[0] == first {
		t.Fatalf("the second command did not run in the first's helper: pids %q then %q", first, second)
	}
	if _, err := os.Stat(f.path("leak")); err == nil || !strings.Contains(second, "No such file") {
		t.Fatalf("a process the first command left wrote after it ended: %q", second)
	}
}

// Unconfined, a command runs below a reaper that ends what it leaves; the reaper stays
// for a next command (usually the next: the reapers that came back are the process's,
// shared by every set in it, so which one runs a command is not the set's to say). What
// the first command left — out of its group and session, its parent gone — does not live
// on into the next commands, whichever reaper runs them.
//
// Calibration: under plain bash the same line leaves a process that writes later.
func TestAReaperThatStaysEndsWhatEachCommandLeft(t *testing.T) {
	leave := `(setsid sh -c 'sleep 0.4; echo leaked > leak' &); echo $PPID`
	free := tempDir(t)
	cal := exec.Command("bash", "-c", leave)
	cal.Dir = free
	if out, err := cal.CombinedOutput(); err != nil {
		t.Fatalf("calibration: %v %s", err, out)
	}
	waitFile(t, filepath.Join(free, "leak"))
	f := newFix(t)
	f.bash("true") // the reaper of the first command comes back
	parents := map[string]bool{strings.TrimSpace(f.bash(leave)): true}
	for range 3 {
		parents[strings.TrimSpace(f.bash(`echo $PPID`))] = true
	}
	last := strings.TrimSpace(f.bash(`sleep 0.7; ls leak 2>&1 || true`))
	if _, err := os.Stat(f.path("leak")); err == nil || !strings.Contains(last, "No such file") {
		t.Fatalf("a process the first command left wrote after it ended: %q", last)
	}
	t.Logf("4 commands ran below %d reapers", len(parents))
}

// A command can change, from outside, what its reaper or helper hands to the next
// command it starts (its nice value, its limits: any process of the same user may), and
// reaches that process as its parent or as process 1 of its namespace. A reaper or helper
// that finds itself changed does not stay: the next command starts as a fresh one would.
//
// Calibration: renice of another process of the same user takes effect.
func TestACommandCannotChangeWhatTheNextInherits(t *testing.T) {
	if _, err := exec.LookPath("renice"); err != nil {
		t.Skip("renice is not installed")
	}
	// The tests' own nice value is what every command inherits (the suite may run niced).
	out, err := exec.Command("nice").Output()
	base, perr := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || perr != nil || base > 17 {
		t.Skipf("the tests' nice value (%q, %v) leaves no room to renice above it", out, err)
	}
	bump := strconv.Itoa(base + 2)
	cal := exec.Command("sh", "-c", `sleep 5 & p=$!; renice -n `+bump+` -p $p >/dev/null && ps -o ni= -p $p; kill $p`)
	if out, err := cal.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != bump {
		t.Fatalf("calibration: renice of a process of the same user to %s: %v %q", bump, err, out)
	}
	cases := []struct {
		name   string
		config []func(*Config)
		target string
	}{
		{"reaper", nil, "$PPID"},
		{"helper", []func(*Config){sandboxed(t)}, "1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFix(t, c.config...)
			f.bash("true")
			f.bash("true")
			f.bash(`renice -n ` + bump + ` -p ` + c.target + ` >/dev/null 2>&1; true`)
			for i := range 3 {
				if got := strings.TrimSpace(f.bash("nice")); got != strconv.Itoa(base) {
					t.Fatalf("command %d after the renice runs at nice %q, not the tests' %d", i+1, got, base)
				}
			}
		})
	}
}
