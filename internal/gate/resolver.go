package gate

import (
	"context"
	"path/filepath"

	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/gitconf"
	"github.com/sema-agent/sema/permission"
)

// scopeRoot is the root relative paths resolve against: the task root, else the first
// write root, else "/".
func scopeRoot(s *permission.Scope) string {
	if s.Root != "" {
		return s.Root
	}
	if len(s.WriteRoots) > 0 {
		return s.WriteRoots[0]
	}
	return "/"
}

// Resolver is what the gate resolves paths through: the shell targets of a Bash call
// and the paths of a rewritten input. FenceResolver adapts a *fence.Fence.
type Resolver interface {
	// Canonicalize resolves every symbolic link of the absolute path abs, fail-closed
	// (see fence.Canonicalize); a path that does not exist yet resolves to its canonical
	// deepest existing ancestor with the rest appended.
	Canonicalize(ctx context.Context, abs string) (string, error)
	// IsProtected reports whether a write to the canonical path needs a person's yes.
	IsProtected(canonical string) (bool, string)
	// Denied reports whether the canonical path is in the deny set no tool may touch.
	Denied(canonical string) bool
	// MayContainDenied reports whether a recursive read of the canonical path (grep -r,
	// rg, find) could reach the deny set: the path is a directory, or cannot be
	// examined, and fence.Fence.MayContainDenied says so. A file is judged by Denied.
	MayContainDenied(ctx context.Context, canonical string) bool
	// HardLinked reports whether the canonical path is a regular file with another name
	// (fence.HardLinked): reading it may read a file outside the roots.
	HardLinked(ctx context.Context, canonical string) bool
}

// GitProgramsReader is implemented by a Resolver that can read git configuration: for the
// repository around the canonical directory dir it returns a sentence naming a program its
// configuration makes git run, or "" (gitconf.Programs). A Resolver without it leaves every
// git command unproven.
type GitProgramsReader interface {
	GitPrograms(ctx context.Context, dir string) string
}

// FenceResolver returns the Resolver of a leg's fence.
func FenceResolver(f *fence.Fence) Resolver { return fenceResolver{f} }

type fenceResolver struct{ f *fence.Fence }

func (r fenceResolver) Canonicalize(ctx context.Context, abs string) (string, error) {
	c, _, err := fence.Canonicalize(ctx, r.f.Env(), abs)
	return c, err
}

func (r fenceResolver) IsProtected(c string) (bool, string) { return r.f.IsProtected(c) }

func (r fenceResolver) GitPrograms(ctx context.Context, dir string) string {
	return gitconf.Programs(ctx, r.f.Env(), dir)
}
func (r fenceResolver) Denied(c string) bool { return r.f.Denied(c) }

func (r fenceResolver) MayContainDenied(ctx context.Context, c string) bool {
	if info, err := r.f.Env().Stat(ctx, c); err == nil && !info.Mode.IsDir() {
		return false
	}
	return r.f.MayContainDenied(c)
}

func (r fenceResolver) HardLinked(ctx context.Context, c string) bool {
	info, err := r.f.Env().Stat(ctx, c)
	return err == nil && fence.HardLinked(c, info)
}

// ScopeOf returns the Scope of a leg's fence: its root, write roots, read roots and
// admitted advertised directories (as exempt directories), and the home directory home
// (absolute; "" for none) canonicalized through the fence's env. A home that does not
// resolve is kept as spelled, cleaned: the delete guard still keeps that spelling.
func ScopeOf(ctx context.Context, f *fence.Fence, home string) permission.Scope {
	if home != "" {
		if c, _, err := fence.Canonicalize(ctx, f.Env(), home); err == nil {
			home = c
		} else {
			home = filepath.Clean(home)
		}
	}
	s := permission.Scope{Root: f.Root(), Home: home, WriteRoots: f.WriteRoots(), ReadRoots: f.ReadRoots()}
	for _, a := range f.Advertised() {
		if a.Admitted {
			s.ExemptDirs = append(s.ExemptDirs, a.Canonical)
		}
	}
	return s
}
