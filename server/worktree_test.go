package server_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/model/scripted"
)

// A task with a worktree runs in .sema/worktrees/NAME of the repository its cwd is in, on
// sema/NAME: the file it writes is there and not in the checkout, and its manifest names
// the worktree. Not a repository, or a bad name, is refused at submission by name.
func TestTaskInAWorktree(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	f := newFixture(t, "sqlite", func(base string) []scripted.Turn {
		return []scripted.Turn{{ToolCalls: []scripted.ToolCall{writeCall("notes.txt", "from the worktree\n")}}, {Text: "written"}}
	})
	repo := filepath.Join(f.base, "repo")
	os.MkdirAll(repo, 0o755)
	os.WriteFile(filepath.Join(repo, "main.go"), []byte("package main\n"), 0o644)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	c := f.client(t, "acme", f.base)
	ctx := context.Background()
	task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "write notes", Cwd: repo, Worktree: "w1", PermissionMode: "acceptEdits"})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, task.TaskID, "completed")
	wt := filepath.Join(repo, ".sema", "worktrees", "w1")
	if b, err := os.ReadFile(filepath.Join(wt, "notes.txt")); err != nil || string(b) != "from the worktree\n" {
		t.Fatalf("the worktree's notes.txt: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(repo, "notes.txt")); !os.IsNotExist(err) {
		t.Fatalf("the checkout got notes.txt: %v", err)
	}
	var named bool
	for _, ev := range follow(t, c, task.TaskID, 0) {
		var init struct {
			Manifest struct {
				Root     string `json:"root"`
				Worktree struct {
					Name, Branch, Repo string
				} `json:"worktree"`
			} `json:"manifest"`
		}
		if ev.Type == client.EventSystem && json.Unmarshal(ev.Data, &init) == nil && init.Manifest.Worktree.Name == "w1" {
			m := init.Manifest
			named = m.Worktree.Branch == "sema/w1" && m.Worktree.Repo == repo && m.Root == wt
		}
	}
	if !named {
		t.Error("the leg's manifest does not name the worktree, its branch and repository")
	}
	for name, spec := range map[string]client.TaskSpec{
		"not a repository": {Prompt: "p", Cwd: f.base, Worktree: "w2"},
		"a bad name":       {Prompt: "p", Cwd: repo, Worktree: "../w"},
	} {
		want := map[string]string{"not a repository": "worktree.not_git", "a bad name": "worktree.name_invalid"}[name]
		if _, err := c.SubmitTask(ctx, spec); codeOf(err) != want {
			t.Errorf("%s: %v; want %s", name, err, want)
		}
	}
}
