package shell

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const coAuthor = "Sema Bot <bot@example.com>"

// newRepo makes a git repository at the fixture's root with one commit.
func newRepo(t *testing.T, f *fix) {
	t.Helper()
	git(t, f.root, "init", "-q", "-b", "main")
	git(t, f.root, "config", "commit.gpgsign", "false")
	f.put("a.txt", "a\n")
	git(t, f.root, "add", "a.txt")
	git(t, f.root, "commit", "-q", "-m", "initial")
}

func lastMessage(t *testing.T, dir string) string {
	t.Helper()
	return strings.TrimRight(git(t, dir, "log", "-1", "--format=%B"), "\n")
}

func writeHook(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestCoAuthorTrailer(t *testing.T) {
	needGit(t)
	t.Parallel()
	const trailer = "Co-Authored-By: " + coAuthor
	tests := []struct {
		name    string
		setup   func(t *testing.T, f *fix)
		command string
		want    string
		// check runs after the commit, for the repository's own hooks' traces.
		check func(t *testing.T, f *fix)
	}{
		{
			name:    "plain commit",
			command: gitPrefix + "git commit -q --allow-empty -m 'Fix the parser'",
			want:    "Fix the parser\n\n" + trailer,
		},
		{
			name:    "global options before the subcommand",
			command: gitPrefix + "git -c user.name=Other -C . commit -q --allow-empty -m 'Subject' -m 'Body line.'",
			want:    "Subject\n\nBody line.\n\n" + trailer,
		},
		{
			name:    "no-verify still gets it",
			command: gitPrefix + "git commit -q --no-verify --allow-empty -m 'Quick'",
			want:    "Quick\n\n" + trailer,
		},
		{
			name:    "amend does not repeat it",
			command: gitPrefix + "git commit -q --allow-empty -m 'Once' && " + gitPrefix + "git commit -q --amend --no-edit",
			want:    "Once\n\n" + trailer,
		},
		{
			name:    "existing trailers are kept",
			command: gitPrefix + "git commit -q --allow-empty -m 'Subject' -m 'Signed-off-by: Tester <tester@example.com>'",
			want:    "Subject\n\nSigned-off-by: Tester <tester@example.com>\n" + trailer,
		},
		{
			name:    "after a cd and through a wrapper",
			command: "mkdir -p sub && cd sub && env " + gitPrefix + "git commit -q --allow-empty -m 'From below'",
			want:    "From below\n\n" + trailer,
		},
		{
			name: "the repository's own hooks still run",
			setup: func(t *testing.T, f *fix) {
				hooks := filepath.Join(f.root, ".git", "hooks")
				writeHook(t, hooks, "prepare-commit-msg", `echo "own-prepare $2" >> "$1"`)
				writeHook(t, hooks, "commit-msg", `echo ran > "`+f.path("commit-msg-ran")+`"`)
				writeHook(t, hooks, "post-commit", `echo ran > "`+f.path("post-commit-ran")+`"`)
			},
			command: gitPrefix + "git commit -q --allow-empty -m 'With hooks'",
			want:    "With hooks\nown-prepare message\n\n" + trailer,
			check: func(t *testing.T, f *fix) {
				for _, n := range []string{"commit-msg-ran", "post-commit-ran"} {
					if _, err := os.Stat(f.path(n)); err != nil {
						t.Errorf("the repository's %s hook did not run", strings.TrimSuffix(n, "-ran"))
					}
				}
			},
		},
		{
			name: "a repository hooksPath is honoured",
			setup: func(t *testing.T, f *fix) {
				git(t, f.root, "config", "core.hooksPath", "my-hooks")
				writeHook(t, f.path("my-hooks"), "commit-msg", `echo "checked" >> "$1"`)
			},
			command: gitPrefix + "git commit -q --allow-empty -m 'Custom path'",
			want:    "Custom path\n\n" + trailer + "\nchecked",
		},
		{
			name: "a failing hook still stops the commit",
			setup: func(t *testing.T, f *fix) {
				writeHook(t, filepath.Join(f.root, ".git", "hooks"), "pre-commit", "exit 1")
			},
			command: gitPrefix + "git commit -q --allow-empty -m 'Refused'",
			want:    "initial",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFix(t, func(c *Config) { c.CommitCoAuthor = coAuthor })
			newRepo(t, f)
			if tc.setup != nil {
				tc.setup(t, f)
			}
			f.call(t.Context(), NameBash, map[string]any{"command": tc.command})
			if got := lastMessage(t, f.root); got != tc.want {
				t.Fatalf("message\n%q\nwant\n%q", got, tc.want)
			}
			if tc.check != nil {
				tc.check(t, f)
			}
		})
	}
}

func TestCoAuthorUnsetAddsNothing(t *testing.T) {
	needGit(t)
	t.Parallel()
	f := newFix(t)
	newRepo(t, f)
	f.bash(gitPrefix + "git commit -q --allow-empty -m 'Plain'")
	if got := lastMessage(t, f.root); got != "Plain" {
		t.Fatalf("message %q", got)
	}
}

func TestCoAuthorOnlyForCommits(t *testing.T) {
	needGit(t)
	t.Parallel()
	f := newFix(t, func(c *Config) { c.CommitCoAuthor = coAuthor })
	newRepo(t, f)
	if got := f.bash("echo ${GIT_CONFIG_COUNT:-none}"); got != "none" {
		t.Fatalf("a command without a commit got git configuration: %q", got)
	}
	if _, err := os.Stat(filepath.Join(f.set.ScratchDir(), "git-hooks")); !os.IsNotExist(err) {
		t.Fatalf("hooks made without a commit: %v", err)
	}
}

// Not parallel: it sets GIT_CONFIG_COUNT in the environment every command inherits.
func TestCoAuthorKeepsTheEnvironmentsGitConfig(t *testing.T) {
	needGit(t)
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "user.name")
	t.Setenv("GIT_CONFIG_VALUE_0", "From Env")
	f := newFix(t, func(c *Config) { c.CommitCoAuthor = coAuthor })
	newRepo(t, f)
	cmd := "GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_EMAIL=e@example.com GIT_COMMITTER_EMAIL=e@example.com git commit -q --allow-empty -m 'Env'"
	f.bash(cmd)
	if got := lastMessage(t, f.root); got != "Env\n\nCo-Authored-By: "+coAuthor {
		t.Fatalf("message %q", got)
	}
	if got := strings.TrimSpace(git(t, f.root, "log", "-1", "--format=%an")); got != "From Env" {
		t.Fatalf("author %q: the environment's own git configuration was lost", got)
	}
}

func TestHasGitCommit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		command string
		want    bool
	}{
		{"git commit -m x", true},
		{"git -C repo -c a.b=c commit", true},
		{"git --no-pager commit --amend", true},
		{"git add . && git commit -m x", true},
		{"sudo git commit", true},
		{"echo $(git commit -m x)", true},
		{"git $SUB", true},
		{"/usr/bin/git commit", true},
		{"git status", false},
		{"git log --grep commit", false},
		{"echo git commit", false},
		{"git -c commit.gpgsign=false status", false},
		{"git 'commit", false},
	}
	for _, tc := range tests {
		if got := hasGitCommit(tc.command); got != tc.want {
			t.Errorf("hasGitCommit(%q) = %v, want %v", tc.command, got, tc.want)
		}
	}
}
