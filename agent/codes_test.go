package agent_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/tools"
)

// The wire values are the contract; the constants are how a program spells them.
func TestCodesKeepTheirWireValues(t *testing.T) {
	t.Parallel()
	pinned := [][2]string{
		{agent.CodeProviderMissing, "config.provider_missing"},
		{agent.CodeStoreMissing, "config.store_missing"},
		{agent.CodeCancelled, "run.cancelled"},
		{agent.CodeConfigRefused, "checkpoint.config_refused"},
		{agent.CodeStale, "checkpoint.stale"},
		{agent.CodeDeniedByPerson, "permission.denied_by_user"},
		{agent.CodeEditedWriteUnsupported, "permission.edited_write_unsupported"},
		{agent.CodeSessionRecordFailed, "session.record_failed"},
		{permission.CodeDenied, "permission.denied"},
		{tools.CodePermissionDenied, "permission.denied"},
		{tools.CodePermissionFailed, "permission.hook_failed"},
	}
	for _, p := range pinned {
		if got, want := p[0], p[1]; got != want {
			t.Errorf("code %q, want %q", got, want)
		}
	}
}

// Every code the runner answers with is a declared constant: no code is spelled inline
// in a Code field or as the code argument of sema.Errorf or configError, where a
// typo would make a new, undocumented code.
func TestNoInlineCodes(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "codes.go" {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var lit ast.Expr
			switch n := n.(type) {
			case *ast.KeyValueExpr:
				if id, ok := n.Key.(*ast.Ident); ok && id.Name == "Code" {
					lit = n.Value
				}
			case *ast.CallExpr:
				if len(n.Args) > 0 && (isCall(n.Fun, "sema", "Errorf") || isCall(n.Fun, "", "configError") || isCall(n.Fun, "tools", "Fail")) {
					lit = n.Args[0]
				}
			}
			if b, ok := lit.(*ast.BasicLit); ok && b.Kind == token.STRING {
				t.Errorf("%s: inline code %s; declare it in codes.go (or use its owner's constant)", fset.Position(b.Pos()), b.Value)
			}
			return true
		})
	}
}

func isCall(fun ast.Expr, pkg, name string) bool {
	switch f := fun.(type) {
	case *ast.Ident:
		return pkg == "" && f.Name == name
	case *ast.SelectorExpr:
		x, ok := f.X.(*ast.Ident)
		return ok && x.Name == pkg && f.Sel.Name == name
	}
	return false
}
