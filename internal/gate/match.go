package gate

import (
	"github.com/bmatcuk/doublestar/v4"
	"github.com/sema-agent/sema/internal/rulematch"
	"github.com/sema-agent/sema/permission"
)

// globCache holds every path rule's tree pattern for one (root, home) pair. A gate
// serves one leg, so it is built once.
type globCache struct {
	root, home string
	tree       map[*rulematch.Rule]string // "" when the rule cannot be placed on this leg
}

// globOf returns the rule's tree pattern on a leg rooted at root, "" when it has none.
func (g *Gate) globOf(r *rulematch.Rule, root, home string) string {
	c := g.globs.Load()
	if c == nil || c.root != root || c.home != home {
		c = &globCache{root: root, home: home, tree: map[*rulematch.Rule]string{}}
		for _, list := range [3][]rulematch.Rule{g.rules.Deny, g.rules.Ask, g.rules.Allow} {
			for i := range list {
				if r := &list[i]; r.Kind == rulematch.KindPath {
					if glob, ok := r.GlobFor(root, home); ok {
						c.tree[r] = rulematch.TreeGlob(glob)
					}
				}
			}
		}
		g.globs.Store(c)
	}
	if t, ok := c.tree[r]; ok {
		return t
	}
	if glob, ok := r.GlobFor(root, home); ok {
		return rulematch.TreeGlob(glob)
	}
	return ""
}

// pathNamed reports whether the rule names the absolute path p.
func (g *Gate) pathNamed(r *rulematch.Rule, p, root, home string) bool {
	if p == "" {
		return false
	}
	t := g.globOf(r, root, home)
	return t != "" && doublestar.MatchUnvalidated(t, p)
}

// targetsNamedRestrictive reports whether a deny or ask path rule names any target: the
// canonical path or the spelled absolute one (a rule matches a symbolic link and its
// target alike).
func (g *Gate) targetsNamedRestrictive(r *rulematch.Rule, targets []permission.PathTarget, root, home string) bool {
	for _, t := range targets {
		if g.pathNamed(r, t.Abs, root, home) || g.pathNamed(r, t.Canonical, root, home) {
			return true
		}
	}
	return false
}

// targetsNamedPermissive reports whether an allow path rule names every target in both
// spellings; a call with no targets, or a target that could not be resolved, is not
// matched.
func (g *Gate) targetsNamedPermissive(r *rulematch.Rule, targets []permission.PathTarget, root, home string) bool {
	if len(targets) == 0 {
		return false
	}
	for _, t := range targets {
		if t.Canonical == "" || !g.pathNamed(r, t.Abs, root, home) || !g.pathNamed(r, t.Canonical, root, home) {
			return false
		}
	}
	return true
}
