// Package gitconf reads a git repository's own configuration for one question: does it make
// git run a program? A read-only git command (status, diff, log -p, show, …) runs whatever the
// repository's configuration names for it — a diff driver's textconv or command, a clean
// filter, diff.external, core.fsmonitor, a pager — and attributes committed to the work tree
// can select a driver by any name, so overriding a few keys in the environment cannot switch
// them all off. The read-only analyzer (shellscan.Place) asks this package instead, and proves
// a git command read-only only when the answer is "none".
//
// The reader fails closed: a file it cannot read or parse, an include it does not follow, a
// submodule tree too large to look at, all count as naming a program. It reads the repository
// found from a directory the way git discovers one (a .git directory or file, else a bare
// repository, walking up), its common directory's config, the worktree's config.worktree,
// the hooks directory (for post-index-change, which runs when a command refreshes the index),
// and the same for every submodule repository under the common directory's modules/ and every
// submodule checked out with a .git directory of its own. The user's and the system's
// configuration are the user's own choice and are not read.
package gitconf

import (
	"context"
	"path"
	"strings"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
)

// Limits on the work one question may cost; past them the answer is "names a program".
const (
	maxRepos     = 64      // repositories looked at (the main one and its submodules)
	maxDepth     = 4       // nesting of submodules inside submodules
	maxFileBytes = 1 << 20 // one configuration file
)

// Programs returns a sentence naming the first program the configuration of the git
// repository that contains dir makes git run, or "" when dir is in no repository or the
// repository's configuration names none. dir should be canonical.
func Programs(ctx context.Context, e env.ExecutionEnv, dir string) string {
	r := &reader{ctx: ctx, e: e}
	gitDir, work, found, err := r.discover(dir)
	switch {
	case err != nil:
		return "the repository around " + dir + " could not be read: " + err.Error()
	case !found:
		return ""
	}
	return r.repo(gitDir, work, 0)
}

type reader struct {
	ctx   context.Context
	e     env.ExecutionEnv
	repos int
}

// stat resolves p and reports what is there; exists is false when nothing is.
func (r *reader) stat(p string) (canonical string, info env.FileInfo, exists bool, err error) {
	c, exists, err := fence.Canonicalize(r.ctx, r.e, p)
	if err != nil || !exists {
		return "", env.FileInfo{}, false, err
	}
	info, err = r.e.Stat(r.ctx, c)
	if err != nil {
		return "", env.FileInfo{}, false, err
	}
	return c, info, true, nil
}

// read returns a regular file's bytes; exists is false when there is no file.
func (r *reader) read(p string) ([]byte, bool, error) {
	c, info, exists, err := r.stat(p)
	if err != nil || !exists {
		return nil, false, err
	}
	if !info.Mode.IsRegular() {
		return nil, true, errNotRegular(p)
	}
	if info.Size > maxFileBytes {
		return nil, true, errTooLarge(p)
	}
	b, err := r.e.ReadFile(r.ctx, c)
	return b, true, err
}

type errNotRegular string

func (e errNotRegular) Error() string { return string(e) + " is not a regular file" }

type errTooLarge string

func (e errTooLarge) Error() string { return string(e) + " is too large to read" }

// discover finds the repository git would use when started in dir: at each level up, a .git
// directory, or a .git file naming the git directory, else the directory itself when it looks
// like a bare repository.
func (r *reader) discover(dir string) (gitDir, work string, found bool, err error) {
	for d := path.Clean(dir); ; d = path.Dir(d) {
		dotgit := path.Join(d, ".git")
		c, info, exists, err := r.stat(dotgit)
		if err != nil {
			return "", "", false, err
		}
		if exists {
			if info.IsDir() {
				return c, d, true, nil
			}
			g, err := r.gitFile(dotgit)
			if err != nil {
				return "", "", false, err
			}
			return g, d, true, nil
		}
		if bare, err := r.looksBare(d); err != nil || bare {
			return d, "", bare, err
		}
		if d == "/" || d == "." {
			return "", "", false, nil
		}
	}
}

// gitFile reads a "gitdir: PATH" file (a worktree's or an absorbed submodule's .git).
func (r *reader) gitFile(p string) (string, error) {
	b, _, err := r.read(p)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	target, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "gitdir: ")
	if !ok || target == "" {
		return "", errNotRegular(p + " (no gitdir line)")
	}
	if !path.IsAbs(target) {
		target = path.Join(path.Dir(p), target)
	}
	return target, nil
}

// looksBare is git's test for a git directory: HEAD, objects/ and refs/.
func (r *reader) looksBare(d string) (bool, error) {
	for _, want := range []struct {
		name string
		dir  bool
	}{{"HEAD", false}, {"objects", true}, {"refs", true}} {
		_, info, exists, err := r.stat(path.Join(d, want.name))
		if err != nil || !exists || info.IsDir() != want.dir {
			return false, err
		}
	}
	return true, nil
}

// repo judges one repository: its git directory, and its work tree ("" for a bare one).
func (r *reader) repo(gitDir, work string, depth int) string {
	r.repos++
	if r.repos > maxRepos || depth > maxDepth {
		return "the repository has more submodules than the reader looks at"
	}
	common := gitDir
	if b, exists, err := r.read(path.Join(gitDir, "commondir")); err != nil {
		return "the git directory " + gitDir + " could not be read: " + err.Error()
	} else if exists {
		c := strings.TrimSpace(string(b))
		if !path.IsAbs(c) {
			c = path.Join(gitDir, c)
		}
		common = c
	}
	var hooksPath string
	for _, file := range []string{path.Join(common, "config"), path.Join(gitDir, "config.worktree")} {
		b, exists, err := r.read(file)
		if err != nil {
			return file + " could not be read: " + err.Error()
		}
		if !exists {
			continue
		}
		entries, ok := parse(string(b))
		if !ok {
			return file + " could not be parsed"
		}
		for _, en := range entries {
			if why := names(en); why != "" {
				return why + " (" + file + ")"
			}
			if en.section == "core" && en.sub == "" && en.key == "hookspath" {
				hooksPath = en.value
			}
		}
	}
	if why := r.hooks(common, work, hooksPath); why != "" {
		return why
	}
	return r.submodules(common, work, depth)
}

// hooks looks for the one hook a read command can run: post-index-change, which git runs
// after it writes the index (a status that refreshes it).
func (r *reader) hooks(common, work, hooksPath string) string {
	dir := path.Join(common, "hooks")
	if hooksPath != "" {
		switch {
		case strings.HasPrefix(hooksPath, "~"):
			return "core.hooksPath " + hooksPath + " names a directory the reader does not place"
		case path.IsAbs(hooksPath):
			dir = hooksPath
		case work != "":
			dir = path.Join(work, hooksPath)
		default:
			dir = path.Join(common, hooksPath)
		}
	}
	hook := path.Join(dir, "post-index-change")
	_, info, exists, err := r.stat(hook)
	switch {
	case err != nil:
		return "the hooks directory " + dir + " could not be read: " + err.Error()
	case exists && info.Mode&0o111 != 0:
		return "the hook " + hook + " runs when git refreshes the index"
	}
	return ""
}

// submodules judges every submodule repository: those under modules/ of the common
// directory, and those the work tree's .gitmodules places with a .git directory of their own.
func (r *reader) submodules(common, work string, depth int) string {
	if why := r.modulesUnder(path.Join(common, "modules"), depth); why != "" {
		return why
	}
	if work == "" {
		return ""
	}
	file := path.Join(work, ".gitmodules")
	b, exists, err := r.read(file)
	if err != nil {
		return file + " could not be read: " + err.Error()
	}
	if !exists {
		return ""
	}
	entries, ok := parse(string(b))
	if !ok {
		return file + " could not be parsed"
	}
	for _, en := range entries {
		if en.section != "submodule" || en.key != "path" || en.value == "" {
			continue
		}
		sub := path.Join(work, en.value)
		c, info, exists, err := r.stat(path.Join(sub, ".git"))
		switch {
		case err != nil:
			return "the submodule " + sub + " could not be read: " + err.Error()
		case exists && info.IsDir():
			if why := r.repo(c, sub, depth+1); why != "" {
				return why
			}
		}
	}
	return ""
}

// modulesUnder walks a modules/ directory: each directory holding a config file is a
// submodule's git directory (whose own modules/ it walks in turn); the others are the path
// components of nested submodule names.
func (r *reader) modulesUnder(dir string, depth int) string {
	c, info, exists, err := r.stat(dir)
	switch {
	case err != nil:
		return dir + " could not be read: " + err.Error()
	case !exists || !info.IsDir():
		return ""
	case depth > maxDepth:
		return "the repository nests submodule directories deeper than the reader looks"
	}
	list, err := r.e.ReadDir(r.ctx, c)
	if err != nil {
		return dir + " could not be read: " + err.Error()
	}
	for _, en := range list {
		if !en.Type.IsDir() {
			continue
		}
		sub := path.Join(c, en.Name)
		_, _, isRepo, err := r.stat(path.Join(sub, "config"))
		if err != nil {
			return sub + " could not be read: " + err.Error()
		}
		var why string
		if isRepo {
			why = r.repo(sub, "", depth+1)
		} else {
			why = r.modulesUnder(sub, depth+1)
		}
		if why != "" {
			return why
		}
	}
	return ""
}
