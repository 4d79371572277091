package shell

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sema-agent/sema/tools"
)

// start starts a background task and returns its id.
func (f *fix) start(command string) string {
	f.t.Helper()
	r := f.call(context.Background(), NameBash, map[string]any{"command": command, "run_in_background": true})
	if r.IsError {
		f.t.Fatalf("start %q: %s: %s", command, r.Code, r.TextOf())
	}
	id := regexp.MustCompile(`bash_\d+`).FindString(r.TextOf())
	if id == "" {
		f.t.Fatalf("no task id in %q", r.TextOf())
	}
	return id
}

func (f *fix) output(id, filter string) tools.Result {
	f.t.Helper()
	in := map[string]any{"bash_id": id}
	if filter != "" {
		in["filter"] = filter
	}
	return f.call(context.Background(), NameBashOutput, in)
}

// until reads a task's output until its status line says want, collecting the output
// bodies read on the way.
func (f *fix) until(id, want string) string {
	f.t.Helper()
	var all strings.Builder
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := f.output(id, "")
		if r.IsError {
			f.t.Fatalf("BashOutput %s: %s: %s", id, r.Code, r.TextOf())
		}
		body, status := splitStatus(f.t, r.TextOf())
		if body != "(no new output)" {
			all.WriteString(body + "\n")
		}
		if strings.HasPrefix(status, want) {
			return all.String()
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("%s never reached %q; last status %q", id, want, status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// splitStatus splits a BashOutput answer into its body and its status.
func splitStatus(t testing.TB, text string) (string, string) {
	t.Helper()
	i := strings.LastIndex(text, "\n\nStatus of ")
	if i < 0 {
		t.Fatalf("no status in %q", text)
	}
	status := text[i+len("\n\nStatus of "):]
	_, status, _ = strings.Cut(status, ": ")
	return text[:i], status
}

func TestBackgroundTaskLifecycle(t *testing.T) {
	t.Parallel()
	f := newFix(t)
	id := f.start("echo first; echo to-stderr >&2; while [ ! -e go ]; do sleep 0.02; done; echo second; exit 4")
	if id != "bash_1" {
		t.Fatalf("first task is %s", id)
	}
	got := f.until(id, "running")
	waitOutput := func(want string) {
		for !strings.Contains(got, want) {
			got += f.until(id, "running")
		}
	}
	waitOutput("to-stderr")
	if got != "first\nto-stderr\n" {
		t.Fatalf("first read %q", got)
	}
	if len(f.set.Running()) != 1 || f.set.Running()[0].ID != id {
		t.Fatalf("Running %+v", f.set.Running())
	}
	f.put("go", "")
	rest := f.until(id, "exited with code 4")
	if rest != "second\n" {
		t.Fatalf("second read %q: output repeated or lost", rest)
	}
	if r := f.output(id, ""); !strings.HasPrefix(r.TextOf(), "(no new output)") {
		t.Fatalf("third read %q", r.TextOf())
	}
	if len(f.set.Running()) != 0 {
		t.Fatalf("Running after exit %+v", f.set.Running())
	}
	// KillShell on an ended task changes nothing.
	r := f.call(context.Background(), NameKillShell, map[string]any{"shell_id": id})
	if r.IsError || !strings.Contains(r.TextOf(), "already ended (exited with code 4)") {
		t.Fatalf("kill after exit: %s", r.TextOf())
	}
}

func TestBackgroundFilter(t *testing.T) {
	t.Parallel()
	f := newFix(t)
	id := f.start("printf 'keep 1\\ndrop 2\\nkeep 3\\n'")
	f.until(id, "exited")
	// The unfiltered read above consumed everything; a new task for the filter.
	id = f.start("printf 'keep 1\\ndrop 2\\nkeep 3\\nkeep-partial'; while [ ! -e go ]; do sleep 0.02; done; printf ' end\\ndrop 4\\n'")
	var got string
	for !strings.Contains(got, "keep 3") {
		r := f.output(id, "^keep")
		body, _ := splitStatus(t, r.TextOf())
		if body != "(no new output)" {
			got += body + "\n"
		}
	}
	if got != "keep 1\nkeep 3\n" {
		t.Fatalf("filtered %q", got)
	}
	f.put("go", "")
	got = ""
	for {
		r := f.output(id, "^keep")
		body, status := splitStatus(t, r.TextOf())
		if body != "(no new output)" {
			got += body + "\n"
		}
		if strings.HasPrefix(status, "exited") {
			break
		}
	}
	// The partial line waited until it was whole; the non-matching lines are gone.
	if got != "keep-partial end\n" {
		t.Fatalf("filtered %q", got)
	}
	if r := f.output(id, ""); !strings.HasPrefix(r.TextOf(), "(no new output)") {
		t.Fatalf("discarded lines came back: %q", r.TextOf())
	}
	if r := f.output(id, "("); r.Code != CodeFilterInvalid {
		t.Fatalf("bad filter: %q", r.Code)
	}
}

func TestKillShell(t *testing.T) {
	t.Parallel()
	f := newFix(t)
	d := tempDir(t)
	id := f.start(`sh -c 'trap "" TERM; echo $$ > ` + d + `/stubborn; while :; do sleep 0.05; done' & sleep 300 & echo $! > ` + d + `/sleeper; wait`)
	stubborn, sleeper := pidIn(t, filepath.Join(d, "stubborn")), pidIn(t, filepath.Join(d, "sleeper"))
	r := f.call(context.Background(), NameKillShell, map[string]any{"shell_id": id})
	if r.IsError || r.TextOf() != "Stopped "+id+": killed." {
		t.Fatalf("kill: %s %s", r.Code, r.TextOf())
	}
	for _, pid := range []int{stubborn, sleeper} {
		if alive(pid) {
			t.Errorf("pid %d survived KillShell", pid)
		}
	}
	if _, status := splitStatus(t, f.output(id, "").TextOf()); status != "killed." {
		t.Fatalf("status %q", status)
	}
	for _, tc := range []struct{ tool, field string }{{NameKillShell, "shell_id"}, {NameBashOutput, "bash_id"}} {
		r := f.call(context.Background(), tc.tool, map[string]any{tc.field: "bash_99"})
		if r.Code != CodeTaskUnknown || !strings.Contains(r.TextOf(), id) {
			t.Fatalf("%s unknown id: %q %s", tc.tool, r.Code, r.TextOf())
		}
	}
}

func TestBackgroundLimit(t *testing.T) {
	t.Parallel()
	f := newFix(t)
	var ids []string
	for range DefaultMaxBackground {
		ids = append(ids, f.start("sleep 300"))
	}
	r := f.call(context.Background(), NameBash, map[string]any{"command": "touch sixth", "run_in_background": true})
	if r.Code != CodeBackgroundLimit {
		t.Fatalf("sixth task: %q %s", r.Code, r.TextOf())
	}
	if _, err := os.Stat(f.path("sixth")); err == nil {
		t.Fatal("the refused task ran")
	}
	if n := len(f.set.Running()); n != DefaultMaxBackground {
		t.Fatalf("%d running", n)
	}
	f.call(context.Background(), NameKillShell, map[string]any{"shell_id": ids[2]})
	if id := f.start("sleep 300"); id != "bash_6" {
		t.Fatalf("after a kill the next task is %s", id)
	}
	// A foreground command is not a background task.
	if got := f.bash("echo fg"); got != "fg" {
		t.Fatal(got)
	}
}

func TestShutdownStopsBackgroundTasks(t *testing.T) {
	t.Parallel()
	f := newFix(t)
	d := tempDir(t)
	f.start("sleep 300 & echo $! > " + d + "/a; wait")
	f.start(`sh -c 'trap "" TERM; echo $$ > ` + d + `/b; while :; do sleep 0.05; done'`)
	a, b := pidIn(t, filepath.Join(d, "a")), pidIn(t, filepath.Join(d, "b"))
	running := f.set.Running()
	if len(running) != 2 || running[0].ID != "bash_1" || running[1].ID != "bash_2" || running[0].PID == 0 {
		t.Fatalf("Running %+v", running)
	}
	if _, err := os.Stat(running[0].OutputFile); err != nil {
		t.Fatalf("output file: %v", err)
	}
	if err := f.set.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int{a, b} {
		if alive(pid) {
			t.Errorf("pid %d survived Shutdown", pid)
		}
	}
	if n := len(f.set.Running()); n != 0 {
		t.Fatalf("%d still running", n)
	}
	if _, err := os.Stat(f.set.ScratchDir()); !os.IsNotExist(err) {
		t.Fatalf("scratch kept: %v", err)
	}
	if r := f.output("bash_1", ""); r.Code != CodeClosed {
		t.Fatalf("BashOutput after shutdown: %q %s", r.Code, r.TextOf())
	}
}

func TestBackgroundOutputFileCap(t *testing.T) {
	t.Parallel()
	f := newFix(t, func(c *Config) { c.BackgroundOutputLimit = 100 })
	id := f.start("head -c 1000 /dev/zero | tr '\\0' y")
	got := f.until(id, "exited with code 0")
	if strings.TrimSpace(got) != strings.Repeat("y", 100) {
		t.Fatalf("output %q", got)
	}
	// The drop note travels with every later read too.
	r := f.output(id, "")
	if !strings.Contains(r.TextOf(), "100-byte limit") || !strings.Contains(r.TextOf(), "900 bytes after it were dropped") {
		t.Fatalf("no truncation note: %q", r.TextOf())
	}
}

func TestAutoBackgroundEligibility(t *testing.T) {
	t.Parallel()
	tests := []struct {
		command string
		want    bool
	}{
		{"npm test", true},
		{"make -j4 && ./run-tests", true},
		{"echo hi; sleep 10", true},
		{"[ -e x ] || make", true},
		{"while [ ! -e done ]; do sleep 1; done", true},
		{"python3 -c 'print(\"git\")'", true}, // a quoted argument that merely contains git
		{"git status", false},
		{"make && git push", false},
		{"echo $(git rev-parse HEAD)", false},
		{"/usr/bin/git log", false},
		{"cd x && \"git\" fetch", false},
		{"env GIT_DIR=x git fetch", false},
		{"sleep 10; echo done", false},
		{"sleep 10 && make", false},
		{"$CMD build", false},
		{"echo ${dir}git", false},
		{"echo 'unterminated", false},
		{"", false},
	}
	for _, tc := range tests {
		if got := autoBackgroundEligible(tc.command); got != tc.want {
			t.Errorf("autoBackgroundEligible(%q) = %v, want %v", tc.command, got, tc.want)
		}
	}
}

func TestAutoBackgroundAdoption(t *testing.T) {
	t.Parallel()
	f := newFix(t, func(c *Config) { c.AutoBackgroundOnTimeout = true })
	// The command prints, then waits for the test's go file, so it is still running at its
	// timeout whatever the machine's load; the timeout leaves a loaded machine seconds to
	// start the shell and print "early" before the adoption reads what was shown.
	cmd := "echo early; while [ ! -e go ]; do sleep 0.02; done; echo late"
	r := f.call(context.Background(), NameBash, map[string]any{"command": cmd, "timeout": 3000})
	if r.IsError {
		t.Fatalf("adoption answered an error: %s %s", r.Code, r.TextOf())
	}
	if !strings.HasPrefix(r.TextOf(), "early\n\n") || !strings.Contains(r.TextOf(), "moved to the background as bash_1") {
		t.Fatalf("answer %q", r.TextOf())
	}
	if len(f.set.Running()) != 1 {
		t.Fatal("the adopted command is not running")
	}
	f.put("go", "")
	if got := f.until("bash_1", "exited with code 0"); got != "late\n" {
		t.Fatalf("adopted output %q (the part already shown must not repeat)", got)
	}

	// Not eligible: killed as without the option.
	d := tempDir(t)
	r = f.call(context.Background(), NameBash, map[string]any{"command": "sleep 300 & echo $! > " + d + "/s; sleep 300", "timeout": 300})
	if r.Code != CodeTimedOut {
		t.Fatalf("sleep-first command: %q %s", r.Code, r.TextOf())
	}
	if alive(pidIn(t, filepath.Join(d, "s"))) {
		t.Fatal("the ineligible command survived")
	}
	r = f.call(context.Background(), NameBash, map[string]any{"command": "while :; do git --version >/dev/null; sleep 0.02; done", "timeout": 300})
	if r.Code != CodeTimedOut {
		t.Fatalf("git command: %q %s", r.Code, r.TextOf())
	}
}

func TestAutoBackgroundNeedsAFreeSlot(t *testing.T) {
	t.Parallel()
	f := newFix(t, func(c *Config) { c.AutoBackgroundOnTimeout = true; c.MaxBackground = 1 })
	f.start("sleep 300")
	r := f.call(context.Background(), NameBash, map[string]any{"command": "echo x; while :; do sleep 0.02; done", "timeout": 300})
	if r.Code != CodeTimedOut {
		t.Fatalf("with no free slot: %q %s", r.Code, r.TextOf())
	}
}

func TestTimeoutKillsByDefault(t *testing.T) {
	t.Parallel()
	f := newFix(t)
	r := f.call(context.Background(), NameBash, map[string]any{"command": "echo x; while :; do sleep 0.02; done", "timeout": 300})
	if r.Code != CodeTimedOut || !strings.HasPrefix(r.TextOf(), "x\n\n") {
		t.Fatalf("%q %s", r.Code, r.TextOf())
	}
	if len(f.set.Running()) != 0 {
		t.Fatal("adopted without the option")
	}
}
