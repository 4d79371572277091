package shellchange

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/history/treestate"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/tools/shell"
)

// The protected paths and Bash. The fence's protected rule (.git, .vscode, .envrc, rc
// files, … at any depth) asks a person before a write tool or an analysed command writes
// one. A command the analysis let through may still write one: a program that writes on
// its own, a name made at run time. The kernel sandbox binds the protected entries that
// exist read-only (the top of each root by itself, every depth from this walk), but
// Landlock cannot refuse the creation of one name in a writable directory. So the walk
// after a command puts back what the command did to protected entries without a
// person's approval of that exact call — created ones removed with what they hold,
// changed or removed ones restored from the snapshot's stage — before the answer reaches
// the model; the answer, a notice and the leg's permission denials say so. Under the open
// write face (bypassPermissions) nothing is put back, as nothing is asked.
//
// What it cannot do: the entry exists while the command runs (a program the command
// starts can read it, or run it); entries in directories the walk does not list (ignored
// by .gitignore, past the file-count cap — the top of each root and the home startup
// spots are always looked at) are not seen; a .git directory's contents are never
// walked, so without the sandbox a change inside an existing .git is not seen, and a
// removed one cannot be restored.

// guard is how one walk treats protected paths: put back what changed in them, except
// what keep names.
type guard struct {
	keep func(path string) bool
	// call says the walk follows a Bash call (not a background task's), whose input and
	// tool-use id are input and id.
	call  bool
	input json.RawMessage
	id    string
}

// callGuard guards the walk after a call: unless a person approved exactly it, or the
// write face is open.
func (c *Recorder) callGuard(ctx context.Context) *guard {
	if sandbox.Approved(ctx) || c.cfg.Fence.WriteFace() == fence.FaceOpen {
		return nil
	}
	g := &guard{keep: func(string) bool { return false }}
	g.input, g.call = c.cfg.Leg.Call(ctx)
	g.id = c.cfg.Leg.CallID(ctx)
	return g
}

// backgroundGuard guards a walk that attributes changes to background tasks (bg), when
// one no person approved may have run. A protected file a write tool wrote in this leg —
// after a person's yes, or under the open face — keeps its change: the write tool's and a
// task's changes cannot be told apart.
func (c *Recorder) backgroundGuard(bg bool) *guard {
	if !bg || !c.bgUnapproved || c.cfg.Fence.WriteFace() == fence.FaceOpen {
		return nil
	}
	edited := c.cfg.Leg.Edited()
	return &guard{keep: func(p string) bool {
		for _, e := range edited {
			if fence.Contains(p, e) {
				return true
			}
		}
		return false
	}}
}

// settleBackground notes, after a walk, whether background tasks run on, and whether
// one no person approved may: started says this call put one in the background (at its
// start, or at its timeout), approved that a person approved the call. ranDuring says a
// task ran when the walk began: it may have changed files after the walk read them, and
// ended since, so the next walk still takes what changed as a background task's.
func (c *Recorder) settleBackground(started, approved, ranDuring bool) {
	c.background = started || ranDuring || c.running()
	switch {
	case !c.background:
		c.bgUnapproved = false
	case started && !approved:
		c.bgUnapproved = true
	}
}

// protectedEntry is the walk's test of an entry: the fence's protected rule, behind a
// filter on the entry's name (the walk asks it of every entry).
func (c *Recorder) protectedEntry(p string) bool {
	if !fence.ProtectedCandidate(p[strings.LastIndexByte(p, '/')+1:]) {
		return false
	}
	prot, _ := c.cfg.Fence.IsProtected(p)
	return prot
}

// guarded reports what a guarded walk put back, and what it could not: in the answer, a
// notice, and, for what was put back, the leg's permission denials.
func (c *Recorder) guarded(ctx context.Context, g *guard, d treestate.Diff) []string {
	if g == nil {
		return nil
	}
	l := c.cfg.Leg
	var notes []string
	who := "This command"
	if !g.call {
		who = "A background task"
	}
	if len(d.Reverted) > 0 {
		msg := fmt.Sprintf("%s created or changed protected paths without a person's approval of that exact call, and they were put back (%s): %s", who, shell.CodeProtectedReverted, brief(d.Reverted))
		l.Notice(sema.Notice{Code: shell.CodeProtectedReverted, Message: msg, Detail: map[string]any{"paths": d.Reverted}})
		input := json.RawMessage("{}")
		if g.call && len(g.input) > 0 {
			input = g.input
		}
		l.Deny(g.id, input, msg)
		notes = append(notes, fmt.Sprintf("[%s] %s wrote protected paths (.git, .vscode, .envrc, shell startup files and the like, at any depth), which needs a person's yes; what it created there was removed and what it changed was restored: %s. Ask the user to approve this exact command if the change is wanted.",
			shell.CodeProtectedReverted, who, brief(d.Reverted)))
	}
	if len(d.Unreverted) > 0 {
		msg := fmt.Sprintf("%s changed protected paths that could not be put back: %s", who, brief(d.Unreverted))
		if d.RevertErr != nil {
			msg += " (" + d.RevertErr.Error() + ")"
		}
		l.Notice(sema.Notice{Code: shell.CodeProtectedUnreverted, Message: msg, Detail: map[string]any{"paths": d.Unreverted}})
		notes = append(notes, fmt.Sprintf("[%s] %s changed protected paths that could not be put back: %s. Tell the user.", shell.CodeProtectedUnreverted, who, brief(d.Unreverted)))
	}
	return notes
}

// walkedPlaces is what a walk found for the sandbox.
type walkedPlaces struct {
	readOnly, hidden []string
}

// Confinement implements shell.Confiner: what the latest walk found. A command proven
// read-only reaches no Before; when the leg's first is one, the walk is made here, so
// that the sandbox knows the multi-link files and protected entries from the start.
// Later ones take the latest walk's word: what a read-only command could meet that is
// newer is what a person or an approved call made since.
func (c *Recorder) Confinement(ctx context.Context) (readOnly, hidden []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if tr := c.treeLocked(); !tr.Primed() {
		d, err := tr.Sync(ctx, nil)
		if err != nil {
			c.cfg.Leg.Notice(sema.Notice{Code: CodeUnrecorded, Message: "the workspace could not be walked before a command, so protected entries below the top of the workspace and multi-link files are not kept from it: " + err.Error()})
			return nil, nil
		}
		c.walked = c.placesOf(ctx, d)
	}
	return c.walked.readOnly, c.walked.hidden
}

// placesOf turns a walk into what the sandbox adds: the protected entries read-only —
// each one itself, and, for a link or a .git file, the place it leads to when that lies
// in a write root (a nested repository's .git linking to a store elsewhere in the
// workspace, git init --separate-git-dir) — and the multi-link files hidden.
func (c *Recorder) placesOf(ctx context.Context, d treestate.Diff) walkedPlaces {
	var w walkedPlaces
	roots := c.cfg.Fence.WriteRoots()
	inRoots := func(p string) bool {
		for _, r := range roots {
			if fence.Contains(r, p) {
				return true
			}
		}
		return false
	}
	for _, e := range d.Protected {
		switch e.Kind {
		case treestate.KindSymlink:
			if t, err := filepath.EvalSymlinks(e.Path); err == nil && inRoots(t) {
				w.readOnly = append(w.readOnly, t)
			}
			continue
		case treestate.KindFile:
			if filepath.Base(e.Path) == ".git" {
				if t := gitdirOf(ctx, c.cfg.Env, e.Path); t != "" && inRoots(t) {
					w.readOnly = append(w.readOnly, t)
				}
			}
		}
		w.readOnly = append(w.readOnly, e.Path)
	}
	for _, p := range d.Linked {
		// The fence's own rule, which the file tools apply: a regular file with another
		// link, not a file of a git object store.
		if fence.HardLinked(p, env.FileInfo{Nlink: 2}) {
			w.hidden = append(w.hidden, p)
		}
	}
	return w
}

// gitdirOf reads a .git file ("gitdir: PATH", a worktree's or a submodule's) and returns
// the canonical directory it names, or "".
func gitdirOf(ctx context.Context, e env.ExecutionEnv, p string) string {
	b, err := e.ReadFile(ctx, p)
	if err != nil || len(b) > 4096 {
		return ""
	}
	line, _, _ := strings.Cut(string(b), "\n")
	dir, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return ""
	}
	dir = strings.TrimSpace(dir)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(filepath.Dir(p), dir)
	}
	if _, ok := e.(*env.Host); !ok {
		return ""
	}
	t, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return ""
	}
	if fi, err := os.Stat(t); err != nil || !fi.IsDir() {
		return ""
	}
	return t
}

// linkedNotes names, once each, the multi-link files commands cannot read.
func (c *Recorder) linkedNotes(linked []string) []string {
	if !c.cfg.Sandboxed {
		return nil
	}
	var fresh []string
	for _, p := range linked {
		if !c.linkedNamed[p] && fence.HardLinked(p, env.FileInfo{Nlink: 2}) {
			c.linkedNamed[p] = true
			fresh = append(fresh, p)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("[%s] %d file(s) of the workspace have more than one hard link, so another name of each may lie outside the workspace: commands see them empty and Read refuses them; ask the user if one is needed: %s.",
		fence.CodeHardLink, len(fresh), brief(fresh))}
}

var _ shell.Confiner = (*Recorder)(nil)
