package agent_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docPackages are the packages whose names the docs' Go blocks are checked against,
// by the name a program imports them under, with their directories from here.
var docPackages = map[string]string{
	"sema": "..", "agent": ".", "session": "../session", "history": "../history",
	"hooks": "../hooks", "tools": "../tools", "permission": "../permission",
	"statedir": "../statedir", "fence": "../fence", "mcp": "../mcp", "model": "../model",
	"client": "../client", "sandbox": "../sandbox", "settings": "../settings",
	"files": "../tools/files", "scripted": "../model/scripted", "anthropic": "../model/anthropic",
}

// Every ```go block of the README and of the pages under docs/ names what the packages
// declare: every qualified name (agent.ProceedUnprotected) is an exported declaration of
// its package, and every field a composite literal sets (agent.Policy{FileHistoryPolicy: …})
// is a field of that struct. A rename in the code without the docs fails here.
func TestDocsGoBlocksNameTheAPI(t *testing.T) {
	t.Parallel()
	pkgs := map[string]*declared{}
	for name, dir := range docPackages {
		pkgs[name] = declarations(t, dir)
	}
	var checked []string
	for _, doc := range docFiles(t) {
		for i, block := range goBlocks(doc.text) {
			where := fmt.Sprintf("%s, Go block %d", doc.name, i+1)
			f, err := parseGoBlock(block)
			if err != nil {
				t.Errorf("%s does not parse as Go statements or declarations: %v\n%s", where, err, block)
				continue
			}
			checked = append(checked, checkNames(t, where, f, pkgs)...)
		}
	}
	// The file-history snippet is about these; docs that dropped them check less than they did.
	for _, want := range []string{"agent.Policy.FileHistoryPolicy", "agent.ProceedUnprotected", "agent.Deps.FileHistoryCapture", "agent.TaskSpec.FileHistory"} {
		if !strings.Contains(strings.Join(checked, " "), want) {
			t.Errorf("no Go block of the docs shows %s any more; checked %v", want, checked)
		}
	}
}

// A block naming something a package does not declare fails the check: the test above
// would catch a rename.
func TestDocsGoBlockCheckCatchesAStaleName(t *testing.T) {
	t.Parallel()
	pkgs := map[string]*declared{"agent": declarations(t, ".")}
	f, err := parseGoBlock("runner := agent.New(agent.Deps{Provider: p, NoSuchField: 1})\nagent.NoSuchFunc()\n_ = []agent.Answer{{NoSuchAnswerField: true}}")
	if err != nil {
		t.Fatal(err)
	}
	var stale []string
	checkNamesInto(f, pkgs, func(msg string) { stale = append(stale, msg) })
	if len(stale) != 3 {
		t.Fatalf("stale names reported: %q, want the two fields and the function", stale)
	}
}

// doc is one Markdown file of the docs.
type doc struct{ name, text string }

// checkLiteral checks the fields a literal of the struct typ names sets, when typ is a
// known package's, and returns those it checked.
func checkLiteral(typ *ast.SelectorExpr, lit *ast.CompositeLit, pkgs map[string]*declared, stale func(string)) []string {
	pkg, name, ok := qualified(typ)
	if !ok || pkgs[pkg] == nil {
		return nil
	}
	fields, isStruct := pkgs[pkg].fields[name]
	if !isStruct {
		stale(fmt.Sprintf("writes a %s.%s literal, which is not a struct of package %s", pkg, name, pkg))
		return nil
	}
	var checked []string
	for _, e := range lit.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		if key, ok := kv.Key.(*ast.Ident); ok {
			checked = append(checked, pkg+"."+name+"."+key.Name)
			if !fields[key.Name] {
				stale(fmt.Sprintf("sets %s.%s.%s, which is not a field", pkg, name, key.Name))
			}
		}
	}
	return checked
}

// docFiles reads the README and every page under docs/.
func docFiles(t *testing.T) []doc {
	t.Helper()
	names, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 10 {
		t.Fatalf("found %d pages under docs/: %v", len(names), names)
	}
	var docs []doc
	for _, name := range append([]string{filepath.Join("..", "README.md")}, names...) {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, doc{strings.TrimPrefix(name, "../"), string(b)})
	}
	return docs
}

// goBlocks returns the ```go blocks of the Markdown, with the indentation of each fence
// taken off its lines.
func goBlocks(md string) []string {
	block := regexp.MustCompile("(?ms)^([ \t]*)```go\n(.*?)^[ \t]*```")
	var blocks []string
	for _, m := range block.FindAllStringSubmatch(md, -1) {
		var lines []string
		for _, line := range strings.Split(m[2], "\n") {
			lines = append(lines, strings.TrimPrefix(line, m[1]))
		}
		blocks = append(blocks, strings.Join(lines, "\n"))
	}
	return blocks
}

// parseGoBlock parses a block as the body of a function (a snippet) or, failing that, as
// the declarations of a file (a whole func main).
func parseGoBlock(block string) (*ast.File, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "block.go", "package doc\n\nfunc _() {\n"+block+"\n}\n", 0)
	if err == nil {
		return f, nil
	}
	if f, fileErr := parser.ParseFile(fset, "block.go", "package doc\n\n"+block+"\n", 0); fileErr == nil {
		return f, nil
	}
	return nil, err
}

// checkNames reports, as test errors, what checkNamesInto finds stale, and returns what it
// checked.
func checkNames(t *testing.T, where string, f *ast.File, pkgs map[string]*declared) []string {
	t.Helper()
	return checkNamesInto(f, pkgs, func(msg string) { t.Errorf("%s: %s", where, msg) })
}

// checkNamesInto walks a parsed block: each qualified name of a known package must be
// declared by it, and each field a composite literal of its struct sets must be a field.
// It returns the names and fields it checked.
func checkNamesInto(f *ast.File, pkgs map[string]*declared, stale func(string)) []string {
	var checked []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if pkg, name, ok := qualified(n); ok && pkgs[pkg] != nil {
				checked = append(checked, pkg+"."+name)
				if !pkgs[pkg].names[name] {
					stale(fmt.Sprintf("names %s.%s, which package %s does not declare", pkg, name, pkg))
				}
			}
		case *ast.CompositeLit:
			if sel, ok := n.Type.(*ast.SelectorExpr); ok {
				checked = append(checked, checkLiteral(sel, n, pkgs, stale)...)
			}
			// []pkg.T{{…}}: the elements' type is elided, and still pkg.T.
			if arr, ok := n.Type.(*ast.ArrayType); ok {
				if sel, ok := arr.Elt.(*ast.SelectorExpr); ok {
					for _, e := range n.Elts {
						if lit, ok := e.(*ast.CompositeLit); ok && lit.Type == nil {
							checked = append(checked, checkLiteral(sel, lit, pkgs, stale)...)
						}
					}
				}
			}
		}
		return true
	})
	return checked
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
								if len(fl.Names) == 0 {
									fields[embeddedName(fl.Type)] = true
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

// embeddedName is the field name an embedded type gives its struct (T, *T, pkg.T).
func embeddedName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return embeddedName(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.Ident:
		return e.Name
	}
	return ""
}
