package permission

import (
	"net/url"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// coversTool reports whether the rule's tool part covers a call of name. An Edit rule
// covers every covered write tool; a Read rule covers the file-reading tools and, when
// restrictive (deny or ask), the write tools too: a path one may not read, one may not
// write either. A whole-server MCP rule covers every tool of its server.
func (r *Rule) coversTool(name string, restrictive bool) bool {
	switch {
	case r.kind == kindServer:
		return strings.HasPrefix(name, mcpServerPrefix(r.Tool))
	case r.Tool == name:
		return true
	case r.Tool == "Edit":
		return isEditTool(name)
	case r.Tool == "Read":
		return isReadTool(name) || restrictive && isEditTool(name)
	}
	return false
}

// globFor returns the rule's absolute doublestar pattern for a leg rooted at root with
// home directory home; ok is false when the pattern cannot be placed (a "~/" rule on a
// leg with no home).
func (r *Rule) globFor(root, home string) (string, bool) {
	var base string
	switch r.anchor {
	case anchorAbs:
		return "/" + r.pattern, true
	case anchorHome:
		if home == "" {
			return "", false
		}
		base = home
	case anchorAny:
		base = root
		if base == "/" {
			return "/**/" + r.pattern, true
		}
		return escapeMeta(base) + "/**/" + r.pattern, true
	default:
		base = root
	}
	if r.pattern == "" {
		return escapeMeta(base), true
	}
	if base == "/" {
		return "/" + r.pattern, true
	}
	return escapeMeta(base) + "/" + r.pattern, true
}

// escapeMeta escapes the glob characters of a literal path.
func escapeMeta(s string) string {
	if !strings.ContainsAny(s, `*?[]{}\`) {
		return s
	}
	var b strings.Builder
	for _, c := range []byte(s) {
		if strings.IndexByte(`*?[]{}\`, c) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

// treeGlob returns the pattern that matches what glob matches and everything below it
// (gitignore: a pattern naming a directory covers its content). doublestar's trailing
// "/**" matches the directory itself too.
func treeGlob(glob string) string {
	switch {
	case glob == "/":
		return "/**"
	case strings.HasSuffix(glob, "/**"):
		return glob
	}
	return glob + "/**"
}

// pathMatches reports whether the rule names the absolute path p on a leg rooted at root
// with home directory home. The gate reads the same answer through its glob cache.
func (r *Rule) pathMatches(p, root, home string) bool {
	g, ok := r.globFor(root, home)
	return ok && p != "" && doublestar.MatchUnvalidated(treeGlob(g), p)
}

// globCache holds every path rule's tree pattern for one (root, home) pair. A gate
// serves one leg, so it is built once.
type globCache struct {
	root, home string
	tree       map[*Rule]string // "" when the rule cannot be placed on this leg
}

// globOf returns the rule's tree pattern on a leg rooted at root, "" when it has none.
func (g *Gate) globOf(r *Rule, root, home string) string {
	c := g.globs.Load()
	if c == nil || c.root != root || c.home != home {
		c = &globCache{root: root, home: home, tree: map[*Rule]string{}}
		for _, list := range [3][]Rule{g.rules.Deny, g.rules.Ask, g.rules.Allow} {
			for i := range list {
				if r := &list[i]; r.kind == kindPath {
					if glob, ok := r.globFor(root, home); ok {
						c.tree[r] = treeGlob(glob)
					}
				}
			}
		}
		g.globs.Store(c)
	}
	if t, ok := c.tree[r]; ok {
		return t
	}
	if glob, ok := r.globFor(root, home); ok {
		return treeGlob(glob)
	}
	return ""
}

// pathNamed reports whether the rule names the absolute path p.
func (g *Gate) pathNamed(r *Rule, p, root, home string) bool {
	if p == "" {
		return false
	}
	t := g.globOf(r, root, home)
	return t != "" && doublestar.MatchUnvalidated(t, p)
}

// targetsNamedRestrictive reports whether a deny or ask path rule names any target: the
// canonical path or the spelled absolute one (a rule matches a symbolic link and its
// target alike).
func (g *Gate) targetsNamedRestrictive(r *Rule, targets []PathTarget, root, home string) bool {
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
func (g *Gate) targetsNamedPermissive(r *Rule, targets []PathTarget, root, home string) bool {
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

// domainMatches reports whether a WebFetch domain rule names the url's host. An url that
// does not parse is named by no rule here; callers read that as "not allowed".
func (r *Rule) domainMatches(raw string) (match, parsed bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return false, false
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if base, ok := strings.CutPrefix(r.domain, "*."); ok {
		return strings.HasSuffix(host, "."+base), true
	}
	return host == r.domain, true
}
