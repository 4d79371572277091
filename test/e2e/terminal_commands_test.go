package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTerminalSlashCommands drives the session's slash commands in the real binary: a
// workspace's custom command expands as it does headless, /model runs the next turn on
// another model in the same session, and /permissions and /sandbox report the run.
func TestTerminalSlashCommands(t *testing.T) {
	needTmux(t)
	dir := writeTree(t, map[string]string{
		"main.go":                 "package main\n",
		".sema/commands/greet.md": "---\ndescription: Greet someone\n---\nSay hello to $ARGUMENTS.\n",
	})
	// The scripted model answers the conversation whose first prompt is the expanded
	// command, and only that one: an unexpanded "/greet Ada" finds no turn.
	first := writeScript(t, `{"turns":[],"threads":[{"match":"Say hello to Ada.","turns":[{"text":"HELLO ADA"}]}]}`)
	second := writeScript(t, `{"turns":[],"threads":[{"match":"Say hello to Ada.","turns":[{"text":"FROM THE SECOND MODEL"}]}]}`)
	tmp := t.TempDir()
	exitFile := filepath.Join(tmp, "exit")
	launch := fmt.Sprintf("cd %q && env -i PATH=%q HOME=%q SEMA_HOME=%q TERM=xterm-256color %q --model scripted/%s --sandbox off --allowed-tools 'Bash(go test *)' 2>%q; echo $? > %q; sleep 60",
		dir, os.Getenv("PATH"), tmp, filepath.Join(tmp, "state"), semaBin, first, filepath.Join(tmp, "stderr"), exitFile)
	s := &tmuxSession{t: t, sock: filepath.Join(tmp, "tmux.sock")}
	s.tmux("new-session", "-d", "-s", "sema", "-x", "120", "-y", "50", launch)
	t.Cleanup(func() { exec.Command("tmux", "-S", s.sock, "kill-server").Run() })
	send := func(line string) {
		s.tmux("send-keys", "-t", "sema", "-l", line)
		s.tmux("send-keys", "-t", "sema", "Enter")
	}

	s.waitFor("/help for keys")
	send("/help")
	s.waitFor("Greet someone")
	send("/greet Ada")
	s.waitFor("HELLO ADA")
	send("/model scripted/" + second)
	s.waitFor("from the next turn on")
	send("again")
	s.waitFor("FROM THE SECOND MODEL")
	send("/permissions")
	s.waitFor("ALLOW Bash(go test *) — --allowed-tools")
	send("/sandbox")
	s.waitFor("sandbox off: commands run unconfined")
	send("/exit")
	s.waitExit(exitFile, "/exit")
	if b, _ := os.ReadFile(filepath.Join(tmp, "stderr")); strings.TrimSpace(string(b)) != "" {
		t.Errorf("the session wrote to stderr:\n%s", b)
	}
}
