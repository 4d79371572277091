package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/sema-agent/sema/fence"
)

// CodeCachesPrivate is the leg's notice that the kernel cannot lay a private write layer
// over the toolchain caches (no overlay mount): commands read them as they are and write
// Go's, npm's, pip's and yarn's into cold private caches (Policy.PrivateCaches); cargo's,
// Maven's and Gradle's stay read-only. The run goes on.
const CodeCachesPrivate = "sandbox.caches_private"

// Options are what a leg adds to the fence when it builds the policy of its commands.
type Options struct {
	// TempDir is the commands' private temporary directory (exported to them as TMPDIR):
	// writable. Empty: none.
	TempDir string
	// Files are single files the commands may write (the shell's working-directory
	// report). Each must exist.
	Files []string
	// Readable and Writable extend the read and write sets: a deployment's or a settings
	// file's additions (a toolchain in an unusual place, a shared cache). Relative and
	// empty entries are ignored; "~/" is the home directory.
	Readable, Writable []string
	// Hidden extends DefaultCredentialStores: places no command may read, also beneath a
	// root. Relative entries are relative to the home directory. The fence given to
	// ForFence should refuse the same (fence.Config.Hidden), so the file tools and the
	// commands agree.
	Hidden []string
	// Sockets are unix sockets outside the write roots commands may connect to (a
	// database's, a container daemon's): absolute or "~/". Each is granted while it is a
	// socket; nothing else is. Default: none.
	Sockets []string
	// SharedCaches grants the toolchain caches (Go's, npm's, pip's, cargo's, Maven's, …)
	// for writing, as they are: a command can then change what later builds outside the
	// sandbox use. Default false: commands read the caches through and write into a
	// private layer (CacheLayer).
	SharedCaches bool
	// CacheLayer is the directory the private write layers of the caches live in, one
	// per leg (Policy.CacheLayer). Empty (and SharedCaches false): the caches are granted
	// read-only.
	CacheLayer string
	// Network lets commands reach the network. Default false: loopback only.
	Network bool
	// Home is the home directory the toolchain and credential lists are relative to.
	// Empty: os.UserHomeDir.
	Home string
	// Getenv reads the environment commands run with (toolchain cache locations).
	// Nil: os.Getenv.
	Getenv func(string) string
}

// ForFence derives a leg's policy from its fence, never by hand: write = the write roots
// (which hold the admitted advertised directories) and the private temp directory; read
// = the read roots, the system directories and the toolchains; caches = the toolchain
// caches, read through with writes landing in CacheLayer (in write instead with
// SharedCaches, in read without a CacheLayer); hidden = the fence's deny set (state
// directory, literal deny globs), the credential stores the fence refuses and
// DefaultCredentialStores with Options.Hidden under Options.Home; sockets = the
// Options.Sockets that are sockets. A write face of open makes the whole filesystem
// writable, a read face of open the whole filesystem readable; hidden places stay hidden
// under either. Protected paths, and hidden places and sockets made since, are judged per
// command by WithProtected.
func ForFence(f *fence.Fence, o Options) Policy {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	home := o.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	expand := func(list []string, base string) []string {
		var out []string
		for _, p := range list {
			switch {
			case p == "~" || strings.HasPrefix(p, "~/"):
				if home != "" {
					out = append(out, filepath.Join(home, p[1:]))
				}
			case filepath.IsAbs(p):
				out = append(out, p)
			case base != "" && p != "":
				out = append(out, filepath.Join(base, p))
			}
		}
		return out
	}
	m := machineFor(home, getenv)
	var p Policy
	// The fence's roots and deny paths are canonical already; only what a person or a
	// settings file wrote is resolved here.
	p.Write = append(p.Write, f.WriteRoots()...)
	if o.TempDir != "" {
		p.Write = append(p.Write, o.TempDir)
		p.TempDir = o.TempDir // the helper's view shows it at /tmp too
	}
	p.Write = append(p.Write, o.Files...)
	p.Write = append(p.Write, existing(resolved(expand(o.Writable, "")))...)
	p.Read = append(p.Read, f.ReadRoots()...)
	p.Read = append(p.Read, m.read...)
	p.Read = append(p.Read, existing(resolved(expand(o.Readable, "")))...)
	// The caches: written as they are only by a person's choice (SharedCaches), since
	// what a command writes there is what later builds outside the sandbox run.
	switch {
	case o.SharedCaches:
		p.Write = append(p.Write, m.caches...)
	case o.CacheLayer != "":
		p.Caches = append(p.Caches, m.caches...)
		p.CacheLayer = o.CacheLayer
	default:
		p.Read = append(p.Read, m.caches...)
	}
	if f.WriteFace() == fence.FaceOpen {
		p.Write = []string{"/"}
	}
	if f.ReadFace() == fence.FaceOpen {
		p.Read = []string{"/"}
	}
	p.Devices = m.devices
	p.Network = o.Network
	p.Write = outermost(p.Write, nil)
	// A cache beneath a write root is written as the root is.
	p.Caches = outermost(p.Caches, p.Write)
	if len(p.Caches) == 0 {
		p.Caches, p.CacheLayer = nil, ""
	}
	p.Read = outermost(p.Read, append(slices.Clip(p.Write), p.Caches...))
	// The fence's places are resolved already (its deny paths are canonical, its stores
	// listed both as spelled and, behind a link, as resolved): they are looked at per
	// command only. Its stores under the same home are the machine's.
	hide := f.DenyPaths()
	for _, c := range f.CredentialPlaces() {
		if !m.spelled[c] {
			hide = append(hide, c)
		}
	}
	p.hideable = slices.Clip(m.credentials)
	for _, h := range compact(hide) {
		p.hideable = append(p.hideable, place{path: h})
	}
	p.hideable = append(p.hideable, placesOf(expand(o.Hidden, home))...)
	p.home = home
	p.goModCache, p.goProxy = m.goModCache, getenv("GOPROXY")
	p.sockets = resolved(expand(o.Sockets, ""))
	p.refresh()
	return p
}

// PrivateCaches is p for a kernel that cannot lay a private write layer over the caches
// (no overlay filesystem): the caches become read-only, and the commands get the
// environment that points the toolchains that can be pointed elsewhere — Go's build and
// module caches, npm's, pnpm's, pip's and yarn's — at private caches in the leg's layer
// directory. Go fetches the modules the shared cache holds from it through a file
// proxy, so a build that needs no download still needs no network. The other caches
// (cargo's, Maven's, Gradle's) are read-only: a build that must write them fails, and
// Options.SharedCaches is the way to let it. Without caches or a layer directory, p is
// returned as it is.
func (p Policy) PrivateCaches() (Policy, []string) {
	if len(p.Caches) == 0 || p.CacheLayer == "" {
		return p, nil
	}
	layer := p.CacheLayer
	p.Read = outermost(append(slices.Clip(p.Read), p.Caches...), p.Write)
	p.Caches, p.CacheLayer = nil, ""
	p.Write = append(slices.Clip(p.Write), layer)
	env := []string{
		"GOCACHE=" + filepath.Join(layer, "go-build"),
		"GOMODCACHE=" + filepath.Join(layer, "go-mod"),
		"npm_config_cache=" + filepath.Join(layer, "npm"),
		"npm_config_store_dir=" + filepath.Join(layer, "pnpm-store"),
		"PIP_CACHE_DIR=" + filepath.Join(layer, "pip"),
		"YARN_CACHE_FOLDER=" + filepath.Join(layer, "yarn"),
	}
	if p.goModCache != "" {
		proxy := p.goProxy
		if proxy == "" {
			proxy = "https://proxy.golang.org,direct"
		}
		env = append(env, "GOPROXY=file://"+filepath.Join(p.goModCache, "cache", "download")+","+proxy)
	}
	return p, env
}

// refresh draws Hidden and Sockets from what exists now. A hidden place needs hiding
// only where a grant would reach it; elsewhere the kernel's default (nothing) already
// holds. A place that did not exist when the policy was made is resolved now: made since
// behind a link, it is hidden where the link leads.
func (p *Policy) refresh() {
	var hidden []string
	// Most places lie under the home directory, which few grants reach: those are
	// judged against the grants that do.
	var all, nearHome []string
	all = append(append(append(all, p.Read...), p.Write...), p.Caches...)
	for _, g := range all {
		if p.home == "" || within(g, p.home) || within(p.home, g) {
			nearHome = append(nearHome, g)
		}
	}
	granted := func(h string) bool {
		if p.home != "" && within(p.home, h) {
			return beneathAny(nearHome, h)
		}
		return beneathAny(all, h)
	}
	// absent are directories found missing in this look: the places beneath them
	// (~/.config/…, ~/.local/share/… in a sparse home) need no look of their own.
	var absent []string
	for _, pl := range p.hideable {
		h := pl.path
		if !granted(h) {
			// It lies where no grant reaches — or, absent, would be made there (made
			// later as a link into a grant, it names what the grant shows anyway).
			continue
		}
		if beneathAny(absent, h) {
			continue
		}
		fi, err := os.Lstat(h)
		if err != nil {
			if dir := filepath.Dir(h); dir != p.home && dir != "/" && !errors.Is(err, fs.ErrPermission) {
				if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
					absent = append(absent, dir)
				}
			}
			continue
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			// A link (made since, or listed as spelled): the kernel hides what it names.
			if h, err = filepath.EvalSymlinks(h); err != nil || !granted(h) {
				continue
			}
		}
		if !slices.Contains(hidden, h) {
			hidden = append(hidden, h)
		}
	}
	p.Hidden = hidden
	var socks []string
	for _, s := range p.sockets {
		if r, err := filepath.EvalSymlinks(s); err == nil {
			if fi, err := os.Stat(r); err == nil && fi.Mode()&os.ModeSocket != 0 && !slices.Contains(socks, r) {
				socks = append(socks, r)
			}
		}
	}
	p.Sockets = socks
}

// machine is the part of a policy that depends on the machine, not on the leg: the
// system directories, the toolchains and their caches and the device files, each
// resolved and present, and the credential stores, resolved as far as they exist (their
// presence is judged per command).
type machine struct {
	read, caches, devices []string
	credentials           []place
	goModCache            string
	// spelled are the credential stores as listed, before resolution.
	spelled map[string]bool
}

// place is a hidden place: canonical when it existed (and was resolved) as the policy
// was made; else its projection — the deepest existing ancestor resolved, the rest as
// spelled — to be looked at again at each command.
type place struct {
	path      string
	canonical bool
}

// placesOf resolves each path as far as it exists, dropping duplicates.
func placesOf(list []string) []place {
	out := make([]place, 0, len(list))
	for _, p := range compact(list) {
		pl := place{path: project(p)}
		if r, err := filepath.EvalSymlinks(p); err == nil {
			pl = place{path: r, canonical: true}
		}
		if !slices.Contains(out, pl) {
			out = append(out, pl)
		}
	}
	return out
}

// project resolves the deepest existing ancestor of the clean absolute path p and
// appends the rest as spelled.
func project(p string) string {
	rest := ""
	for d := p; ; d = filepath.Dir(d) {
		if r, err := filepath.EvalSymlinks(d); err == nil {
			return filepath.Join(r, rest)
		}
		if d == "/" || d == "." {
			return p
		}
		rest = filepath.Join(filepath.Base(d), rest)
	}
}

// machines caches the machine part per home directory and toolchain environment: a leg
// starts without resolving some fifty paths again. A toolchain cache made after the first
// leg of a process is granted from the next process on; a credential store made at any
// time is hidden from the next command on (Policy.refresh).
var machines sync.Map // key string → *machine

func machineFor(home string, getenv func(string) string) *machine {
	var key strings.Builder
	key.WriteString(home)
	for _, k := range toolchainEnv {
		key.WriteByte(0)
		key.WriteString(getenv(k))
	}
	if m, ok := machines.Load(key.String()); ok {
		return m.(*machine)
	}
	tcRead, tcCaches := Toolchain(home, getenv)
	m := &machine{
		read:    existing(resolved(append(append([]string(nil), systemReadable...), tcRead...))),
		caches:  existing(resolved(tcCaches)),
		devices: existing(append([]string(nil), systemDevices...)),
		spelled: map[string]bool{},
	}
	if mc := resolved([]string{goModCache(home, getenv)}); len(mc) == 1 {
		m.goModCache = mc[0]
	}
	stores := fence.CredentialPaths(home, getenv("XDG_RUNTIME_DIR"), nil)
	for _, s := range stores {
		m.spelled[s] = true
	}
	m.credentials = placesOf(stores)
	actual, _ := machines.LoadOrStore(key.String(), m)
	return actual.(*machine)
}

// WithProtected returns p as it stands for one command: the hidden places and granted
// sockets that exist now (a credential store made since the policy was made is hidden
// too), and the protected entries at the top of each write root kept read-only: .git,
// .sema, .vscode, shell rc files and the rest of the fence's protected set. Protected
// entries deeper in a tree are the permission fold's to judge. No protected entry is
// added under an open write face (bypassPermissions asks no one about protected paths),
// nor when approved — a person said yes to exactly this command.
func (p Policy) WithProtected(f *fence.Fence, approved bool) Policy {
	p.refresh()
	if approved || f.WriteFace() == fence.FaceOpen {
		return p
	}
	var ro []string
	for _, root := range f.WriteRoots() {
		ents, err := os.ReadDir(root)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if e.Type()&os.ModeSymlink != 0 {
				continue // writing through it reaches its target, which the grants judge
			}
			c := filepath.Join(root, e.Name())
			if prot, _ := f.IsProtected(c); prot && !beneathAny(p.Hidden, c) {
				ro = append(ro, c)
			}
		}
	}
	if len(ro) > 0 {
		p.ReadOnly = append(append([]string(nil), p.ReadOnly...), ro...)
	}
	return p
}

// resolved canonicalizes each path as far as it exists (symbolic links followed), since
// the kernel grants on the object a path names, and drops duplicates.
func resolved(list []string) []string {
	out := make([]string, 0, len(list))
	for _, p := range compact(list) {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		out = append(out, p)
	}
	return compact(out)
}

// existing keeps the paths that exist.
func existing(list []string) []string {
	out := list[:0]
	for _, p := range list {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}
