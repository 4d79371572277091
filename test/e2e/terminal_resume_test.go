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

// TestTerminalResumeAndRewind drives `sema --resume` with no id in a terminal: the
// picker lists the directory's sessions, Down and Enter continue the older one (its
// next prompt runs in it), /rewind to its first turn's files deletes the file that turn
// wrote, /clear starts afresh, and Ctrl-C twice exits 0.
func TestTerminalResumeAndRewind(t *testing.T) {
	needTmux(t)
	dir := writeTree(t, map[string]string{"main.go": "package main\n"})
	tmp := t.TempDir()
	state := filepath.Join(tmp, "state")
	headless := func(script, prompt string) string {
		r := sema(t, dir, []string{"SEMA_HOME=" + state}, "", "-p", "--model", "scripted/"+writeScript(t, script),
			"--sandbox", "off", "--permission-mode", "acceptEdits", "--output-format", "json", prompt)
		if r.code != 0 {
			t.Fatalf("sema -p %q: exit %d\n%s\n%s", prompt, r.code, r.stdout, r.stderr)
		}
		return jsonResult(t, r.stdout)["session_id"].(string)
	}
	first := headless(`{"turns":[{"tool_calls":[{"name":"Write","input":{"file_path":"notes.txt","content":"agent notes\n"}}]},{"text":"wrote the notes"}]}`, "write the notes")
	headless(`{"turns":[{"text":"second answer"}]}`, "second task")

	script := writeScript(t, `{"turns":[{"text":"continued the first"}]}`)
	exitFile := filepath.Join(tmp, "exit")
	launch := fmt.Sprintf("cd %q && env -i PATH=%q HOME=%q SEMA_HOME=%q TERM=xterm-256color %q --resume --model scripted/%s --sandbox off; echo $? > %q; sleep 60",
		dir, os.Getenv("PATH"), tmp, state, semaBin, script, exitFile)
	s := &tmuxSession{t: t, sock: filepath.Join(tmp, "tmux.sock")}
	s.tmux("new-session", "-d", "-s", "sema", "-x", "100", "-y", "40", launch)
	t.Cleanup(func() { exec.Command("tmux", "-S", s.sock, "kill-server").Run() })

	s.waitFor("resume a session of this directory")
	s.waitFor("“second task”") // the picker opens "reading…", then lists them
	if scr := s.screen(); !strings.Contains(scr, "“second task”") || !strings.Contains(scr, "“write the notes”") || !strings.Contains(scr, first) {
		t.Fatalf("the picker does not list both sessions:\n%s", scr)
	}
	s.tmux("send-keys", "-t", "sema", "Down")
	s.tmux("send-keys", "-t", "sema", "Enter")
	s.waitFor("continuing “write the notes” (" + first + "), 2 turns")
	s.tmux("send-keys", "-t", "sema", "-l", "and then?")
	s.tmux("send-keys", "-t", "sema", "Enter")
	s.waitFor("continued the first")

	notes := filepath.Join(dir, "notes.txt")
	if _, err := os.Stat(notes); err != nil {
		t.Fatalf("the first session's file: %v", err)
	}
	s.tmux("send-keys", "-t", "sema", "-l", "/rewind")
	s.tmux("send-keys", "-t", "sema", "Enter")
	s.waitFor("rewind to the start of a turn")
	// The picker opens "reading…" and lists the turns once the session and its file
	// history are read.
	s.waitFor("changed notes.txt")
	s.tmux("send-keys", "-t", "sema", "Down")
	s.tmux("send-keys", "-t", "sema", "Down")
	s.tmux("send-keys", "-t", "sema", "Enter")
	s.tmux("send-keys", "-t", "sema", "f")
	s.waitFor("deleted   notes.txt")
	if _, err := os.Stat(notes); err != nil {
		t.Fatalf("the plan changed a file before y: %v", err)
	}
	s.tmux("send-keys", "-t", "sema", "y")
	s.waitFor("rewound to the start of turn 1: files: 1 deleted")
	if _, err := os.Stat(notes); !os.IsNotExist(err) {
		t.Fatalf("notes.txt after the rewind: %v", err)
	}
	s.tmux("send-keys", "-t", "sema", "-l", "/clear")
	s.tmux("send-keys", "-t", "sema", "Enter")
	s.waitFor("the next prompt starts a new session")

	s.tmux("send-keys", "-t", "sema", "C-c")
	s.waitFor("press Ctrl-C again to exit")
	s.tmux("send-keys", "-t", "sema", "C-c")
	s.waitExit(exitFile, "Ctrl-C twice")
	r := sema(t, dir, []string{"SEMA_HOME=" + state}, "", "sessions", "show", first)
	if r.code != 0 || !strings.Contains(r.stdout, "and then?") {
		t.Errorf("the picked session does not hold the prompt typed after the pick: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestTerminalResumeNeedsAModel: at a terminal with no model named and no API key, a bare
// `sema` opens the demo in a workspace of its own, but `sema --continue`, `--resume ID`
// and a bare `--resume` ask for a session of this directory, which the demo's workspace
// does not have: each is refused before a screen opens, with what to set
// (config.model_missing), instead of looking in the demo's workspace or ignoring the id.
func TestTerminalResumeNeedsAModel(t *testing.T) {
	needTmux(t)
	dir := writeTree(t, map[string]string{"main.go": "package main\n"})
	tmp := t.TempDir()
	state := filepath.Join(tmp, "state")
	r := sema(t, dir, []string{"SEMA_HOME=" + state}, "", "-p", "--model", "scripted/"+writeScript(t, `{"turns":[{"text":"done"}]}`),
		"--sandbox", "off", "--output-format", "json", "first task")
	if r.code != 0 {
		t.Fatalf("sema -p: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	id := jsonResult(t, r.stdout)["session_id"].(string)
	for i, flags := range []string{"--continue", "--resume " + id, "--resume"} {
		exitFile, errFile := filepath.Join(tmp, fmt.Sprintf("exit%d", i)), filepath.Join(tmp, fmt.Sprintf("stderr%d", i))
		launch := fmt.Sprintf("cd %q && env -i PATH=%q HOME=%q SEMA_HOME=%q TERM=xterm-256color %q %s --sandbox off 2>%q; echo $? > %q; sleep 60",
			dir, os.Getenv("PATH"), tmp, state, semaBin, flags, errFile, exitFile)
		s := &tmuxSession{t: t, sock: filepath.Join(tmp, fmt.Sprintf("tmux%d.sock", i))}
		s.tmux("new-session", "-d", "-s", "sema", "-x", "100", "-y", "40", launch)
		t.Cleanup(func() { exec.Command("tmux", "-S", s.sock, "kill-server").Run() })
		deadline := time.Now().Add(20 * time.Second)
		var code []byte
		for len(strings.TrimSpace(string(code))) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("sema %s did not exit:\n%s", flags, s.screen())
			}
			time.Sleep(50 * time.Millisecond)
			code, _ = os.ReadFile(exitFile)
		}
		stderr, _ := os.ReadFile(errFile)
		if got := strings.TrimSpace(string(code)); got != "2" || !strings.Contains(string(stderr), "(config.model_missing)") || strings.Contains(string(stderr), "sema-demo") {
			t.Errorf("sema %s with no model: exit %s, stderr %q; want exit 2 and config.model_missing", flags, got, stderr)
		}
	}
}
