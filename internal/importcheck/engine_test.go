package importcheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEngineSitsBelowTheRunner fails when a package under internal/ depends on package
// agent at any depth: the leg's engine parts (the session lease, the shell's stages, the
// context's compaction, ...) are what agent is built from, and agent keeps only what an
// embedder uses, so the imports run from agent down into them and never back.
func TestEngineSitsBelowTheRunner(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	dirs, err := os.ReadDir(filepath.Join(root, "internal"))
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		names, _ := filepath.Glob(filepath.Join(root, "internal", d.Name(), "*.go"))
		for _, n := range names {
			if !strings.HasSuffix(n, "_test.go") {
				pkgs = append(pkgs, "internal/"+d.Name())
				break
			}
		}
	}
	g, err := Load(module, root, append(pkgs, "agent")...)
	if err != nil {
		t.Fatal(err)
	}
	if !g.Imports("agent", "internal/lease") {
		t.Fatalf("the graph does not see agent -> internal/lease: %v", g.OwnImports("agent"))
	}
	for _, p := range pkgs {
		if chain := g.Path(p, "agent"); chain != nil {
			t.Errorf("%s depends on agent (%s): the engine sits below the runner; give the part its own types and convert in agent", p, strings.Join(chain, " -> "))
		}
	}
}
