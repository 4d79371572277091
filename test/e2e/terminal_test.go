package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// TestTerminalSession drives `sema` in a terminal as a person would: a prompt, the
// streamed answer, an edit question answered 1, the file written, Ctrl-C twice, exit 0.
func TestTerminalSession(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (apt-get install tmux): the terminal session is not driven")
	}
	dir := writeTree(t, map[string]string{"main.go": "package main\n\n// Helo, world\n"})
	script := writeScript(t, `{"turns":[
		{"tool_calls":[{"name":"Read","input":{"file_path":"main.go"}}]},
		{"text":"Let me **fix** the greeting.","tool_calls":[{"name":"Edit","input":{"file_path":"main.go","old_string":"Helo","new_string":"Hello"}}]},
		{"text":"Fixed the greeting in main.go."}]}`)
	tmp := t.TempDir()
	exitFile := filepath.Join(tmp, "exit")
	launch := fmt.Sprintf("cd %q && env -i PATH=%q HOME=%q SEMA_HOME=%q TERM=xterm-256color %q --model scripted/%s --sandbox off; echo $? > %q; sleep 60",
		dir, os.Getenv("PATH"), tmp, filepath.Join(tmp, "state"), semaBin, script, exitFile)
	s := &tmuxSession{t: t, sock: filepath.Join(tmp, "tmux.sock")}
	s.tmux("new-session", "-d", "-s", "sema", "-x", "100", "-y", "30", launch)
	t.Cleanup(func() { exec.Command("tmux", "-S", s.sock, "kill-server").Run() })

	s.waitFor("/help for keys")
	s.tmux("send-keys", "-t", "sema", "-l", "fix the greeting")
	s.tmux("send-keys", "-t", "sema", "Enter")
	s.waitFor("permission · Edit")
	if scr := s.screen(); !strings.Contains(scr, "Let me fix the greeting.") || !strings.Contains(scr, "2 allow always: Edit(main.go)") {
		t.Fatalf("the answer or the question's choices are missing:\n%s", scr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "main.go")); strings.Contains(string(b), "Hello") {
		t.Fatal("the edit landed before it was allowed")
	}
	s.tmux("send-keys", "-t", "sema", "1")
	s.waitFor("Fixed the greeting in main.go.")
	if b, _ := os.ReadFile(filepath.Join(dir, "main.go")); !strings.Contains(string(b), "// Hello, world") {
		t.Fatalf("main.go after the edit was allowed: %q", b)
	}
	s.tmux("send-keys", "-t", "sema", "C-c")
	s.waitFor("press Ctrl-C again to exit")
	s.tmux("send-keys", "-t", "sema", "C-c")
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := os.ReadFile(exitFile)
		if err == nil && strings.TrimSpace(string(b)) != "" {
			if code := strings.TrimSpace(string(b)); code != "0" {
				t.Fatalf("sema exited %s after Ctrl-C twice, want 0:\n%s", code, s.screen())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sema did not exit after Ctrl-C twice:\n%s", s.screen())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
