package importcheck

import (
	"errors"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/sema-agent/sema"

// forbidden are the imports that point the wrong way, each with the reason it is wrong.
// deep forbids the dependency at any depth; otherwise only the direct import is
// forbidden (history's SQLite store still reaches sqlitedb, and pgstore imports history,
// but pgstore must not name sqlitedb for a code).
var forbidden = []struct {
	from, to string
	deep     bool
	why      string
}{
	{"tools/shell", "internal/gate", true, "the shell set runs commands; it names what it needs of the judge as shell.ReadDenial"},
	{"shellscan", "internal/gate", true, "reading a command line sits below judging it"},
	{"shellscan", "tools/shell", true, "reading a command line sits below running it"},
	{"internal/gate", "tools/shell", true, "judging a command sits below running it"},
	{"history/treestate", "tools/files", true, "file history's snapshot shares the file tools' .gitignore reader through package gitignore"},
	{"mcp", "tools/files", true, "MCP images are held to the model's limits through package imagefit"},
	{"history", "tools/files", true, "the history store sits below the tools"},
	{"pgstore", "session/sqlitedb", false, "the store-neutral codes live in session/storecode"},
	{"agent", "tui", true, "the terminal session is a client of the runner (cmd/sema wires it); the engine never draws a screen"},
	{"statedir", "agent", true, "the runner fills its Deps from the state directory (Deps.WithStateDir), not the other way"},
}

// onlyFiles names, for a package that holds a store on SQLite beside store-neutral code,
// the files that may import the SQLite plumbing: the store itself. The memory stores and
// the interfaces name the store-neutral codes through session/storecode.
var onlyFiles = []struct {
	pkg, to string
	files   []string
}{
	{"session", "session/sqlitedb", []string{"sqlite.go"}},
	{"history", "session/sqlitedb", []string{"sqlite.go"}},
}

// leaves import nothing of the module but the root package (errors and codes): each has
// one job and sits under everything that uses it.
var leaves = []string{"session/storecode", "gitignore", "imagefit", "internal/sqlstore"}

func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s: %v", root, err)
	}
	return root
}

// load reads the graph from every package the tables name.
func load(t *testing.T) *Graph {
	t.Helper()
	var from []string
	for _, f := range forbidden {
		from = append(from, f.from)
	}
	from = append(from, leaves...)
	from = append(from, "agent") // the calibration below
	g, err := Load(module, moduleRoot(t), from...)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestGraphSeesKnownEdges calibrates the check: edges that must exist are seen, so an
// empty graph cannot pass TestNoWrongWayImports.
func TestGraphSeesKnownEdges(t *testing.T) {
	t.Parallel()
	g := load(t)
	for _, e := range [][2]string{{"agent", "internal/gate"}, {"tools/shell", "shellscan"}, {"history/treestate", "gitignore"}, {"pgstore", "session/storecode"}, {"mcp", "imagefit"}} {
		if !g.Imports(e[0], e[1]) {
			t.Errorf("the graph does not see %s -> %s: %v", e[0], e[1], g.OwnImports(e[0]))
		}
	}
	if chain := g.Path("agent", "shellscan"); len(chain) < 2 {
		t.Errorf("the graph finds no path agent -> shellscan")
	}
}

// TestNoWrongWayImports fails when an import the table forbids comes back.
func TestNoWrongWayImports(t *testing.T) {
	t.Parallel()
	g := load(t)
	for _, f := range forbidden {
		if f.deep {
			if chain := g.Path(f.from, f.to); chain != nil {
				t.Errorf("%s depends on %s (%s): %s", f.from, f.to, strings.Join(chain, " -> "), f.why)
			}
		} else if g.Imports(f.from, f.to) {
			t.Errorf("%s imports %s: %s", f.from, f.to, f.why)
		}
	}
}

// TestLeavesStayLeaves fails when a leaf package starts importing the module's packages
// other than the root one.
func TestLeavesStayLeaves(t *testing.T) {
	t.Parallel()
	g := load(t)
	for _, leaf := range leaves {
		if own := slices.DeleteFunc(g.OwnImports(leaf), func(p string) bool { return p == "" }); len(own) > 0 {
			t.Errorf("the leaf %s imports %v; it should import nothing of the module but package sema", leaf, own)
		}
	}
}

// TestSQLiteStaysInTheSQLiteStore fails when a file of a store package other than its
// SQLite store imports the SQLite plumbing (session/sqlitedb), as the memory stores did
// for a code.
func TestSQLiteStaysInTheSQLiteStore(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	for _, o := range onlyFiles {
		got, err := FilesImporting(module, root, o.pkg, o.to)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			t.Errorf("no file of %s imports %s: is the check reading the package?", o.pkg, o.to)
		}
		for _, f := range got {
			if !slices.Contains(o.files, f) {
				t.Errorf("%s/%s imports %s; only %v may (the store-neutral codes are in session/storecode)", o.pkg, f, o.to, o.files)
			}
		}
	}
}

// TestEngineBelowAPI fails when a package under internal/ depends on agent at any depth:
// the runner's engine sits below its API, and agent hands it plain values.
func TestEngineBelowAPI(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	var pkgs []string
	err := filepath.WalkDir(filepath.Join(root, "internal"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if _, err := build.ImportDir(path, 0); err != nil {
			var none *build.NoGoError
			if errors.As(err, &none) {
				return nil
			}
			return err
		}
		rel, err := filepath.Rel(root, path)
		pkgs = append(pkgs, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	g, err := Load(module, root, append(pkgs, "agent")...)
	if err != nil {
		t.Fatal(err)
	}
	// Calibration: the walk found the engine agent drives.
	if !slices.Contains(pkgs, "internal/gate") || !g.Imports("agent", "internal/gate") {
		t.Fatalf("the walk of internal/ missed internal/gate: %v", pkgs)
	}
	for _, p := range pkgs {
		if chain := g.Path(p, "agent"); chain != nil {
			t.Errorf("%s depends on agent (%s): the runner's engine sits below its API; pass it plain values", p, strings.Join(chain, " -> "))
		}
	}
}
