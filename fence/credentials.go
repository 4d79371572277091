package fence

import (
	"context"
	"io/fs"
	"path"
	"slices"
	"strings"
	"unicode"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
)

// CredentialStores are the places, relative to the home directory, where people keep
// credentials: shell and REPL histories (pasted tokens, connection strings), git's
// credential stores, other agents' and CLIs' logins, build tools' publishing tokens,
// cloud and container CLIs' keys, password managers and key rings. It is the one list
// both walls judge by: the fence refuses every path in them for reads and writes (the
// file tools never open them), and the kernel sandbox (package sandbox) hides them from
// every confined command, also beneath a granted tree. Config.Hidden adds to it.
var CredentialStores = []string{
	// Shell and REPL histories.
	".bash_history", ".zsh_history", ".zhistory", ".histfile", ".sh_history", ".history",
	".local/share/fish/fish_history", ".python_history", ".node_repl_history",
	".psql_history", ".mysql_history", ".sqlite_history", ".rediscli_history",
	".mongosh", ".dbshell", ".lesshst", ".irb_history", ".pry_history", ".ts_node_repl_history",
	".local/state/nvim/shada", ".viminfo",
	// git's credential stores (credential.helper store), in both places git looks.
	".git-credentials", ".config/git/credentials",
	// Other agents' and AI CLIs' logins.
	".claude.json", ".claude/.credentials.json", ".codex/auth.json", ".gemini", ".aider",
	".aider.conf.yml", ".aider.oauth-keys.env", ".cursor", ".config/github-copilot",
	".continue/config.json", ".config/openai", ".config/anthropic",
	// Forges' CLIs.
	".config/gh", ".config/hub", ".config/glab-cli", ".config/tea", ".tea",
	// Build tools' publishing and registry tokens.
	".npmrc", ".yarnrc", ".yarnrc.yml", ".pypirc", ".config/pip", ".pip/pip.conf",
	".cargo/credentials", ".cargo/credentials.toml", ".m2/settings.xml",
	".m2/settings-security.xml", ".gradle/gradle.properties", ".nuget/NuGet/NuGet.Config",
	".gem/credentials", ".local/share/gem/credentials", ".composer/auth.json",
	".config/composer/auth.json", ".bundle/config", ".config/uv/uv.toml",
	".local/share/uv/credentials", ".config/pypoetry/auth.toml",
	".local/share/pypoetry/auth.toml", ".config/hatch", ".hex/hex.config", ".config/jfrog", ".jfrog",
	".pub-cache/credentials.json", ".config/dart/pub-credentials.json", ".stack/upload/credentials.json",
	// Cloud, infrastructure and container CLIs.
	".aws", ".azure", ".config/gcloud", ".kube", ".docker/config.json",
	".config/containers/auth.json", ".oci", ".config/doctl", ".terraform.d/credentials.tfrc.json",
	".terraformrc", ".vault-token", ".config/helm/registry", ".config/op", ".op",
	".config/rclone", ".s3cfg", ".boto", ".passwd-s3fs", ".config/hcloud", ".config/scw",
	".config/linode-cli", ".fly", ".config/heroku", ".netlify", ".config/netlify",
	".vercel", ".config/vercel", ".local/share/com.vercel.cli", ".wrangler", ".config/.wrangler", ".supabase", ".config/ngrok",
	".config/stripe", ".config/exoscale", ".ovh.conf", ".ibmcloud", ".bluemix",
	// Keys, password stores, key rings and generic login files.
	".ssh", ".gnupg", ".password-store", ".local/share/keyrings", ".pki", ".netrc", ".authinfo",
	".authinfo.gpg", ".pgpass", ".my.cnf", ".mylogin.cnf", ".config/keybase",
	".local/share/keybase", ".mozilla", ".config/google-chrome", ".config/chromium",
	".config/BraveSoftware", ".thunderbird",
}

// RuntimeCredentialStores are the places, relative to the user's runtime directory
// ($XDG_RUNTIME_DIR), where container tools keep registry logins.
var RuntimeCredentialStores = []string{"containers/auth.json"}

// CredentialPaths returns the absolute, lexically clean places of the credential stores:
// CredentialStores under home, RuntimeCredentialStores under runtimeDir, then extra —
// each absolute, "~/" or relative to home. An empty home (or runtimeDir) leaves out the
// places relative to it; nothing is resolved, and places that do not exist are listed too.
func CredentialPaths(home, runtimeDir string, extra []string) []string {
	home, runtimeDir = absClean(home), absClean(runtimeDir)
	out := make([]string, 0, len(CredentialStores)+len(RuntimeCredentialStores)+len(extra))
	if home != "" {
		for _, s := range CredentialStores {
			out = append(out, path.Join(home, s))
		}
	}
	if runtimeDir != "" {
		for _, s := range RuntimeCredentialStores {
			out = append(out, path.Join(runtimeDir, s))
		}
	}
	for _, e := range extra {
		switch {
		case e == "" || e == "~":
		case strings.HasPrefix(e, "/"):
			out = append(out, path.Clean(e))
		case strings.HasPrefix(e, "~/"):
			if home != "" {
				out = append(out, path.Join(home, e[2:]))
			}
		case home != "":
			out = append(out, path.Join(home, e))
		}
	}
	return out
}

// absClean is p cleaned when absolute, "" otherwise: a relative home names no place.
func absClean(p string) string {
	if !strings.HasPrefix(p, "/") {
		return ""
	}
	return path.Clean(p)
}

// credentialSet is the fence's copy of the credential stores: each place as spelled under
// the configured home and, where it exists (or its parent does) behind a symbolic link,
// where it really is. Both spellings are judged, so a store is refused whether a path
// reaches it through its link or through its target.
type credentialSet struct {
	places []string
	// shaped are the places of canonical shape, the only ones a path can lie in
	// (Contains): judged without checking each place's shape again on every call.
	shaped []string
	fold   bool
}

// buildCredentials canonicalizes the credential stores of cfg, once per fence.
func buildCredentials(ctx context.Context, cfg *Config, fold bool) credentialSet {
	cs := credentialSet{fold: fold}
	home := absClean(cfg.Home)
	list := CredentialPaths(home, cfg.RuntimeDir, cfg.Hidden)
	// Most stores are beneath the home directory: resolve it once, and canonicalize a
	// store itself only when its own spelling is not canonical.
	var canonHome string
	if home != "" {
		if c, _, err := Canonicalize(ctx, cfg.Env, home); err == nil {
			canonHome = c
		}
	}
	// Beneath the canonical home, one listing per directory tells which stores exist and
	// which are spelled where they are, instead of an Lstat of each store (about a
	// hundred, most of them absent) and a walk of each one present. A store the listings
	// cannot answer for is asked of the file system as before.
	var probe *dirProbe
	if canonHome != "" && !fold && !cfg.Env.CaseInsensitive() {
		probe = &dirProbe{ctx: ctx, env: cfg.Env, lists: map[string][]env.DirEntry{}, stores: list, home: home, canonHome: canonHome}
	}
	for _, p := range list {
		cs.places = appendNew(cs.places, p)
		q := p
		if canonHome != "" && canonHome != home && within(home, p) {
			q = canonHome + p[len(home):]
			cs.places = appendNew(cs.places, q)
		}
		if probe != nil && q != canonHome && within(canonHome, q) {
			switch probe.look(canonHome, q) {
			case probeAbsent, probeCanonical:
				continue // nothing to add: judged by its spelling, which is where it is
			}
		}
		if _, err := cfg.Env.Lstat(ctx, q); err != nil {
			// Not there (yet): judged by its spelling. A store made later behind a new
			// link is refused when spelled through the home directory.
			continue
		}
		if c, _, err := Canonicalize(ctx, cfg.Env, q); err == nil && c != q {
			cs.places = appendNew(cs.places, c)
		}
	}
	for _, p := range cs.places {
		if isCanonicalShape(p) {
			cs.shaped = append(cs.shaped, p)
		}
	}
	return cs
}

// dirProbe answers from directory listings what Lstat and Canonicalize of a credential
// store would: whether it exists, and whether its spelling is where it is. It serves one
// fence's construction and keeps nothing past it, so it sees the file system as the
// per-store calls did, at the moment the fence is built.
type dirProbe struct {
	ctx   context.Context
	env   env.ExecutionEnv
	lists map[string][]env.DirEntry // by directory; nil for one that could not be listed
	// folded is each listed directory's names in lower case, made at its first miss: a
	// name absent as spelled may be listed in another case.
	folded map[string]map[string]bool
	// stores are the places looked for, spelled under home (canonHome is where it
	// is): a directory is listed only while it holds no more entries than there are
	// stores beneath it (see list).
	stores          []string
	home, canonHome string
}

// boundedLister is an env that can stop listing a directory past a number of entries
// (env.Host).
type boundedLister interface {
	ReadDirUpTo(ctx context.Context, path string, n int) ([]env.DirEntry, bool, error)
}

// probeAnswer is what a dirProbe knows of a path.
type probeAnswer int

const (
	probeAsk       probeAnswer = iota // the listings cannot tell: ask the file system
	probeAbsent                       // it does not exist
	probeCanonical                    // it exists, with no link on the way to it
)

// look answers for p, which lies beneath base, a canonical directory. It walks p's
// components through base's listings: a name that is not listed is absent (so is
// anything beneath a listed file that is not a directory); a link on the way, a name
// listed only in another case (a directory that folds case), or a directory that cannot
// be listed leaves the answer to the file system.
func (d *dirProbe) look(base, p string) probeAnswer {
	dir, rest := base, strings.TrimPrefix(p[len(base):], "/")
	for {
		name, more, deeper := strings.Cut(rest, "/")
		ents, ok := d.list(dir)
		if !ok {
			return probeAsk
		}
		i, found := slices.BinarySearchFunc(ents, name, func(e env.DirEntry, n string) int { return strings.Compare(e.Name, n) })
		if !found {
			if d.listedInAnotherCase(dir, ents, name) {
				return probeAsk
			}
			return probeAbsent
		}
		switch t := ents[i].Type; {
		case t&fs.ModeSymlink != 0:
			return probeAsk
		case !deeper:
			return probeCanonical
		case !t.IsDir():
			return probeAbsent
		}
		dir, rest = strings.TrimSuffix(dir, "/")+"/"+name, more
	}
}

// listedInAnotherCase reports whether dir's listing ents holds name in another case: one
// strings.EqualFold matches, as a case-folding file system may (ſ and K are s and k).
func (d *dirProbe) listedInAnotherCase(dir string, ents []env.DirEntry, name string) bool {
	folded, ok := d.folded[dir]
	if !ok {
		folded = make(map[string]bool, len(ents))
		for _, e := range ents {
			folded[foldKey(e.Name)] = true
		}
		if d.folded == nil {
			d.folded = map[string]map[string]bool{}
		}
		d.folded[dir] = folded
	}
	return folded[foldKey(name)]
}

// foldKey spells s with each letter as the least rune of its case-folding orbit, so two
// names have the same key exactly when strings.EqualFold matches them. (strings.ToLower
// is not that: it leaves ſ, which folds with s, as it is.)
func foldKey(s string) string {
	return strings.Map(func(r rune) rune {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		return least
	}, s)
}

// beneath counts the stores looked for beneath dir.
func (d *dirProbe) beneath(dir string) int {
	n := 0
	for _, p := range d.stores {
		if d.canonHome != d.home && within(d.home, p) {
			p = d.canonHome + p[len(d.home):]
		}
		if p != dir && within(dir, p) {
			n++
		}
	}
	return n
}

// list is dir's entries sorted by name, listed once.
func (d *dirProbe) list(dir string) ([]env.DirEntry, bool) {
	if ents, ok := d.lists[dir]; ok {
		return ents, ents != nil
	}
	var ents []env.DirEntry
	var err error
	if bl, ok := d.env.(boundedLister); ok {
		// Listing costs about a third of an Lstat per entry: a directory with more
		// entries than stores beneath it (a crowded home) is cheaper asked store by
		// store, and a listing stops there.
		var more bool
		ents, more, err = bl.ReadDirUpTo(d.ctx, dir, max(8, d.beneath(dir)))
		if more {
			d.lists[dir] = nil
			return nil, false
		}
	} else {
		ents, err = d.env.ReadDir(d.ctx, dir)
	}
	if err != nil {
		d.lists[dir] = nil
		return nil, false
	}
	if ents == nil {
		ents = []env.DirEntry{}
	}
	// ReadDir promises names in order; a listing out of order is put in order rather
	// than trusted, since a name missed here is a store not followed through its link.
	if !slices.IsSortedFunc(ents, func(a, b env.DirEntry) int { return strings.Compare(a.Name, b.Name) }) {
		ents = slices.Clone(ents)
		slices.SortFunc(ents, func(a, b env.DirEntry) int { return strings.Compare(a.Name, b.Name) })
	}
	d.lists[dir] = ents
	return ents, true
}

// holds reports whether the canonical path c, or the absolute spelling it was resolved
// from (lexically cleaned; "" for none), lies in a credential store; it returns the store.
func (cs *credentialSet) holds(c, spelled string) string {
	if s := cs.holding(c); s != "" {
		return s
	}
	if spelled != "" && spelled != c {
		return cs.holding(spelled)
	}
	return ""
}

// holding returns the store p lies in, or "" (containsFold for each place, with p's
// shape checked once: this runs for every path a file tool resolves).
func (cs *credentialSet) holding(p string) string {
	if !isCanonicalShape(p) {
		return ""
	}
	for _, s := range cs.shaped {
		if cs.fold && withinFold(s, p) || !cs.fold && within(s, p) {
			return s
		}
	}
	return ""
}

// mayHold reports whether a recursive read of the canonical directory dir could reach a
// credential store: one lies beneath dir, or dir lies in one.
func (cs *credentialSet) mayHold(dir string) bool {
	for _, s := range cs.places {
		if containsFold(dir, s, cs.fold) || containsFold(s, dir, cs.fold) {
			return true
		}
	}
	return false
}

// CredentialPlaces lists the credential stores this fence refuses, as absolute paths: each
// as spelled under Config.Home and, where it is behind a symbolic link, where it really is.
// Places that do not exist are listed too. A kernel sandbox hides those that exist.
func (f *Fence) CredentialPlaces() []string { return append([]string(nil), f.creds.places...) }

// credentialError is the fs.path_denied refusal of a path in a credential store.
func (f *Fence) credentialError(spelled, store string, roots []string) *sema.Error {
	return sema.Errorf(CodeDenied, "the path %q is in a credential store (%s), which the file tools never read or write and commands cannot see; if the task needs a value from it, ask the user", spelled, store).
		With("path", spelled).With("store", store).With("roots", roots)
}
