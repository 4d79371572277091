package sandbox_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/sandbox"
)

// fakeHome is a home directory in a temp dir with the toolchain layout the grants are
// judged on, and a task root beside it.
type fakeHome struct {
	base, home, root string
}

func newFakeHome(t *testing.T, dirs ...string) fakeHome {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := fakeHome{base: base, home: filepath.Join(base, "home"), root: filepath.Join(base, "proj")}
	for _, d := range append([]string{h.root}, dirs...) {
		if !filepath.IsAbs(d) {
			d = filepath.Join(h.home, d)
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func (h fakeHome) fence(t *testing.T, mut func(*fence.Config)) *fence.Fence {
	t.Helper()
	cfg := fence.Config{Env: env.NewHost(), Root: h.root, Home: h.home}
	if mut != nil {
		mut(&cfg)
	}
	f, err := fence.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (h fakeHome) path(rel string) string { return filepath.Join(h.home, rel) }

// TestPathGrantsNoMoreThanTheToolchain: a PATH directory is granted itself; beneath the
// home directory its parent is never granted, nor is home or one of its shared trees
// (~/.local, ~/.config) reached through PATH; outside home the toolchain a bin directory
// belongs to is. ~/.gitconfig and ~/.config/git are never granted.
func TestPathGrantsNoMoreThanTheToolchain(t *testing.T) {
	h := newFakeHome(t, ".local/bin", ".local/share/secret", ".cargo/bin", ".cargo/registry", ".config/git", ".pyenv/shims", "go/bin", "bin")
	os.WriteFile(h.path(".gitconfig"), []byte("[user]\n"), 0o644)
	outsideTool := filepath.Join(h.base, "opt", "tool")
	os.MkdirAll(filepath.Join(outsideTool, "bin"), 0o755)
	path := strings.Join([]string{
		h.path(".local/bin"), h.path(".cargo/bin"), h.path(".pyenv/shims"), h.path("go/bin"), h.path("bin"),
		h.home, h.path(".local"), h.path(".config"), h.base, "/", filepath.Join(outsideTool, "bin"),
	}, ":")
	getenv := func(k string) string {
		if k == "PATH" {
			return path
		}
		return ""
	}
	p := sandbox.ForFence(h.fence(t, nil), sandbox.Options{Home: h.home, Getenv: getenv})
	for _, want := range []string{h.path(".local/bin"), h.path(".cargo/bin"), h.path(".pyenv"), h.path("go/bin"), h.path("bin"), outsideTool} {
		if !slices.Contains(p.Read, want) {
			t.Errorf("read %v: want %s", p.Read, want)
		}
	}
	for _, never := range []string{h.home, h.path(".local"), h.path(".local/share"), h.path(".config"), h.path(".cargo"), h.path("go"),
		h.path(".gitconfig"), h.path(".config/git"), h.base, "/"} {
		for _, r := range append(slices.Clone(p.Read), p.Write...) {
			if r == never || r == "/" || strings.HasPrefix(never, r+"/") {
				t.Errorf("%s is granted (through %s)", never, r)
			}
		}
	}
}

// TestCachesAreReadThroughUnlessShared: by default the toolchain caches are in Caches
// (read through, written into the leg's private layer), never in Write; the opt-in puts
// them back into Write; without a layer they are read-only.
func TestCachesAreReadThroughUnlessShared(t *testing.T) {
	h := newFakeHome(t, ".cache/go-build", "go/pkg/mod", ".npm", ".cache/pip", ".m2/repository", ".cargo/registry", ".gradle/caches")
	layer := filepath.Join(h.base, "layer")
	os.Mkdir(layer, 0o700)
	getenv := func(k string) string {
		switch k {
		case "GOCACHE":
			return h.path(".cache/go-build")
		case "GOMODCACHE":
			return h.path("go/pkg/mod")
		}
		return ""
	}
	caches := []string{h.path(".cache/go-build"), h.path("go/pkg/mod"), h.path(".npm"), h.path(".cache/pip"), h.path(".m2/repository"), h.path(".cargo/registry"), h.path(".gradle/caches")}
	f := h.fence(t, nil)
	cases := []struct {
		name                      string
		o                         sandbox.Options
		inCaches, inWrite, inRead bool
		layer                     string
	}{
		{name: "default", o: sandbox.Options{CacheLayer: layer}, inCaches: true, layer: layer},
		{name: "shared caches", o: sandbox.Options{CacheLayer: layer, SharedCaches: true}, inWrite: true},
		{name: "no layer", o: sandbox.Options{}, inRead: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.o.Home, c.o.Getenv = h.home, getenv
			p := sandbox.ForFence(f, c.o).WithProtected(f, false)
			for _, cache := range caches {
				if got := slices.Contains(p.Caches, cache); got != c.inCaches {
					t.Errorf("%s in caches %v: %v, want %v", cache, p.Caches, got, c.inCaches)
				}
				if got := slices.Contains(p.Write, cache); got != c.inWrite {
					t.Errorf("%s in write %v: %v, want %v", cache, p.Write, got, c.inWrite)
				}
				if got := slices.Contains(p.Read, cache); got != c.inRead {
					t.Errorf("%s in read %v: %v, want %v", cache, p.Read, got, c.inRead)
				}
			}
			if p.CacheLayer != c.layer {
				t.Errorf("cache layer %q, want %q", p.CacheLayer, c.layer)
			}
		})
	}
}

// TestStoresMadeDuringTheLegAreHidden: the leg's policy is made once; a credential store
// made after it (between two commands) is hidden from the next command, and one removed
// is no longer named.
func TestStoresMadeDuringTheLegAreHidden(t *testing.T) {
	h := newFakeHome(t, ".ssh")
	f := h.fence(t, func(c *fence.Config) { c.AdditionalReadDirectories = []string{h.home} })
	base := sandbox.ForFence(f, sandbox.Options{Home: h.home, Hidden: []string{"vault", "~/more/token"}})
	if !slices.Contains(base.Hidden, h.path(".ssh")) || slices.Contains(base.Hidden, h.path(".aws")) {
		t.Fatalf("hidden %v: want ~/.ssh and not the absent ~/.aws", base.Hidden)
	}
	for _, d := range []string{".aws", ".config/gh", "vault", "more"} {
		os.MkdirAll(h.path(d), 0o700)
	}
	os.WriteFile(h.path(".bash_history"), []byte("export TOKEN=x\n"), 0o600)
	os.WriteFile(h.path("more/token"), []byte("x"), 0o600)
	// A store made behind a link is hidden where the link leads.
	elsewhere := filepath.Join(h.home, "dotfiles", "docker")
	os.MkdirAll(elsewhere, 0o700)
	os.WriteFile(filepath.Join(elsewhere, "config.json"), []byte("{}"), 0o600)
	os.MkdirAll(h.path(".docker"), 0o700)
	os.Symlink(filepath.Join(elsewhere, "config.json"), h.path(".docker/config.json"))
	os.RemoveAll(h.path(".ssh"))
	p := base.WithProtected(f, false)
	for _, want := range []string{".aws", ".config/gh", ".bash_history", "vault", "more/token", "dotfiles/docker/config.json"} {
		if !slices.Contains(p.Hidden, h.path(want)) {
			t.Errorf("hidden %v: want %s, made after the policy", p.Hidden, want)
		}
	}
	if slices.Contains(p.Hidden, h.path(".ssh")) || slices.Contains(p.Hidden, h.path(".docker/config.json")) {
		t.Errorf("hidden %v names a removed store or a link", p.Hidden)
	}
	// An approved call lifts protected paths, never hidden ones.
	if a := base.WithProtected(f, true); !slices.Contains(a.Hidden, h.path(".aws")) {
		t.Errorf("an approved call's hidden %v lacks ~/.aws", a.Hidden)
	}
}

// TestSocketsAreGrantedByPathOnly: Options.Sockets grants the sockets it names that exist
// (resolved, also when made after the policy), and nothing that is not a socket.
func TestSocketsAreGrantedByPathOnly(t *testing.T) {
	h := newFakeHome(t, "run")
	listen := func(p string) {
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Skipf("no unix sockets here: %v", err)
		}
		t.Cleanup(func() { l.Close() })
	}
	listen(h.path("run/db.sock"))
	os.WriteFile(h.path("run/plain"), nil, 0o600)
	os.Symlink(h.path("run/db.sock"), h.path("run/link.sock"))
	f := h.fence(t, nil)
	base := sandbox.ForFence(f, sandbox.Options{Home: h.home, Sockets: []string{"~/run/db.sock", h.path("run/plain"), h.path("run/later.sock"), h.path("run/link.sock"), "relative.sock"}})
	if !slices.Equal(base.Sockets, []string{h.path("run/db.sock")}) {
		t.Errorf("sockets %v, want only the existing socket", base.Sockets)
	}
	listen(h.path("run/later.sock"))
	if p := base.WithProtected(f, false); !slices.Contains(p.Sockets, h.path("run/later.sock")) {
		t.Errorf("sockets %v: a socket made after the policy is not granted", p.Sockets)
	}
}

// TestPrivateCachesWhereTheKernelCannotOverlay: without an overlay, the caches become
// read-only and the toolchains that can be pointed elsewhere write into the leg's layer,
// Go fetching what the shared module cache holds through a file proxy.
func TestPrivateCachesWhereTheKernelCannotOverlay(t *testing.T) {
	h := newFakeHome(t, ".cache/go-build", "go/pkg/mod", ".npm", ".m2/repository")
	layer := filepath.Join(h.base, "layer")
	os.Mkdir(layer, 0o700)
	getenv := func(k string) string {
		switch k {
		case "GOCACHE":
			return h.path(".cache/go-build")
		case "GOPROXY":
			return "https://proxy.example,direct"
		}
		return ""
	}
	f := h.fence(t, nil)
	p, env := sandbox.ForFence(f, sandbox.Options{Home: h.home, Getenv: getenv, CacheLayer: layer}).PrivateCaches()
	if len(p.Caches) != 0 || p.CacheLayer != "" {
		t.Errorf("caches %v layer %q remain", p.Caches, p.CacheLayer)
	}
	for _, c := range []string{h.path(".cache/go-build"), h.path("go/pkg/mod"), h.path(".npm"), h.path(".m2/repository")} {
		if !slices.Contains(p.Read, c) || slices.Contains(p.Write, c) {
			t.Errorf("%s: read %v write %v, want read-only", c, p.Read, p.Write)
		}
	}
	if !slices.Contains(p.Write, layer) {
		t.Errorf("write %v lacks the layer", p.Write)
	}
	for _, want := range []string{"GOCACHE=" + filepath.Join(layer, "go-build"), "GOMODCACHE=" + filepath.Join(layer, "go-mod"),
		"GOPROXY=file://" + h.path("go/pkg/mod/cache/download") + ",https://proxy.example,direct", "npm_config_cache=" + filepath.Join(layer, "npm")} {
		if !slices.Contains(env, want) {
			t.Errorf("env %v lacks %s", env, want)
		}
	}
	// Shared caches have nothing to make private.
	ps, env := sandbox.ForFence(f, sandbox.Options{Home: h.home, Getenv: getenv, CacheLayer: layer, SharedCaches: true}).PrivateCaches()
	if env != nil || !slices.Contains(ps.Write, h.path("go/pkg/mod")) {
		t.Errorf("shared caches: env %v write %v", env, ps.Write)
	}
}
