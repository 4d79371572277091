package shell

import (
	"context"
	"slices"

	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/sandbox"
)

// Codes of what the change recorder did about protected paths (notices, notes, and the
// leg's permission denials).
const (
	// CodeProtectedReverted: a Bash command (or a background task) created, changed or
	// removed protected paths (.git, .vscode, .envrc, … at any depth) without a person's
	// approval of that exact call, and they were put back before the answer.
	CodeProtectedReverted = "sandbox.protected_reverted"
	// CodeProtectedUnreverted: such a change could not be put back (a pre-image over the
	// size cap, a removed .git directory, an error); it stays, recorded for rewind.
	CodeProtectedUnreverted = "sandbox.protected_unreverted"
)

// Confiner is implemented by a ChangeRecorder whose walk before a command knows more
// than the sandbox's look at the top of each write root: the protected entries at every
// depth, and the files with more than one hard link.
type Confiner interface {
	// Confinement returns, from the latest walk, the protected places a command may not
	// write (outermost protected entries at any depth, and the places protected links
	// and .git files inside the write roots lead to) and the regular files with more
	// than one hard link it may not read (another name of such a file may lie outside
	// the roots, or in a hidden place: the file tools refuse them too, fence.HardLinked).
	// A recorder that has not walked yet (the set's first command was proven read-only,
	// so it reached no Before) walks now.
	Confinement(ctx context.Context) (readOnly, hidden []string)
}

// withWalked adds what the change recorder's walk found to a command's policy p: the
// protected entries read-only, unless a person approved exactly this call or the write
// face is open (as Policy.WithProtected), and the multi-link files hidden, always.
func (s *Set) withWalked(ctx context.Context, p sandbox.Policy) sandbox.Policy {
	c, ok := s.cfg.Changes.(Confiner)
	if !ok || s.cfg.ReadOnly {
		return p
	}
	ro, hidden := c.Confinement(ctx)
	if sandbox.Approved(ctx) || s.cfg.Fence.WriteFace() == fence.FaceOpen {
		ro = nil
	}
	// What a hidden place holds is hidden with it, and a place bound twice is bound once.
	fresh := func(have, add []string) []string {
		var out []string
		for _, x := range add {
			if !slices.Contains(have, x) && !beneath(p.Hidden, x) {
				out = append(out, x)
			}
		}
		return out
	}
	if add := fresh(p.ReadOnly, ro); len(add) > 0 {
		p.ReadOnly = append(slices.Clip(p.ReadOnly), add...)
	}
	if add := fresh(p.Hidden, hidden); len(add) > 0 {
		p.Hidden = append(slices.Clip(p.Hidden), add...)
	}
	return p
}

// beneath reports whether p is one of dirs or lies beneath one.
func beneath(dirs []string, p string) bool {
	for _, d := range dirs {
		if fence.Contains(d, p) {
			return true
		}
	}
	return false
}
