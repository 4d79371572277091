package commands

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/fence"
)

// MaxDepth is how many directories deep below a commands directory Load looks.
const MaxDepth = 8

// Options says where Load looks for commands.
type Options struct {
	// Root is the workspace root, whose .sema/commands (and .claude/commands) hold the
	// project's commands; "" reads none.
	Root string
	// Home is the user's home directory, whose .sema/commands (and .claude/commands)
	// hold the user's commands; "" reads none. Callers pass os.UserHomeDir's answer;
	// tests pass a directory of their own.
	Home string
	// ClaudeCompat also reads Claude Code's .claude/commands directories, each below
	// sema's of the same scope.
	ClaudeCompat bool
}

// Set is the commands Load found, by name, with the files it refused.
type Set struct {
	byName   map[string]*slot
	problems []*sema.Error
	compat   bool
}

// slot is the file that won a name: a command, or the refusal of a broken file.
type slot struct {
	cmd *Command
	err *sema.Error
}

// source is one commands directory.
type source struct {
	dir    string
	scope  Scope
	claude bool
}

// Load reads the commands of the directories o names, in precedence order (see the
// package doc). It does not fail: a directory or file it cannot use is recorded in
// Problems (and a file's refusal is also what invoking its name returns).
func Load(o Options) *Set {
	s := &Set{byName: map[string]*slot{}, compat: o.ClaudeCompat}
	var sources []source
	canonRoot := ""
	if o.Root != "" {
		if abs, err := filepath.Abs(o.Root); err == nil {
			if c, err := filepath.EvalSymlinks(abs); err == nil {
				canonRoot = c
				sources = append(sources, source{filepath.Join(abs, ".sema", "commands"), ScopeProject, false})
				if o.ClaudeCompat {
					sources = append(sources, source{filepath.Join(abs, ".claude", "commands"), ScopeProject, true})
				}
			}
		}
	}
	if o.Home != "" {
		sources = append(sources, source{filepath.Join(o.Home, ".sema", "commands"), ScopeUser, false})
		if o.ClaudeCompat {
			sources = append(sources, source{filepath.Join(o.Home, ".claude", "commands"), ScopeUser, true})
		}
	}
	// A workspace directory that is the user's own (a task rooted at the home
	// directory) is read once, as the user's.
	userDirs := map[string]bool{}
	for _, src := range sources {
		if src.scope == ScopeUser {
			if c, err := filepath.EvalSymlinks(src.dir); err == nil {
				userDirs[c] = true
			}
		}
	}
	for _, src := range sources {
		s.readSource(src, canonRoot, userDirs)
	}
	return s
}

// readSource reads one commands directory, if it exists.
func (s *Set) readSource(src source, canonRoot string, userDirs map[string]bool) {
	fi, err := os.Stat(src.dir)
	if errors.Is(err, iofs.ErrNotExist) {
		return
	}
	if err != nil {
		s.problems = append(s.problems, dirProblem(src.dir, "cannot be read: %v", err))
		return
	}
	if !fi.IsDir() {
		s.problems = append(s.problems, dirProblem(src.dir, "is not a directory; commands are the .md files of a directory"))
		return
	}
	canon, err := filepath.EvalSymlinks(src.dir)
	if err != nil {
		s.problems = append(s.problems, dirProblem(src.dir, "cannot be read: %v", err))
		return
	}
	if src.scope == ScopeProject {
		if userDirs[canon] {
			return
		}
		if !fence.Contains(canonRoot, canon) {
			s.problems = append(s.problems, dirProblem(src.dir, "is a link to %s, outside the workspace; a workspace's commands must be files of the workspace", canon))
			return
		}
	}
	w := walker{set: s, src: src, root: canonRoot, visited: map[string]bool{canon: true}}
	w.walk(src.dir, nil, 0)
}

// walker reads one commands directory tree.
type walker struct {
	set     *Set
	src     source
	root    string // the canonical workspace root
	visited map[string]bool
}

func (w *walker) walk(dir string, ns []string, depth int) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		w.set.problems = append(w.set.problems, dirProblem(dir, "cannot be read: %v", err))
		return
	}
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, ".") {
			continue
		}
		p := filepath.Join(dir, n)
		fi, err := os.Stat(p)
		if err != nil {
			if strings.HasSuffix(n, ".md") {
				w.set.problems = append(w.set.problems, invalid(p, "cannot be read: %v", err))
			}
			continue
		}
		if fi.IsDir() {
			w.dir(p, n, ns, depth)
			continue
		}
		base, ok := strings.CutSuffix(n, ".md")
		if !ok {
			continue
		}
		if strings.Contains(base, ":") {
			w.set.problems = append(w.set.problems, invalid(p, "has a \":\" in its name, which separates a directory from a name (dir/name.md is dir:name); rename it"))
			continue
		}
		name := strings.Join(append(slices.Clip(ns), base), ":")
		c, err := w.read(p, name)
		w.set.add(name, Shadowed{Path: p, Scope: w.src.scope}, c, err)
	}
}

// dir walks the subdirectory p (named n) of a commands tree.
func (w *walker) dir(p, n string, ns []string, depth int) {
	if strings.ContainsAny(n, ": \t\r\n") {
		w.set.problems = append(w.set.problems, dirProblem(p, "has a \":\" or a blank in its name, which a command name cannot hold; rename it"))
		return
	}
	canon, err := filepath.EvalSymlinks(p)
	if err != nil {
		w.set.problems = append(w.set.problems, dirProblem(p, "cannot be read: %v", err))
		return
	}
	if w.src.scope == ScopeProject && !fence.Contains(w.root, canon) {
		w.set.problems = append(w.set.problems, dirProblem(p, "is a link to %s, outside the workspace; a workspace's commands must be files of the workspace", canon))
		return
	}
	if w.visited[canon] {
		return // a link back up the tree
	}
	if depth+1 >= MaxDepth {
		w.set.problems = append(w.set.problems, dirProblem(p, "is more than %d directories deep; commands are read that deep at most", MaxDepth))
		return
	}
	w.visited[canon] = true
	w.walk(p, append(slices.Clip(ns), n), depth+1)
}

// read reads and parses the command file p.
func (w *walker) read(p, name string) (*Command, error) {
	canon, err := filepath.EvalSymlinks(p)
	if err != nil {
		return nil, invalid(p, "cannot be read: %v", err)
	}
	if w.src.scope == ScopeProject && !fence.Contains(w.root, canon) {
		return nil, invalid(p, "is a link to %s, outside the workspace; a workspace's command must be a file of the workspace", canon)
	}
	// A FIFO or a device would block or never end: only a regular file is opened.
	fi, err := os.Stat(canon)
	if err != nil {
		return nil, invalid(p, "cannot be read: %v", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, invalid(p, "is not a regular file")
	}
	if fi.Size() > MaxFileBytes {
		return nil, invalid(p, "has %d bytes, more than the %d a command may have; shorten it", fi.Size(), MaxFileBytes)
	}
	f, err := os.Open(canon)
	if err != nil {
		return nil, invalid(p, "cannot be read: %v", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, invalid(p, "cannot be read: %v", err)
	}
	c, err := Parse(name, p, data)
	if err != nil {
		return nil, err
	}
	c.Scope, c.Claude = w.src.scope, w.src.claude
	return c, nil
}

// add records the file read as name: the first file of a name wins it, and the ones
// after are listed in its Shadows. A refused file is a problem whether it won or not.
func (s *Set) add(name string, file Shadowed, c *Command, err error) {
	var se *sema.Error
	if err != nil && !errors.As(err, &se) {
		se = invalid(file.Path, "cannot be read: %v", err)
	}
	if se != nil {
		s.problems = append(s.problems, se)
	}
	if sl, ok := s.byName[name]; ok {
		if sl.cmd != nil {
			sl.cmd.Shadows = append(sl.cmd.Shadows, file)
		}
		return
	}
	s.byName[name] = &slot{cmd: c, err: se}
}

func dirProblem(dir, format string, args ...any) *sema.Error {
	e := sema.Errorf(CodeInvalid, "the commands directory %s %s", dir, fmt.Sprintf(format, args...))
	return e.With("path", dir)
}

// Commands returns the usable commands, sorted by name.
func (s *Set) Commands() []*Command {
	var out []*Command
	for _, sl := range s.byName {
		if sl.cmd != nil {
			out = append(out, sl.cmd)
		}
	}
	slices.SortFunc(out, func(a, b *Command) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Names returns the names of the usable commands, sorted.
func (s *Set) Names() []string {
	var out []string
	for _, c := range s.Commands() {
		out = append(out, c.Name)
	}
	return out
}

// Problems returns the refusals of the directories and files that could not be used,
// in the order they were met: highest precedence first.
func (s *Set) Problems() []*sema.Error { return slices.Clone(s.problems) }

// Lookup returns the command of the given name; nil and nil when there is none, nil and
// the file's refusal when the file that has the name is broken.
func (s *Set) Lookup(name string) (*Command, error) {
	sl, ok := s.byName[name]
	switch {
	case !ok:
		return nil, nil
	case sl.err != nil:
		return nil, sl.err
	}
	return sl.cmd, nil
}

// Invocation is a prompt read as a command and expanded.
type Invocation struct {
	// Command is the command invoked.
	Command *Command
	// Args is the argument string: what followed the name, trimmed.
	Args string
	// Prompt is the command's body expanded with Args.
	Prompt string
}

// Resolve reads prompt as an invocation. It returns nil and nil when the prompt is not
// one: it does not begin with "/" and a name, or the name is no command's and has not
// the form of one (CommandShaped), as "/tmp/x is broken" has not. It refuses with
// CodeUnknown a command-shaped name no file has, and with the file's refusal a name
// whose file is broken.
func (s *Set) Resolve(prompt string) (*Invocation, error) {
	name, args, ok := Split(prompt)
	if !ok {
		return nil, nil
	}
	c, err := s.Lookup(name)
	if err != nil {
		return nil, err
	}
	if c == nil {
		if !CommandShaped(name) {
			return nil, nil
		}
		return nil, s.unknown(name)
	}
	text, err := c.Expand(args)
	if err != nil {
		return nil, err
	}
	return &Invocation{Command: c, Args: args, Prompt: text}, nil
}

// unknown is the CodeUnknown refusal of /name.
func (s *Set) unknown(name string) *sema.Error {
	names := s.Names()
	where := ".sema/commands/NAME.md in the workspace or ~/.sema/commands/NAME.md"
	if !s.compat {
		where += " (with Claude Code compatibility on, also .claude/commands)"
	}
	var msg string
	if len(names) == 0 {
		msg = fmt.Sprintf("/%s is not a command, and there are none: write one as %s; to send the prompt as text, begin it with a blank", name, where)
	} else {
		shown := names
		if len(shown) > 20 {
			shown = shown[:20]
		}
		list := "/" + strings.Join(shown, ", /")
		if len(names) > len(shown) {
			list += fmt.Sprintf(" and %d more", len(names)-len(shown))
		}
		msg = fmt.Sprintf("/%s is not a command; the commands are %s (sema commands list says where each is from); to send the prompt as text, begin it with a blank", name, list)
	}
	e := &sema.Error{Code: CodeUnknown, Message: msg}
	return e.With("name", name).With("available", nonNil(names))
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
