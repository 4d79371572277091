package shell

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/env/envtest"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/tools"
)

func TestBashAnswers(t *testing.T) {
	t.Parallel()
	f := newFix(t)
	tests := []struct {
		name    string
		command string
		want    string // the whole answer
	}{
		{"output", "echo hello", "hello"},
		{"no output", "true", "(no output)"},
		{"exit code", "echo oops; exit 3", "oops\n\nThe command exited with code 3."},
		{"interleaved", "echo out1; echo err1 >&2; echo out2; echo err2 >&2", "out1\nerr1\nout2\nerr2"},
		{"stderr only", "echo bad >&2; false", "bad\n\nThe command exited with code 1."},
		{"signal", "kill -KILL $$", "(no output)\n\nThe command ended by signal 9 (killed)."},
		{"stdin is empty", "cat; echo done", "done"},
		{"syntax error keeps its line", "echo 'unterminated", "bash: -c: line 1: unexpected EOF while looking for matching `''\n\nThe command exited with code 2."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := f.call(context.Background(), NameBash, map[string]any{"command": tc.command})
			if r.IsError {
				t.Fatalf("error result %s: %s", r.Code, r.TextOf())
			}
			if got := r.TextOf(); got != tc.want {
				t.Errorf("answer\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// Not parallel: it changes the process environment every command inherits.
func TestShellIgnoresFunctionsAndStartupFilesFromTheEnvironment(t *testing.T) {
	rc := filepath.Join(t.TempDir(), "rc")
	if err := os.WriteFile(rc, []byte("echo sourced\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BASH_FUNC_ls%%", "() { echo hijacked; }")
	t.Setenv("BASH_ENV", rc)
	f := newFix(t)
	if got := f.bash("type -t ls; ls -d ."); got != "file\n." {
		t.Fatalf("answer %q", got)
	}
}

func TestBashRefusesBadInput(t *testing.T) {
	t.Parallel()
	f := newFix(t)
	tests := []struct {
		name  string
		input map[string]any
		code  string
	}{
		{"timeout above the maximum", map[string]any{"command": "true", "timeout": 600001}, CodeTimeoutInvalid},
		{"timeout zero", map[string]any{"command": "true", "timeout": 0}, CodeTimeoutInvalid},
		{"timeout negative", map[string]any{"command": "true", "timeout": -5}, CodeTimeoutInvalid},
		{"timeout huge", map[string]any{"command": "true", "timeout": 1e300}, CodeTimeoutInvalid},
		{"empty command", map[string]any{"command": "  "}, tools.CodeInputInvalid},
		{"unknown field", map[string]any{"command": "true", "sandbox": false}, tools.CodeInputInvalid},
		{"background timeout checked too", map[string]any{"command": "true", "timeout": 700000, "run_in_background": true}, CodeTimeoutInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := f.call(context.Background(), NameBash, tc.input)
			if !r.IsError || r.Code != tc.code {
				t.Fatalf("got %v %q: %s; want code %s", r.IsError, r.Code, r.TextOf(), tc.code)
			}
		})
	}
	t.Run("maximum timeout accepted", func(t *testing.T) {
		r := f.call(context.Background(), NameBash, map[string]any{"command": "echo ok", "timeout": 600000})
		if r.IsError || r.TextOf() != "ok" {
			t.Fatalf("%s: %s", r.Code, r.TextOf())
		}
	})
	t.Run("timeout message names the limit", func(t *testing.T) {
		r := f.call(context.Background(), NameBash, map[string]any{"command": "true", "timeout": 600001})
		if !strings.Contains(r.TextOf(), "600000") {
			t.Fatalf("message does not name the limit: %s", r.TextOf())
		}
	})
}

func TestTimeoutKillsTheWholeGroup(t *testing.T) {
	t.Parallel()
	f := newFix(t)
	d := tempDir(t)
	// A child that ignores SIGTERM and a grandchild in the background: both must be gone
	// when the call returns.
	cmd := `sh -c 'trap "" TERM; echo $$ > ` + d + `/stubborn; while :; do sleep 0.05; done' &
(sleep 300 & echo $! > ` + d + `/grandchild; wait) &
wait`
	r := f.call(context.Background(), NameBash, map[string]any{"command": cmd, "timeout": 1500})
	if r.Code != CodeTimedOut || !r.IsError {
		t.Fatalf("got %q: %s", r.Code, r.TextOf())
	}
	for _, name := range []string{"stubborn", "grandchild"} {
		pid := pidIn(t, filepath.Join(d, name))
		if alive(pid) {
			t.Errorf("%s (pid %d) survived the timeout", name, pid)
		}
	}
	if !strings.Contains(r.TextOf(), "timeout of 1500 ms") {
		t.Errorf("answer does not explain the timeout: %s", r.TextOf())
	}
}

func TestCancellationKillsTheGroup(t *testing.T) {
	t.Parallel()
	f := newFix(t)
	d := tempDir(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan tools.Result, 1)
	go func() {
		done <- f.call(ctx, NameBash, map[string]any{"command": "echo started; sleep 300 & echo $! > " + d + "/child; wait"})
	}()
	pid := pidIn(t, filepath.Join(d, "child"))
	cancel()
	r := <-done
	if r.Code != tools.CodeCancelled || !r.IsError {
		t.Fatalf("got %q: %s", r.Code, r.TextOf())
	}
	if !strings.HasPrefix(r.TextOf(), "started") || !strings.Contains(r.TextOf(), "interrupted") {
		t.Errorf("answer lacks the output so far or the interruption: %q", r.TextOf())
	}
	if alive(pid) {
		t.Errorf("child %d survived the cancellation", pid)
	}
}

func TestCancelledBeforeStartRunsNothing(t *testing.T) {
	t.Parallel()
	f := newFix(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := f.call(ctx, NameBash, map[string]any{"command": "touch ran"})
	if r.Code != tools.CodeCancelled {
		t.Fatalf("got %q", r.Code)
	}
	if _, err := os.Stat(f.path("ran")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the command ran: %v", err)
	}
}

func TestLeftoverProcessesEndWithTheShell(t *testing.T) {
	t.Parallel()
	f := newFix(t)
	d := tempDir(t)
	out := f.bash("sleep 300 & echo $! > " + d + "/left; echo back")
	if out != "back" {
		t.Fatalf("answer %q", out)
	}
	if pid := pidIn(t, filepath.Join(d, "left")); alive(pid) {
		t.Fatalf("the background sleep %d outlived its call", pid)
	}
}

func TestOutputCapBoundaries(t *testing.T) {
	t.Parallel()
	f := newFix(t)
	marker := "characters elided"
	tests := []struct {
		n      int
		elided string
	}{
		{29999, ""},
		{30000, ""},
		{30001, "[1 character elided]"},
		{45000, "[15000 characters elided]"},
	}
	for _, tc := range tests {
		t.Run("", func(t *testing.T) {
			// a's then b's then c's, so the kept ends are recognisable.
			cmd := "{ head -c 15000 /dev/zero | tr '\\0' a; head -c " + itoa(tc.n-30000) + " /dev/zero | tr '\\0' b; head -c 15000 /dev/zero | tr '\\0' c; }"
			if tc.n < 30000 {
				cmd = "head -c " + itoa(tc.n) + " /dev/zero | tr '\\0' x"
			}
			if tc.n == 30000 {
				cmd = "head -c 15000 /dev/zero | tr '\\0' a; head -c 15000 /dev/zero | tr '\\0' c"
			}
			got := f.bash(cmd)
			if tc.elided == "" {
				if strings.Contains(got, marker) || len(got) != tc.n {
					t.Fatalf("%d characters: answer has %d bytes (elision %v)", tc.n, len(got), strings.Contains(got, marker))
				}
				return
			}
			head, tail, ok := strings.Cut(got, "\n\n... "+tc.elided+" ...\n\n")
			if !ok {
				t.Fatalf("no %q line in %q...", tc.elided, got[:min(len(got), 200)])
			}
			if head != strings.Repeat("a", 15000) || tail != strings.Repeat("c", 15000) {
				t.Fatalf("kept ends are wrong: head %d bytes %q..., tail %d bytes", len(head), head[:10], len(tail))
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestWorkingDirectoryCarries(t *testing.T) {
	t.Parallel()
	f := newFix(t)
	outside := tempDir(t)
	if err := os.Mkdir(f.path("sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, f.path("escape")); err != nil {
		t.Fatal(err)
	}

	steps := []struct {
		command string
		want    string // exact answer
	}{
		{"pwd", f.root},
		{"cd sub", "(no output)"},
		{"pwd", f.path("sub")},
		// The command's own output cannot move the directory.
		{"echo " + outside, outside},
		{"pwd", f.path("sub")},
		{"cd ..; mkdir -p deep/er; cd deep/er", "(no output)"},
		{"pwd", f.path("deep/er")},
		// exec replaces the shell: the trap never runs, nothing changes.
		{"cd " + f.root + " && exec true", "(no output)"},
		{"pwd", f.path("deep/er")},
		{"cd " + outside, "(no output)\n\nThe shell ended in " + outside + ", which is not a directory inside the read roots; the next command starts in " + f.root + "."},
		{"pwd", f.root},
		// A link inside the root that leads outside is judged by where it leads.
		{"cd escape", "(no output)\n\nThe shell ended in " + outside + ", which is not a directory inside the read roots; the next command starts in " + f.root + "."},
		{"pwd", f.root},
		// Environment variables do not carry.
		{"export SEMA_TEST_VAR=1; cd sub", "(no output)"},
		{"echo ${SEMA_TEST_VAR:-unset}", "unset"},
	}
	for _, st := range steps {
		if got := f.bash(st.command); got != st.want {
			t.Fatalf("%q answered\n%q\nwant\n%q", st.command, got, st.want)
		}
	}
	// The directory vanishes between calls: the next command runs in the root.
	if err := os.Remove(f.path("sub")); err != nil {
		t.Fatal(err)
	}
	want := f.root + "\n\nThe working directory " + f.path("sub") + " no longer exists; the command ran in " + f.root + "."
	if got := f.bash("pwd"); got != want {
		t.Fatalf("after removal: %q, want %q", got, want)
	}
}

func TestPermissionHook(t *testing.T) {
	t.Parallel()
	var seen []PermissionRequest
	f := newFix(t, func(c *Config) {
		c.Permission = func(ctx context.Context, req PermissionRequest) error {
			seen = append(seen, req)
			switch {
			case strings.Contains(req.Command, "deny-coded"):
				return sema.Errorf("permission.rule_denied", "a deny rule matches")
			case strings.Contains(req.Command, "deny"):
				return errors.New("no approver")
			case strings.Contains(req.Command, "panic"):
				panic("hook broke")
			}
			return nil
		}
	})
	tests := []struct {
		command string
		code    string
	}{
		{"echo deny-coded > a", "permission.rule_denied"},
		{"echo deny > a", permission.CodeDenied},
		{"echo panic > a", tools.CodePermissionFailed},
	}
	for _, tc := range tests {
		r := f.call(context.Background(), NameBash, map[string]any{"command": tc.command, "description": "d"})
		if !r.IsError || r.Code != tc.code {
			t.Fatalf("%q: got %q %s", tc.command, r.Code, r.TextOf())
		}
		if _, err := os.Stat(f.path("a")); err == nil {
			t.Fatalf("%q ran although refused", tc.command)
		}
	}
	if got := f.bash("echo allowed"); got != "allowed" {
		t.Fatal(got)
	}
	last := seen[len(seen)-1]
	if last.Tool != NameBash || last.Command != "echo allowed" || last.Dir != f.root || last.Timeout != DefaultTimeout || last.ProvenReadOnly {
		t.Fatalf("request %+v", last)
	}
}

func TestNewRefuses(t *testing.T) {
	t.Parallel()
	root := tempDir(t)
	h := env.NewHost()
	fc, err := fence.New(context.Background(), fence.Config{Env: h, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	mem := envtest.NewMem()
	tests := []struct {
		name string
		cfg  Config
		code string
	}{
		{"no env", Config{Fence: fc}, CodeEnvMissing},
		{"env that cannot run programs", Config{Env: mem, Fence: fc}, CodeEnvNotExecutor},
		{"faulty wrapper hides the executor", Config{Env: envtest.NewFaulty(h), Fence: fc}, CodeEnvNotExecutor},
		{"no fence", Config{Env: h}, CodeFenceMissing},
		{"co-author without email", Config{Env: h, Fence: fc, CommitCoAuthor: "Just A Name"}, CodeCoAuthorInvalid},
		{"co-author over two lines", Config{Env: h, Fence: fc, CommitCoAuthor: "A <a@x>\nSigned-off-by: B <b@x>"}, CodeCoAuthorInvalid},
		{"co-author without name", Config{Env: h, Fence: fc, CommitCoAuthor: "<a@x>"}, CodeCoAuthorInvalid},
		{"scratch parent missing", Config{Env: h, Fence: fc, ScratchDir: filepath.Join(root, "missing")}, CodeScratchInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(tc.cfg)
			if err == nil {
				s.Close()
				t.Fatal("accepted")
			}
			if !sema.IsCode(err, tc.code) {
				t.Fatalf("got %v, want %s", err, tc.code)
			}
		})
	}
	s, err := New(Config{Env: h, Fence: fc, CommitCoAuthor: "Sema Bot <bot@example.com>", ScratchDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.trailer; got != "Co-Authored-By: Sema Bot <bot@example.com>" {
		t.Fatalf("trailer %q", got)
	}
	s.Close()
}

func TestToolSpecs(t *testing.T) {
	t.Parallel()
	full := newFix(t)
	ro := newFix(t, func(c *Config) { c.ReadOnly = true })
	want := map[string]tools.Effect{NameBash: tools.EffectExec, NameBashOutput: tools.EffectRead, NameKillShell: tools.EffectExec}
	var names []string
	for _, tl := range full.set.Tools() {
		names = append(names, tl.Spec().Name)
		if tl.Spec().Effect != want[tl.Spec().Name] {
			t.Errorf("%s effect %s", tl.Spec().Name, tl.Spec().Effect)
		}
	}
	if strings.Join(names, ",") != "Bash,BashOutput,KillShell" {
		t.Errorf("full set %v", names)
	}
	rt := ro.set.Tools()
	if len(rt) != 1 || rt[0].Spec().Name != NameBashReadonly || rt[0].Spec().Effect != tools.EffectRead {
		t.Errorf("read-only set %v", rt)
	}
}

func TestShutdownRefusesLaterCalls(t *testing.T) {
	t.Parallel()
	f := newFix(t)
	scratch := f.set.ScratchDir()
	if err := f.set.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(scratch); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("scratch directory kept: %v", err)
	}
	for _, in := range []map[string]any{{"command": "true"}, {"command": "true", "run_in_background": true}} {
		if r := f.call(context.Background(), NameBash, in); r.Code != CodeClosed {
			t.Fatalf("%v after shutdown: %q", in, r.Code)
		}
	}
}

func TestShutdownInterruptsAForegroundCommand(t *testing.T) {
	t.Parallel()
	f := newFix(t)
	d := tempDir(t)
	done := make(chan tools.Result, 1)
	go func() {
		done <- f.call(context.Background(), NameBash, map[string]any{"command": "echo $$ > " + d + "/sh; sleep 300"})
	}()
	pid := pidIn(t, filepath.Join(d, "sh"))
	if err := f.set.Close(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.Code != CodeClosed {
		t.Fatalf("got %q: %s", r.Code, r.TextOf())
	}
	if alive(pid) {
		t.Fatal("the shell survived Shutdown")
	}
}

func TestCommandsNeverWaitForATerminalPrompt(t *testing.T) {
	t.Parallel()
	f := newFix(t)
	if got := f.bash(`echo "prompt=$GIT_TERMINAL_PROMPT"`); got != "prompt=0" {
		t.Fatalf("got %q", got)
	}
}
