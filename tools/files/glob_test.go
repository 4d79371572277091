package files

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sema-agent/sema/tools"
)

func TestGlob(t *testing.T) {
	t.Parallel()
	f := newReadFix(t)
	files := []string{"a.go", "b.txt", "src/x.go", "src/deep/y.go", "src/deep/z.ts", ".hidden/h.go", "node_modules/m.go", "docs/readme.md"}
	for i, p := range files {
		f.put(map[string]string{p: "x\n"})
		f.age(p, i) // files earlier in the list are newer
	}
	f.put(map[string]string{".gitignore": "node_modules/\n", ".git/HEAD.go": "x\n"})
	f.age(".gitignore", 100)
	cases := []struct {
		name  string
		input map[string]any
		want  []string // in order; nil means "No files found"
	}{
		{"recursive", map[string]any{"pattern": "**/*.go"}, []string{"a.go", "src/x.go", "src/deep/y.go", ".hidden/h.go"}},
		{"top level only", map[string]any{"pattern": "*.go"}, []string{"a.go"}},
		{"static prefix", map[string]any{"pattern": "src/**/*.go"}, []string{"src/x.go", "src/deep/y.go"}},
		{"one level", map[string]any{"pattern": "src/*.go"}, []string{"src/x.go"}},
		{"braces", map[string]any{"pattern": "**/*.{ts,md}"}, []string{"src/deep/z.ts", "docs/readme.md"}},
		{"character class", map[string]any{"pattern": "**/[xy].go"}, []string{"src/x.go", "src/deep/y.go"}},
		{"path", map[string]any{"pattern": "*.go", "path": "src"}, []string{"src/x.go"}},
		{"absolute path", map[string]any{"pattern": "**/*.ts", "path": "<root>/src"}, []string{"src/deep/z.ts"}},
		{"absolute pattern", map[string]any{"pattern": "<root>/src/**/*.go"}, []string{"src/x.go", "src/deep/y.go"}},
		{"dot slash", map[string]any{"pattern": "./src/*.go"}, []string{"src/x.go"}},
		{"everything", map[string]any{"pattern": "**"}, []string{"a.go", "b.txt", "src/x.go", "src/deep/y.go", "src/deep/z.ts", ".hidden/h.go", "docs/readme.md", ".gitignore"}},
		{"no match", map[string]any{"pattern": "**/*.rs"}, nil},
		{"missing static prefix", map[string]any{"pattern": "nope/**/*.go"}, nil},
		{"explicit ignored directory", map[string]any{"pattern": "*.go", "path": "node_modules"}, []string{"node_modules/m.go"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := map[string]any{}
			for k, v := range c.input {
				in[k] = strings.ReplaceAll(v.(string), "<root>", f.root)
			}
			got := f.ok("Glob", in)
			want := "No files found"
			if c.want != nil {
				var paths []string
				for _, p := range c.want {
					paths = append(paths, f.path(p))
				}
				want = strings.Join(paths, "\n")
			}
			if got != want {
				t.Errorf("Glob(%v):\ngot  %s\nwant %s", c.input, f.rel(got), f.rel(want))
			}
		})
	}
}

func TestGlobTruncates(t *testing.T) {
	t.Parallel()
	f := newReadFix(t)
	for i := range 150 {
		p := fmt.Sprintf("d/f%03d.txt", i)
		f.put(map[string]string{p: "x"})
		f.age(p, i)
	}
	got := f.ok("Glob", map[string]any{"pattern": "**/*.txt"})
	lines := strings.Split(got, "\n")
	if len(lines) != GlobMaxResults+1 {
		t.Fatalf("%d lines, want %d paths and a note", len(lines), GlobMaxResults)
	}
	if lines[0] != f.path("d/f000.txt") || lines[99] != f.path("d/f099.txt") {
		t.Errorf("not the newest first: %s ... %s", lines[0], lines[99])
	}
	if !strings.Contains(lines[100], "truncated") || !strings.Contains(lines[100], "100 of 150") {
		t.Errorf("truncation note: %q", lines[100])
	}
}

func TestGlobErrors(t *testing.T) {
	t.Parallel()
	f := newReadFix(t)
	f.put(map[string]string{"a.txt": "x"})
	cases := []struct {
		input map[string]any
		code  string
	}{
		{map[string]any{"pattern": ""}, tools.CodeInputInvalid},
		{map[string]any{"pattern": "[a"}, CodePatternInvalid},
		{map[string]any{"pattern": "{a,b"}, CodePatternInvalid},
		{map[string]any{"pattern": "*", "path": "a.txt"}, CodeNotDirectory},
		{map[string]any{"pattern": "*", "path": "missing"}, CodeFileNotFound},
		{map[string]any{"pattern": "*", "paths": "x"}, tools.CodeInputInvalid},
	}
	for _, c := range cases {
		f.fails("Glob", c.input, c.code)
	}
}
