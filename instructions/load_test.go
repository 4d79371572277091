package instructions_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/env/envtest"
	"github.com/sema-agent/sema/instructions"
)

// tree builds an in-memory filesystem: files by absolute path (parents created), then
// links (path -> target).
func tree(t *testing.T, files map[string]string, links map[string]string) *envtest.Mem {
	t.Helper()
	m := envtest.NewMem()
	ctx := context.Background()
	for p, body := range files {
		if err := m.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := m.WriteFile(ctx, p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for p, target := range links {
		if err := m.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := m.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

const (
	root = "/w/proj"
	home = "/home/u"
)

// config is the usual configuration over e: the task root, the home directory, the
// root as the only read root.
func config(e env.ExecutionEnv) instructions.Config {
	return instructions.Config{Env: e, Root: root, Home: home, ReadRoots: []string{root}}
}

func codes(ns []sema.Notice) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Code)
	}
	return out
}

func TestStartLoadsInOrder(t *testing.T) {
	t.Parallel()
	e := tree(t, map[string]string{
		home + "/.sema/AGENTS.md":    "user rules",
		"/AGENTS.md":                 "machine rules",
		"/w/CLAUDE.md":               "workspace rules",
		root + "/AGENTS.md":          "project agents",
		root + "/CLAUDE.md":          "project claude",
		root + "/AGENTS.local.md":    "my agents notes",
		root + "/CLAUDE.local.md":    "my claude notes",
		root + "/.sema/AGENTS.md":    "sema project rules",
		root + "/sub/AGENTS.md":      "below the root: not at the start",
		"/mem/MEMORY.md":             "- [db] notes/db.md",
		"/w/proj/README.md":          "not an instruction file",
		"/elsewhere/AGENTS.md":       "not on the way to the root",
		home + "/.claude/CLAUDE.md":  "another agent's user file",
		root + "/.claude/AGENTS.md":  "not a place sema reads",
		"/w/proj-other/AGENTS.md":    "a sibling",
		"/w/proj/.sema/CLAUDE.md":    "only AGENTS.md in .sema",
		"/w/proj/sub/deep/CLAUDE.md": "below",
	}, nil)
	cfg := config(e)
	cfg.MemoryDir = "/mem"
	cfg.ReadRoots = append(cfg.ReadRoots, "/mem")
	set := instructions.New(cfg).Start(context.Background())
	type loaded struct {
		Path   string
		Source instructions.Source
		Dir    string
	}
	var got []loaded
	for _, f := range set.Files {
		got = append(got, loaded{f.Path, f.Source, f.Dir})
	}
	want := []loaded{
		{home + "/.sema/AGENTS.md", instructions.SourceUser, home + "/.sema"},
		{"/AGENTS.md", instructions.SourceProject, "/"},
		{"/w/CLAUDE.md", instructions.SourceProject, "/w"},
		{root + "/AGENTS.md", instructions.SourceProject, root},
		{root + "/CLAUDE.md", instructions.SourceProject, root},
		{root + "/AGENTS.local.md", instructions.SourceLocal, root},
		{root + "/CLAUDE.local.md", instructions.SourceLocal, root},
		{root + "/.sema/AGENTS.md", instructions.SourceProject, root + "/.sema"},
		{"/mem/MEMORY.md", instructions.SourceMemory, "/mem"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("loaded files (-want +got):\n%s", diff)
	}
	if len(set.Notices) != 0 {
		t.Errorf("notices: %+v", set.Notices)
	}
	text := set.Text()
	for _, s := range []string{
		"Contents of " + home + "/.sema/AGENTS.md (the user's instructions for all projects):\n\nuser rules\n",
		"Contents of " + root + "/CLAUDE.local.md (the user's private instructions for this project):\n\nmy claude notes\n",
		"Contents of /mem/MEMORY.md (your memory index: what you saved in earlier tasks):\n\n- [db] notes/db.md\n",
	} {
		if !strings.Contains(text, s) {
			t.Errorf("the text lacks %q:\n%s", s, text)
		}
	}
	if !slices.Equal(set.Paths(), func() []string {
		var ps []string
		for _, w := range want {
			ps = append(ps, w.Path)
		}
		return ps
	}()) {
		t.Errorf("Paths() = %v", set.Paths())
	}
}

// A file the user keeps elsewhere, and the usual AGENTS.md -> CLAUDE.md link, are loaded
// once; a link planted in a repository that leads out of its directory and the roots is
// not loaded, and says so.
func TestStartLinks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		links     map[string]string
		wantPaths []string
		wantCodes []string
		absent    string
	}{
		{"AGENTS.md links to CLAUDE.md", map[string]string{root + "/AGENTS.md": "CLAUDE.md"}, []string{root + "/CLAUDE.md"}, nil, ""},
		{"a link to a file below its directory", map[string]string{root + "/AGENTS.md": "docs/agents.md"}, []string{root + "/docs/agents.md", root + "/CLAUDE.md"}, nil, ""},
		{"the user's file links to the dotfiles", map[string]string{home + "/.sema/AGENTS.md": "/dotfiles/agents.md"}, []string{"/dotfiles/agents.md", root + "/CLAUDE.md"}, nil, ""},
		{"a project file links to a key", map[string]string{root + "/AGENTS.local.md": "/keys/id"}, []string{root + "/CLAUDE.md"}, []string{instructions.CodeFileSkipped}, "SECRET"},
		{"an ancestor's file links to a key", map[string]string{"/w/AGENTS.md": "../keys/id"}, []string{root + "/CLAUDE.md"}, []string{instructions.CodeFileSkipped}, "SECRET"},
		{"a dangling link", map[string]string{root + "/AGENTS.md": "gone.md"}, []string{root + "/CLAUDE.md"}, []string{instructions.CodeFileSkipped}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := tree(t, map[string]string{
				root + "/CLAUDE.md":      "claude",
				root + "/docs/agents.md": "agents in docs",
				"/dotfiles/agents.md":    "dotfiles",
				"/keys/id":               "SECRET",
			}, tt.links)
			set := instructions.New(config(e)).Start(context.Background())
			if got := set.Paths(); !slices.Equal(got, tt.wantPaths) {
				t.Errorf("paths %v, want %v", got, tt.wantPaths)
			}
			if got := codes(set.Notices); !slices.Equal(got, tt.wantCodes) {
				t.Errorf("notices %v, want %v (%+v)", got, tt.wantCodes, set.Notices)
			}
			if tt.absent != "" && strings.Contains(set.Text(), tt.absent) {
				t.Errorf("the text shows %q:\n%s", tt.absent, set.Text())
			}
		})
	}
}

// Config.Denied keeps a file out, except the user's own, which lives in sema's home.
func TestStartDenied(t *testing.T) {
	t.Parallel()
	e := tree(t, map[string]string{
		home + "/.sema/AGENTS.md": "user",
		root + "/AGENTS.md":       "project",
		root + "/CLAUDE.local.md": "denied",
	}, nil)
	cfg := config(e)
	cfg.Denied = func(p string) bool { return strings.HasSuffix(p, ".local.md") || strings.HasPrefix(p, home+"/.sema") }
	set := instructions.New(cfg).Start(context.Background())
	if want := []string{home + "/.sema/AGENTS.md", root + "/AGENTS.md"}; !slices.Equal(set.Paths(), want) {
		t.Errorf("paths %v, want %v", set.Paths(), want)
	}
	if len(set.Notices) != 1 || set.Notices[0].Code != instructions.CodeFileSkipped || set.Notices[0].Detail["path"] != root+"/CLAUDE.local.md" {
		t.Errorf("notices %+v", set.Notices)
	}
}

// nlinks reports two hard links for one path.
type nlinks struct {
	env.ExecutionEnv
	path string
}

func (n nlinks) Stat(ctx context.Context, p string) (env.FileInfo, error) {
	fi, err := n.ExecutionEnv.Stat(ctx, p)
	if p == n.path {
		fi.Nlink = 2
	}
	return fi, err
}

// Files that are not text, too large, not regular, or hard-linked inside the roots are
// skipped with a notice; an empty file is nothing to show.
func TestStartSkipsWhatIsNotAnInstructionFile(t *testing.T) {
	t.Parallel()
	e := tree(t, map[string]string{
		"/AGENTS.md":              "binary\x00data",
		"/w/AGENTS.md":            strings.Repeat("x", instructions.MaxFileBytes+1),
		root + "/AGENTS.md":       "hard-linked",
		root + "/CLAUDE.md":       "\xef\xbb\xbfwith a BOM\r\nand CRLF\r\n",
		root + "/AGENTS.local.md": "  \n\n ",
	}, nil)
	if err := e.MkdirAll(root+"/CLAUDE.local.md", 0o755); err != nil {
		t.Fatal(err)
	}
	set := instructions.New(config(nlinks{e, root + "/AGENTS.md"})).Start(context.Background())
	if want := []string{root + "/CLAUDE.md"}; !slices.Equal(set.Paths(), want) {
		t.Fatalf("paths %v, want %v", set.Paths(), want)
	}
	if got := set.Files[0].Text; got != "with a BOM\nand CRLF" {
		t.Errorf("text %q", got)
	}
	var skipped []string
	for _, n := range set.Notices {
		if n.Code != instructions.CodeFileSkipped {
			t.Errorf("notice %+v", n)
		}
		skipped = append(skipped, n.Detail["path"].(string))
	}
	if want := []string{"/AGENTS.md", "/w/AGENTS.md", root + "/AGENTS.md", root + "/CLAUDE.local.md"}; !slices.Equal(skipped, want) {
		t.Errorf("skipped %v, want %v", skipped, want)
	}
}

func TestImportsLoad(t *testing.T) {
	t.Parallel()
	chain := map[string]string{root + "/AGENTS.md": "@d1.md"}
	for i := 1; i <= instructions.MaxImportDepth+1; i++ {
		next := ""
		if i <= instructions.MaxImportDepth {
			next = "@d" + string(rune('0'+i+1)) + ".md"
		}
		chain[root+"/d"+string(rune('0'+i))+".md"] = "depth " + string(rune('0'+i)) + " " + next
	}
	tests := []struct {
		name      string
		files     map[string]string
		readRoots []string
		wantPaths []string
		wantCodes []string
		absent    string
	}{
		{
			name:      "relative to the importing file, right after it",
			files:     map[string]string{root + "/AGENTS.md": "see @docs/style.md", root + "/docs/style.md": "style @../CLAUDE.md @./more.md", root + "/docs/more.md": "more", root + "/CLAUDE.md": "claude"},
			wantPaths: []string{root + "/AGENTS.md", root + "/docs/style.md", root + "/CLAUDE.md", root + "/docs/more.md"},
		},
		{
			name:      "home, inside the read roots",
			files:     map[string]string{root + "/AGENTS.md": "@~/notes/go.md", home + "/notes/go.md": "go"},
			readRoots: []string{root, home + "/notes"},
			wantPaths: []string{root + "/AGENTS.md", home + "/notes/go.md"},
		},
		{
			name:      "home, outside the read roots",
			files:     map[string]string{root + "/AGENTS.md": "@~/notes/go.md", home + "/notes/go.md": "HOME NOTES"},
			wantPaths: []string{root + "/AGENTS.md"},
			wantCodes: []string{instructions.CodeImportOutside},
			absent:    "HOME NOTES",
		},
		{
			name:      "an escape with dot-dot",
			files:     map[string]string{root + "/AGENTS.md": "@../../keys/id", "/keys/id": "SECRET"},
			wantPaths: []string{root + "/AGENTS.md"},
			wantCodes: []string{instructions.CodeImportOutside},
			absent:    "SECRET",
		},
		{
			name:      "an ancestor's file imports from the roots but not beside itself",
			files:     map[string]string{"/w/AGENTS.md": "@proj/docs/a.md @other.md", root + "/docs/a.md": "inside", "/w/other.md": "OUTSIDE"},
			wantPaths: []string{"/w/AGENTS.md", root + "/docs/a.md"},
			wantCodes: []string{instructions.CodeImportOutside},
			absent:    "OUTSIDE",
		},
		{
			name:      "a denied import",
			files:     map[string]string{root + "/AGENTS.md": "@.env", root + "/.env": "TOKEN=1"},
			wantPaths: []string{root + "/AGENTS.md"},
			wantCodes: []string{instructions.CodeImportDenied},
			absent:    "TOKEN",
		},
		{
			name:      "the depth limit",
			files:     chain,
			wantPaths: []string{root + "/AGENTS.md", root + "/d1.md", root + "/d2.md", root + "/d3.md", root + "/d4.md", root + "/d5.md"},
			wantCodes: []string{instructions.CodeImportTooDeep},
			absent:    "depth 6",
		},
		{
			name:      "a cycle",
			files:     map[string]string{root + "/AGENTS.md": "@a.md", root + "/a.md": "a @b.md", root + "/b.md": "b @a.md @AGENTS.md"},
			wantPaths: []string{root + "/AGENTS.md", root + "/a.md", root + "/b.md"},
			wantCodes: []string{instructions.CodeImportCycle, instructions.CodeImportCycle},
		},
		{
			name:      "a file imported twice is loaded once, silently",
			files:     map[string]string{root + "/AGENTS.md": "@common.md", root + "/CLAUDE.md": "@common.md", root + "/common.md": "common"},
			wantPaths: []string{root + "/AGENTS.md", root + "/common.md", root + "/CLAUDE.md"},
		},
		{
			name:      "imports in code are not imports",
			files:     map[string]string{root + "/AGENTS.md": "`@a.md`\n\n```\n@b.md\n```\n\n    @c.md\n", root + "/a.md": "A", root + "/b.md": "B", root + "/c.md": "C"},
			wantPaths: []string{root + "/AGENTS.md"},
		},
		{
			name:      "a missing import is silent",
			files:     map[string]string{root + "/AGENTS.md": "ask @alice or @bob.md"},
			wantPaths: []string{root + "/AGENTS.md"},
		},
		{
			name:      "a directory is not a file",
			files:     map[string]string{root + "/AGENTS.md": "@docs", root + "/docs/x.md": "x"},
			wantPaths: []string{root + "/AGENTS.md"},
			wantCodes: []string{instructions.CodeFileSkipped},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := config(tree(t, tt.files, nil))
			if tt.readRoots != nil {
				cfg.ReadRoots = tt.readRoots
			}
			cfg.Denied = func(p string) bool { return filepath.Base(p) == ".env" }
			set := instructions.New(cfg).Start(context.Background())
			if !slices.Equal(set.Paths(), tt.wantPaths) {
				t.Errorf("paths %v, want %v", set.Paths(), tt.wantPaths)
			}
			if got := codes(set.Notices); !slices.Equal(got, tt.wantCodes) {
				t.Errorf("notices %v, want %v: %+v", got, tt.wantCodes, set.Notices)
			}
			if tt.absent != "" && strings.Contains(set.Text(), tt.absent) {
				t.Errorf("the text shows %q:\n%s", tt.absent, set.Text())
			}
			for _, f := range set.Files[1:] {
				if f.Source == instructions.SourceImport && (f.ImportedBy == "" || !strings.Contains(set.Text(), "imported by "+f.ImportedBy)) {
					t.Errorf("import %s does not name its importer", f.Path)
				}
			}
		})
	}
}

// A skipped import's notice names it as written and the file that has it.
func TestImportNoticeNamesTheImport(t *testing.T) {
	t.Parallel()
	e := tree(t, map[string]string{root + "/AGENTS.md": "@../../keys/id", "/keys/id": "SECRET"}, nil)
	set := instructions.New(config(e)).Start(context.Background())
	if len(set.Notices) != 1 {
		t.Fatalf("notices %+v", set.Notices)
	}
	n := set.Notices[0]
	if n.Detail["import"] != "../../keys/id" || n.Detail["file"] != root+"/AGENTS.md" || n.Detail["resolved"] != "/keys/id" || !strings.Contains(n.Message, "@../../keys/id") {
		t.Errorf("notice %+v", n)
	}
}

// The file that crosses the cap is cut at a line end (counting characters, not bytes)
// and marked; the files after it are left out; one notice names both.
func TestCap(t *testing.T) {
	t.Parallel()
	tests := []struct {
		max  int
		kept string
	}{
		{22, "ééé\nline two"}, // AGENTS.md's 10, then 12 of CLAUDE.md's 18: a line end
		{20, "ééé"},           // 10 of 18 end inside "line two": back to the line before
		{11, "é"},             // 1 of 18, inside the first line: the characters that fit
	}
	for _, tt := range tests {
		e := tree(t, map[string]string{
			root + "/AGENTS.md":       "0123456789",
			root + "/CLAUDE.md":       "ééé\nline two\nthree", // 18 characters, 21 bytes
			root + "/AGENTS.local.md": "left out",
			root + "/CLAUDE.local.md": "left out too",
		}, nil)
		cfg := config(e)
		cfg.MaxChars = tt.max
		set := instructions.New(cfg).Start(context.Background())
		if want := []string{root + "/AGENTS.md", root + "/CLAUDE.md"}; !slices.Equal(set.Paths(), want) {
			t.Fatalf("max %d: paths %v, want %v", tt.max, set.Paths(), want)
		}
		if f := set.Files[1]; !f.Cut || f.Text != tt.kept || set.Files[0].Cut {
			t.Errorf("max %d: cut file %+v, want the text %q", tt.max, f, tt.kept)
		}
		if !strings.Contains(set.Text(), tt.kept+"\n[The rest of this file was left out") {
			t.Errorf("max %d: the text does not mark the cut:\n%s", tt.max, set.Text())
		}
		if len(set.Notices) != 1 || set.Notices[0].Code != instructions.CodeTruncated {
			t.Fatalf("max %d: notices %+v", tt.max, set.Notices)
		}
		want := map[string]any{"max_chars": tt.max, "cut": root + "/CLAUDE.md", "kept_chars": len([]rune(tt.kept)), "total_chars": 18,
			"left_out": []string{root + "/AGENTS.local.md", root + "/CLAUDE.local.md"}}
		if diff := cmp.Diff(want, set.Notices[0].Detail); diff != "" {
			t.Errorf("max %d: notice detail (-want +got):\n%s", tt.max, diff)
		}
	}
}

// A cut without a line end keeps the characters that fit; the default cap is 40,000.
func TestCapWithinALine(t *testing.T) {
	t.Parallel()
	e := tree(t, map[string]string{root + "/AGENTS.md": strings.Repeat("ab", 30_000)}, nil)
	set := instructions.New(config(e)).Start(context.Background())
	if len(set.Files) != 1 || len([]rune(set.Files[0].Text)) != instructions.DefaultMaxChars || !set.Files[0].Cut {
		t.Fatalf("files %d, text %d characters", len(set.Files), len(set.Files[0].Text))
	}
	if set.Notices[0].Detail["kept_chars"] != 40_000 {
		t.Errorf("notice %+v", set.Notices[0])
	}
}

// Enter loads the files of the directories between the root and a directory a tool read
// in, top down, once; the cap holds across Start and Enter.
func TestEnter(t *testing.T) {
	t.Parallel()
	e := tree(t, map[string]string{
		root + "/AGENTS.md":            "root",
		root + "/a/AGENTS.md":          "a @notes.md",
		root + "/a/notes.md":           "a's notes",
		root + "/a/b/CLAUDE.local.md":  "b local",
		root + "/a/b/c/AGENTS.md":      strings.Repeat("c", 50),
		root + "/z/AGENTS.md":          "z",
		root + "/a/b/.sema/AGENTS.md":  "only the root's .sema",
		"/w/outside/AGENTS.md":         "outside",
		root + "/a/b/c/d/AGENTS.md":    "left out",
		root + "/a/b/c/d/e/AGENTS.md":  "never reached",
		root + "/a/b/c/d/e/CLAUDE.md":  "never reached",
		root + "/a/b/c/d/e/f/CLAUDE.x": "not a name",
	}, nil)
	cfg := config(e)
	cfg.MaxChars = 60
	l := instructions.New(cfg)
	ctx := context.Background()
	if got := l.Start(ctx).Paths(); !slices.Equal(got, []string{root + "/AGENTS.md"}) {
		t.Fatalf("start %v", got)
	}
	steps := []struct {
		dir       string
		wantPaths []string
		wantCodes []string
	}{
		{root + "/a/b", []string{root + "/a/AGENTS.md", root + "/a/notes.md", root + "/a/b/CLAUDE.local.md"}, nil},
		{root + "/a/b", nil, nil},
		{root + "/a", nil, nil},
		{root, nil, nil},
		{"/w/outside", nil, nil},
		{"/w/proj/../outside", nil, nil},
		{root + "/a/b/c", []string{root + "/a/b/c/AGENTS.md"}, []string{instructions.CodeTruncated}},
		{root + "/a/b/c/d", nil, []string{instructions.CodeTruncated}},
		{root + "/z", nil, []string{instructions.CodeTruncated}},
	}
	for _, s := range steps {
		set := l.Enter(ctx, s.dir)
		if !slices.Equal(set.Paths(), s.wantPaths) {
			t.Errorf("Enter(%s) loaded %v, want %v", s.dir, set.Paths(), s.wantPaths)
		}
		if got := codes(set.Notices); !slices.Equal(got, s.wantCodes) {
			t.Errorf("Enter(%s) notices %v, want %v: %+v", s.dir, got, s.wantCodes, set.Notices)
		}
		for _, f := range set.Files {
			if f.Source != instructions.SourceImport && f.Dir != filepath.Dir(f.Path) {
				t.Errorf("%s found in %q", f.Path, f.Dir)
			}
		}
	}
}

// A fork begins with its parent's start, read once, and loads the directories below the
// root anew.
func TestFork(t *testing.T) {
	t.Parallel()
	mem := tree(t, map[string]string{root + "/AGENTS.md": "root", root + "/a/AGENTS.md": "a"}, nil)
	e := envtest.NewFaulty(mem)
	l := instructions.New(config(e))
	ctx := context.Background()
	l.Start(ctx)
	l.Enter(ctx, root+"/a")
	reads := e.Calls(envtest.OpReadFile)
	child := l.Fork()
	if got := child.Start(ctx); !slices.Equal(got.Paths(), []string{root + "/AGENTS.md"}) || got.Files[0].Text != "root" {
		t.Errorf("the fork's start: %+v", got)
	}
	if e.Calls(envtest.OpReadFile) != reads {
		t.Errorf("the fork read its start again")
	}
	if got := child.Enter(ctx, root+"/a").Paths(); !slices.Equal(got, []string{root + "/a/AGENTS.md"}) {
		t.Errorf("the fork's Enter loaded %v", got)
	}
	if got := l.Enter(ctx, root+"/a").Paths(); len(got) != 0 {
		t.Errorf("the parent loaded %v again", got)
	}
	if again := l.Start(ctx); len(again.Files) != 1 || len(again.Notices) != 0 {
		t.Errorf("a second Start: %+v", again)
	}
}

// Without a root or a home nothing is read from them; a memory directory alone still
// gives its index.
func TestStartWithoutRootOrHome(t *testing.T) {
	t.Parallel()
	e := tree(t, map[string]string{"/AGENTS.md": "top", "/mem/MEMORY.md": "index"}, nil)
	set := instructions.New(instructions.Config{Env: e, MemoryDir: "/mem", ReadRoots: []string{"/mem"}}).Start(context.Background())
	if !slices.Equal(set.Paths(), []string{"/mem/MEMORY.md"}) {
		t.Errorf("paths %v", set.Paths())
	}
	set = instructions.New(instructions.Config{Env: e, Root: "relative", Home: "also relative"}).Start(context.Background())
	if len(set.Files) != 0 {
		t.Errorf("paths %v", set.Paths())
	}
}
