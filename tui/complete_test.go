package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// completionTree makes a root with files, an ignored directory, a protected file and a
// link out of the root, and a second root (--add-dir) beside it.
func completionTree(t *testing.T) (root, extra string) {
	t.Helper()
	base := t.TempDir()
	root, extra, outside := filepath.Join(base, "proj"), filepath.Join(base, "extra"), filepath.Join(base, "outside")
	for _, f := range []string{
		"proj/main.go", "proj/cmd/mainline/run.go", "proj/build/main.gen.go", "proj/.bashrc",
		"proj/.git/config", "proj/docs/manual.md", "extra/marker.txt", "outside/main_secret.go",
	} {
		p := filepath.Join(base, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("x"), 0o644)
	}
	os.WriteFile(filepath.Join(root, ".gitignore"), []byte("build/\n"), 0o644)
	if err := os.Symlink(filepath.Join(outside, "main_secret.go"), filepath.Join(root, "main_link.go")); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	os.Symlink(filepath.Join(root, "main.go"), filepath.Join(root, "main_alias.go"))
	return root, extra
}

func texts(items []pathItem) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.text)
	}
	return out
}

// TestWalkRootsLeavesOut: the walk lists the roots' paths and leaves out .git, what
// .gitignore excludes, protected files and links that leave the roots.
func TestWalkRootsLeavesOut(t *testing.T) {
	root, extra := completionTree(t)
	got := strings.Join(texts(walkRoots([]string{root, extra}, pathLimit)), " ") + " "
	for _, want := range []string{"main.go", "cmd/", "cmd/mainline/run.go", "docs/manual.md", "main_alias.go", filepath.Join(extra, "marker.txt")} {
		if !strings.Contains(" "+got+" ", " "+want+" ") {
			t.Errorf("%s is not offered: %s", want, got)
		}
	}
	for _, bad := range []string{"build", ".bashrc", ".git/", ".git ", "main_link.go", "main_secret", "outside"} {
		if strings.Contains(got, bad) {
			t.Errorf("%s is offered: %s", bad, got)
		}
	}
	if n := len(walkRoots([]string{root}, 3)); n != 3 {
		t.Errorf("a walk bounded at 3 listed %d", n)
	}
}

// TestCompletePath: typing @ and part of a name opens the list, narrowed as one types,
// a name's start ranked first; Tab inserts the chosen path; Esc closes the list.
func TestCompletePath(t *testing.T) {
	root, extra := completionTree(t)
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		h := newHarness(t, Options{Backend: &fakeBackend{}, Roots: []string{root, extra}}, size[0], size[1])
		h.typeText("look at @mai", false)
		h.until("the walk", func() bool { return h.m.comp != nil && len(h.m.comp.items) > 0 })
		if got := texts(h.m.comp.items); got[0] != "main.go" || strings.Contains(strings.Join(got, " "), "secret") {
			t.Fatalf("@mai offers %q, want main.go first and nothing outside the roots", got)
		}
		h.golden("complete")
		h.key(tea.KeyDown, 0)
		h.key(tea.KeyUp, 0)
		h.key(tea.KeyTab, 0)
		if v := h.m.input.Value(); v != "look at @main.go " || h.m.comp != nil {
			t.Fatalf("Tab: input %q, list open %v", v, h.m.comp != nil)
		}
		h.typeText("and @doc", false)
		h.key(tea.KeyEnter, 0) // Enter takes the path, not the prompt
		h.typeText("man", false)
		if got := texts(h.m.comp.items); len(got) != 1 || got[0] != "docs/manual.md" {
			t.Fatalf("@docs/man offers %q", got)
		}
		h.key(tea.KeyEscape, 0)
		h.typeText("u", false)
		if h.m.comp != nil {
			t.Errorf("after Esc the list should stay closed while the word goes on")
		}
		if v := h.m.input.Value(); v != "look at @main.go and @docs/manu" {
			t.Errorf("input %q", v)
		}
	}
}

// TestNoRootsNoCompletion: without roots @ is plain text.
func TestNoRootsNoCompletion(t *testing.T) {
	h := newHarness(t, Options{Backend: &fakeBackend{}}, 80, 24)
	h.typeText("mail me @home", false)
	if h.m.comp != nil || h.m.walking {
		t.Errorf("@ opened a list without roots")
	}
}
