package files

import (
	"fmt"
	"os"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/sema-agent/sema/tools"
)

func TestLS(t *testing.T) {
	t.Parallel()
	f := newReadFix(t)
	f.put(map[string]string{
		"a.go":                "x",
		"b.log":               "x",
		"src/x.go":            "x",
		"src/deep/y.go":       "x",
		"src-old/z.go":        "x",
		".git/HEAD":           "x",
		".hidden":             "x",
		"node_modules/m/m.js": "x",
	})
	f.symlink(f.path("src"), "link-to-src")
	if err := os.MkdirAll(f.path("empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		input map[string]any
		want  string
	}{
		{"the task root", nil, `- <root>/
  - .hidden
  - a.go
  - b.log
  - empty/
  - link-to-src (symlink, not followed)
  - node_modules/
    - m/
      - m.js
  - src/
    - deep/
      - y.go
    - x.go
  - src-old/
    - z.go`},
		{"ignore by name and glob", map[string]any{"ignore": []string{"node_modules", "*.log", "src/deep"}}, `- <root>/
  - .hidden
  - a.go
  - empty/
  - link-to-src (symlink, not followed)
  - src/
    - x.go
  - src-old/
    - z.go`},
		{"a subdirectory", map[string]any{"path": "src"}, `- <root>/src/
  - deep/
    - y.go
  - x.go`},
		{"an empty directory", map[string]any{"path": "empty"}, "- <root>/empty/\n  (empty directory)"},
		{"through a link inside the root", map[string]any{"path": "link-to-src"}, `- <root>/src/
  - deep/
    - y.go
  - x.go`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := map[string]any{}
			for k, v := range c.input {
				in[k] = v
			}
			got := f.rel(f.ok("LS", in))
			if diff := gocmp.Diff(c.want, got); diff != "" {
				t.Errorf("LS(%v) (-want +got):\n%s", c.input, diff)
			}
		})
	}
}

func TestLSCapsBreadthFirst(t *testing.T) {
	t.Parallel()
	f := newReadFix(t)
	files := map[string]string{"top.txt": "x"}
	for i := range 1100 {
		files[fmt.Sprintf("a/deep/f%04d", i)] = "x"
	}
	f.put(files)
	got := f.ok("LS", map[string]any{})
	if !strings.HasPrefix(got, "There are more than 1000 entries") {
		t.Errorf("no truncation note: %q", got[:80])
	}
	if !strings.Contains(got, "\n  - top.txt") || !strings.Contains(got, "\n  - a/\n    - deep/\n") {
		t.Error("entries near the top were crowded out by a deep directory")
	}
	if n := strings.Count(got, "\n      - f"); n != 1000-3 {
		t.Errorf("%d deep entries listed, want %d", n, 1000-3)
	}
}

func TestLSErrors(t *testing.T) {
	t.Parallel()
	f := newReadFix(t)
	f.put(map[string]string{"a.txt": "x"})
	cases := []struct {
		input map[string]any
		code  string
	}{
		{map[string]any{"path": "a.txt"}, CodeNotDirectory},
		{map[string]any{"path": "missing"}, CodeFileNotFound},
		{map[string]any{"ignore": []string{"[a"}}, CodePatternInvalid},
		{map[string]any{"ignore": "a"}, tools.CodeInputInvalid},
	}
	for _, c := range cases {
		f.fails("LS", c.input, c.code)
	}
}
