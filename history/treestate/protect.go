package treestate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/gitignore"
)

// Kind is what a protected entry is.
type Kind uint8

// Kinds of entries.
const (
	KindFile    Kind = iota + 1 // a regular file
	KindDir                     // a directory
	KindSymlink                 // a symbolic link
	KindOther                   // a socket, a fifo, a device
)

// Entry is an outermost protected entry: its path is protected, its directory's is not.
type Entry struct {
	// Path is the entry's canonical path.
	Path string
	// Kind says what it is.
	Kind Kind
	// Target is, for a symbolic link, its target as stored.
	Target string
}

// pent is the walk's word on one protected entry (every regular file beneath a protected
// directory is in the index instead).
type pent struct {
	kind   Kind
	top    bool        // outermost protected entry of its path
	mode   fs.FileMode // a directory's permission bits
	target string      // a link's target
	opaque bool        // a .git directory: its contents are never walked
}

func (a pent) same(b pent) bool { return a.kind == b.kind && a.target == b.target }

func kindOf(t fs.FileMode) Kind {
	switch {
	case t == 0:
		return KindFile
	case t.IsDir():
		return KindDir
	case t&fs.ModeSymlink != 0:
		return KindSymlink
	}
	return KindOther
}

// note records a protected entry the walk met; typ holds its type bits.
func (w *walker) note(p string, typ fs.FileMode, top bool) {
	e := pent{kind: kindOf(typ), top: top}
	switch e.kind {
	case KindDir:
		e.mode = 0o755
		if fi, err := w.t.cfg.Env.Lstat(w.ctx, p); err == nil {
			e.mode = fi.Mode.Perm()
		}
		e.opaque = p[strings.LastIndexByte(p, '/')+1:] == ".git"
	case KindSymlink:
		e.target, _ = w.t.cfg.Env.Readlink(w.ctx, p)
	}
	w.prot[p] = e
}

// noteSkipped records a protected entry that Skip keeps the walk out of (a credential
// store that is also protected: ~/.ssh, ~/.npmrc): its kind only, never its contents,
// which are not the walk's to read or keep. Its creation is seen, and undone; a change
// inside it is not (the sandbox hides it whole).
func (w *walker) noteSkipped(p string, typ fs.FileMode) {
	w.note(p, typ, true)
	e := w.prot[p]
	e.opaque = true
	w.prot[p] = e
}

// gitParts walks the parts of the protected .git directory g that make git run code —
// its config file and its hooks — as a protected entry's contents, so that a change to
// them is seen (and put back) even where no sandbox keeps g read-only. The rest of the
// store (objects, refs, the index) is left out: it is large, and data.
func (w *walker) gitParts(g string) {
	if fi, err := w.t.cfg.Env.Lstat(w.ctx, g+"/config"); err == nil {
		if fi.Mode.IsRegular() {
			w.count++
			w.files = append(w.files, g+"/config")
			w.fprot = append(w.fprot, true)
		} else {
			w.note(g+"/config", fi.Mode.Type(), false)
		}
	}
	hooks := g + "/hooks"
	fi, err := w.t.cfg.Env.Lstat(w.ctx, hooks)
	if err != nil {
		return
	}
	w.note(hooks, fi.Mode.Type(), false)
	if !fi.IsDir() {
		return
	}
	ents, err := w.t.cfg.Env.ReadDir(w.ctx, hooks)
	if err != nil {
		return
	}
	for _, e := range ents {
		p := join(hooks, e.Name)
		if e.Type == 0 {
			w.count++
			w.files = append(w.files, p)
			w.fprot = append(w.fprot, true)
			continue
		}
		w.note(p, e.Type, false)
	}
}

// spots looks for the Config.Spots below each root that the listing did not reach.
func (w *walker) spots() error {
	if w.t.cfg.Protected == nil {
		return nil
	}
	for _, r := range w.t.roots {
		for _, s := range w.t.cfg.Spots {
			p := join(r, s)
			if w.protectedAt(p) || !w.t.cfg.Protected(p) {
				continue
			}
			fi, err := w.t.cfg.Env.Lstat(w.ctx, p)
			if err != nil {
				continue
			}
			typ := fi.Mode.Type()
			if w.t.cfg.Skip != nil && w.t.cfg.Skip(p) {
				w.noteSkipped(p, typ)
				continue
			}
			w.note(p, typ, true)
			switch {
			case typ.IsDir():
				if err := w.dir(p, gitignore.Matcher{}, true); err != nil {
					return err
				}
			case typ == 0:
				w.count++
				w.files = append(w.files, p)
				w.fprot = append(w.fprot, true)
			}
		}
	}
	return nil
}

// protectedAt reports whether p or a directory above it was met as a protected entry.
func (w *walker) protectedAt(p string) bool {
	for q := p; q != "" && q != "/"; q = q[:max(strings.LastIndexByte(q, '/'), 0)] {
		if _, ok := w.prot[q]; ok {
			return true
		}
	}
	return false
}

// tops lists the outermost protected entries of prot, sorted.
func tops(prot map[string]pent) []Entry {
	var out []Entry
	for p, e := range prot {
		if e.top {
			out = append(out, Entry{Path: p, Kind: e.kind, Target: e.target})
		}
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// revert puts back what changed in protected entries between the previous walk (t.prot,
// t.index) and this one (w.prot, next, d.Changes): what was created is removed, with all
// it holds; what was changed or removed is restored — directories and links from the
// walk's word, files from the stage. next and d are updated to what is there after, and
// the protected entries after are returned. A change that could not be put back stays
// in d.Changes, so it is recorded like any other; so does one keep reports.
func (t *Tree) revert(ctx context.Context, w *walker, next map[string]entry, d *Diff, keep func(string) bool) map[string]pent {
	r := &reverting{t: t, ctx: ctx, keep: keep, old: t.prot, after: maps.Clone(w.prot), next: next}
	r.removeCreated(w.prot)
	r.remakeLost()
	d.Changes = r.revertFiles(d.Changes)
	slices.Sort(r.reverted)
	slices.Sort(r.unreverted)
	d.Reverted, d.Unreverted = slices.Compact(r.reverted), slices.Compact(r.unreverted)
	d.RevertErr = errors.Join(r.errs...)
	return r.after
}

// reverting is one revert: the protected entries before (old) and after, the index to
// be (next), and what was put back or not.
type reverting struct {
	t     *Tree
	ctx   context.Context
	keep  func(string) bool
	old   map[string]pent
	after map[string]pent
	next  map[string]entry

	removed    []string // entries removed whole in step 1
	lost       []string // .git directories that cannot be restored
	reverted   []string
	unreverted []string
	errs       []error
}

func (r *reverting) fail(p string, err error) {
	r.unreverted = append(r.unreverted, p)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s: %w", p, err))
	}
}

func (r *reverting) isRoot(p string) bool { return slices.Contains(r.t.roots, p) }

// removeCreated removes whole the entries that are new, or another kind (or link) than
// before. Parents sort before what they hold, so a tree is removed once.
func (r *reverting) removeCreated(cur map[string]pent) {
	for _, p := range slices.Sorted(maps.Keys(cur)) {
		if o, had := r.old[p]; had && o.same(cur[p]) || r.isRoot(p) || beneathAny(r.removed, p) || r.keep(p) {
			continue
		}
		if err := r.t.removeAll(r.ctx, p); err != nil {
			r.fail(p, err)
			continue
		}
		r.removed = append(r.removed, p)
		r.reverted = append(r.reverted, p)
		for q := range r.after {
			if under(p, q) {
				delete(r.after, q)
			}
		}
	}
	if len(r.removed) > 0 {
		// What was created in a removed entry is gone with it.
		for q := range r.next {
			if _, had := r.t.index[q]; !had && beneathAny(r.removed, q) {
				delete(r.next, q)
			}
		}
	}
}

// remakeLost makes again, parents first, the directories and links that were there
// before and are not now (or were replaced, and the replacement is gone). A .git
// directory's contents were never walked, so it cannot be restored — nor its config and
// hooks alone, which would leave a broken repository.
func (r *reverting) remakeLost() {
	for _, p := range slices.Sorted(maps.Keys(r.old)) {
		o := r.old[p]
		if c, has := r.after[p]; has && c.same(o) || o.kind == KindFile || r.isRoot(p) || r.keep(p) || beneathAny(r.lost, p) {
			continue
		}
		if _, has := r.after[p]; has {
			r.fail(p, nil) // the replacement could not be removed
			continue
		}
		var err error
		switch o.kind {
		case KindDir:
			if o.opaque {
				r.fail(p, errors.New("a removed .git directory or credential store cannot be restored: its contents are not kept"))
				r.lost = append(r.lost, p)
				continue
			}
			err = r.t.mkdirs(r.ctx, p, o.mode)
		case KindSymlink:
			if err = r.t.mkdirs(r.ctx, parentOf(p), 0o755); err == nil {
				err = symlink(r.ctx, r.t.cfg.Env, o.target, p)
			}
		default:
			r.fail(p, errors.New("a special file cannot be restored"))
			continue
		}
		if err != nil {
			r.fail(p, err)
			continue
		}
		r.after[p] = o
		r.reverted = append(r.reverted, p)
	}
}

// revertFiles puts back the files in protected entries — a created one removed, a
// changed or removed one written back from the stage with its mode — and returns the
// changes that stand.
func (r *reverting) revertFiles(changes []Change) []Change {
	kept := changes[:0]
	for _, c := range changes {
		if !c.Existed && beneathAny(r.removed, c.Path) {
			continue // removed with its entry
		}
		if !r.next[c.Path].prot && !r.t.index[c.Path].prot || r.keep(c.Path) {
			kept = append(kept, c)
			continue
		}
		if beneathAny(r.lost, c.Path) {
			delete(r.next, c.Path)
			continue // gone with its repository
		}
		if !r.revertFile(c) {
			kept = append(kept, c)
		}
	}
	return kept
}

// revertFile puts back one file of a protected entry and reports whether it did.
func (r *reverting) revertFile(c Change) bool {
	if !c.Existed {
		if err := r.t.cfg.Env.Remove(r.ctx, c.Path); err != nil && !isGone(err) {
			r.fail(c.Path, err)
			return false
		}
		delete(r.next, c.Path)
		r.reverted = append(r.reverted, c.Path)
		return true
	}
	if c.Unrecoverable {
		r.fail(c.Path, errors.New("its earlier bytes were over the size cap and not kept"))
		return false
	}
	if err := r.t.restoreFile(r.ctx, c); err != nil {
		r.fail(c.Path, err)
		return false
	}
	e := r.t.index[c.Path]
	e.racy = true // its stat is new: read it again next time, and find it as it was
	r.next[c.Path] = e
	r.reverted = append(r.reverted, c.Path)
	if o, ok := r.old[c.Path]; ok {
		r.after[c.Path] = o
	}
	return true
}

// removeAll removes p and, when it is a directory, everything in it, never following a
// symbolic link: the env removes each entry through its directory reached without one.
func (t *Tree) removeAll(ctx context.Context, p string) error {
	fi, err := t.cfg.Env.Lstat(ctx, p)
	if err != nil {
		if isGone(err) {
			return nil
		}
		return err
	}
	if fi.IsDir() {
		ents, err := t.cfg.Env.ReadDir(ctx, p)
		if err != nil && !isGone(err) {
			return err
		}
		for _, e := range ents {
			if err := t.removeAll(ctx, join(p, e.Name)); err != nil {
				return err
			}
		}
	}
	if err := t.cfg.Env.Remove(ctx, p); err != nil && !isGone(err) {
		return err
	}
	return nil
}

// mkdirs makes p and the directories above it that are missing (up to a root), p with
// mode.
func (t *Tree) mkdirs(ctx context.Context, p string, mode fs.FileMode) error {
	fi, err := t.cfg.Env.Lstat(ctx, p)
	if err == nil {
		if fi.IsDir() {
			return nil
		}
		return fmt.Errorf("%s is in the way", p)
	}
	if !isGone(err) {
		return err
	}
	if parent := parentOf(p); parent != p && !slices.Contains(t.roots, p) {
		if err := t.mkdirs(ctx, parent, 0o755); err != nil {
			return err
		}
	}
	if err := t.cfg.Env.Mkdir(ctx, p, mode); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return t.cfg.Env.Chmod(ctx, p, mode)
}

// restoreFile writes a changed or removed file's pre-image back, with its mode.
func (t *Tree) restoreFile(ctx context.Context, c Change) error {
	data, err := t.staged(c.Sum)
	if err != nil {
		return err
	}
	if err := t.mkdirs(ctx, parentOf(c.Path), 0o755); err != nil {
		return err
	}
	if err := t.cfg.Env.WriteFile(ctx, c.Path, data, c.Mode.Perm()); err != nil {
		return err
	}
	return t.cfg.Env.Chmod(ctx, c.Path, c.Mode)
}

func parentOf(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// beneathAny reports whether p is one of dirs or lies beneath one.
func beneathAny(dirs []string, p string) bool {
	for _, d := range dirs {
		if under(d, p) {
			return true
		}
	}
	return false
}

// symlinker is an env that can make symbolic links.
type symlinker interface {
	Symlink(ctx context.Context, target, path string) error
}

// symlink makes the link p → target, in a parent reached without following a link.
func symlink(ctx context.Context, e env.ExecutionEnv, target, p string) error {
	if s, ok := e.(symlinker); ok {
		return s.Symlink(ctx, target, p)
	}
	if _, ok := e.(*env.Host); ok {
		if err := ctx.Err(); err != nil {
			return err
		}
		return hostSymlink(target, p)
	}
	return errors.New("this env cannot make symbolic links")
}
