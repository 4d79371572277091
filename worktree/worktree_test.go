package worktree_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/worktree"
)

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("SEMA_CI") != "" {
			t.Fatalf("SEMA_CI is set and git is missing: %v", err)
		}
		t.Skip("git is not installed: no worktree to make")
	}
}

func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	return string(out)
}

// repoWithCommit is a repository with one commit of main.go.
func repoWithCommit(t *testing.T) string {
	t.Helper()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	run(t, dir, "git", "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644)
	run(t, dir, "git", "add", ".")
	run(t, dir, "git", "commit", "-q", "-m", "first")
	return dir
}

// TestOpenListRemove: a worktree is made on its own branch from HEAD, under .sema/worktrees,
// out of the main checkout's status; opening it again reuses it; List shows its changes;
// Remove refuses it while it has changes, and removes it with force, keeping its branch.
// The main checkout is never touched.
func TestOpenListRemove(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	repo := repoWithCommit(t)
	wt, err := worktree.Open(ctx, repo, "fix-1")
	if err != nil {
		t.Fatal(err)
	}
	if !wt.Created || wt.Path != filepath.Join(repo, ".sema", "worktrees", "fix-1") || wt.Branch != "sema/fix-1" || wt.Repo != repo || wt.GitDir != filepath.Join(repo, ".git") {
		t.Fatalf("worktree %+v", wt)
	}
	if b, err := os.ReadFile(filepath.Join(wt.Path, "main.go")); err != nil || string(b) != "package main\n" {
		t.Fatalf("the worktree's main.go: %q, %v", b, err)
	}
	if got := run(t, wt.Path, "git", "branch", "--show-current"); strings.TrimSpace(got) != "sema/fix-1" {
		t.Fatalf("the worktree is on %q", got)
	}
	if st := run(t, repo, "git", "status", "--porcelain"); st != "" {
		t.Fatalf("the main checkout's status after a worktree was made: %q", st)
	}
	again, err := worktree.Open(ctx, wt.Path, "fix-1") // from inside the worktree, too
	if err != nil || again.Created || again.Path != wt.Path {
		t.Fatalf("opening it again: %+v, %v", again, err)
	}
	os.WriteFile(filepath.Join(wt.Path, "main.go"), []byte("package main // changed\n"), 0o644)
	os.WriteFile(filepath.Join(wt.Path, "new.txt"), []byte("new\n"), 0o644)
	list, err := worktree.List(ctx, repo)
	if err != nil || len(list) != 1 || list[0].Name != "fix-1" || !slices.Equal(list[0].Changed, []string{"main.go", "new.txt"}) {
		t.Fatalf("List: %+v, %v", list, err)
	}
	if err := worktree.Remove(ctx, repo, "fix-1", false); !sema.IsCode(err, worktree.CodeDirty) {
		t.Fatalf("removing a worktree with changes: %v", err)
	}
	if _, err := os.Stat(wt.Path); err != nil {
		t.Fatalf("the refused removal removed it: %v", err)
	}
	if err := worktree.Remove(ctx, repo, "fix-1", true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(wt.Path); !os.IsNotExist(err) {
		t.Fatalf("after removal: %v", err)
	}
	if out := run(t, repo, "git", "branch", "--list", "sema/fix-1"); !strings.Contains(out, "sema/fix-1") {
		t.Fatalf("the branch went with the worktree: %q", out)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "main.go")); string(b) != "package main\n" {
		t.Fatalf("the main checkout's main.go changed: %q", b)
	}
	// Opened again, the kept branch is checked out with its commits.
	back, err := worktree.Open(ctx, repo, "fix-1")
	if err != nil || !back.Created || back.Branch != "sema/fix-1" {
		t.Fatalf("reopening after removal: %+v, %v", back, err)
	}
	if err := worktree.Remove(ctx, repo, "nope", false); !sema.IsCode(err, worktree.CodeNotFound) {
		t.Fatalf("removing what is not there: %v", err)
	}
}

// The refusals: not a repository, a repository with no commit, a bad name, a branch
// sema/NAME checked out elsewhere, a path taken by something else.
func TestOpenRefusals(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	plain := t.TempDir()
	if _, err := worktree.Open(ctx, plain, "a"); !sema.IsCode(err, worktree.CodeNotGit) {
		t.Errorf("not a repository: %v", err)
	}
	empty := t.TempDir()
	run(t, empty, "git", "init", "-q")
	if _, err := worktree.Open(ctx, empty, "a"); !sema.IsCode(err, worktree.CodeNoCommit) {
		t.Errorf("no commit: %v", err)
	}
	repo := repoWithCommit(t)
	for _, name := range []string{"../x", "a/b", ".hidden", "-flag", "a..b", "x.lock", strings.Repeat("n", 65), "with space"} {
		if _, err := worktree.Open(ctx, repo, name); !sema.IsCode(err, worktree.CodeNameInvalid) {
			t.Errorf("name %q: %v", name, err)
		}
	}
	other, _ := filepath.EvalSymlinks(t.TempDir())
	run(t, repo, "git", "worktree", "add", "-q", "-b", "sema/taken", filepath.Join(other, "elsewhere"))
	if _, err := worktree.Open(ctx, repo, "taken"); !sema.IsCode(err, worktree.CodeBranchTaken) {
		t.Errorf("a branch checked out elsewhere: %v", err)
	}
	os.MkdirAll(filepath.Join(repo, ".sema", "worktrees", "squat"), 0o755)
	if _, err := worktree.Open(ctx, repo, "squat"); !sema.IsCode(err, worktree.CodePathTaken) {
		t.Errorf("a directory in the way: %v", err)
	}
	if list, err := worktree.List(ctx, repo); err != nil || len(list) != 0 {
		t.Errorf("List shows %+v, %v: the worktree made outside .sema/worktrees is not sema's", list, err)
	}
}

// A name left out is generated, and two generated names differ.
func TestOpenGeneratesAName(t *testing.T) {
	needGit(t)
	repo := repoWithCommit(t)
	a, err := worktree.Open(context.Background(), repo, "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := worktree.Open(context.Background(), repo, "")
	if err != nil || a.Name == b.Name || !strings.HasPrefix(a.Name, "w-") {
		t.Fatalf("generated %q and %q (%v)", a.Name, b.Name, err)
	}
}

func FuzzCheckName(f *testing.F) {
	for _, s := range []string{"fix-1", "../x", "a/b", "", "x.lock", "ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if worktree.CheckName(name) != nil {
			return
		}
		if strings.ContainsAny(name, "/\\ \x00") || strings.Contains(name, "..") || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "-") {
			t.Errorf("%q was taken", name)
		}
	})
}

// A repository whose owner is not trusted makes a worktree with none of the programs its
// configuration names: a post-checkout hook (in .git/hooks, or where core.hooksPath
// points) and a file-system monitor do not run, and checkout filters refuse the
// worktree. Calibrated: the same repositories through Open run the hook, the monitor
// and the filter (each leaves its mark), as git does for a person's own repository.
func TestOpenUntrustedRunsNoProgramOfTheRepository(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	hooked := func(t *testing.T) (dir, mark string) {
		dir = repoWithCommit(t)
		mark = filepath.Join(t.TempDir(), "ran")
		hook := "#!/bin/sh\necho $0 >> " + mark + "\n"
		os.WriteFile(filepath.Join(dir, ".git", "hooks", "post-checkout"), []byte(hook), 0o755)
		hooks := filepath.Join(dir, "hk")
		os.MkdirAll(hooks, 0o755)
		os.WriteFile(filepath.Join(hooks, "post-checkout"), []byte(hook), 0o755)
		os.WriteFile(filepath.Join(hooks, "monitor"), []byte(hook), 0o755)
		return dir, mark
	}
	for _, tc := range []struct {
		name   string
		config [][2]string
	}{
		{"a hook in .git/hooks", nil},
		{"a hook where core.hooksPath points", [][2]string{{"core.hooksPath", "hk"}}},
		{"a file-system monitor", [][2]string{{"core.fsmonitor", "hk/monitor"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, trusted := range []bool{true, false} {
				dir, mark := hooked(t)
				for _, kv := range tc.config {
					run(t, dir, "git", "config", kv[0], filepath.Join(dir, kv[1]))
				}
				var err error
				if trusted {
					_, err = worktree.Open(ctx, dir, "w1")
				} else {
					_, err = worktree.OpenUntrusted(ctx, dir, "w1", dir)
				}
				if err != nil {
					t.Fatalf("trusted %v: %v", trusted, err)
				}
				_, ran := os.Stat(mark)
				if trusted && ran != nil {
					t.Fatalf("calibration: Open did not run the repository's program (%v)", ran)
				}
				if !trusted && ran == nil {
					b, _ := os.ReadFile(mark)
					t.Errorf("OpenUntrusted ran the repository's program: %s", b)
				}
			}
		})
	}

	t.Run("a checkout filter", func(t *testing.T) {
		for _, trusted := range []bool{true, false} {
			dir := repoWithCommit(t)
			mark := filepath.Join(t.TempDir(), "ran")
			os.WriteFile(filepath.Join(dir, ".gitattributes"), []byte("*.go filter=x\n"), 0o644)
			run(t, dir, "git", "add", ".gitattributes")
			run(t, dir, "git", "commit", "-q", "-m", "attrs")
			run(t, dir, "git", "config", "filter.x.smudge", "sh -c 'echo ran >> "+mark+"; cat'")
			var err error
			if trusted {
				_, err = worktree.Open(ctx, dir, "w1")
			} else {
				_, err = worktree.OpenUntrusted(ctx, dir, "w1", dir)
			}
			_, ran := os.Stat(mark)
			switch {
			case trusted && (err != nil || ran != nil):
				t.Fatalf("calibration: Open %v, filter ran: %v", err, ran == nil)
			case !trusted && (sema.CodeOf(err) != worktree.CodeFiltersRefused || ran == nil):
				t.Errorf("OpenUntrusted: %v, filter ran %v; want %s and nothing run", err, ran == nil, worktree.CodeFiltersRefused)
			}
		}
	})

	t.Run("outside the directory it must stay in", func(t *testing.T) {
		dir, within := repoWithCommit(t), t.TempDir()
		_, err := worktree.OpenUntrusted(ctx, dir, "w1", within)
		if sema.CodeOf(err) != worktree.CodeOutside {
			t.Errorf("a repository outside: %v, want %s", err, worktree.CodeOutside)
		}
		if _, err := os.Stat(filepath.Join(dir, worktree.Dir, "w1")); !os.IsNotExist(err) {
			t.Errorf("a worktree was made of a repository outside: %v", err)
		}
	})

	t.Run("a link where the worktrees go", func(t *testing.T) {
		dir, elsewhere := repoWithCommit(t), t.TempDir()
		os.Symlink(elsewhere, filepath.Join(dir, ".sema"))
		_, err := worktree.OpenUntrusted(ctx, dir, "w1", dir)
		if sema.CodeOf(err) != worktree.CodeOutside {
			t.Errorf(".sema a link: %v, want %s", err, worktree.CodeOutside)
		}
		if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
			t.Errorf("the worktree was made where the link points: %v", ents)
		}
	})
}

// Worktrees made at once in one repository, by as many callers, are all made: git's
// own `worktree add` of two processes at once can read the other's half-written entry
// and fail, so the making is one caller's at a time (a lock in the git directory).
func TestWorktreesMadeAtOnce(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	for round := range 5 {
		dir := repoWithCommit(t)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := worktree.Open(ctx, dir, fmt.Sprintf("w%d", i)); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: %v", round, err)
		}
		list, err := worktree.List(ctx, dir)
		if err != nil || len(list) != 8 {
			t.Fatalf("round %d: %d worktrees listed (%v), want 8", round, len(list), err)
		}
	}
}
