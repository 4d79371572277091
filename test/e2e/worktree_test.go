package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// gitIn runs git in dir with an identity, failing the test on error.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestTwoWorktreeRunsAtOnce: two runs with -w in one repository at the same time, each
// writing the same file name, both complete in worktrees of their own; the main checkout
// is unchanged, git lists both worktrees on their branches, the manifest names each;
// rewinding one leaves the other's file; sema worktree remove refuses the one with
// changes and removes it with --force.
func TestTwoWorktreeRunsAtOnce(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := writeTree(t, map[string]string{"main.go": "package main\n"})
	repo, _ = filepath.EvalSymlinks(repo)
	gitIn(t, repo, "init", "-q", "-b", "main")
	gitIn(t, repo, "add", ".")
	gitIn(t, repo, "commit", "-q", "-m", "first")
	state := t.TempDir()
	var wg sync.WaitGroup
	results := map[string]result{}
	var mu sync.Mutex
	for _, name := range []string{"alpha", "beta"} {
		script := writeScript(t, `{"turns":[
			{"tool_calls":[{"name":"Write","input":{"file_path":"notes.txt","content":"from `+name+`\n"}}]},
			{"text":"wrote notes"}]}`)
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := sema(t, repo, []string{"SEMA_HOME=" + state}, "", "-p", "-w", name, "--model", "scripted/"+script,
				"--permission-mode", "acceptEdits", "--sandbox", "off", "--output-format", "json", "write the notes")
			mu.Lock()
			results[name] = r
			mu.Unlock()
		}()
	}
	wg.Wait()
	sessions := map[string]string{}
	for name, r := range results {
		if r.code != 0 {
			t.Fatalf("the %s run: exit %d\n%s\n%s", name, r.code, r.stdout, r.stderr)
		}
		res := jsonResult(t, r.stdout)
		m := res["manifest"].(map[string]any)
		wt, _ := m["worktree"].(map[string]any)
		path := filepath.Join(repo, ".sema", "worktrees", name)
		if wt["name"] != name || wt["branch"] != "sema/"+name || wt["repo"] != repo || m["root"] != path {
			t.Fatalf("the %s run's manifest: worktree %v, root %v", name, wt, m["root"])
		}
		if b, err := os.ReadFile(filepath.Join(path, "notes.txt")); err != nil || string(b) != "from "+name+"\n" {
			t.Fatalf("the %s worktree's notes.txt: %q, %v", name, b, err)
		}
		sessions[name] = res["session_id"].(string)
	}
	if _, err := os.Stat(filepath.Join(repo, "notes.txt")); !os.IsNotExist(err) {
		t.Fatalf("the main checkout got a notes.txt: %v", err)
	}
	if st := gitIn(t, repo, "status", "--porcelain"); st != "" {
		t.Fatalf("the main checkout's status: %q", st)
	}
	list := gitIn(t, repo, "worktree", "list")
	for _, name := range []string{"alpha", "beta"} {
		if !strings.Contains(list, "[sema/"+name+"]") {
			t.Fatalf("git worktree list lacks %s:\n%s", name, list)
		}
	}
	// Each run has its own session and file history: rewinding alpha's leaves beta's.
	if r := sema(t, repo, []string{"SEMA_HOME=" + state}, "", "rewind", sessions["alpha"], "--to", "1", "--files"); r.code != 0 {
		t.Fatalf("rewind alpha: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(repo, ".sema", "worktrees", "alpha", "notes.txt")); !os.IsNotExist(err) {
		t.Fatalf("alpha's notes.txt after its rewind: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(repo, ".sema", "worktrees", "beta", "notes.txt")); err != nil || string(b) != "from beta\n" {
		t.Fatalf("beta's notes.txt after alpha's rewind: %q, %v", b, err)
	}
	out := sema(t, repo, []string{"SEMA_HOME=" + state}, "", "worktree", "list")
	if out.code != 0 || !strings.Contains(out.stdout, sessions["beta"]) || !strings.Contains(out.stdout, "sema/alpha") {
		t.Fatalf("sema worktree list: exit %d\n%s\n%s", out.code, out.stdout, out.stderr)
	}
	if r := sema(t, repo, nil, "", "worktree", "remove", "beta"); r.code != 2 || !strings.Contains(r.stderr, "worktree.dirty") || !strings.Contains(r.stderr, "notes.txt") {
		t.Fatalf("removing beta with its changes: exit %d\n%s", r.code, r.stderr)
	}
	if r := sema(t, repo, nil, "", "worktree", "remove", "beta", "--force"); r.code != 0 {
		t.Fatalf("remove --force: exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(repo, ".sema", "worktrees", "beta")); !os.IsNotExist(err) {
		t.Fatalf("beta after its removal: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "main.go")); string(b) != "package main\n" {
		t.Fatalf("the main checkout's main.go: %q", b)
	}
}
