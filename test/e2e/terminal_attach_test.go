package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sema-agent/sema/client"
)

// TestTerminalAttach drives `sema attach` in a terminal on a running `sema serve`: a
// prompt, the answer, a parked write shown as the dialog and allowed with 1 (the service
// writes the file), a second prompt continuing the same session, Ctrl-C twice, exit 0.
func TestTerminalAttach(t *testing.T) {
	needTmux(t)
	base := writeTree(t, map[string]string{"README": "a repo\n"})
	script := writeScript(t, `{"turns":[
		{"text":"Hello from the service."},
		{"text":"Writing it.","tool_calls":[{"name":"Write","input":{"file_path":"out.txt","content":"attached\n"}}]},
		{"text":"Wrote out.txt on the service."}]}`)
	env := []string{"SEMA_HOME=" + t.TempDir()}
	p := startServe(t, env, "--model", "scripted/"+script)
	tok := serveToken(t, env, "me", base)

	tmp := t.TempDir()
	exitFile := filepath.Join(tmp, "exit")
	launch := fmt.Sprintf("cd %q && env -i PATH=%q HOME=%q SEMA_TOKEN=%q TERM=xterm-256color %q attach %q; echo $? > %q; sleep 60",
		base, os.Getenv("PATH"), tmp, tok, semaBin, p.url, exitFile)
	s := &tmuxSession{t: t, sock: filepath.Join(tmp, "tmux.sock")}
	s.tmux("new-session", "-d", "-s", "sema", "-x", "100", "-y", "40", launch)
	t.Cleanup(func() { exec.Command("tmux", "-S", s.sock, "kill-server").Run() })

	s.waitFor("/help for keys")
	s.tmux("send-keys", "-t", "sema", "-l", "say hello")
	s.tmux("send-keys", "-t", "sema", "Enter")
	s.waitFor("Hello from the service.")

	s.tmux("send-keys", "-t", "sema", "-l", "write out.txt")
	s.tmux("send-keys", "-t", "sema", "Enter")
	s.waitFor("permission · Write")
	if _, err := os.Stat(filepath.Join(base, "out.txt")); err == nil {
		t.Fatal("the write landed before it was allowed")
	}
	s.tmux("send-keys", "-t", "sema", "1")
	s.waitFor("Wrote out.txt on the service.")
	if b, err := os.ReadFile(filepath.Join(base, "out.txt")); err != nil || string(b) != "attached\n" {
		t.Fatalf("out.txt after the write was allowed: %q, %v", b, err)
	}

	s.tmux("send-keys", "-t", "sema", "C-c")
	s.waitFor("press Ctrl-C again to exit")
	s.tmux("send-keys", "-t", "sema", "C-c")
	s.waitExit(exitFile, "Ctrl-C twice")
	// Both prompts ran in one session of the service.
	sessions, err := client.New(p.url, tok).Sessions(context.Background())
	if err != nil || len(sessions) != 1 || sessions[0].Title != "say hello" {
		t.Fatalf("the service's sessions: %+v, %v", sessions, err)
	}
}
