package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sema-agent/sema/model/anthropic/anthropictest"
)

// tmuxSession runs the binary in a detached tmux session of its own server, so the test
// types into a real terminal and reads its screen.
type tmuxSession struct {
	t    *testing.T
	sock string
}

func (s *tmuxSession) tmux(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", s.sock}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (s *tmuxSession) screen() string { return s.tmux("capture-pane", "-p", "-t", "sema") }

// waitFor polls the screen until it shows want.
func (s *tmuxSession) waitFor(want string) {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Contains(s.screen(), want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("the screen did not show %q in 20s:\n%s", want, s.screen())
}

// TestTerminalSession drives `sema` in a terminal as a person would, against the
// Anthropic wire format a local server streams: a prompt, the streamed answer, an edit question answered 1 (the file is written), a Bash question
// answered 3 (the command does not run), Shift+Tab to acceptEdits (the next edit runs
// without a question), /help, Ctrl-C twice, exit 0; then `sema -p --continue` continues
// the session the terminal left.
func TestTerminalSession(t *testing.T) {
	needTmux(t)
	dir := writeTree(t, map[string]string{"main.go": "package main\n\n// Helo, world\n"})
	// The model is the Anthropic Messages API's wire format, streamed by a local server.
	srv := anthropictest.NewServer(t,
		anthropictest.Turn{ToolCalls: []anthropictest.ToolCall{{Name: "Read", Input: `{"file_path":"main.go"}`}}},
		anthropictest.Turn{Text: "Let me **fix** the greeting.", ToolCalls: []anthropictest.ToolCall{{Name: "Edit", Input: `{"file_path":"main.go","old_string":"Helo","new_string":"Hello"}`}}},
		anthropictest.Turn{Text: "Now the check.", ToolCalls: []anthropictest.ToolCall{{Name: "Bash", Input: `{"command":"touch ran.txt"}`}}},
		anthropictest.Turn{Text: "Fixed the greeting in main.go."},
		anthropictest.Turn{ToolCalls: []anthropictest.ToolCall{{Name: "Edit", Input: `{"file_path":"main.go","old_string":"Hello, world","new_string":"Hello, terminal"}`}}},
		anthropictest.Turn{Text: "Edited again."},
	)
	tmp := t.TempDir()
	state := filepath.Join(tmp, "state")
	exitFile := filepath.Join(tmp, "exit")
	launch := fmt.Sprintf("cd %q && env -i PATH=%q HOME=%q SEMA_HOME=%q TERM=xterm-256color ANTHROPIC_API_KEY=test-key ANTHROPIC_BASE_URL=%q %q --model anthropic/claude-sonnet-4-5 --sandbox off; echo $? > %q; sleep 60",
		dir, os.Getenv("PATH"), tmp, state, srv.URL(), semaBin, exitFile)
	s := &tmuxSession{t: t, sock: filepath.Join(tmp, "tmux.sock")}
	s.tmux("new-session", "-d", "-s", "sema", "-x", "100", "-y", "40", launch)
	t.Cleanup(func() { exec.Command("tmux", "-S", s.sock, "kill-server").Run() })
	mainGo := func() string { b, _ := os.ReadFile(filepath.Join(dir, "main.go")); return string(b) }

	s.waitFor("/help for keys")
	s.tmux("send-keys", "-t", "sema", "-l", "fix the greeting")
	s.tmux("send-keys", "-t", "sema", "Enter")
	s.waitFor("permission · Edit")
	if scr := s.screen(); !strings.Contains(scr, "Let me fix the greeting.") || !strings.Contains(scr, "2 allow always: Edit(main.go)") {
		t.Fatalf("the answer or the question's choices are missing:\n%s", scr)
	}
	if strings.Contains(mainGo(), "Hello") {
		t.Fatal("the edit landed before it was allowed")
	}
	s.tmux("send-keys", "-t", "sema", "1")
	s.waitFor("permission · Bash")
	if !strings.Contains(mainGo(), "// Hello, world") {
		t.Fatalf("main.go after the edit was allowed: %q", mainGo())
	}
	// 3 denies and asks for a sentence to the model; Enter sends it with the denial.
	s.tmux("send-keys", "-t", "sema", "3")
	s.waitFor("tell the model why")
	s.tmux("send-keys", "-t", "sema", "-l", "not now")
	s.tmux("send-keys", "-t", "sema", "Enter")
	s.waitFor("told the model: not now")
	s.waitFor("Fixed the greeting in main.go.")
	if _, err := os.Stat(filepath.Join(dir, "ran.txt")); err == nil {
		t.Fatal("the denied command ran")
	}

	s.tmux("send-keys", "-t", "sema", "BTab")
	s.waitFor("mode: acceptEdits")
	s.tmux("send-keys", "-t", "sema", "-l", "once more")
	s.tmux("send-keys", "-t", "sema", "Enter")
	s.waitFor("Edited again.")
	if !strings.Contains(mainGo(), "// Hello, terminal") {
		t.Fatalf("main.go after the edit in acceptEdits: %q", mainGo())
	}
	if strings.Count(s.screen(), "permission · ") != 0 {
		t.Fatalf("a question is open in acceptEdits:\n%s", s.screen())
	}
	s.tmux("send-keys", "-t", "sema", "-l", "/help")
	s.tmux("send-keys", "-t", "sema", "Enter")
	s.waitFor("keys and commands")

	s.tmux("send-keys", "-t", "sema", "C-c")
	s.waitFor("press Ctrl-C again to exit")
	s.tmux("send-keys", "-t", "sema", "C-c")
	s.waitExit(exitFile, "Ctrl-C twice")

	// The session the terminal left is an ordinary session: a headless run continues it.
	next := writeScript(t, `{"turns":[{"text":"continued"}]}`)
	r := sema(t, dir, []string{"SEMA_HOME=" + state}, "", "-p", "--continue", "--model", "scripted/"+next, "--sandbox", "off", "--output-format", "json", "what happened?")
	if r.code != 0 {
		t.Fatalf("sema -p --continue: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// The continued session keeps the mode the person chose with Shift+Tab: only the
	// terminal's session recorded acceptEdits.
	mode, _ := jsonResult(t, r.stdout)["manifest"].(map[string]any)["permission_mode"].(map[string]any)
	if mode["effective"] != "acceptEdits" {
		t.Errorf("sema -p --continue ran in %v, want the terminal session's acceptEdits:\n%s", mode, r.stdout)
	}
}

// needTmux skips a terminal test where tmux is missing, and fails it in CI, which
// installs tmux (.ci/run).
func needTmux(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("SEMA_CI") != "" {
			t.Fatalf("SEMA_CI is set and tmux is missing: .ci/run installs it (%v)", err)
		}
		t.Skip("tmux is not installed (apt-get install tmux): the terminal session is not driven")
	}
}

// waitExit waits for the program in the session to end (its status written to
// exitFile) and fails unless it ended with 0; after says what was done to end it.
func (s *tmuxSession) waitExit(exitFile, after string) {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if b, err := os.ReadFile(exitFile); err == nil && strings.TrimSpace(string(b)) != "" {
			if code := strings.TrimSpace(string(b)); code != "0" {
				s.t.Fatalf("sema exited %s after %s, want 0:\n%s", code, after, s.screen())
			}
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("sema did not exit after %s:\n%s", after, s.screen())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
