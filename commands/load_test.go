package commands

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sema-agent/sema"
)

// tree makes a workspace and a home directory in temporary directories, each file
// relative to one of them ("root/…" or "home/…").
func tree(t *testing.T, files map[string]string) (root, home string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, home = filepath.Join(base, "root"), filepath.Join(base, "home")
	for _, d := range []string{root, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for rel, body := range files {
		p := filepath.Join(base, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root, home
}

type listed struct {
	Name    string
	Scope   Scope
	Claude  bool
	Path    string
	Shadows []string
}

func summary(s *Set, base string) []listed {
	var out []listed
	rel := func(p string) string { r, _ := filepath.Rel(base, p); return filepath.ToSlash(r) }
	for _, c := range s.Commands() {
		l := listed{Name: c.Name, Scope: c.Scope, Claude: c.Claude, Path: rel(c.Path)}
		for _, sh := range c.Shadows {
			l.Shadows = append(l.Shadows, string(sh.Scope)+" "+rel(sh.Path))
		}
		out = append(out, l)
	}
	return out
}

// Project beats user, sema's directory beats Claude Code's within a scope, and the
// winner lists the files it hides. Without the switch, .claude is not read.
func TestLoadPrecedence(t *testing.T) {
	t.Parallel()
	root, home := tree(t, map[string]string{
		"root/.sema/commands/a.md":   "project sema a",
		"root/.claude/commands/a.md": "project claude a",
		"root/.claude/commands/b.md": "project claude b",
		"home/.sema/commands/a.md":   "user sema a",
		"home/.sema/commands/b.md":   "user sema b",
		"home/.sema/commands/c.md":   "user sema c",
		"home/.claude/commands/c.md": "user claude c",
		"home/.claude/commands/d.md": "user claude d",
	})
	base := filepath.Dir(root)
	got := summary(Load(Options{Root: root, Home: home, ClaudeCompat: true}), base)
	want := []listed{
		{Name: "a", Scope: ScopeProject, Path: "root/.sema/commands/a.md", Shadows: []string{"project root/.claude/commands/a.md", "user home/.sema/commands/a.md"}},
		{Name: "b", Scope: ScopeProject, Claude: true, Path: "root/.claude/commands/b.md", Shadows: []string{"user home/.sema/commands/b.md"}},
		{Name: "c", Scope: ScopeUser, Path: "home/.sema/commands/c.md", Shadows: []string{"user home/.claude/commands/c.md"}},
		{Name: "d", Scope: ScopeUser, Claude: true, Path: "home/.claude/commands/d.md"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("with the switch (-want +got)\n%s", d)
	}

	got = summary(Load(Options{Root: root, Home: home}), base)
	want = []listed{
		{Name: "a", Scope: ScopeProject, Path: "root/.sema/commands/a.md", Shadows: []string{"user home/.sema/commands/a.md"}},
		{Name: "b", Scope: ScopeUser, Path: "home/.sema/commands/b.md"},
		{Name: "c", Scope: ScopeUser, Path: "home/.sema/commands/c.md"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("without the switch (-want +got)\n%s", d)
	}
}

// Subdirectories namespace with ":"; hidden entries and other files are skipped; a
// ":" in a file's own name is refused (it would collide with a directory's command).
func TestLoadNamespaces(t *testing.T) {
	t.Parallel()
	root, home := tree(t, map[string]string{
		"root/.sema/commands/frontend/component.md":    "component",
		"root/.sema/commands/frontend/forms/input.md":  "input",
		"root/.sema/commands/backend/component.md":     "backend component",
		"root/.sema/commands/notes.txt":                "not a command",
		"root/.sema/commands/.draft.md":                "hidden",
		"root/.sema/commands/.hidden/x.md":             "hidden dir",
		"root/.sema/commands/a:b.md":                   "colon",
		"root/.sema/commands/with space/x.md":          "blank",
		"root/.sema/commands/frontend/component.md.md": "double suffix",
	})
	s := Load(Options{Root: root, Home: home})
	want := []string{"backend:component", "frontend:component", "frontend:component.md", "frontend:forms:input"}
	if d := cmp.Diff(want, s.Names()); d != "" {
		t.Errorf("names (-want +got)\n%s", d)
	}
	problems := s.Problems()
	if len(problems) != 2 {
		t.Fatalf("problems %v; want the colon file and the directory with a blank", problems)
	}
	for _, p := range problems {
		if p.Code != CodeInvalid || !strings.Contains(p.Message, "a:b.md") && !strings.Contains(p.Message, "with space") {
			t.Errorf("problem %v", p)
		}
	}
	inv, err := s.Resolve("/frontend:forms:input now")
	if err != nil || inv.Prompt != "input\n\nARGUMENTS: now" {
		t.Fatalf("Resolve: %+v, %v", inv, err)
	}
}

// A broken file takes its name: invoking it is refused naming the file, and it never
// falls back to the user's command of the same name. Other commands still work.
func TestBrokenFileKeepsItsName(t *testing.T) {
	t.Parallel()
	root, home := tree(t, map[string]string{
		"root/.sema/commands/fix.md": "---\ndescription: never closed\n",
		"home/.sema/commands/fix.md": "the user's fix",
		"home/.sema/commands/ok.md":  "fine $1",
		"root/.sema/commands/bin.md": "\xfe\xff",
	})
	s := Load(Options{Root: root, Home: home})
	_, err := s.Resolve("/fix it")
	if !sema.IsCode(err, CodeInvalid) || !strings.Contains(err.Error(), filepath.Join(root, ".sema", "commands", "fix.md")) {
		t.Fatalf("/fix: %v; want the project file's refusal", err)
	}
	if _, err := s.Resolve("/bin"); !sema.IsCode(err, CodeInvalid) || !strings.Contains(err.Error(), "UTF-8") {
		t.Fatalf("/bin: %v", err)
	}
	inv, err := s.Resolve("/ok go")
	if err != nil || inv.Prompt != "fine go\n\nARGUMENTS: go" || inv.Command.Scope != ScopeUser {
		t.Fatalf("/ok: %+v, %v", inv, err)
	}
	if d := cmp.Diff([]string{"ok"}, s.Names()); d != "" {
		t.Errorf("names (-want +got)\n%s", d)
	}
	if n := len(s.Problems()); n != 2 {
		t.Errorf("%d problems; want 2: %v", n, s.Problems())
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	root, home := tree(t, map[string]string{
		"home/.sema/commands/review.md": "Review $ARGUMENTS",
		"home/.sema/commands/Caps.md":   "caps",
	})
	s := Load(Options{Root: root, Home: home})
	for _, prompt := range []string{"/tmp/foo is broken", "/Users/me/x", "/Nope", "review", " /deploy", "/", "fix /deploy"} {
		if inv, err := s.Resolve(prompt); inv != nil || err != nil {
			t.Errorf("Resolve(%q) = %+v, %v; want no invocation", prompt, inv, err)
		}
	}
	inv, err := s.Resolve("/Caps")
	if err != nil || inv == nil || inv.Prompt != "caps" {
		t.Errorf("a command whose name is not of the lowercase form still resolves: %+v, %v", inv, err)
	}
	inv, err = s.Resolve(`/review "src/a b.go"`)
	if err != nil || inv.Prompt != `Review "src/a b.go"` || inv.Args != `"src/a b.go"` {
		t.Errorf("/review: %+v, %v", inv, err)
	}
	_, err = s.Resolve("/deploy now")
	var se *sema.Error
	if !sema.IsCode(err, CodeUnknown) || !strings.Contains(err.Error(), "/Caps, /review") {
		t.Fatalf("/deploy: %v", err)
	}
	se = err.(*sema.Error)
	if d := cmp.Diff([]string{"Caps", "review"}, se.Detail["available"]); d != "" {
		t.Errorf("available (-want +got)\n%s", d)
	}
	_, err = Load(Options{Root: root}).Resolve("/deploy")
	if !sema.IsCode(err, CodeUnknown) || !strings.Contains(err.Error(), "there are none") {
		t.Errorf("no commands: %v", err)
	}
}

// A link in the workspace's commands pointing outside the workspace is refused (it
// would put a file of the repository's choosing — a key — in the prompt); the user's
// own links are followed.
func TestProjectLinksStayInTheWorkspace(t *testing.T) {
	t.Parallel()
	root, home := tree(t, map[string]string{
		"secret.txt":                  "KEY",
		"root/docs/inside.md":         "inside the workspace",
		"home/dotfiles/mine.md":       "the user's own",
		"home/dotfiles/dir/nested.md": "nested",
	})
	base := filepath.Dir(root)
	cmds := filepath.Join(root, ".sema", "commands")
	os.MkdirAll(cmds, 0o755)
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, name); err != nil {
			t.Skip("no symlinks here:", err)
		}
	}
	link(filepath.Join(base, "secret.txt"), filepath.Join(cmds, "steal.md"))
	link(filepath.Join(root, "docs", "inside.md"), filepath.Join(cmds, "inside.md"))
	link(filepath.Join(home, "dotfiles", "dir"), filepath.Join(cmds, "outdir"))
	link(filepath.Join(cmds, "nowhere"), filepath.Join(cmds, "dangling.md"))
	link(cmds, filepath.Join(cmds, "loop"))
	userCmds := filepath.Join(home, ".sema", "commands")
	os.MkdirAll(filepath.Dir(userCmds), 0o755)
	link(filepath.Join(home, "dotfiles"), userCmds)

	s := Load(Options{Root: root, Home: home})
	if d := cmp.Diff([]string{"dir:nested", "inside", "mine"}, s.Names()); d != "" {
		t.Errorf("names (-want +got)\n%s", d)
	}
	if _, err := s.Resolve("/steal"); !sema.IsCode(err, CodeInvalid) || !strings.Contains(err.Error(), "outside the workspace") {
		t.Errorf("/steal: %v", err)
	}
	var msgs []string
	for _, p := range s.Problems() {
		msgs = append(msgs, p.Message)
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{"steal.md", "outdir", "dangling.md"} {
		if !strings.Contains(all, want) {
			t.Errorf("no problem names %s:\n%s", want, all)
		}
	}
	if strings.Contains(all, "KEY") {
		t.Errorf("a problem shows the linked file's content:\n%s", all)
	}
}

// A task rooted at the home directory reads ~/.sema/commands once, as the user's.
func TestHomeAsRootIsTheUsers(t *testing.T) {
	t.Parallel()
	_, home := tree(t, map[string]string{"home/.sema/commands/mine.md": "mine"})
	s := Load(Options{Root: home, Home: home})
	cs := s.Commands()
	if len(cs) != 1 || cs[0].Scope != ScopeUser || len(cs[0].Shadows) != 0 {
		t.Fatalf("commands %+v", cs)
	}
}
