package subagent

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
)

// MaxFileBytes is the largest agent file Load reads, 256 KiB: far above any prompt a
// person writes, and small enough that a stray large file costs nothing.
const MaxFileBytes = 256 << 10

// agentDirs are the directories below the task root Load reads agent files from, in the
// order it reads them: Claude Code's directory first, so that sema's own overrides it
// when both define a name.
var agentDirs = []string{".claude/agents", ".sema/agents"}

// Load reads the agent files of the task root through e: every *.md file directly in
// <root>/.claude/agents, then in <root>/.sema/agents each directory's files
// in name order. It returns the definitions that parse, in that order, and a problem
// for each file that does not; one bad file never keeps the others from loading.
//
// A directory that does not exist is not a problem. Hidden files (an editor's lock or
// swap file), directories and other files that are not regular are skipped; a symbolic
// link is followed, and skipped when it leads to a directory. A file larger than
// MaxFileBytes is a problem and is not read. Two files of one directory that define the
// same name are both refused, with one problem naming both paths; the same name in the
// two directories is not a problem, since a Catalog built from the result lets the
// later (.sema) definition win.
//
// A problem with the content of a file is a *sema.Error with CodeDefinitionInvalid; an
// error of the env (a permission, a dangling link, a cancelled ctx) one with
// CodeLoadFailed that wraps the env's error. root must be absolute, as every path an env
// takes is.
func Load(ctx context.Context, e env.ExecutionEnv, root string) (defs []Definition, problems []error) {
	if !filepath.IsAbs(root) {
		return nil, []error{sema.Errorf(CodeLoadFailed, "the task root %q is not an absolute path; agent files are read below an absolute root", root).
			With("path", root)}
	}
	for _, rel := range agentDirs {
		d, p := loadDir(ctx, e, filepath.Join(root, filepath.FromSlash(rel)))
		defs = append(defs, d...)
		problems = append(problems, p...)
	}
	return defs, problems
}

// ClaudeUserDir is where Claude Code keeps a person's own agent files, relative to the
// home directory.
const ClaudeUserDir = ".claude/agents"

// LoadUser reads the person's own agent files, every *.md file directly in
// HOME/.claude/agents, as Load reads a directory. A catalog puts them below the task
// root's, so that a project's definition of a name wins, as in Claude Code. An empty
// home reads nothing.
func LoadUser(ctx context.Context, e env.ExecutionEnv, home string) (defs []Definition, problems []error) {
	if home == "" {
		return nil, nil
	}
	if !filepath.IsAbs(home) {
		return nil, []error{sema.Errorf(CodeLoadFailed, "the home directory %q is not an absolute path; agent files are read below an absolute one", home).
			With("path", home)}
	}
	return loadDir(ctx, e, filepath.Join(home, filepath.FromSlash(ClaudeUserDir)))
}

// loadDir loads one directory of agent files.
func loadDir(ctx context.Context, e env.ExecutionEnv, dir string) (defs []Definition, problems []error) {
	ents, err := e.ReadDir(ctx, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, []error{loadFailed(dir, "cannot list the agent directory", err)}
	}
	for _, ent := range ents {
		if !strings.HasSuffix(ent.Name, ".md") || strings.HasPrefix(ent.Name, ".") {
			continue
		}
		if ent.Type != 0 && ent.Type&fs.ModeSymlink == 0 {
			continue // a directory, a fifo, a device: not an agent file
		}
		path := filepath.Join(dir, ent.Name)
		if err := ctx.Err(); err != nil {
			return defs, append(problems, loadFailed(path, "stopped before reading", err))
		}
		data, skip, err := readAgentFile(ctx, e, path)
		if skip {
			continue
		}
		if err != nil {
			problems = append(problems, err)
			continue
		}
		d, err := Parse(path, data)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		defs = append(defs, d)
	}
	return dropDuplicates(dir, defs, problems)
}

// readAgentFile reads one file through its canonical path, since the env reads only
// canonical paths (the host env on Linux refuses a link in any component). skip reports
// a file that is not an agent file after all: a link to a directory or to something
// that is not regular, or a file removed since the listing.
func readAgentFile(ctx context.Context, e env.ExecutionEnv, path string) (data []byte, skip bool, err error) {
	canonical, exists, err := fence.Canonicalize(ctx, e, path)
	if err != nil {
		return nil, false, loadFailed(path, "cannot resolve the agent file", err)
	}
	if !exists {
		return nil, true, nil
	}
	fi, err := e.Stat(ctx, canonical)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, loadFailed(path, "cannot read the agent file", err)
	}
	if !fi.IsRegular() {
		return nil, true, nil
	}
	if fi.Size > MaxFileBytes {
		return nil, false, tooLarge(path, fi.Size)
	}
	r, err := e.Open(ctx, canonical)
	if err != nil {
		return nil, false, loadFailed(path, "cannot read the agent file", err)
	}
	defer r.Close()
	// The limit holds even when the file grew after Stat.
	data, err = io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return nil, false, loadFailed(path, "cannot read the agent file", err)
	}
	if len(data) > MaxFileBytes {
		return nil, false, tooLarge(path, int64(len(data)))
	}
	return data, false, nil
}

// dropDuplicates refuses every definition of a name that two or more files of one
// directory define: which one the author meant is not for the loader to guess.
func dropDuplicates(dir string, defs []Definition, problems []error) ([]Definition, []error) {
	byName := map[string][]string{}
	var order []string
	for _, d := range defs {
		if byName[d.Name] == nil {
			order = append(order, d.Name)
		}
		byName[d.Name] = append(byName[d.Name], d.Source)
	}
	kept := defs[:0]
	for _, d := range defs {
		if len(byName[d.Name]) == 1 {
			kept = append(kept, d)
		}
	}
	for _, name := range order {
		if files := byName[name]; len(files) > 1 {
			problems = append(problems, sema.Errorf(CodeDefinitionInvalid,
				"%s: the agent name %q is defined by %s; rename the agent in all but one of them",
				dir, name, joinAnd(files)).With("path", dir).With("name", name).With("files", files))
		}
	}
	return kept, problems
}

// joinAnd lists paths as "a and b" or "a, b and c".
func joinAnd(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

func loadFailed(path, what string, err error) *sema.Error {
	return sema.Errorf(CodeLoadFailed, "%s: %s: %w", path, what, err).With("path", path)
}

func tooLarge(path string, size int64) *sema.Error {
	return sema.Errorf(CodeDefinitionInvalid,
		"%s: the file is %d bytes; an agent file may hold at most %d bytes (%d KiB), so shorten its prompt",
		path, size, MaxFileBytes, MaxFileBytes>>10).With("path", path).With("size", size)
}
