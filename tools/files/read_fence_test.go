package files

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/env/envtest"
	"github.com/sema-agent/sema/fence"
)

// fenceFix is a task root beside an outside directory that holds secrets, with links
// from the root to them.
func fenceFix(t *testing.T, configure ...func(*fence.Config)) (f *readFix, outside string) {
	t.Helper()
	parent, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, outside := filepath.Join(parent, "root"), filepath.Join(parent, "outside")
	writeTestFile(t, filepath.Join(outside, "secret.txt"), "TOPSECRET\n")
	writeTestFile(t, filepath.Join(outside, "outdir", "leak.txt"), "LEAKED\n")
	writeTestFile(t, filepath.Join(root, "a.txt"), "hello\n")
	f = newReadFixAt(t, env.NewHost(), root, configure...)
	f.symlink(filepath.Join(outside, "secret.txt"), "link-file")
	f.symlink(filepath.Join(outside, "outdir"), "link-dir")
	f.symlink("../outside/secret.txt", "rel-link")
	f.symlink(f.path("a.txt"), "inner-link")
	f.symlink("../..", "sub/up")
	return f, outside
}

func TestReadToolsRefusePathsOutsideTheRoot(t *testing.T) {
	t.Parallel()
	f, outside := fenceFix(t)
	files := []string{
		"../outside/secret.txt",
		filepath.Join(outside, "secret.txt"),
		"link-file",
		"rel-link",
		"link-dir/leak.txt",
		"sub/up/outside/secret.txt",
		"sub/../../outside/secret.txt",
	}
	dirs := []string{"..", "../outside", outside, "link-dir", "sub/up", "/"}
	for _, p := range files {
		f.fails("Read", map[string]any{"file_path": p}, fence.CodeNotInRoot)
		f.fails("Grep", map[string]any{"pattern": "TOPSECRET", "path": p}, fence.CodeNotInRoot)
	}
	for _, p := range dirs {
		f.fails("Glob", map[string]any{"pattern": "**", "path": p}, fence.CodeNotInRoot)
		f.fails("Grep", map[string]any{"pattern": "TOPSECRET|LEAKED", "path": p}, fence.CodeNotInRoot)
		f.fails("LS", map[string]any{"path": p}, fence.CodeNotInRoot)
	}
	f.fails("Glob", map[string]any{"pattern": filepath.Join(outside, "**", "*.txt")}, fence.CodeNotInRoot)
	f.fails("Glob", map[string]any{"pattern": "link-dir/*.txt"}, fence.CodeNotInRoot)
	f.fails("Glob", map[string]any{"pattern": "../outside/*.txt"}, fence.CodeNotInRoot)
	if _, ok := f.rs.Lookup(filepath.Join(outside, "secret.txt")); ok {
		t.Error("a refused read was recorded")
	}
}

func TestWalksDoNotLeaveTheRoot(t *testing.T) {
	t.Parallel()
	f, _ := fenceFix(t)
	forbidden := []string{"TOPSECRET", "LEAKED", "secret", "leak", "outside", "link-file", "rel-link", "link-dir"}
	check := func(what, out string) {
		t.Helper()
		for _, w := range forbidden {
			if strings.Contains(out, w) {
				t.Errorf("%s reveals %q:\n%s", what, w, out)
			}
		}
	}
	for _, mode := range []string{"files_with_matches", "content", "count"} {
		out := f.ok("Grep", map[string]any{"pattern": "TOPSECRET|LEAKED|hello", "output_mode": mode})
		check("Grep "+mode, out)
		// A link to a file inside the root is searched, under the link's name.
		if !strings.Contains(out, f.path("inner-link")) || !strings.Contains(out, f.path("a.txt")) {
			t.Errorf("Grep %s did not search the file and the inside link:\n%s", mode, out)
		}
	}
	out := f.ok("Glob", map[string]any{"pattern": "**"})
	check("Glob", out)
	assertSameLines(t, f.rel(out), []string{"<root>/a.txt", "<root>/inner-link"})
	// LS names the links (they are entries of the root) but never what lies behind them.
	out = f.ok("LS", map[string]any{})
	for _, w := range []string{"TOPSECRET", "secret.txt", "leak.txt", "outdir", "outside"} {
		if strings.Contains(out, w) {
			t.Errorf("LS reveals %q:\n%s", w, out)
		}
	}
}

func TestReadRootsAndDenySet(t *testing.T) {
	t.Parallel()
	parent, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, extra := filepath.Join(parent, "root"), filepath.Join(parent, "extra")
	writeTestFile(t, filepath.Join(extra, "ref.txt"), "REFERENCE\n")
	writeTestFile(t, filepath.Join(root, ".state", "db"), "STATEFILE\n")
	writeTestFile(t, filepath.Join(root, "keys", "id.pem"), "PRIVATEKEY\n")
	writeTestFile(t, filepath.Join(root, "a.txt"), "hello\n")
	f := newReadFixAt(t, env.NewHost(), root, func(c *fence.Config) {
		c.AdditionalReadDirectories = []string{extra}
		c.StateDir = filepath.Join(root, ".state")
		c.DenyGlobs = []string{"**/*.pem"}
	})
	f.symlink(filepath.Join(extra, "ref.txt"), "ref-link")

	// A read root is readable, directly and through a link met during a walk.
	f.ok("Read", map[string]any{"file_path": filepath.Join(extra, "ref.txt")})
	if out := f.ok("Grep", map[string]any{"pattern": "REFERENCE"}); !strings.Contains(out, f.path("ref-link")) {
		t.Errorf("Grep did not follow a file link into a read root:\n%s", out)
	}
	// The deny set is never read, listed or searched.
	f.fails("Read", map[string]any{"file_path": ".state/db"}, fence.CodeDenied)
	f.fails("Read", map[string]any{"file_path": "keys/id.pem"}, fence.CodeDenied)
	f.fails("LS", map[string]any{"path": ".state"}, fence.CodeDenied)
	for name, in := range map[string]map[string]any{
		"Grep": {"pattern": "STATEFILE|PRIVATEKEY"},
		"Glob": {"pattern": "**"},
		"LS":   {},
	} {
		out := f.ok(name, in)
		if strings.Contains(out, ".state") || strings.Contains(out, "id.pem") {
			t.Errorf("%s reveals the deny set:\n%s", name, out)
		}
	}
}

// TestReadToolsUseOnlyTheEnv runs every tool over an in-memory env: nothing may reach the
// host filesystem.
func TestReadToolsUseOnlyTheEnv(t *testing.T) {
	t.Parallel()
	m := envtest.NewMem()
	ctx := context.Background()
	for p, content := range map[string]string{
		"/w/main.go":     "package main\n\nfunc main() {}\n",
		"/w/lib/l.go":    "package lib\n// main helper\n",
		"/w/.gitignore":  "gen/\n",
		"/w/gen/g.go":    "package gen // main\n",
		"/secret/s.go":   "package main // secret\n",
		"/w/notes/n.txt": "nothing\n",
	} {
		if err := m.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := m.WriteFile(ctx, p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Symlink("/secret/s.go", "/w/s.go"); err != nil {
		t.Fatal(err)
	}
	f := newReadFixAt(t, m, "/w")
	if got := f.ok("Read", map[string]any{"file_path": "main.go"}); got != numbered(1, "package main", "", "func main() {}") {
		t.Errorf("Read: %q", got)
	}
	if got := f.ok("Grep", map[string]any{"pattern": "main", "output_mode": "count"}); got != "/w/lib/l.go:1\n/w/main.go:2\n\nFound 3 matching lines in 2 files." {
		t.Errorf("Grep: %q", got)
	}
	assertSameLines(t, f.ok("Glob", map[string]any{"pattern": "**/*.go"}), []string{"/w/main.go", "/w/lib/l.go"})
	if got := f.ok("LS", map[string]any{"path": "lib"}); got != "- /w/lib/\n  - l.go" {
		t.Errorf("LS: %q", got)
	}
	f.fails("Read", map[string]any{"file_path": "s.go"}, fence.CodeNotInRoot)
	if strings.Contains(f.ok("Grep", map[string]any{"pattern": "secret"}), "secret") {
		t.Error("Grep followed a link out of the root")
	}
}
