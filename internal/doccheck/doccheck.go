// Package doccheck finds exported identifiers that have no doc comment, so
// that a test can hold every public package of the module to the rule that
// `go doc` reads as a guide.
//
// It works on source alone (go/parser, no type checking), and it reads every
// non-test file of a directory whatever its build constraints, because the
// files for another operating system are part of the documentation a reader
// on that system sees. Files constrained with "//go:build ignore" are
// skipped: they are not part of any build.
//
// An identifier counts as documented when:
//   - a top-level function, method or type has a doc comment of its own, or
//     is the only spec of an ungrouped declaration that has one;
//   - a method's receiver is unexported: it is not listed at all, since
//     `go doc` does not show it;
//   - a struct field or interface method of an exported type carries a doc
//     comment above it or a line comment after it (fields of unexported
//     types and of anonymous structs inside unexported types are not listed, nor
//     are embedded fields, whose type carries its own documentation);
//   - a const or var has a comment of its own (above or trailing), or sits in
//     an ungrouped declaration with a doc comment, or sits in a group whose
//     doc comment names it. A group comment that does not name a member does
//     not document it: "The states of a run." says nothing about which state
//     is which.
//
// Every package must also have a package comment in at least one file.
package doccheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Missing is one exported identifier without documentation.
type Missing struct {
	// Dir is the package directory relative to the root given to Module,
	// with forward slashes; "." for the root package.
	Dir string
	// Pos is the file and line of the identifier, the file relative to the
	// root given to Module.
	Pos string
	// Kind says what the identifier is: "package", "func", "method", "type",
	// "field", "interface method", "const" or "var".
	Kind string
	// Name is the identifier as a reader would write it: "Func",
	// "Type.Method", "Type.Field", or for a package its import-path suffix.
	Name string
}

// String formats m as "pos: kind name lacks a doc comment", the form a test
// failure prints.
func (m Missing) String() string {
	return fmt.Sprintf("%s: %s %s lacks a doc comment", m.Pos, m.Kind, m.Name)
}

// Public reports whether the package directory rel (relative to the module
// root, forward slashes) is part of the module's public API: not under an
// internal, cmd, examples or test directory and not testdata or hidden.
// Package main is excluded separately by Module, since only the source says
// which package a directory holds.
func Public(rel string) bool {
	if rel == "." {
		return true
	}
	parts := strings.Split(rel, "/")
	switch parts[0] {
	case "cmd", "examples", "test":
		return false
	}
	for _, p := range parts {
		if p == "internal" || p == "testdata" || strings.HasPrefix(p, ".") || strings.HasPrefix(p, "_") {
			return false
		}
	}
	return true
}

// Module walks the module rooted at root and returns, for every public
// package directory (see Public) that is not package main, the identifiers
// that lack documentation, sorted by directory and position. The map holds
// an entry, possibly empty, for every public package found, so a caller can
// tell "complete" from "not scanned". It errs only when a directory cannot
// be read or a file does not parse.
func Module(root string) (map[string][]Missing, error) {
	out := map[string][]Missing{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if !Public(rel) {
			return filepath.SkipDir
		}
		if rel != "." {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // a nested module is not ours
			}
		}
		missing, isPkg, err := Dir(root, rel)
		if err != nil {
			return err
		}
		if isPkg {
			out[rel] = missing
		}
		return nil
	})
	return out, err
}

var ignoreTag = regexp.MustCompile(`(?m)^//go:build ignore\s*$`)

// Dir checks the one package in root/rel. isPkg is false when the directory
// holds no non-test Go file or holds package main; missing is then nil.
func Dir(root, rel string) (missing []Missing, isPkg bool, err error) {
	dir := filepath.Join(root, filepath.FromSlash(rel))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, false, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, false, err
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), src, parser.ParseComments)
		if err != nil {
			return nil, false, err
		}
		if ignoreTag.Match(headerOf(f, src, fset)) {
			continue
		}
		files = append(files, f)
	}
	if len(files) == 0 || files[0].Name.Name == "main" {
		return nil, false, nil
	}
	c := &checker{fset: fset, root: root, dir: rel}
	hasPkgDoc := false
	for _, f := range files {
		if f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "" {
			hasPkgDoc = true
		}
		c.file(f)
	}
	if !hasPkgDoc {
		c.missing = append(c.missing, Missing{Dir: rel, Pos: rel, Kind: "package", Name: rel})
	}
	sort.SliceStable(c.missing, func(i, j int) bool { return c.missing[i].Pos < c.missing[j].Pos })
	return c.missing, true, nil
}

// headerOf returns the source before the package clause, where build
// constraints live.
func headerOf(f *ast.File, src []byte, fset *token.FileSet) []byte {
	off := fset.Position(f.Package).Offset
	if off > len(src) {
		off = len(src)
	}
	return src[:off]
}

type checker struct {
	fset    *token.FileSet
	root    string
	dir     string
	missing []Missing
}

func (c *checker) report(pos token.Pos, kind, name string) {
	p := c.fset.Position(pos)
	file := p.Filename
	if r, err := filepath.Rel(c.root, file); err == nil {
		file = filepath.ToSlash(r)
	}
	c.missing = append(c.missing, Missing{Dir: c.dir, Pos: fmt.Sprintf("%s:%d", file, p.Line), Kind: kind, Name: name})
}

func documented(groups ...*ast.CommentGroup) bool {
	for _, g := range groups {
		if g != nil && strings.TrimSpace(g.Text()) != "" {
			return true
		}
	}
	return false
}

func (c *checker) file(f *ast.File) {
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			c.funcDecl(d)
		case *ast.GenDecl:
			c.genDecl(d)
		}
	}
}

func (c *checker) funcDecl(d *ast.FuncDecl) {
	if !d.Name.IsExported() {
		return
	}
	if d.Recv == nil {
		if !documented(d.Doc) {
			c.report(d.Name.Pos(), "func", d.Name.Name)
		}
		return
	}
	recv := receiverName(d.Recv)
	if recv == "" || !ast.IsExported(recv) {
		return
	}
	if !documented(d.Doc) {
		c.report(d.Name.Pos(), "method", recv+"."+d.Name.Name)
	}
}

// receiverName returns the base type name of a method receiver, looking
// through pointers and type parameters.
func receiverName(fl *ast.FieldList) string {
	if fl == nil || len(fl.List) == 0 {
		return ""
	}
	t := fl.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.ParenExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

func (c *checker) genDecl(d *ast.GenDecl) {
	grouped := d.Lparen.IsValid()
	for _, spec := range d.Specs {
		switch s := spec.(type) {
		case *ast.TypeSpec:
			if !s.Name.IsExported() {
				continue
			}
			if !documented(s.Doc) && (grouped || !documented(d.Doc)) {
				c.report(s.Name.Pos(), "type", s.Name.Name)
			}
			c.typeBody(s.Name.Name, s.Type)
		case *ast.ValueSpec:
			kind := "var"
			if d.Tok == token.CONST {
				kind = "const"
			}
			for _, n := range s.Names {
				if !n.IsExported() {
					continue
				}
				switch {
				case documented(s.Doc, s.Comment):
				case !grouped && documented(d.Doc):
				case grouped && d.Doc != nil && names(d.Doc.Text(), n.Name):
				default:
					c.report(n.Pos(), kind, n.Name)
				}
			}
		}
	}
}

// names reports whether text mentions ident as a whole word.
func names(text, ident string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], ident)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(ident)
		before := j == 0 || !isIdentByte(text[j-1])
		after := end == len(text) || !isIdentByte(text[end])
		if before && after {
			return true
		}
		i = j + 1
	}
}

func isIdentByte(b byte) bool {
	return b == '_' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}

// typeBody checks the fields of an exported struct type and the methods of
// an exported interface type, descending into anonymous struct types that a
// field declares in place.
func (c *checker) typeBody(owner string, t ast.Expr) {
	switch x := t.(type) {
	case *ast.StructType:
		for _, f := range x.Fields.List {
			if len(f.Names) == 0 {
				// An embedded field promotes the embedded type's own
				// documented fields and methods; its name is the type's.
				continue
			}
			for _, n := range f.Names {
				if !n.IsExported() {
					continue
				}
				if !documented(f.Doc, f.Comment) {
					c.report(n.Pos(), "field", owner+"."+n.Name)
				}
				c.typeBody(owner+"."+n.Name, elem(f.Type))
			}
		}
	case *ast.InterfaceType:
		for _, m := range x.Methods.List {
			for _, n := range m.Names {
				if n.IsExported() && !documented(m.Doc, m.Comment) {
					c.report(n.Pos(), "interface method", owner+"."+n.Name)
				}
			}
		}
	}
}

// elem looks through pointers, slices, arrays and map values to an anonymous
// struct a field declares in place.
func elem(t ast.Expr) ast.Expr {
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.ArrayType:
			t = x.Elt
		case *ast.MapType:
			t = x.Value
		default:
			return t
		}
	}
}
