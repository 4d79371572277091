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

// TestTerminalFirstPrompt: `sema "PROMPT"` at a terminal opens the session with that
// prompt already sent, as `sema -i "PROMPT"` does; the same words without a terminal are
// refused (a script meant sema -p), which TestUsageErrorsAreCodedAndSayWhatToDo pins.
// Then a "!" line runs the person's command.
func TestTerminalFirstPrompt(t *testing.T) {
	needTmux(t)
	dir := writeTree(t, map[string]string{"main.go": "package main\n"})
	// The scripted model answers only a conversation that opened with this prompt.
	script := writeScript(t, `{"turns":[],"threads":[{"match":"explain this repo","turns":[{"text":"IT IS ONE FILE"}]}]}`)
	tmp := t.TempDir()
	exitFile := filepath.Join(tmp, "exit")
	launch := fmt.Sprintf("cd %q && env -i PATH=%q HOME=%q SEMA_HOME=%q TERM=xterm-256color %q --model scripted/%s --sandbox off 'explain this repo'; echo $? > %q; sleep 60",
		dir, os.Getenv("PATH"), tmp, filepath.Join(tmp, "state"), semaBin, script, exitFile)
	s := &tmuxSession{t: t, sock: filepath.Join(tmp, "tmux.sock")}
	s.tmux("new-session", "-d", "-s", "sema", "-x", "100", "-y", "30", launch)
	t.Cleanup(func() { exec.Command("tmux", "-S", s.sock, "kill-server").Run() })

	s.waitFor("IT IS ONE FILE")
	s.waitFor("/help for keys")
	// A "!" line runs through the gate as the person's own command: no question.
	s.tmux("send-keys", "-t", "sema", "-l", "!echo typed-by-hand > shelled.txt")
	s.tmux("send-keys", "-t", "sema", "Enter")
	waitFileHolds(t, filepath.Join(dir, "shelled.txt"), "typed-by-hand\n")
	if strings.Contains(s.screen(), "permission · ") {
		t.Fatalf("the typed line asked a question:\n%s", s.screen())
	}
	s.tmux("send-keys", "-t", "sema", "-l", "/exit")
	s.tmux("send-keys", "-t", "sema", "Enter")
	s.waitExit(exitFile, "/exit")
}

// waitFileHolds waits until path holds want.
func waitFileHolds(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && string(b) == want {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	b, err := os.ReadFile(path)
	t.Fatalf("%s holds %q (%v) after 20s; want %q", path, b, err, want)
}
