package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
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
// credentials: they are hidden from every confined command even when a root or a
// toolchain directory holds them. Config.HiddenPaths adds to them.
var DefaultCredentialStores = []string{
	".ssh", ".aws", ".gnupg", ".netrc", ".git-credentials", ".npmrc", ".pypirc", ".pgpass",
	".my.cnf", ".vault-token", ".docker/config.json", ".kube", ".azure", ".config/gcloud",
	".config/gh", ".config/hub", ".cargo/credentials", ".cargo/credentials.toml",
	".terraform.d/credentials.tfrc.json", ".password-store", ".local/share/keyrings",
}

// toolchainReadable are home-relative directories of language toolchains that builds
// read and run programs from.
var toolchainReadable = []string{
	".gitconfig", ".config/git", ".rustup", ".cargo/bin", ".pyenv", ".nvm", ".volta",
	".bun", ".deno", ".sdkman", ".local/bin", ".local/lib", ".local/share/pnpm",
	"go/bin",
}

// toolchainCaches are home-relative caches builds write: Go's build and module caches,
// npm's, pip's, yarn's, pnpm's, cargo's registry, Maven's and Gradle's.
var toolchainCaches = []string{
	".cache/go-build", "go/pkg/mod", ".npm", ".cache/pip", ".cache/yarn", ".cache/pnpm",
	".local/share/pnpm/store", ".cargo/registry", ".cargo/git", ".m2/repository",
	".gradle/caches", ".gradle/wrapper",
}

// toolchainEnv are the environment variables Toolchain reads.
var toolchainEnv = []string{"PATH", "GOPATH", "GOCACHE", "GOMODCACHE", "npm_config_cache", "PIP_CACHE_DIR", "YARN_CACHE_FOLDER", "CARGO_HOME", "XDG_CACHE_HOME"}

// Toolchain lists the toolchain directories of this machine, as the policy grants them:
// read are programs and configuration (and every directory on PATH), write are build
// caches. home is the home
// directory ("" for none); getenv reads the environment (GOCACHE, GOMODCACHE, GOPATH,
// npm_config_cache, PIP_CACHE_DIR, CARGO_HOME override the defaults). Go's caches are
// made when missing and `go` is installed, since the go command cannot build without
// them; the rest are listed only when they exist.
func Toolchain(home string, getenv func(string) string) (read, write []string) {
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
		write = append(write, abs(c))
	}
	gopath := getenv("GOPATH")
	if gopath != "" {
		for _, p := range filepath.SplitList(gopath) {
			read = append(read, filepath.Join(p, "bin"))
			write = append(write, filepath.Join(p, "pkg", "mod"))
		}
	}
	goCaches := []string{getenv("GOCACHE"), getenv("GOMODCACHE")}
	if goCaches[0] == "" {
		if d, err := os.UserCacheDir(); err == nil {
			goCaches[0] = filepath.Join(d, "go-build")
		}
	}
	if goCaches[1] == "" {
		if gopath != "" {
			goCaches[1] = filepath.Join(filepath.SplitList(gopath)[0], "pkg", "mod")
		} else {
			goCaches[1] = abs("go/pkg/mod")
		}
	}
	for _, k := range []string{"npm_config_cache", "PIP_CACHE_DIR", "YARN_CACHE_FOLDER"} {
		write = append(write, getenv(k))
	}
	if ch := getenv("CARGO_HOME"); ch != "" {
		read = append(read, filepath.Join(ch, "bin"))
		write = append(write, filepath.Join(ch, "registry"), filepath.Join(ch, "git"))
	}
	write = append(write, goCaches...)
	// Programs come from PATH: each of its directories is readable, and so is the
	// toolchain a .../bin or .../shims directory belongs to (its libraries, its versions),
	// unless that is the home directory or the filesystem root itself.
	for _, d := range filepath.SplitList(getenv("PATH")) {
		if !filepath.IsAbs(d) {
			continue
		}
		d = filepath.Clean(d)
		read = append(read, d)
		if b := filepath.Base(d); b == "bin" || b == "shims" {
			if parent := filepath.Dir(d); parent != "/" && parent != filepath.Clean(home) {
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
	return compact(read), compact(write)
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
