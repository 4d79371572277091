// Package importcheck reads the module's import graph from its source (go/build, the
// files the current platform builds, tests left out), so a test can hold the packages to
// the floors they sit on: reading a command line (shellscan) below judging it (the
// permission gate) below running it (the tool sets), and the stores, the file-history
// snapshot and the state directory below the runner and the tools, and the runner's engine
// packages (internal/…) below its API, package agent.
package importcheck

import (
	"fmt"
	"go/build"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Graph is the module's import graph: for each package of the module (by import
// path), the packages of the module it imports directly.
type Graph struct {
	module string
	root   string
	edges  map[string][]string
}

// Load reads the graph of the module whose import path is module and whose go.mod sits
// in root, starting from the packages named by their path inside the module ("" for the
// root package) and following every import of the module they reach.
func Load(module, root string, from ...string) (*Graph, error) {
	g := &Graph{module: module, root: root, edges: map[string][]string{}}
	for _, rel := range from {
		if err := g.visit(g.full(rel)); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// full makes a path inside the module an import path.
func (g *Graph) full(rel string) string {
	if rel == "" {
		return g.module
	}
	return g.module + "/" + rel
}

// visit reads one package's imports and then those of the module's packages it imports.
func (g *Graph) visit(pkg string) error {
	if _, seen := g.edges[pkg]; seen {
		return nil
	}
	dir := filepath.Join(g.root, filepath.FromSlash(strings.TrimPrefix(strings.TrimPrefix(pkg, g.module), "/")))
	p, err := build.ImportDir(dir, 0)
	if err != nil {
		return fmt.Errorf("reading %s: %w", pkg, err)
	}
	var own []string
	for _, imp := range p.Imports {
		if imp == g.module || strings.HasPrefix(imp, g.module+"/") {
			own = append(own, imp)
		}
	}
	g.edges[pkg] = own
	for _, imp := range own {
		if err := g.visit(imp); err != nil {
			return err
		}
	}
	return nil
}

// Imports reports whether the package from (a path inside the module) imports the
// package to directly.
func (g *Graph) Imports(from, to string) bool {
	return slices.Contains(g.edges[g.full(from)], g.full(to))
}

// Path returns a chain of imports from the package from to the package to (paths inside
// the module, from first), or nil when from does not depend on to at any depth.
func (g *Graph) Path(from, to string) []string {
	start, goal := g.full(from), g.full(to)
	prev := map[string]string{start: ""}
	queue := []string{start}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == goal {
			var chain []string
			for p := cur; p != ""; p = prev[p] {
				chain = append(chain, g.short(p))
			}
			slices.Reverse(chain)
			return chain
		}
		for _, next := range g.edges[cur] {
			if _, seen := prev[next]; !seen {
				prev[next] = cur
				queue = append(queue, next)
			}
		}
	}
	return nil
}

// OwnImports returns the module's packages the package from imports directly, as paths
// inside the module ("" for the root package).
func (g *Graph) OwnImports(from string) []string {
	var out []string
	for _, imp := range g.edges[g.full(from)] {
		out = append(out, g.short(imp))
	}
	return out
}

// short makes an import path of the module a path inside it.
func (g *Graph) short(pkg string) string {
	return strings.TrimPrefix(strings.TrimPrefix(pkg, g.module), "/")
}

// FilesImporting returns the files (base names) of the package rel of the module rooted
// at root, among those the current platform builds and tests left out, that import the
// package to (a path inside the module), for a rule finer than a package: the SQLite
// store of a package may import the SQLite plumbing, its memory store may not.
func FilesImporting(module, root, rel, to string) ([]string, error) {
	dir := filepath.Join(root, filepath.FromSlash(rel))
	p, err := build.ImportDir(dir, 0)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	want := module + "/" + to
	var out []string
	fset := token.NewFileSet()
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ImportsOnly)
		if err != nil {
			return nil, err
		}
		for _, spec := range f.Imports {
			if path, err := strconv.Unquote(spec.Path.Value); err == nil && path == want {
				out = append(out, name)
				break
			}
		}
	}
	return out, nil
}
