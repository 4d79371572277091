package fence

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
)

// components splits a clean absolute path into its names ("/" has none).
func components(p string) []string {
	if p == "/" {
		return nil
	}
	return strings.Split(p[1:], "/")
}

func isClean(p string) bool { return filepath.IsAbs(p) && filepath.Clean(p) == p }

// underByComponents is the reference judgment: root's names are a prefix of p's.
func underByComponents(root, p string) bool {
	rc, pc := components(root), components(p)
	if len(pc) < len(rc) {
		return false
	}
	for i := range rc {
		if rc[i] != pc[i] {
			return false
		}
	}
	return true
}

// FuzzCanonicalizeContains resolves arbitrary spellings over a tree full of links. An
// answer is either a coded refusal, or a canonical path that lies under the root by
// components and is what the kernel says: filepath.EvalSymlinks of the path when it
// exists, and otherwise an existing canonical ancestor followed by names that do not
// exist.
func FuzzCanonicalizeContains(f *testing.F) {
	base, root := linkTree(f)
	tree(f, base, "root-evil/x", "root/deep/link1 -> ../linkdir", "root/deep/link2 -> link1/../out", "root/deep/e/f/")
	fen, err := New(context.Background(), Config{Env: env.NewHost(), Root: root})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		"a/b/file.txt", "linkdir/b", "chain1/b/file.txt", "../outside/secret", "out/secret", "nested/secret",
		"up/root/a", "up/outside", "dangling", "dangdir", "loop1", "self/x", "a/new/../x", "linkabs/../b",
		"deep/link2/secret", "deep/link1/../a", "a/b/file.txt/", "a//b/./file.txt", "/proc/self/root" + root + "/a",
		"/proc/self/root/etc", base + "/root-evil/x", root + "-evil", "a/b/../../../root/a", ".", "..", "",
	} {
		f.Add(s)
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, s string) {
		p, err := fen.Resolve(ctx, s, Write)
		if err != nil {
			switch sema.CodeOf(err) {
			case CodeNotInRoot, CodeUnresolvable, CodeDenied:
				return
			}
			t.Fatalf("Resolve(%q): uncoded error %v", s, err)
		}
		c := p.Canonical
		if !isClean(c) {
			t.Fatalf("Resolve(%q) = %q: not a clean absolute path", s, c)
		}
		if !underByComponents(root, c) {
			t.Fatalf("Resolve(%q) = %q: not under the root %q", s, c, root)
		}
		abs := s
		if !strings.HasPrefix(abs, "/") {
			abs = root + "/" + s
		}
		ev, everr := filepath.EvalSymlinks(abs)
		if p.Exists {
			if everr != nil || ev != c {
				t.Fatalf("Resolve(%q) = %q, but EvalSymlinks says %q, %v", s, c, ev, everr)
			}
			return
		}
		if !errors.Is(everr, fs.ErrNotExist) {
			t.Fatalf("Resolve(%q) = %q (missing), but EvalSymlinks says %q, %v", s, c, ev, everr)
		}
		// The existing part is canonical; the first name after it is missing.
		names := components(c)
		existing := "/"
		for i, n := range names {
			next := filepath.Join(existing, n)
			if _, err := os.Lstat(next); err != nil {
				if !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("Resolve(%q) = %q: Lstat(%q): %v", s, c, next, err)
				}
				break
			}
			if i == len(names)-1 {
				t.Fatalf("Resolve(%q) = %q reported missing, but it exists", s, c)
			}
			existing = next
		}
		if ev, err := filepath.EvalSymlinks(existing); err != nil || ev != existing {
			t.Fatalf("Resolve(%q) = %q: its existing part %q is not canonical (%q, %v)", s, c, existing, ev, err)
		}
	})
}

// FuzzContains checks Contains against a judgment by components, and that a sibling
// sharing the root's prefix is never inside.
func FuzzContains(f *testing.F) {
	for _, c := range [][2]string{
		{"/x/proj", "/x/proj"}, {"/x/proj", "/x/proj/a"}, {"/x/proj", "/x/proj-evil"}, {"/", "/a"},
		{"/x/proj", "/x/proj/../etc"}, {"/x/proj/", "/x/proj/a"}, {"/x//proj", "/x//proj/a"}, {"", ""},
		{"/a/b", "/a/bc"}, {"/x/proj", "/x/proj/."},
	} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, root, p string) {
		got := Contains(root, p)
		want := isClean(root) && isClean(p) && underByComponents(root, p)
		if got != want {
			t.Fatalf("Contains(%q, %q) = %v, want %v", root, p, got, want)
		}
		if got {
			if rel, err := filepath.Rel(root, p); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
				t.Fatalf("Contains(%q, %q), but Rel = %q, %v", root, p, rel, err)
			}
		}
		if isClean(root) && root != "/" && Contains(root, root+"-evil") {
			t.Fatalf("Contains(%q, %q): a prefix sibling is inside", root, root+"-evil")
		}
	})
}
