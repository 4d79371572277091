package agent_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README's file-history snippet names what the packages declare: every qualified
// name (agent.ProceedUnprotected) is an exported declaration of its package, and every
// field a composite literal sets (agent.Policy{FileHistoryPolicy: …}) is a field of that
// struct. A rename in the code without the README fails here.
func TestREADMEFileHistorySnippetNamesTheAPI(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	snippet := goBlockNaming(t, string(readme), "FileHistoryPolicy")
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "README.md", "package readme\n\nfunc _() {\n"+snippet+"\n}\n", 0)
	if err != nil {
		t.Fatalf("the README's snippet does not parse as Go statements: %v\n%s", err, snippet)
	}
	pkgs := map[string]*declared{}
	for _, name := range []string{"agent", "session", "history"} {
		dir := "."
		if name != "agent" {
			dir = filepath.Join("..", name)
		}
		pkgs[name] = declarations(t, dir)
	}
	var checked []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if pkg, name, ok := qualified(n); ok && pkgs[pkg] != nil {
				checked = append(checked, pkg+"."+name)
				if !pkgs[pkg].names[name] {
					t.Errorf("the README names %s.%s, which package %s does not declare", pkg, name, pkg)
				}
			}
		case *ast.CompositeLit:
			sel, ok := n.Type.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pkg, typ, ok := qualified(sel)
			if !ok || pkgs[pkg] == nil {
				return true
			}
			fields, isStruct := pkgs[pkg].fields[typ]
			if !isStruct {
				t.Errorf("the README writes a %s.%s literal, which is not a struct of package %s", pkg, typ, pkg)
				return true
			}
			for _, e := range n.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				if key, ok := kv.Key.(*ast.Ident); ok {
					checked = append(checked, pkg+"."+typ+"."+key.Name)
					if !fields[key.Name] {
						t.Errorf("the README sets %s.%s.%s, which is not a field", pkg, typ, key.Name)
					}
				}
			}
		}
		return true
	})
	// The snippet is about these; a README that dropped them checks nothing.
	for _, want := range []string{"agent.Policy.FileHistoryPolicy", "agent.ProceedUnprotected", "agent.Deps.FileHistoryCapture", "agent.TaskSpec.FileHistory"} {
		if !strings.Contains(strings.Join(checked, " "), want) {
			t.Errorf("the README's snippet no longer shows %s; checked %v", want, checked)
		}
	}
}

// goBlockNaming returns the first ```go block of the Markdown that contains word, with the
// indentation of its fence taken off every line.
func goBlockNaming(t *testing.T, md, word string) string {
	t.Helper()
	block := regexp.MustCompile("(?ms)^([ \t]*)```go\n(.*?)^[ \t]*```")
	for _, m := range block.FindAllStringSubmatch(md, -1) {
		if !strings.Contains(m[2], word) {
			continue
		}
		var lines []string
		for _, line := range strings.Split(m[2], "\n") {
			lines = append(lines, strings.TrimPrefix(line, m[1]))
		}
		return strings.Join(lines, "\n")
	}
	t.Fatalf("no ```go block of the README names %s", word)
	return ""
}

// declared is what one package declares: its exported top-level names, and the field
// names of its struct types.
type declared struct {
	names  map[string]bool
	fields map[string]map[string]bool
}

func declarations(t *testing.T, dir string) *declared {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	d := &declared{names: map[string]bool{}, fields: map[string]map[string]bool{}}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				if decl.Recv == nil {
					d.names[decl.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					switch spec := spec.(type) {
					case *ast.TypeSpec:
						d.names[spec.Name.Name] = true
						if st, ok := spec.Type.(*ast.StructType); ok {
							fields := map[string]bool{}
							for _, fl := range st.Fields.List {
								for _, n := range fl.Names {
									fields[n.Name] = true
								}
							}
							d.fields[spec.Name.Name] = fields
						}
					case *ast.ValueSpec:
						for _, n := range spec.Names {
							d.names[n.Name] = true
						}
					}
				}
			}
		}
	}
	if len(d.names) == 0 {
		t.Fatalf("no declarations found in %s", dir)
	}
	return d
}

// qualified splits pkg.Name.
func qualified(sel *ast.SelectorExpr) (pkg, name string, ok bool) {
	x, ok := sel.X.(*ast.Ident)
	if !ok {
		return "", "", false
	}
	return x.Name, sel.Sel.Name, true
}
