package files

import (
	"context"
	iofs "io/fs"
	"path"
	"path/filepath"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/gitignore"
)

// vcsDirs are version-control metadata directories: never listed, never searched.
var vcsDirs = map[string]bool{".git": true, ".hg": true, ".svn": true, ".bzr": true, ".jj": true, ".sl": true}

// walkFile is a regular file met during a walk.
type walkFile struct {
	// Path is where the walk met the file: under the (canonical) walk root, so it is the
	// path to show. For a symlinked file it is the link's path.
	Path string
	// Canonical is the path to do I/O on: Path itself, or the link's resolved target.
	Canonical string
	// Rel is Path relative to the walk root, "/"-separated.
	Rel string
}

// walkOptions shape a walk.
type walkOptions struct {
	// Gitignore applies the .gitignore files of the tree (and of the walk root's ancestors
	// inside its read root).
	Gitignore bool
	// MaxDepth bounds how deep files are reported (1 = the root's own entries); 0 means
	// no bound.
	MaxDepth int
	// Tool is the tool walking ("Glob", "Grep"): the deny rules covering it are asked
	// about every entry (Config.Denied).
	Tool string
}

// walkStats counts what a walk had to skip.
type walkStats struct {
	// Unreadable counts directories that could not be read (permission denied, vanished).
	Unreadable int
}

// walker lists the directories of a tree through the env of a Config. It does not follow
// symlinked directories; a symlinked file is resolved through the fence and reported
// only when the fence admits its target for reading. Entries in the fence's deny set are
// skipped. Other entries are not resolved one by one: below a canonical directory that
// is not a link, every entry's path is canonical and inside the same root. A walker is
// immutable, so goroutines may list directories of one walk concurrently.
type walker struct {
	cfg  Config
	opts walkOptions
	root dirJob
	// relFrom is where the walk root's relative paths start in a full path.
	relFrom int
}

// dirJob is a directory a walk has yet to list, with the ignore rules in force above it.
type dirJob struct {
	path  string
	depth int // 0 for the walk root
	ign   gitignore.Matcher
}

// newWalker prepares a walk of the canonical directory root.
func (c Config) newWalker(ctx context.Context, root string, opts walkOptions) *walker {
	w := &walker{cfg: c, opts: opts, root: dirJob{path: root}, relFrom: len(root) + 1}
	if root == "/" {
		w.relFrom = 1
	}
	if opts.Gitignore {
		w.root.ign = c.ancestorIgnores(ctx, root)
	}
	return w
}

// walk calls fn for each regular file under the canonical directory root, depth first.
// An error returned by fn ends the walk and is returned; a cancelled ctx ends it with
// ctx's error.
func (c Config) walk(ctx context.Context, root string, opts walkOptions, fn func(walkFile) error) (walkStats, error) {
	w := c.newWalker(ctx, root, opts)
	var (
		stats walkStats
		files []walkFile // reused: fn gets copies
		dirs  []dirJob
		err   error
	)
	stack := []dirJob{w.root}
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		files, dirs, err = w.list(ctx, d, files[:0])
		switch {
		case ctx.Err() != nil:
			return stats, ctx.Err()
		case err != nil:
			stats.Unreadable++
			continue
		}
		for _, f := range files {
			if err := fn(f); err != nil {
				return stats, err
			}
		}
		for i := len(dirs) - 1; i >= 0; i-- {
			stack = append(stack, dirs[i]) // popped in name order
		}
	}
	return stats, nil
}

// list reads the directory d and returns its files (appended to files) and the
// subdirectories to walk, in name order. The error is the env's when d cannot be read.
func (w *walker) list(ctx context.Context, d dirJob, files []walkFile) ([]walkFile, []dirJob, error) {
	if err := ctx.Err(); err != nil {
		return files, nil, err
	}
	ents, err := w.cfg.Env.ReadDir(ctx, d.path)
	if err != nil {
		return files, nil, err
	}
	ign := d.ign
	if w.opts.Gitignore {
		ign = ign.With(d.path, w.cfg.dirIgnores(ctx, d.path, ents))
	}
	var dirs []dirJob
	for _, e := range ents {
		if vcsDirs[e.Name] {
			continue
		}
		p := joinName(d.path, e.Name)
		if w.cfg.Fence.Denied(p) || w.cfg.ruleDenied(w.opts.Tool, p) {
			continue // the deny set and rule-denied paths are never read, whatever the face
		}
		switch {
		case e.Type.IsDir():
			if w.opts.MaxDepth > 0 && d.depth+1 >= w.opts.MaxDepth || ign.Ignored(p, true) {
				continue
			}
			dirs = append(dirs, dirJob{path: p, depth: d.depth + 1, ign: ign})
		case e.Type&iofs.ModeSymlink != 0:
			if ign.Ignored(p, false) {
				continue
			}
			// A link is judged under both names: a rule names a link and its target alike.
			if canon, ok := w.cfg.linkedFile(ctx, p); ok && !w.cfg.ruleDenied(w.opts.Tool, canon) {
				files = append(files, walkFile{Path: p, Canonical: canon, Rel: p[w.relFrom:]})
			}
		case e.Type.IsRegular():
			if !ign.Ignored(p, false) {
				files = append(files, walkFile{Path: p, Canonical: p, Rel: p[w.relFrom:]})
			}
		}
	}
	return files, dirs, nil
}

// joinName appends a directory entry's name to the canonical directory dir. It is
// filepath.Join without the cleaning, which neither needs.
func joinName(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// linkedFile resolves the symlink at p through the fence and reports its canonical target
// when that is a regular file inside the read roots. Links to directories are not
// followed: a walk never leaves the tree it was asked for, and cannot loop.
func (c Config) linkedFile(ctx context.Context, p string) (string, bool) {
	rp, err := c.Fence.Resolve(ctx, p, fence.Read)
	if err != nil || !rp.Exists {
		return "", false
	}
	fi, err := c.Env.Stat(ctx, rp.Canonical)
	if err != nil || !fi.IsRegular() {
		return "", false
	}
	return rp.Canonical, true
}

// dirIgnores reads the ignore files of the canonical directory dir whose listing is ents:
// its .gitignore, and .git/info/exclude when dir holds a repository. It returns their
// content, the exclude file first, or nil when there is none.
func (c Config) dirIgnores(ctx context.Context, dir string, ents []env.DirEntry) []byte {
	var content []byte
	for _, e := range ents {
		switch e.Name {
		case ".gitignore":
			p := joinName(dir, e.Name)
			if c.Fence.Denied(p) {
				continue
			}
			if e.Type&iofs.ModeSymlink != 0 {
				canon, ok := c.linkedFile(ctx, p)
				if !ok {
					continue
				}
				p = canon
			} else if !e.Type.IsRegular() {
				continue
			}
			if b, err := c.Env.ReadFile(ctx, p); err == nil {
				content = append(append(content, b...), '\n')
			}
		case ".git":
			if !e.Type.IsDir() {
				continue
			}
			rp, err := c.Fence.Resolve(ctx, filepath.Join(dir, ".git", "info", "exclude"), fence.Read)
			if err != nil || !rp.Exists {
				continue
			}
			if b, err := c.Env.ReadFile(ctx, rp.Canonical); err == nil {
				// exclude comes first so the .gitignore of the same directory overrides it.
				content = append(append(b, '\n'), content...)
			}
		}
	}
	return content
}

// ancestorIgnores collects the ignore files of root's ancestors, from the read root that
// holds root down to root's parent: a search of a subdirectory honours the .gitignore of
// the project around it, and never reads a file outside the read roots.
func (c Config) ancestorIgnores(ctx context.Context, root string) gitignore.Matcher {
	var top string
	for _, r := range c.Fence.ReadRoots() {
		if fence.Contains(r, root) && len(r) > len(top) {
			top = r
		}
	}
	if top == "" || top == root {
		return gitignore.Matcher{}
	}
	var chain []string
	for d := path.Dir(root); ; d = path.Dir(d) {
		chain = append(chain, d)
		if d == top || d == "/" {
			break
		}
	}
	var st gitignore.Matcher
	for i := len(chain) - 1; i >= 0; i-- {
		ents, err := c.Env.ReadDir(ctx, chain[i])
		if err != nil {
			continue
		}
		st = st.With(chain[i], c.dirIgnores(ctx, chain[i], ents))
	}
	return st
}
