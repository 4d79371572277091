package files

import (
	"strings"
	"testing"
)

// TestGitignoreInTree checks the walks honour nested .gitignore files, .git/info/exclude
// and the .gitignore files above a searched subdirectory, and never enter .git.
func TestGitignoreInTree(t *testing.T) {
	t.Parallel()
	f := newReadFix(t)
	f.put(map[string]string{
		".gitignore":             "*.log\nbuild/\n/only-top.txt\n",
		".git/info/exclude":      "excluded.go\n",
		".git/config.go":         "package git\n",
		"a.go":                   "package a\n",
		"a.log":                  "log\n",
		"excluded.go":            "package x\n",
		"only-top.txt":           "x\n",
		"build/out.go":           "package out\n",
		".hidden/h.go":           "package h\n",
		"sub/.gitignore":         "!keep.log\n*.tmp\n",
		"sub/keep.log":           "kept\n",
		"sub/drop.log":           "dropped\n",
		"sub/x.tmp":              "tmp\n",
		"sub/only-top.txt":       "not anchored here\n",
		"sub/deeper/y.go":        "package y\n",
		"sub/deeper/.gitignore":  "y.go\n",
		"sub/deeper/z.go":        "package z\n",
		"sub/build/in-build.txt": "x\n",
	})
	got := f.rel(f.ok("Glob", map[string]any{"pattern": "**/*"}))
	want := []string{
		"<root>/.gitignore", "<root>/.hidden/h.go", "<root>/a.go", "<root>/sub/.gitignore",
		"<root>/sub/deeper/.gitignore", "<root>/sub/deeper/z.go", "<root>/sub/keep.log", "<root>/sub/only-top.txt",
	}
	assertSameLines(t, got, want)

	// Searching a subdirectory still honours the root's .gitignore.
	got = f.rel(f.ok("Glob", map[string]any{"pattern": "**/*", "path": "sub"}))
	want = []string{"<root>/sub/.gitignore", "<root>/sub/deeper/.gitignore", "<root>/sub/deeper/z.go", "<root>/sub/keep.log", "<root>/sub/only-top.txt"}
	assertSameLines(t, got, want)

	// Grep skips the same files.
	got = f.rel(f.ok("Grep", map[string]any{"pattern": "package|log|kept|tmp|x"}))
	if strings.Contains(got, "build") || strings.Contains(got, "excluded") || strings.Contains(got, ".git/") || strings.Contains(got, "drop.log") || strings.Contains(got, "y.go") {
		t.Errorf("Grep searched an ignored file:\n%s", got)
	}
	for _, p := range []string{"<root>/a.go", "<root>/.hidden/h.go", "<root>/sub/keep.log", "<root>/sub/deeper/z.go"} {
		if !strings.Contains(got, p) {
			t.Errorf("Grep did not report %s:\n%s", p, got)
		}
	}
}

// assertSameLines compares the lines of got with want, ignoring order.
func assertSameLines(t *testing.T, got string, want []string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(got), "\n")
	seen := map[string]bool{}
	for _, l := range lines {
		seen[l] = true
	}
	for _, w := range want {
		if !seen[w] {
			t.Errorf("missing %s in:\n%s", w, got)
		}
		delete(seen, w)
	}
	for l := range seen {
		t.Errorf("unexpected line %q in:\n%s", l, got)
	}
}
