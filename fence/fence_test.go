package fence

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
)

func newFence(t *testing.T, cfg Config) *Fence {
	t.Helper()
	if cfg.Env == nil {
		cfg.Env = env.NewHost()
	}
	f, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return f
}

func TestNewRoots(t *testing.T) {
	t.Parallel()
	base := realTempDir(t)
	tree(t, base, "root/sub/", "extra/", "ro/", "file", "linked -> extra", "dangling -> none")
	root := filepath.Join(base, "root")
	var ns notices
	f := newFence(t, Config{
		Root:                      root,
		AdditionalDirectories:     []string{base + "/extra", "../linked", base + "/missing", base + "/file", base + "/dangling", base + "/extra", ""},
		AdditionalReadDirectories: []string{base + "/ro", base + "/extra", base + "/missing"},
		OnNotice:                  ns.sink,
	})
	if diff := cmp.Diff([]string{root, base + "/extra"}, f.WriteRoots()); diff != "" {
		t.Errorf("write roots (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{root, base + "/extra", base + "/ro"}, f.ReadRoots()); diff != "" {
		t.Errorf("read roots (-want +got):\n%s", diff)
	}
	if f.Root() != root {
		t.Errorf("Root() = %q", f.Root())
	}
	// One notice per skipped spelling, even when it was declared twice.
	skipped := ns.withCode(CodeRootSkipped)
	var paths []string
	for _, n := range skipped {
		paths = append(paths, n.Detail["path"].(string))
	}
	slices.Sort(paths)
	want := []string{"", base + "/dangling", base + "/file", base + "/missing"}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("skipped roots (-want +got):\n%s", diff)
	}
	// The memoized answers.
	if c, ok := f.DeclaredRoot("../linked"); !ok || c != base+"/extra" {
		t.Errorf("DeclaredRoot(../linked) = %q, %v", c, ok)
	}
	if _, ok := f.DeclaredRoot(base + "/missing"); ok {
		t.Errorf("a skipped root has an answer")
	}
	// The roots slices are copies.
	f.WriteRoots()[0] = "/"
	if f.WriteRoots()[0] != root {
		t.Errorf("WriteRoots exposes the fence's own slice")
	}
}

func TestNewRefuses(t *testing.T) {
	t.Parallel()
	base := realTempDir(t)
	tree(t, base, "file", "dangling -> none", "dir/")
	tests := []struct {
		name string
		cfg  Config
		code string
	}{
		{"no env", Config{Root: base}, CodeEnvMissing},
		{"relative root", Config{Env: env.NewHost(), Root: "dir"}, CodeRootInvalid},
		{"missing root", Config{Env: env.NewHost(), Root: base + "/none"}, CodeRootInvalid},
		{"file root", Config{Env: env.NewHost(), Root: base + "/file"}, CodeRootInvalid},
		{"dangling root", Config{Env: env.NewHost(), Root: base + "/dangling"}, CodeRootInvalid},
		{"bad deny glob", Config{Env: env.NewHost(), Root: base + "/dir", DenyGlobs: []string{"/x/[y"}}, CodeDenyGlobInvalid},
		{"empty deny glob", Config{Env: env.NewHost(), Root: base + "/dir", DenyGlobs: []string{""}}, CodeDenyGlobInvalid},
		{"relative state dir", Config{Env: env.NewHost(), Root: base + "/dir", StateDir: ".sema"}, CodeStateDirUnresolvable},
		{"dangling state dir", Config{Env: env.NewHost(), Root: base + "/dir", StateDir: base + "/dangling"}, CodeStateDirUnresolvable},
	}
	for _, tc := range tests {
		if _, err := New(context.Background(), tc.cfg); sema.CodeOf(err) != tc.code {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
		}
	}
}

// attackTree is linkTree plus a sibling sharing the root's prefix and a look-alike.
func attackTree(t *testing.T) (base, root string, f *Fence) {
	t.Helper()
	base, root = linkTree(t)
	tree(t, base,
		"root-evil/x",
		"rооt/x", // Cyrillic о: another name
		"root/deep/link1 -> ../linkdir",
		"root/deep/link2 -> link1/../out",
	)
	return base, root, newFence(t, Config{Root: root})
}

func TestResolveAttacks(t *testing.T) {
	t.Parallel()
	base, root, f := attackTree(t)
	tests := []struct {
		spelled string
		code    string
	}{
		{"../outside/secret", CodeNotInRoot},
		{"a/b/../../../outside/secret", CodeNotInRoot},
		{"a/../../root-evil/x", CodeNotInRoot},
		{base + "/outside/secret", CodeNotInRoot},
		{"/etc/passwd", CodeNotInRoot},
		{base + "/root-evil/x", CodeNotInRoot},
		{base + "/root-evil", CodeNotInRoot},
		{base + "/rооt/x", CodeNotInRoot},
		{"out/secret", CodeNotInRoot},
		{"out", CodeNotInRoot},
		{"outfile", CodeNotInRoot},
		{"nested/secret", CodeNotInRoot},
		{"deep/link2/secret", CodeNotInRoot},
		{"up/outside/secret", CodeNotInRoot},
		{"up", CodeNotInRoot},
		{"out/new-file", CodeNotInRoot},
		{"/proc/self/root/etc/passwd", CodeNotInRoot},
		{"/proc/self/root" + base + "/outside/secret", CodeNotInRoot},
		{"dangling", CodeUnresolvable},
		{"dangdir", CodeUnresolvable},
		{"loop1", CodeUnresolvable},
		{"a/new/../../../outside/secret", CodeUnresolvable},
		{"a/b/file.txt/../../../outside", CodeUnresolvable},
		{"a/b\x00/file.txt", CodeUnresolvable},
		{"", CodeUnresolvable},
	}
	for _, kind := range []Kind{Read, Write} {
		for _, tc := range tests {
			p, err := f.Resolve(context.Background(), tc.spelled, kind)
			var se *sema.Error
			if !errors.As(err, &se) || se.Code != tc.code {
				t.Errorf("%s %q: %+v, %v; want %s", kind, tc.spelled, p, err, tc.code)
				continue
			}
			if se.Detail["path"] != tc.spelled {
				t.Errorf("%s %q: the error names %v, not the path as spelled", kind, tc.spelled, se.Detail["path"])
			}
			if !strings.Contains(se.Message, root) || !slices.Equal(se.Detail["roots"].([]string), []string{root}) {
				t.Errorf("%s %q: the error does not name the roots: %v", kind, tc.spelled, se)
			}
		}
	}
}

func TestResolveInside(t *testing.T) {
	t.Parallel()
	_, root, f := attackTree(t)
	tests := []struct {
		spelled string
		want    string
		exists  bool
	}{
		{"a/b/file.txt", root + "/a/b/file.txt", true},
		{root + "/a/b/file.txt", root + "/a/b/file.txt", true},
		{"linkdir/b/file.txt", root + "/a/b/file.txt", true},
		{"chain1/b/file.txt", root + "/a/b/file.txt", true},
		{"deep/link1/b", root + "/a/b", true},
		{"a/new/file.go", root + "/a/new/file.go", false},
		{".", root, true},
		{"up/root/a", root + "/a", true},
		{"/proc/self/root" + root + "/a/b/file.txt", root + "/a/b/file.txt", true},
	}
	for _, tc := range tests {
		if tc.spelled[0] == '/' && strings.HasPrefix(tc.spelled, "/proc/") {
			if _, err := os.Lstat("/proc/self/root"); err != nil {
				continue
			}
		}
		p, err := f.Resolve(context.Background(), tc.spelled, Write)
		if err != nil || p.Canonical != tc.want || p.Exists != tc.exists || p.Spelled != tc.spelled || p.Root != root {
			t.Errorf("Resolve(%q) = %+v, %v; want %q exists=%v", tc.spelled, p, err, tc.want, tc.exists)
		}
	}
}

// The open face skips containment only: canonicalization, the deny set and the
// protected set still hold, and the other face is untouched.
func TestResolveOpenFace(t *testing.T) {
	t.Parallel()
	base, root := linkTree(t)
	tree(t, base, "state/sessions/x", "outside/.git/config")
	f := newFence(t, Config{Root: root, ModeWriteFace: FaceOpen, StateDir: base + "/state"})
	ctx := context.Background()
	p, err := f.Resolve(ctx, base+"/outside/secret", Write)
	if err != nil || p.Canonical != base+"/outside/secret" || p.Root != "" {
		t.Errorf("open write outside: %+v, %v", p, err)
	}
	if p, err := f.Resolve(ctx, "out/secret", Write); err != nil || p.Canonical != base+"/outside/secret" {
		t.Errorf("open write through a link: %+v, %v", p, err)
	}
	if _, err := f.Resolve(ctx, base+"/outside/secret", Read); sema.CodeOf(err) != CodeNotInRoot {
		t.Errorf("the read face opened with the write face: %v", err)
	}
	if _, err := f.Resolve(ctx, "dangling", Write); sema.CodeOf(err) != CodeUnresolvable {
		t.Errorf("open face, dangling link: %v", err)
	}
	if _, err := f.Resolve(ctx, base+"/state/sessions/x", Write); sema.CodeOf(err) != CodeDenied {
		t.Errorf("open face, state dir: %v", err)
	}
	p, err = f.Resolve(ctx, base+"/outside/.git/config", Write)
	if err != nil || !p.Protected {
		t.Errorf("open face, protected: %+v, %v", p, err)
	}
	if !f.Inside(root+"/a", Write) || f.Inside(base+"/outside/secret", Write) {
		t.Errorf("Inside consults the face")
	}
	if f.Inside(root+"/a/../../outside", Write) || f.Inside(root+"/", Write) {
		t.Errorf("Inside admits a path that is not canonical")
	}
}

func TestDenySet(t *testing.T) {
	t.Parallel()
	base := realTempDir(t)
	tree(t, base,
		"root/src/main.go",
		"root/keys/server.pem",
		"root/.env",
		"home/.sema/sessions/s1",
		"home/.ssh/id_ed25519",
		"root/tostate -> ../home/.sema",
		"homelink -> home",
	)
	root := base + "/root"
	f := newFence(t, Config{
		Root:                      root,
		AdditionalReadDirectories: []string{base + "/home"},
		StateDir:                  base + "/home/.sema",
		// The second glob is written through a link; it must still match the
		// canonical path.
		DenyGlobs: []string{"**/*.pem", base + "/homelink/.ssh", ".env"},
	})
	ctx := context.Background()
	tests := []struct {
		spelled string
		denied  bool
	}{
		{"src/main.go", false},
		{"keys/server.pem", true},
		{"keys/new.pem", true},
		{".env", true},
		{".env.example", false},
		{"tostate/sessions/s1", true},
		{"tostate/new", true},
		{base + "/home/.sema", true},
		{base + "/home/.sema/sessions/s1", true},
		{base + "/home/.ssh/id_ed25519", true},
		{base + "/homelink/.ssh/id_ed25519", true},
		{base + "/home/.ssh", true},
		{base + "/home/.sshx", false},
		{base + "/home", false},
	}
	for _, tc := range tests {
		for _, kind := range []Kind{Read, Write} {
			_, err := f.Resolve(ctx, tc.spelled, kind)
			got := sema.CodeOf(err) == CodeDenied
			if got != tc.denied {
				t.Errorf("%s %q: %v; denied=%v, want %v", kind, tc.spelled, err, got, tc.denied)
			}
		}
	}
	if !f.Denied(base+"/home/.sema/blobs/ab") || f.Denied(root+"/src") {
		t.Errorf("Denied disagrees with Resolve")
	}
}

func TestDenySetCaseInsensitive(t *testing.T) {
	t.Parallel()
	base := realTempDir(t)
	tree(t, base, "root/", "State/")
	e := foldEnv{env.NewHost()}
	f := newFence(t, Config{Env: e, Root: base + "/root", StateDir: base + "/State/db", DenyGlobs: []string{"**/*.PEM"}, ModeWriteFace: FaceOpen})
	ctx := context.Background()
	for _, spelled := range []string{base + "/state/db", base + "/STATE/DB/x", base + "/State/Db", "key.pem", "KEY.Pem"} {
		if _, err := f.Resolve(ctx, spelled, Write); sema.CodeOf(err) != CodeDenied {
			t.Errorf("%q: %v, want denied", spelled, err)
		}
	}
}

func TestProtected(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rel       string
		protected bool
	}{
		{"src/main.go", false},
		{".git", true},
		{".git/config", true},
		{".git/hooks/pre-commit", true},
		{"vendor/dep/.git/HEAD", true},
		{".gitignore", false},
		{".github/workflows/ci.yml", false},
		{".sema/settings.json", true},
		{".claude/settings.json", true},
		{".vscode/tasks.json", true},
		{".idea/workspace.xml", true},
		{".husky/pre-commit", true},
		{".bashrc", true},
		{"sub/.zshrc", true},
		{".bash_profile", true},
		{".bash_login", true},
		{".profile", true},
		{".zprofile", true},
		{".zshenv", true},
		{".zlogin", true},
		{".cshrc", true},
		{".tcshrc", true},
		{".kshrc", true},
		{".config/fish/config.fish", true},
		{".config/fish", true},
		{".config/other/x", false},
		{".gitconfig", true},
		{".gitmodules", true},
		{".npmrc", true},
		{".mcp.json", true},
		{".envrc", true},
		{".bashrc.bak", false},
		{"notes/.bashrc/x", false},
		{".gіt/config", false}, // Cyrillic і: another name
		{".GIT/config", false}, // a case-sensitive env
	}
	base := realTempDir(t)
	tree(t, base, "root/")
	root := base + "/root"
	f := newFence(t, Config{Root: root})
	for _, tc := range tests {
		p, err := f.Resolve(context.Background(), tc.rel, Write)
		if err != nil {
			t.Fatalf("%q: %v", tc.rel, err)
		}
		if p.Protected != tc.protected || (p.Protected && p.ProtectedReason == "") {
			t.Errorf("%q: protected=%v (%q), want %v", tc.rel, p.Protected, p.ProtectedReason, tc.protected)
		}
		if got, _ := f.IsProtected(p.Canonical); got != tc.protected {
			t.Errorf("IsProtected(%q) = %v", p.Canonical, got)
		}
		if r, err := f.Resolve(context.Background(), tc.rel, Read); err != nil || r.Protected {
			t.Errorf("read of %q marked protected: %+v, %v", tc.rel, r, err)
		}
	}
	p, _ := f.Resolve(context.Background(), ".git/config", Write)
	if e := f.ProtectedError(p); e.Code != CodeProtected || e.Detail["path"] != ".git/config" {
		t.Errorf("ProtectedError = %+v", e)
	}
}

// Case variants of protected names are protected on a case-insensitive env: both when
// the directory exists (canonicalization spells it as on disk) and when it does not
// (the name as spelled is compared without case).
func TestProtectedCaseVariants(t *testing.T) {
	t.Parallel()
	base := realTempDir(t)
	tree(t, base, "root/.git/config", "root2/")
	for _, e := range []env.ExecutionEnv{foldEnv{env.NewHost()}, &hookEnv{ExecutionEnv: env.NewHost(), ci: true}} {
		f := newFence(t, Config{Env: e, Root: base + "/root"})
		for _, rel := range []string{".GIT/config", ".Git/hooks/x", ".CLAUDE/settings.json", ".BashRC", "SUB/.VSCODE/x", ".Config/FISH/x", ".MCP.JSON"} {
			p, err := f.Resolve(context.Background(), rel, Write)
			if err != nil || !p.Protected {
				t.Errorf("%T %q: %+v, %v; want protected", e, rel, p, err)
			}
		}
	}
}

// Protected names are judged below the declared root that holds the path, so a root
// that itself lies in, say, a .claude directory is an ordinary workspace; outside every
// root (open face) the whole path is judged.
func TestProtectedBelowRoot(t *testing.T) {
	t.Parallel()
	base := realTempDir(t)
	tree(t, base, "home/.claude/worktrees/w/src/", "home/.config/fish/", "home/.bashrc")
	root := base + "/home/.claude/worktrees/w"
	f := newFence(t, Config{Root: root, ModeWriteFace: FaceOpen, AdditionalDirectories: []string{base + "/home/.config"}})
	tests := []struct {
		spelled   string
		protected bool
	}{
		{"src/main.go", false},
		{".git/config", true},
		{base + "/home/.claude/settings.json", true},
		{base + "/home/.bashrc", true},
		{base + "/home/.config/fish/config.fish", true},
		{base + "/home/.config/git/x", true},
		{base + "/home/.config/htop/x", false},
	}
	for _, tc := range tests {
		p, err := f.Resolve(context.Background(), tc.spelled, Write)
		if err != nil || p.Protected != tc.protected {
			t.Errorf("%q: %+v, %v; want protected=%v", tc.spelled, p, err, tc.protected)
		}
	}
}

// An additional directory that is, or links to, a protected place does not become the
// place protected names are judged below.
func TestProtectedAddedRootStaysProtected(t *testing.T) {
	t.Parallel()
	base := realTempDir(t)
	tree(t, base, "root/.git/hooks/", "root/docs/", "gitlink -> root/.git", "elsewhere/.claude/")
	root := base + "/root"
	f := newFence(t, Config{Root: root,
		AdditionalDirectories:     []string{root + "/.git", base + "/gitlink", root + "/docs"},
		AdditionalReadDirectories: []string{base + "/elsewhere/.claude"}})
	tests := []struct {
		spelled   string
		kind      Kind
		protected bool
	}{
		{root + "/.git/hooks/pre-commit", Write, true},
		{base + "/gitlink/hooks/pre-commit", Write, true},
		{root + "/docs/readme.md", Write, false},
	}
	for _, tc := range tests {
		p, err := f.Resolve(context.Background(), tc.spelled, tc.kind)
		if err != nil || p.Protected != tc.protected {
			t.Errorf("%q: %+v, %v; want protected=%v", tc.spelled, p, err, tc.protected)
		}
	}
	if ok, _ := f.IsProtected(base + "/elsewhere/.claude/settings.json"); !ok {
		t.Errorf("a read root inside .claude unprotected it")
	}
}

// A path judged inside and then swapped for a link cannot be read through the link:
// callers open the canonical path and the env refuses to follow a final link.
func TestSwapAfterCheck(t *testing.T) {
	t.Parallel()
	base, root := linkTree(t)
	f := newFence(t, Config{Root: root})
	ctx := context.Background()
	p, err := f.Resolve(ctx, "a/b/file.txt", Read)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p.Canonical); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(base+"/outside/secret", p.Canonical); err != nil {
		t.Fatal(err)
	}
	data, err := env.NewHost().ReadFile(ctx, p.Canonical)
	if err == nil || !errors.Is(err, syscall.ELOOP) {
		t.Fatalf("ReadFile through the swapped link = %q, %v; want ELOOP", data, err)
	}
	if _, err := f.Resolve(ctx, "a/b/file.txt", Read); sema.CodeOf(err) != CodeNotInRoot {
		t.Errorf("the swapped path resolves inside: %v", err)
	}
}

func TestContains(t *testing.T) {
	t.Parallel()
	tests := []struct {
		root, p string
		want    bool
	}{
		{"/x/proj", "/x/proj", true},
		{"/x/proj", "/x/proj/a", true},
		{"/x/proj", "/x/proj-evil", false},
		{"/x/proj", "/x/proj-evil/a", false},
		{"/x/proj", "/x/projx", false},
		{"/x/proj", "/x", false},
		{"/", "/anything/at/all", true},
		{"/", "/", true},
		{"/x/proj", "/x/proj/../etc", false},
		{"/x/proj", "/x/proj/./a", false},
		{"/x/proj", "/x/proj//a", false},
		{"/x/proj", "/x/proj/", false},
		{"/x/proj/", "/x/proj/a", false},
		{"/x/proj", "x/proj/a", false},
		{"", "/x", false},
		{"/x/proj", "/x/prој/a", false},
	}
	for _, tc := range tests {
		if got := Contains(tc.root, tc.p); got != tc.want {
			t.Errorf("Contains(%q, %q) = %v, want %v", tc.root, tc.p, got, tc.want)
		}
	}
}

func TestMayContainDenied(t *testing.T) {
	t.Parallel()
	base := realTempDir(t)
	tree(t, base, "x/proj/sub/", "x/proj-evil/", "home/.sema/", "other/")
	abs := newFence(t, Config{
		Root:      base + "/x/proj",
		StateDir:  base + "/home/.sema",
		DenyGlobs: []string{base + "/x/proj/secrets/*.key", base + "/x/pro*/vault"},
	})
	rel := newFence(t, Config{Root: base + "/x/proj", DenyGlobs: []string{".env"}})
	none := newFence(t, Config{Root: base + "/x/proj"})
	tests := []struct {
		name string
		f    *Fence
		dir  string
		want bool
	}{
		{"state dir beneath dir", abs, base + "/home", true},
		{"dir is the state dir", abs, base + "/home/.sema", true},
		{"dir beneath the state dir", abs, base + "/home/.sema/blobs", true},
		{"state dir's sibling", abs, base + "/other", false},
		{"glob prefix beneath dir", abs, base + "/x/proj", true},
		{"dir beneath glob prefix", abs, base + "/x/proj/secrets/deep", true},
		{"ancestor of every prefix", abs, base + "/x", true},
		{"prefix cut at a whole component", abs, base + "/x/proj-evil", true},
		{"beneath a partly literal component", abs, base + "/x/proj/sub", true},
		{"root of the filesystem", abs, "/", true},
		{"relative glob, any dir", rel, base + "/x/proj/sub", true},
		{"relative glob, sibling", rel, base + "/other", true},
		{"no deny set", none, base + "/x/proj", false},
		{"not canonical", none, "x/proj", true},
	}
	for _, tc := range tests {
		if got := tc.f.MayContainDenied(tc.dir); got != tc.want {
			t.Errorf("%s: MayContainDenied(%q) = %v, want %v", tc.name, tc.dir, got, tc.want)
		}
	}
	// The prefix sibling: a glob under /x/proj says nothing about /x/proj-evil.
	sib := newFence(t, Config{Root: base + "/x/proj", DenyGlobs: []string{base + "/x/proj/**/*.pem"}})
	if sib.MayContainDenied(base + "/x/proj-evil") {
		t.Errorf("MayContainDenied(%q) = true for a prefix sibling of the glob's directory", base+"/x/proj-evil")
	}
	if !sib.MayContainDenied(base + "/x/proj/sub") {
		t.Errorf("MayContainDenied(%q) = false beneath the glob's directory", base+"/x/proj/sub")
	}
}
