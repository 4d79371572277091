// Package fence decides whether a path may be touched: no path leaves the roots.
//
// Every path a tool receives is canonicalized through the run's env (symlinks resolved on
// the whole path, fail-closed) and then judged against the roots of the face in force:
// the read roots for reads, the write roots for writes. "Inside a root" compares
// canonical path components, never string prefixes.
package fence

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
)

// Kind says which face judges a path.
type Kind int

const (
	Read Kind = iota
	Write
)

func (k Kind) String() string {
	if k == Write {
		return "write"
	}
	return "read"
}

// Error codes of refused paths.
const (
	CodeNotInRoot    = "fs.path_not_in_root"
	CodeUnresolvable = "fs.path_unresolvable"
	CodeProtected    = "fs.path_protected"
	CodeDenied       = "fs.path_denied"
)

// Config declares a run's roots.
type Config struct {
	Env env.ExecutionEnv
	// Root is the task root; relative paths resolve against it. Required.
	Root string
	// AdditionalDirectories are extra write (and read) roots.
	AdditionalDirectories []string
	// AdditionalReadDirectories are extra read-only roots.
	AdditionalReadDirectories []string
	// OnNotice receives announcements such as a skipped root. May be nil.
	OnNotice func(sema.Notice)
}

// Fence is the resolved containment of one run. It is immutable after New and safe for
// concurrent use.
type Fence struct {
	env        env.ExecutionEnv
	root       string
	writeRoots []string
	readRoots  []string
}

// Path is a judged path.
type Path struct {
	// Spelled is the path as the caller (the model) wrote it.
	Spelled string
	// Canonical is the absolute path with every symlink resolved; for a path that does
	// not exist, the deepest existing ancestor is canonical and the rest appended.
	Canonical string
	// Exists reports whether the canonical path existed when it was resolved.
	Exists bool
}

// New resolves the roots of cfg once. The task root must resolve; an additional directory
// that does not is skipped with a notice.
func New(ctx context.Context, cfg Config) (*Fence, error) {
	if cfg.Env == nil {
		return nil, sema.Errorf("config.env_missing", "fence: no env given")
	}
	if !filepath.IsAbs(cfg.Root) {
		return nil, sema.Errorf("config.root_invalid", "the task root %q is not an absolute path", cfg.Root)
	}
	root, exists, err := Canonicalize(ctx, cfg.Env, cfg.Root)
	if err != nil || !exists {
		return nil, sema.Errorf("config.root_invalid", "the task root %q does not resolve to an existing directory", cfg.Root)
	}
	f := &Fence{env: cfg.Env, root: root, writeRoots: []string{root}}
	add := func(dirs []string, into *[]string, kind string) {
		for _, d := range dirs {
			if !filepath.IsAbs(d) {
				d = filepath.Join(root, d)
			}
			c, ok, err := Canonicalize(ctx, cfg.Env, d)
			if err != nil || !ok {
				if cfg.OnNotice != nil {
					cfg.OnNotice(sema.Notice{Code: "fence.root_skipped", Message: "the " + kind + " directory " + d + " does not resolve and was skipped", Detail: map[string]any{"path": d}})
				}
				continue
			}
			*into = append(*into, c)
		}
	}
	add(cfg.AdditionalDirectories, &f.writeRoots, "additional")
	f.readRoots = append([]string(nil), f.writeRoots...)
	add(cfg.AdditionalReadDirectories, &f.readRoots, "additional read")
	return f, nil
}

// Root is the canonical task root.
func (f *Fence) Root() string { return f.root }

// WriteRoots are the canonical write roots, the task root first.
func (f *Fence) WriteRoots() []string { return append([]string(nil), f.writeRoots...) }

// ReadRoots are the canonical read roots: the write roots, then the read-only ones.
func (f *Fence) ReadRoots() []string { return append([]string(nil), f.readRoots...) }

// Env is the env the fence resolves through.
func (f *Fence) Env() env.ExecutionEnv { return f.env }

// Abs makes spelled absolute against the task root and cleans it.
func (f *Fence) Abs(spelled string) string {
	if filepath.IsAbs(spelled) {
		return filepath.Clean(spelled)
	}
	return filepath.Join(f.root, spelled)
}

// Resolve canonicalizes spelled (absolute, or relative to the task root) and judges it
// for kind. The error is a *sema.Error with one of the fs.* codes, naming the path as
// spelled and the roots that may be used.
func (f *Fence) Resolve(ctx context.Context, spelled string, kind Kind) (Path, error) {
	abs := f.Abs(spelled)
	c, exists, err := Canonicalize(ctx, f.env, abs)
	if err != nil {
		return Path{}, sema.Errorf(CodeUnresolvable, "the path %q cannot be resolved safely: %v", spelled, err).With("path", spelled)
	}
	if !f.Inside(c, kind) {
		roots := f.readRoots
		if kind == Write {
			roots = f.writeRoots
		}
		return Path{}, sema.Errorf(CodeNotInRoot, "the path %q is outside the %s roots; use a path inside %s", spelled, kind, strings.Join(roots, ", ")).
			With("path", spelled).With("roots", roots)
	}
	return Path{Spelled: spelled, Canonical: c, Exists: exists}, nil
}

// Inside reports whether the canonical path c lies in one of kind's roots.
func (f *Fence) Inside(c string, kind Kind) bool {
	roots := f.readRoots
	if kind == Write {
		roots = f.writeRoots
	}
	for _, r := range roots {
		if Contains(r, c) {
			return true
		}
	}
	return false
}

// Contains reports whether the canonical path p equals root or lies beneath it, comparing
// whole path components ("/a/b" does not contain "/a/bc").
func Contains(root, p string) bool {
	if root == p {
		return true
	}
	if root == "/" {
		return strings.HasPrefix(p, "/")
	}
	return len(p) > len(root) && p[len(root)] == filepath.Separator && p[:len(root)] == root
}

// maxLinks bounds symlink expansion, as the kernel's ELOOP does.
const maxLinks = 40

// Canonicalize resolves every symlink of the absolute path p through e. For a path that
// does not exist, the deepest existing ancestor is resolved and the rest appended
// (exists=false). A dangling link, a loop, or any error other than "does not exist" is
// an error: the answer is never guessed.
func Canonicalize(ctx context.Context, e env.ExecutionEnv, p string) (canonical string, exists bool, err error) {
	if !filepath.IsAbs(p) {
		return "", false, errors.New("not an absolute path")
	}
	rest := strings.Split(filepath.Clean(p), string(filepath.Separator))[1:]
	cur := "/"
	links := 0
	for i := 0; i < len(rest); i++ {
		name := rest[i]
		if name == "" || name == "." {
			continue
		}
		if name == ".." {
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, name)
		fi, err := e.Lstat(ctx, next)
		if errors.Is(err, fs.ErrNotExist) {
			// The remainder does not exist yet: append it as spelled, with ".." refused
			// because it cannot be resolved against directories that are not there.
			for _, r := range rest[i+1:] {
				if r == ".." {
					return "", false, errors.New("'..' below a path that does not exist")
				}
			}
			return filepath.Join(append([]string{next}, rest[i+1:]...)...), false, nil
		}
		if err != nil {
			return "", false, err
		}
		if !fi.IsSymlink() {
			cur = next
			continue
		}
		links++
		if links > maxLinks {
			return "", false, errors.New("too many levels of symbolic links")
		}
		target, err := e.Readlink(ctx, next)
		if err != nil {
			return "", false, err
		}
		tail := rest[i+1:]
		if filepath.IsAbs(target) {
			cur = "/"
		}
		rest = append(strings.Split(filepath.Clean(target), string(filepath.Separator)), tail...)
		i = -1
		if filepath.IsAbs(target) {
			rest = rest[1:]
		}
		// A link whose target does not exist is dangling: refuse rather than guess where
		// a later create would land.
		if _, err := e.Stat(ctx, next); errors.Is(err, fs.ErrNotExist) {
			return "", false, errors.New("dangling symbolic link at " + next)
		}
	}
	return cur, true, nil
}
