// Package worktree gives a task a git worktree of its own: a checkout of the repository
// on a branch of its own, beside the main checkout, so that several runs can work on
// one repository at once without touching each other's files or the person's.
//
// A worktree named NAME lives at .sema/worktrees/NAME under the main checkout (kept out
// of git status through the repository's info/exclude, never through a tracked file) on
// the branch sema/NAME, made from the current HEAD. Opening a NAME again reuses it.
// Everything is done with the git command, as a person would; nothing here knows about
// sessions — a task rooted in a worktree has sessions and file history of its own
// because its root differs.
package worktree

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/sema-agent/sema"
)

// The codes of a refused worktree.
const (
	// CodeNotGit: the directory is not in a git repository (or git is missing).
	CodeNotGit = "worktree.not_git"
	// CodeBare: the repository has no main checkout to put worktrees under.
	CodeBare = "worktree.bare"
	// CodeNoCommit: HEAD has no commit yet, so there is nothing to branch from.
	CodeNoCommit = "worktree.no_commit"
	// CodeNameInvalid: a name that is not a plain word of letters, digits, '.', '-', '_'.
	CodeNameInvalid = "worktree.name_invalid"
	// CodeBranchTaken: the branch sema/NAME is checked out somewhere else.
	CodeBranchTaken = "worktree.branch_taken"
	// CodePathTaken: .sema/worktrees/NAME exists and is not that worktree.
	CodePathTaken = "worktree.path_taken"
	// CodeNotFound: no worktree of that name.
	CodeNotFound = "worktree.not_found"
	// CodeDirty: the worktree has changes that removing it would lose.
	CodeDirty = "worktree.dirty"
	// CodeGitFailed: a git command failed for another reason (its message says which).
	CodeGitFailed = "worktree.git_failed"
	// CodeOutside: OpenUntrusted was given a checkout whose repository lies outside the
	// directory it must stay in.
	CodeOutside = "worktree.outside"
	// CodeFiltersRefused: OpenUntrusted was given a repository whose configuration names
	// checkout filters.
	CodeFiltersRefused = "worktree.filters_refused"
)

// Dir is where a repository's worktrees live, relative to its main checkout.
const Dir = ".sema/worktrees"

// BranchPrefix is put before a worktree's name to name its branch.
const BranchPrefix = "sema/"

// Worktree is a task's worktree.
type Worktree struct {
	// Name is the worktree's name: the last component of Path.
	Name string `json:"name"`
	// Path is the worktree's checkout: the task root.
	Path string `json:"path"`
	// Branch is its branch (sema/NAME).
	Branch string `json:"branch"`
	// Repo is the main checkout it belongs to.
	Repo string `json:"repo"`
	// GitDir is the repository's git directory, shared by every worktree: a command
	// that commits in the worktree writes there.
	GitDir string `json:"git_dir"`
	// Created reports that Open made it now; false when it reused one.
	Created bool `json:"created"`
}

// Info is what List says of a worktree.
type Info struct {
	Worktree
	// Head is the commit checked out.
	Head string `json:"head"`
	// Changed are the paths git status reports changed (modified, added, deleted,
	// untracked), relative to the worktree.
	Changed []string `json:"changed"`
}

var validName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`) })

// CheckName refuses a name that cannot be a worktree's: a plain word of letters,
// digits, '.', '-' and '_', starting with a letter or digit, at most 64 characters,
// and a valid branch name after sema/.
func CheckName(name string) error {
	if !validName().MatchString(name) || strings.Contains(name, "..") || strings.HasSuffix(name, ".lock") || strings.HasSuffix(name, ".") {
		return sema.Errorf(CodeNameInvalid, "worktree name %q must be a word of letters, digits, '.', '-' and '_' (at most 64, starting with a letter or digit, no '..', not ending in '.' or '.lock')", name).With("name", name)
	}
	return nil
}

// NewName is a name for a worktree none was given: w-, then six hex digits.
func NewName() string {
	var b [3]byte
	rand.Read(b[:])
	return "w-" + hex.EncodeToString(b[:])
}

// repo is a repository as the worktree commands see it.
type repo struct {
	top    string // the main checkout
	gitDir string // the common git directory
}

// findRepo finds the repository that holds dir, from the main checkout or any of its
// worktrees.
func findRepo(ctx context.Context, dir string) (repo, error) {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	out, err := git(ctx, dir, "rev-parse", "--path-format=absolute", "--git-common-dir", "--is-bare-repository")
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) || errors.Is(err, exec.ErrNotFound) {
			return repo{}, sema.Errorf(CodeNotGit, "%s is not in a git repository (a worktree is a checkout of one); run in a repository's checkout", dir).With("dir", dir)
		}
		return repo{}, err
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		return repo{}, sema.Errorf(CodeGitFailed, "git rev-parse answered %q", out)
	}
	common, bare := filepath.Clean(lines[0]), lines[1] == "true"
	if bare || filepath.Base(common) != ".git" {
		return repo{}, sema.Errorf(CodeBare, "the repository at %s has no main checkout to keep worktrees under; run in a checkout of it", common).With("git_dir", common)
	}
	top := filepath.Dir(common)
	if real, err := filepath.EvalSymlinks(top); err == nil {
		top = real
	}
	if real, err := filepath.EvalSymlinks(common); err == nil {
		common = real
	}
	return repo{top: top, gitDir: common}, nil
}

// Open returns the worktree name of the repository that holds dir — made from the
// current HEAD on a new branch sema/NAME, or the one made before under that name. An
// empty name is a new generated one. git runs as the repository's owner would run it,
// with its hooks and filters: a person's own repository.
func Open(ctx context.Context, dir, name string) (*Worktree, error) {
	return open(ctx, dir, name, "")
}

// OpenUntrusted is Open for a repository whose owner the caller does not trust (a
// service's tenant): git must run none of the programs the repository's configuration
// names, since it runs with the caller's privileges, outside any sandbox. Hooks and the
// file-system monitor are switched off and only the repository's own configuration is
// read; a repository whose configuration defines checkout filters (filter.*.smudge,
// .clean, .process: programs git runs on each file) is refused (CodeFiltersRefused); the
// repository's main checkout and git directory must lie inside within, or it is refused
// before anything is written (CodeOutside); and the main checkout's info/exclude is left
// as it is.
func OpenUntrusted(ctx context.Context, dir, name, within string) (*Worktree, error) {
	return open(context.WithValue(ctx, untrustedKey{}, true), dir, name, within)
}

// untrustedKey marks the context of OpenUntrusted's git commands.
type untrustedKey struct{}

func open(ctx context.Context, dir, name, within string) (*Worktree, error) {
	if name == "" {
		name = NewName()
	}
	if err := CheckName(name); err != nil {
		return nil, err
	}
	r, err := findRepo(ctx, dir)
	if err != nil {
		return nil, err
	}
	untrusted := ctx.Value(untrustedKey{}) != nil
	if untrusted {
		if err := checkUntrusted(ctx, r, within); err != nil {
			return nil, err
		}
	}
	wt := &Worktree{Name: name, Path: filepath.Join(r.top, Dir, name), Branch: BranchPrefix + name, Repo: r.top, GitDir: r.gitDir}
	// Two processes' `git worktree add` at once in one repository can read each other's
	// half-written entries (fatal: failed to read .git/worktrees/NAME/commondir): the
	// look and the making are one process's at a time.
	unlock, err := lockRepo(r)
	if err != nil {
		return nil, err
	}
	defer unlock()
	list, err := listAll(ctx, r)
	if err != nil {
		return nil, err
	}
	for _, e := range list {
		switch {
		case e.path == wt.Path && e.branch == wt.Branch:
			return wt, nil // made before: reused
		case e.path == wt.Path:
			return nil, sema.Errorf(CodePathTaken, "%s is a worktree on %s, not on %s; remove it (sema worktree remove %s) or pick another name", wt.Path, orDetached(e.branch), wt.Branch, name).With("path", wt.Path)
		case e.branch == wt.Branch:
			return nil, sema.Errorf(CodeBranchTaken, "the branch %s is checked out at %s; pick another name, or work there", wt.Branch, e.path).With("branch", wt.Branch)
		}
	}
	if _, err := os.Lstat(wt.Path); err == nil {
		return nil, sema.Errorf(CodePathTaken, "%s exists and is not a worktree of this repository; move it away or pick another name", wt.Path).With("path", wt.Path)
	}
	if _, err := git(ctx, r.top, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"); err != nil {
		return nil, sema.Errorf(CodeNoCommit, "the repository at %s has no commit yet, so there is nothing to branch a worktree from; commit first", r.top).With("repo", r.top)
	}
	if !untrusted {
		if err := exclude(r); err != nil {
			return nil, err
		}
	}
	args := []string{"worktree", "add", "--quiet", "-b", wt.Branch, wt.Path, "HEAD"}
	if _, err := git(ctx, r.top, "show-ref", "--verify", "--quiet", "refs/heads/"+wt.Branch); err == nil {
		// The branch is left from a worktree removed earlier: its work goes on there.
		args = []string{"worktree", "add", "--quiet", wt.Path, wt.Branch}
	}
	if out, err := git(ctx, r.top, args...); err != nil {
		return nil, sema.Errorf(CodeGitFailed, "git %s: %s", strings.Join(args, " "), strings.TrimSpace(out+" "+errText(err)))
	}
	wt.Created = true
	return wt, nil
}

// List lists the worktrees of the repository that holds dir that live under Dir, by
// name, with what each has changed.
func List(ctx context.Context, dir string) ([]Info, error) {
	r, err := findRepo(ctx, dir)
	if err != nil {
		return nil, err
	}
	all, err := listAll(ctx, r)
	if err != nil {
		return nil, err
	}
	under := filepath.Join(r.top, Dir) + string(filepath.Separator)
	var out []Info
	for _, e := range all {
		if !strings.HasPrefix(e.path, under) || strings.ContainsRune(e.path[len(under):], filepath.Separator) {
			continue
		}
		name := filepath.Base(e.path)
		info := Info{Worktree: Worktree{Name: name, Path: e.path, Branch: e.branch, Repo: r.top, GitDir: r.gitDir}, Head: e.head}
		if info.Changed, err = changed(ctx, e.path); err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Remove removes the worktree name of the repository that holds dir; its branch stays,
// with every commit made on it. A worktree with changes is refused unless force, which
// discards them. Only worktrees under Dir are ever removed — never the main checkout.
func Remove(ctx context.Context, dir, name string, force bool) error {
	if err := CheckName(name); err != nil {
		return err
	}
	list, err := List(ctx, dir)
	if err != nil {
		return err
	}
	for _, w := range list {
		if w.Name != name {
			continue
		}
		if len(w.Changed) > 0 && !force {
			shown := w.Changed
			if len(shown) > 5 {
				shown = append(slices.Clip(shown[:5]), fmt.Sprintf("and %d more", len(w.Changed)-5))
			}
			return sema.Errorf(CodeDirty, "worktree %s has changes (%s); commit them on %s, or remove it with --force to discard them", name, strings.Join(shown, ", "), w.Branch).With("changed", w.Changed)
		}
		args := []string{"worktree", "remove", w.Path}
		if force {
			args = []string{"worktree", "remove", "--force", w.Path}
		}
		if out, err := git(ctx, w.Repo, args...); err != nil {
			return sema.Errorf(CodeGitFailed, "git %s: %s", strings.Join(args, " "), strings.TrimSpace(out+" "+errText(err)))
		}
		return nil
	}
	return sema.Errorf(CodeNotFound, "no worktree named %s; sema worktree list shows them", name).With("name", name)
}

// entry is one worktree of git worktree list.
type entry struct {
	path, head, branch string
}

func listAll(ctx context.Context, r repo) ([]entry, error) {
	out, err := git(ctx, r.top, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return nil, sema.Errorf(CodeGitFailed, "git worktree list: %s", strings.TrimSpace(out+" "+errText(err)))
	}
	var list []entry
	var cur *entry
	for _, field := range strings.Split(out, "\x00") {
		switch k, v, _ := strings.Cut(field, " "); {
		case field == "":
			cur = nil
		case k == "worktree":
			p := filepath.Clean(v)
			if real, err := filepath.EvalSymlinks(p); err == nil {
				p = real
			}
			list = append(list, entry{path: p})
			cur = &list[len(list)-1]
		case cur != nil && k == "HEAD":
			cur.head = v
		case cur != nil && k == "branch":
			cur.branch = strings.TrimPrefix(v, "refs/heads/")
		}
	}
	return list, nil
}

// changed lists what git status reports in the worktree at path.
func changed(ctx context.Context, path string) ([]string, error) {
	out, err := git(ctx, path, "status", "--porcelain=v1", "-z", "--untracked-files=all")
	if err != nil {
		return nil, sema.Errorf(CodeGitFailed, "git status in %s: %s", path, strings.TrimSpace(out+" "+errText(err)))
	}
	fields := strings.Split(out, "\x00")
	var files []string
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if len(f) < 4 {
			continue
		}
		files = append(files, f[3:])
		if f[0] == 'R' || f[0] == 'C' {
			i++ // a rename's or copy's source follows
		}
	}
	return files, nil
}

// exclude keeps the worktrees out of the main checkout's git status, in the
// repository's own info/exclude (a file git never shares), once.
func exclude(r repo) error {
	path := filepath.Join(r.gitDir, "info", "exclude")
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return sema.Errorf(CodeGitFailed, "reading %s: %v", path, err)
	}
	line := "/" + Dir + "/"
	for _, l := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(l) == line {
			return nil
		}
	}
	if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
		data = append(data, '\n')
	}
	data = append(data, "# sema's worktrees (sema -w)\n"+line+"\n"...)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return sema.Errorf(CodeGitFailed, "making %s: %v", filepath.Dir(path), err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return sema.Errorf(CodeGitFailed, "writing %s: %v", path, err)
	}
	return nil
}

// checkUntrusted refuses, for OpenUntrusted, a repository outside within and one whose
// configuration defines checkout filters.
func checkUntrusted(ctx context.Context, r repo, within string) error {
	if real, err := filepath.EvalSymlinks(within); err == nil {
		within = real
	}
	inside := func(p string) bool {
		rel, err := filepath.Rel(within, p)
		return within != "" && err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
	}
	if !inside(r.top) || !inside(r.gitDir) {
		return sema.Errorf(CodeOutside, "the repository of this checkout (%s, its git directory %s) is not inside %s; a worktree is made only of a repository inside it", r.top, r.gitDir, within).
			With("repo", r.top).With("git_dir", r.gitDir)
	}
	// git makes the worktree under .sema/worktrees of the main checkout: a link there
	// would put it (written with the caller's rights) wherever the link points.
	for _, p := range []string{filepath.Join(r.top, ".sema"), filepath.Join(r.top, Dir)} {
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return sema.Errorf(CodeOutside, "%s is a symbolic link; a worktree is made only under a directory of the repository itself", p).With("path", p)
		}
	}
	out, err := git(ctx, r.top, "config", "--name-only", "--get-regexp", `^filter\..*\.(smudge|clean|process)$`)
	if err == nil && strings.TrimSpace(out) != "" {
		names := strings.Fields(out)
		return sema.Errorf(CodeFiltersRefused, "the repository's configuration names checkout filters (%s), programs git would run here outside any sandbox; no worktree is made of it", strings.Join(names, ", ")).
			With("filters", names)
	}
	return nil
}

// untrustedGit are the settings every git command of OpenUntrusted carries: no hooks,
// no file-system monitor (both programs the repository's configuration may name), and
// no system or global configuration (the caller's, which a worktree for someone else
// should not depend on).
var untrustedGit = []string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"}

// git runs git in dir and returns its standard output (its standard error with a
// failure).
func git(ctx context.Context, dir string, args ...string) (string, error) {
	pre := []string{"-C", dir}
	env := append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	if ctx.Value(untrustedKey{}) != nil {
		pre = append(pre, untrustedGit...)
		env = append(env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	}
	cmd := exec.CommandContext(ctx, "git", append(pre, args...)...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil && stderr.Len() > 0 {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), err
}

func errText(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ""
	}
	return err.Error()
}

func orDetached(branch string) string {
	if branch == "" {
		return "a detached HEAD"
	}
	return branch
}
