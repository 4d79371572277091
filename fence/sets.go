package fence

import (
	"context"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/sema-agent/sema"
)

// denySet is the set refused for reads and writes under every face and mode.
type denySet struct {
	// dirs are canonical directories denied with everything beneath them.
	dirs []string
	// globs are doublestar patterns over canonical absolute paths, each ending in "/**"
	// so that it also denies everything beneath what it names; lower case when fold.
	globs []string
	fold  bool
}

// CodeDenyGlobInvalid refuses a Config.DenyGlobs entry that is not a doublestar pattern.
const CodeDenyGlobInvalid = "config.deny_glob_invalid"

// CodeStateDirUnresolvable refuses a Config.StateDir that cannot be canonicalized: the
// fence could not prove it keeps the files away from it.
const CodeStateDirUnresolvable = "config.state_dir_unresolvable"

// globMeta are the characters that make a doublestar pattern component non-literal.
const globMeta = `*?[]{}\`

// buildDeny canonicalizes the state directory and the literal head of every deny glob.
func buildDeny(ctx context.Context, cfg *Config, fold bool) (denySet, error) {
	d := denySet{fold: fold}
	if cfg.StateDir != "" {
		if !strings.HasPrefix(cfg.StateDir, "/") {
			return d, sema.Errorf(CodeStateDirUnresolvable, "the state directory %q is not an absolute path; give an absolute path", cfg.StateDir).
				With("path", cfg.StateDir)
		}
		// Not found is fine: the projection is where the store will create it.
		c, _, err := Canonicalize(ctx, cfg.Env, cfg.StateDir)
		if err != nil {
			return d, sema.Errorf(CodeStateDirUnresolvable, "the state directory %q cannot be resolved safely (%w); fix or remove what is in the way", cfg.StateDir, err).
				With("path", cfg.StateDir)
		}
		d.dirs = append(d.dirs, c)
	}
	for _, g := range cfg.DenyGlobs {
		if g == "" || !doublestar.ValidatePattern(g) {
			return d, sema.Errorf(CodeDenyGlobInvalid, "the deny glob %q is not a valid pattern; use doublestar syntax such as \"/home/*/.ssh/**\" or \"**/*.pem\"", g).
				With("glob", g)
		}
		if !strings.HasPrefix(g, "/") {
			// A relative glob names its match at any depth, as a gitignore line without
			// a slash does: the deny set over-refuses rather than under-refuses.
			g = "/**/" + g
		}
		for _, v := range globVariants(ctx, cfg, g) {
			if !strings.HasSuffix(v, "/**") {
				v += "/**"
			}
			if fold {
				v = strings.ToLower(v)
			}
			d.globs = append(d.globs, v)
		}
	}
	return d, nil
}

// globVariants returns g and, when the literal head of g (its components before the
// first one with a glob character) goes through a symbolic link, g with that head
// canonicalized: globs are matched against canonical paths, so a deny glob written
// through a link would otherwise never match.
func globVariants(ctx context.Context, cfg *Config, g string) []string {
	head, tail := g, ""
	if i := strings.IndexAny(g, globMeta); i >= 0 {
		j := strings.LastIndexByte(g[:i], '/')
		head, tail = g[:j], g[j:]
	}
	if head == "" {
		return []string{g}
	}
	c, _, err := Canonicalize(ctx, cfg.Env, head)
	if err != nil || c == head {
		return []string{g}
	}
	return []string{g, escapeGlob(c) + tail}
}

func escapeGlob(s string) string {
	if !strings.ContainsAny(s, globMeta) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(globMeta, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// denied reports whether c, a canonical path, is in the deny set.
func (d *denySet) denied(c string) bool {
	for _, dir := range d.dirs {
		if d.fold {
			if containsFold(dir, c, true) {
				return true
			}
		} else if within(dir, c) {
			return true
		}
	}
	if len(d.globs) == 0 {
		return false
	}
	if d.fold {
		c = strings.ToLower(c)
	}
	for _, g := range d.globs {
		if doublestar.MatchUnvalidated(g, c) {
			return true
		}
	}
	return false
}

// containsFold is Contains, comparing names without case when fold is set. It is used
// only where comparing without case refuses more (the deny set), never to admit. It
// compares component by component, since case folding may change a name's length.
func containsFold(root, p string, fold bool) bool {
	if !fold {
		return Contains(root, p)
	}
	if !isCanonicalShape(root) || !isCanonicalShape(p) {
		return false
	}
	return withinFold(root, p)
}

// withinFold is containsFold with case folded, for paths already known to be of
// canonical shape.
func withinFold(root, p string) bool {
	r, q := root, p
	for {
		var rn, qn string
		rn, r = nextComponent(r)
		if rn == "" {
			return true
		}
		qn, q = nextComponent(q)
		if !strings.EqualFold(rn, qn) {
			return false
		}
	}
}

// nextComponent splits the first component off a slash-separated path.
func nextComponent(p string) (name, rest string) {
	p = strings.TrimLeft(p, "/")
	if i := strings.IndexByte(p, '/'); i >= 0 {
		return p[:i], p[i:]
	}
	return p, ""
}

// Protected names. A directory name is protected at any depth (the directory itself and
// everything beneath it); a file name is protected as the final component.
var (
	// .ssh holds authorized_keys and rc, which sshd reads and runs at every login.
	protectedDirs = []string{".git", ".sema", ".claude", ".vscode", ".idea", ".husky", ".ssh"}
	// Shell and session startup and logout files, and the configuration files that make
	// a tool run code or change where credentials go.
	protectedFiles = []string{
		".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile",
		".zshrc", ".zprofile", ".zshenv", ".zlogin", ".zlogout",
		".cshrc", ".tcshrc", ".kshrc", ".login", ".logout",
		".pam_environment", ".xprofile", ".xsessionrc", ".xinitrc",
		".gitconfig", ".gitmodules", ".npmrc", ".mcp.json", ".envrc",
	}
	// protectedSubdirs are directories protected under one parent name only, at any
	// depth, with the reason: startup places of a home directory whose bare names (bin,
	// git, user) are everyday ones elsewhere. A repository rarely has a .local/bin; when
	// it does, writing there asks, which costs a question and nothing more.
	protectedSubdirs = [][3]string{
		{".config", "fish", "it is in the fish shell's configuration directory"},
		{".config", "systemd", "it is in the directory of systemd user units"},
		{".config", "autostart", "it is in the desktop session's autostart directory"},
		{".config", "environment.d", "it is in the session environment's directory"},
		{".config", "git", "it is in git's configuration directory"},
		{".local", "bin", "it is in a directory of programs on PATH"},
	}
)

// protectedLast holds, lower case, every name at which a path can become protected.
var protectedLast = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, n := range protectedDirs {
		m[strings.ToLower(n)] = true
	}
	for _, n := range protectedFiles {
		m[strings.ToLower(n)] = true
	}
	for _, s := range protectedSubdirs {
		m[strings.ToLower(s[1])] = true
	}
	return m
})

// ProtectedCandidate reports whether an entry named name can be where its path becomes
// protected, its directory being unprotected: a cheap filter for walkers that judge
// every entry of a tree, before IsProtected. It compares without case, so it admits
// more than IsProtected ever says yes to, never less.
func ProtectedCandidate(name string) bool {
	m := protectedLast()
	if m[name] {
		return true
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c >= 0x80:
			return true // Unicode folds more than ToLower: let IsProtected judge
		case c >= 'A' && c <= 'Z':
			return m[strings.ToLower(name)]
		}
	}
	return false
}

// ProtectedSpots lists, relative and slash-separated, the protected places more than
// one name below a directory (".config/fish", ".local/bin", …): a walker that does not
// list a whole tree still looks for these at the top of each root, where a home
// directory keeps them.
func ProtectedSpots() []string {
	out := make([]string, 0, len(protectedSubdirs))
	for _, s := range protectedSubdirs {
		out = append(out, s[0]+"/"+s[1])
	}
	return out
}

func nameIs(a, b string, fold bool) bool {
	if fold {
		return strings.EqualFold(a, b)
	}
	return a == b
}

// protectedIn judges rel, a slash-separated path below a directory whose last
// component is parent ("" when rel is a whole absolute path).
func protectedIn(parent, rel string, fold bool) (bool, string) {
	prev := parent
	for rel != "" {
		name := rel
		rest := ""
		if i := strings.IndexByte(rel, '/'); i >= 0 {
			name, rest = rel[:i], rel[i+1:]
		}
		rel = rest
		if name == "" {
			continue
		}
		for _, d := range protectedDirs {
			if nameIs(name, d, fold) {
				return true, "it is in a " + d + " directory"
			}
		}
		for _, s := range protectedSubdirs {
			if nameIs(prev, s[0], fold) && nameIs(name, s[1], fold) {
				return true, s[2]
			}
		}
		if rel == "" {
			for _, f := range protectedFiles {
				if nameIs(name, f, fold) {
					return true, "it is the " + f + " file"
				}
			}
		}
		prev = name
	}
	return false, ""
}

// IsProtected reports whether a write to the canonical path c needs a person's yes,
// and why. Protected names are judged below the deepest anchor that holds c, or along
// the whole path when none does. The anchors are the task root and every declared
// additional root (write or read) that is not itself in a protected place: a task root
// that lies inside, say, a .claude directory does not make every write in it
// protected, while an additional directory that is (or links to) a .git directory
// does not unprotect it. Advertised directories are never anchors, and one whose
// canonical path is protected is never admitted, so a scratchpad cannot unprotect a
// .git directory either. Names compare without case when the env's do.
func (f *Fence) IsProtected(c string) (bool, string) {
	base := ""
	if isCanonicalShape(c) {
		base = deepestRoot(f.anchors, c)
	}
	if base == "" {
		return protectedIn("", c, f.fold)
	}
	if base == c {
		return false, ""
	}
	rel := c[len(base)+1:]
	if base == "/" {
		rel = c[1:]
	}
	parent := base[strings.LastIndexByte(base, '/')+1:]
	return protectedIn(parent, rel, f.fold)
}

// Denied reports whether the canonical path c is in the deny set — sema's state
// directory or a deployment deny glob — or in a credential store. Walkers (Glob, Grep,
// LS) use it to leave denied entries out of listings. A path that is not canonical-shaped (absolute and clean)
// cannot be judged and is reported denied.
func (f *Fence) Denied(c string) bool {
	return !isCanonicalShape(c) || f.deny.denied(c) || f.creds.holds(c, "") != ""
}

// InDenySet reports whether the canonical path c is in the deny set proper — sema's state
// directory or a deployment deny glob — leaving out the credential stores Denied also
// reports. A path that is not canonical-shaped is reported denied.
func (f *Fence) InDenySet(c string) bool { return !isCanonicalShape(c) || f.deny.denied(c) }

// ProtectedError is the fs.path_protected error for a caller that chooses to refuse a
// protected write instead of asking (a non-interactive leg, say).
func (f *Fence) ProtectedError(p Path) *sema.Error {
	return sema.Errorf(CodeProtected, "the path %q is protected (%s); writing it needs a person's approval", p.Spelled, p.ProtectedReason).
		With("path", p.Spelled).With("reason", p.ProtectedReason).With("roots", f.WriteRoots())
}

// MayContainDenied reports whether a recursive read of the canonical directory dir (a
// grep -r, an rg, a find) could reach the deny set or a credential store: the state
// directory or a store equals or lies beneath dir, or dir lies beneath it; or some deny glob could match dir or
// something beneath it. A relative glob matches at any depth, so it always could; an
// absolute glob could when its static prefix (its whole components before the first
// one with a glob character) and dir lie on one path, one containing the other. The
// answer over-refuses rather than under-refuses: a path that is not canonical-shaped
// is reported as possibly containing denied files.
func (f *Fence) MayContainDenied(dir string) bool {
	if !isCanonicalShape(dir) || f.creds.mayHold(dir) {
		return true
	}
	d := &f.deny
	for _, sd := range d.dirs {
		if containsFold(dir, sd, d.fold) || containsFold(sd, dir, d.fold) {
			return true
		}
	}
	if d.fold {
		dir = strings.ToLower(dir)
	}
	for _, g := range d.globs {
		// A relative glob was stored as "/**/…": its static prefix is "/".
		prefix := g
		if i := strings.IndexAny(g, globMeta); i >= 0 {
			prefix = g[:max(strings.LastIndexByte(g[:i], '/'), 0)]
		}
		if prefix == "" || within(prefix, dir) || within(dir, prefix) {
			return true
		}
	}
	return false
}

// DenyPaths lists the deny set's fixed places: sema's state directory and every deny glob
// without a glob character, each denied with everything beneath it. Pattern globs are not
// listed — they name no place until matched. A kernel sandbox hides these places from the
// commands it confines.
func (f *Fence) DenyPaths() []string {
	out := append([]string(nil), f.deny.dirs...)
	for _, g := range f.deny.globs {
		p := strings.TrimSuffix(g, "/**")
		if p != "" && !strings.ContainsAny(p, globMeta) {
			out = append(out, p)
		}
	}
	return out
}
