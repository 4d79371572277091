package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sema-agent/sema/fence"
)

// Policy is what one confined command, and every process it starts, may touch. It is
// OS-neutral: each platform enforces it with what its kernel offers. Every path is
// absolute and canonical (no symbolic link in it); a path that does not exist when the
// command starts is left out, since nothing can be granted on it.
type Policy struct {
	// Read are trees the command may read and execute.
	Read []string `json:"read,omitempty"`
	// Write are trees the command may read, execute, create, change and remove in.
	Write []string `json:"write,omitempty"`
	// Devices are device files the command may read and write (/dev/null and its kin).
	Devices []string `json:"devices,omitempty"`
	// Hidden are files and trees that look empty and cannot be changed, wherever they are
	// — also beneath a Read or Write tree: sema's state directory, the deployment's literal
	// deny paths, credential stores.
	Hidden []string `json:"hidden,omitempty"`
	// ReadOnly are files and trees beneath a Write tree that stay read-only: the
	// protected paths (.git, .sema, …) a person has not approved a write to.
	ReadOnly []string `json:"read_only,omitempty"`
	// Network lets the command reach the network. False: no network at all, loopback
	// alone (a fresh network namespace on Linux).
	Network bool `json:"network,omitempty"`
	// TempDir is the command's private temporary directory (one of Write), exported as
	// TMPDIR; on Linux it is also what the command sees at /tmp.
	TempDir string `json:"temp_dir,omitempty"`
	// Caches are shared toolchain caches (Go's, npm's, …) the command reads through and
	// writes into a private layer: what it writes lands in CacheLayer, never in the
	// cache later builds outside the sandbox use.
	Caches []string `json:"caches,omitempty"`
	// CacheLayer is the directory holding the private write layers of Caches (one
	// per leg, so a leg's later commands see what its earlier ones wrote).
	CacheLayer string `json:"cache_layer,omitempty"`
	// Sockets are unix socket files a setting granted by path: the only sockets outside
	// the write roots a command can connect to.
	Sockets []string `json:"sockets,omitempty"`

	// hideable are the places Hidden is drawn from at each command (WithProtected): the
	// fence's deny paths, the credential stores and Options.Hidden, each resolved as far
	// as it existed when the leg's policy was made. A store made since is hidden from
	// the next command on.
	hideable []place
	// home is the home directory the credential stores are relative to.
	home string
	// goModCache is the go command's module cache and goProxy its GOPROXY, for
	// PrivateCaches.
	goModCache, goProxy string
	// sockets are Options.Sockets, resolved: those that are sockets when a command
	// starts are granted.
	sockets []string
}

// paths are every path the policy names: what a view is made from.
func (p *Policy) paths() []string {
	var out []string
	for _, l := range [][]string{p.Read, p.Write, p.Devices, p.Hidden, p.ReadOnly, p.Caches, p.Sockets} {
		out = append(out, l...)
	}
	for _, s := range []string{p.TempDir, p.CacheLayer, "/etc/resolv.conf"} {
		if s != "" {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// systemReadable are the directories every command may read and run programs from: the
// system's programs, libraries and configuration, and the kernel's views of processes and
// devices. Missing ones are skipped.
var systemReadable = []string{
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
	"/nix", "/snap", "/run", "/proc", "/sys", "/dev",
}

// systemDevices are the device files every command may write.
var systemDevices = []string{
	"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty",
	"/dev/ptmx", "/dev/pts",
}

// DefaultCredentialStores are the places, relative to the home directory, that hold
// credentials: the fence's list (fence.CredentialStores), one definition for both walls.
// They are hidden from every confined command even when a root or a toolchain directory
// holds them, and the fence refuses them to the file tools. Options.Hidden adds to them.
var DefaultCredentialStores = fence.CredentialStores

// toolchainReadable are home-relative roots of language toolchains and version managers
// that builds read and run programs from. Each is dedicated to its toolchain and keeps no
// credentials; the home directory's shared trees (~/.local, ~/.config, ~/.cargo) are
// never granted whole, and neither are ~/.gitconfig and ~/.config/git (a command's git
// reads a sanitized copy instead, see GitIdentity).
var toolchainReadable = []string{
	".rustup", ".cargo/bin", ".pyenv", ".nvm", ".volta", ".bun", ".deno", ".sdkman",
	".goenv", ".asdf", ".rbenv", ".nodenv", ".jenv", ".juliaup", ".elan", ".ghcup",
	".dotnet", ".pixi", ".rye", ".fnm", ".local/share/fnm", ".local/share/mise",
	".local/share/pnpm", ".local/share/pipx", ".local/pipx", ".local/share/uv/tools",
	".local/share/uv/python", ".local/lib", "go/bin",
}

// homeShared are home-relative trees many programs share, which hold configuration and
// data beyond any one toolchain (and credentials: ~/.config/gh, ~/.local/share/keyrings):
// a PATH directory is never widened to one of them.
var homeShared = []string{".local", ".local/share", ".local/state", ".config", ".cache", ".cargo", "go"}

// toolchainCaches are home-relative caches builds write: Go's build and module caches,
// npm's, pip's, yarn's, pnpm's, cargo's registry, Maven's and Gradle's.
var toolchainCaches = []string{
	".cache/go-build", "go/pkg/mod", ".npm", ".cache/pip", ".cache/yarn", ".cache/pnpm",
	".local/share/pnpm/store", ".cargo/registry", ".cargo/git", ".m2/repository",
	".gradle/caches", ".gradle/wrapper",
}

// toolchainEnv are the environment variables Toolchain reads.
var toolchainEnv = []string{"PATH", "GOPATH", "GOCACHE", "GOMODCACHE", "npm_config_cache", "PIP_CACHE_DIR", "YARN_CACHE_FOLDER", "CARGO_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"}

// Toolchain lists the toolchain directories of this machine, as the policy grants them:
// read are programs (every directory on PATH) and the toolchains' own roots, caches are
// the build caches builds write (Policy.Caches, or Policy.Write with
// Options.SharedCaches). home is the home directory ("" for none); getenv reads the
// environment (GOCACHE, GOMODCACHE, GOPATH, npm_config_cache, PIP_CACHE_DIR, CARGO_HOME
// override the defaults). Go's caches are made when missing and `go` is installed, since
// the go command cannot build without them; the rest are listed only when they exist.
//
// A PATH directory is granted itself. The toolchain a .../bin or .../shims directory
// belongs to (its parent: libraries, versions) is granted too when it lies outside the
// home directory; beneath home, toolchains are granted by their dedicated roots
// (toolchainReadable) and nothing else, so ~/.local/bin on PATH grants ~/.local/bin, not
// ~/.local. A directory that is or holds the home directory, or one of its shared trees,
// is never granted from PATH.
func Toolchain(home string, getenv func(string) string) (read, caches []string) {
	home = filepath.Clean(home)
	if !filepath.IsAbs(home) {
		home = ""
	}
	abs := func(rel string) string {
		if home == "" {
			return ""
		}
		return filepath.Join(home, rel)
	}
	for _, r := range toolchainReadable {
		read = append(read, abs(r))
	}
	for _, c := range toolchainCaches {
		caches = append(caches, abs(c))
	}
	gopath := getenv("GOPATH")
	if gopath != "" {
		for _, p := range filepath.SplitList(gopath) {
			read = append(read, filepath.Join(p, "bin"))
			caches = append(caches, filepath.Join(p, "pkg", "mod"))
		}
	}
	goCaches := []string{getenv("GOCACHE"), getenv("GOMODCACHE")}
	if goCaches[0] == "" {
		if d, err := os.UserCacheDir(); err == nil {
			goCaches[0] = filepath.Join(d, "go-build")
		}
	}
	if goCaches[1] == "" {
		goCaches[1] = goModCache(home, getenv)
	}
	for _, k := range []string{"npm_config_cache", "PIP_CACHE_DIR", "YARN_CACHE_FOLDER"} {
		caches = append(caches, getenv(k))
	}
	if ch := getenv("CARGO_HOME"); ch != "" {
		read = append(read, filepath.Join(ch, "bin"))
		caches = append(caches, filepath.Join(ch, "registry"), filepath.Join(ch, "git"))
	}
	caches = append(caches, goCaches...)
	// tooWide: granting d would open the home directory, or one of its shared trees,
	// whole.
	tooWide := func(d string) bool {
		if d == "/" || home != "" && within(d, home) {
			return true
		}
		for _, s := range homeShared {
			if home != "" && d == filepath.Join(home, s) {
				return true
			}
		}
		return false
	}
	for _, d := range filepath.SplitList(getenv("PATH")) {
		if !filepath.IsAbs(d) {
			continue
		}
		d = filepath.Clean(d)
		if tooWide(d) {
			continue
		}
		read = append(read, d)
		if home != "" && within(home, d) {
			continue
		}
		if b := filepath.Base(d); b == "bin" || b == "shims" {
			if parent := filepath.Dir(d); !tooWide(parent) {
				read = append(read, parent)
			}
		}
	}
	if goInstalled(getenv("PATH")) {
		for _, c := range goCaches {
			if c != "" && filepath.IsAbs(c) {
				os.MkdirAll(c, 0o755)
			}
		}
	}
	return compact(read), compact(caches)
}

// goModCache is where the go command keeps modules: GOMODCACHE, else the first GOPATH's
// pkg/mod, else ~/go/pkg/mod ("" without a home).
func goModCache(home string, getenv func(string) string) string {
	if c := getenv("GOMODCACHE"); c != "" {
		return c
	}
	if gopath := getenv("GOPATH"); gopath != "" {
		return filepath.Join(filepath.SplitList(gopath)[0], "pkg", "mod")
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, "go", "pkg", "mod")
}

// goInstalled reports whether a go command is on path.
func goInstalled(path string) bool {
	for _, d := range filepath.SplitList(path) {
		if fi, err := os.Stat(filepath.Join(d, "go")); err == nil && !fi.IsDir() {
			return true
		}
	}
	return false
}

// compact drops empty and relative entries and duplicates, keeping the order.
func compact(list []string) []string {
	var out []string
	for _, p := range list {
		if p == "" || !filepath.IsAbs(p) {
			continue
		}
		p = filepath.Clean(p)
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// within reports whether p is dir or lies beneath it (clean absolute paths).
func within(dir, p string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return strings.HasPrefix(p, dir) && (len(p) == len(dir) || p[len(dir)] == '/')
}

// outermost drops the entries of list that lie beneath another entry of list or of
// covered: a grant on a directory covers everything beneath it.
func outermost(list []string, covered []string) []string {
	var out []string
	for i, p := range list {
		inner := beneathAny(covered, p)
		for j, q := range list {
			if inner {
				break
			}
			inner = j != i && within(q, p) && (q != p || j < i)
		}
		if !inner {
			out = append(out, p)
		}
	}
	return out
}

// beneathAny reports whether p is one of dirs or lies beneath one.
func beneathAny(dirs []string, p string) bool {
	for _, d := range dirs {
		if within(d, p) {
			return true
		}
	}
	return false
}
