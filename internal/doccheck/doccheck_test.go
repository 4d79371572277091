package doccheck

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

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

// TestPublicAPIDocumented fails for every exported identifier of a public
// package that has no doc comment. Every public package is covered, with no
// exceptions: a new package is documented when it is added.
func TestPublicAPIDocumented(t *testing.T) {
	t.Parallel()
	byDir, err := Module(moduleRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(byDir) < 10 {
		t.Fatalf("found only %d public packages; is the walk rooted at the module?", len(byDir))
	}
	dirs := make([]string, 0, len(byDir))
	for d := range byDir {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	for _, d := range dirs {
		for _, m := range byDir[d] {
			t.Error(m)
		}
	}
}

func TestPublic(t *testing.T) {
	t.Parallel()
	for rel, want := range map[string]bool{
		".":                       true,
		"fence":                   true,
		"model/openai/openaitest": true,
		"internal/gate":           false,
		"model/internal/fake":     false,
		"cmd/sema":                false,
		"examples/park":           false,
		"test/e2e":                false,
		"tools/files/testdata":    false,
		".git":                    false,
		"testing":                 true, // only the first element names the excluded trees
	} {
		if got := Public(rel); got != want {
			t.Errorf("Public(%q) = %v, want %v", rel, got, want)
		}
	}
}

// TestDirFindsEachKind runs the checker over a package written to catch each
// kind of gap it claims to find, and nothing else.
func TestDirFindsEachKind(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write := func(rel, src string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("p/a.go", `package p

func Bare() {}

// Doc is documented.
func Doc() {}

func unexported() {}

type T struct {
	Field int
	// Doc is documented.
	Doc int
	Line int // Line is documented.
	A, B string
	hidden int
	Nested struct {
		Inner int
	} // Nested is documented.
	Embedded
}

// Embedded is documented.
type Embedded struct{}

func (T) M() {}
func (*T) N() {}

// O is documented.
func (T) O() {}

type hidden struct{ X int }

func (hidden) M() {}

type G[K any] struct{}

func (g *G[K]) M() {}

type I interface {
	Call()
	// Doc is documented.
	Doc()
	Line() // Line is documented.
	Embedded
}

// Grouped types each need their own comment.
type (
	GA int
	// GB is documented.
	GB int
)

const Loose = 1

// Single is documented by its declaration.
const Single = 1

// States of a thing: Named is the only one this sentence names.
const (
	Named = iota
	Unnamed
	Trailing // Trailing is documented.
	// Above is documented.
	Above
	NamedSuffix
	unexportedConst
)

var (
	V1 int
	// V2 is documented.
	V2 int
)
`)
	write("p/b.go", `//go:build linux

package p

func OtherFile() {}
`)
	write("p/c.go", `//go:build ignore

package p

func Ignored() {}
`)
	write("p/p_test.go", `package p

func TestOnly() {}
`)
	got, isPkg, err := Dir(root, "p")
	if err != nil {
		t.Fatal(err)
	}
	if !isPkg {
		t.Fatal("p not seen as a package")
	}
	var names []string
	for _, m := range got {
		names = append(names, m.Kind+" "+m.Name)
	}
	want := []string{
		"package p",
		"func Bare",
		"type T",
		"field T.Field",
		"field T.A",
		"field T.B",
		"field T.Nested.Inner",
		"method T.M",
		"method T.N",
		"type G",
		"method G.M",
		"type I",
		"interface method I.Call",
		"type GA",
		"const Loose",
		"const Unnamed",
		"const NamedSuffix",
		"var V1",
		"func OtherFile",
	}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("missing docs found:\n  %s\nwant:\n  %s", strings.Join(names, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestDirSkipsMain(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "main.go"), []byte("package main\n\nfunc Exported() {}\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, isPkg, err := Dir(root, ".")
	if err != nil || isPkg || got != nil {
		t.Errorf("Dir on package main = %v, %v, %v; want nil, false, nil", got, isPkg, err)
	}
}
