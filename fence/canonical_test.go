package fence

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
)

// linkTree is the layout most canonicalization tests share:
//
//	root/a/b/file.txt      a file two directories down
//	root/linkdir -> a      relative link to a directory
//	root/linkabs -> <abs>  absolute link to root/a/b
//	root/chain1 -> chain2 -> linkdir
//	root/out -> outside    a directory outside the root
//	root/outfile -> outside/secret
//	root/nested -> a/b/../../out       a link through a link to outside
//	root/up -> ..          the parent of the root
//	root/dangling -> nothere
//	root/dangdir -> a/nothere/x        missing in the middle of the target
//	root/loop1 -> loop2 -> loop1, root/self -> self
//	outside/secret
func linkTree(t testing.TB) (base, root string) {
	t.Helper()
	base = realTempDir(t)
	root = filepath.Join(base, "root")
	tree(t, base,
		"root/a/b/file.txt",
		"outside/secret",
		"root/linkdir -> a",
		"root/linkabs -> "+filepath.Join(root, "a/b"),
		"root/chain2 -> linkdir",
		"root/chain1 -> chain2",
		"root/out -> ../outside",
		"root/outfile -> "+filepath.Join(base, "outside/secret"),
		"root/nested -> a/b/../../out",
		"root/up -> ..",
		"root/dangling -> nothere",
		"root/dangdir -> a/nothere/x",
		"root/loop1 -> loop2",
		"root/loop2 -> loop1",
		"root/self -> self",
	)
	return base, root
}

func TestCanonicalize(t *testing.T) {
	t.Parallel()
	base, root := linkTree(t)
	j := func(p string) string { return root + "/" + p }
	tests := []struct {
		name   string
		in     string
		want   string
		exists bool
		err    error
	}{
		{"plain file", j("a/b/file.txt"), j("a/b/file.txt"), true, nil},
		{"root", "/", "/", true, nil},
		{"relative link", j("linkdir/b/file.txt"), j("a/b/file.txt"), true, nil},
		{"absolute link", j("linkabs/file.txt"), j("a/b/file.txt"), true, nil},
		{"chain of links", j("chain1/b"), j("a/b"), true, nil},
		{"dotdot after a link leaves the target", j("linkabs/../x"), j("a/x"), false, nil},
		{"dotdot after a link, existing", j("linkabs/../b/file.txt"), j("a/b/file.txt"), true, nil},
		{"link to outside dir", j("out/secret"), filepath.Join(base, "outside/secret"), true, nil},
		{"link to outside file", j("outfile"), filepath.Join(base, "outside/secret"), true, nil},
		{"nested link to outside", j("nested/secret"), filepath.Join(base, "outside/secret"), true, nil},
		{"link to parent", j("up/outside/secret"), filepath.Join(base, "outside/secret"), true, nil},
		{"dotdot chain", j("a/b/../../../outside"), filepath.Join(base, "outside"), true, nil},
		{"redundant slashes", root + "//a///b/", j("a/b"), true, nil},
		{"dot components", root + "/./a/./b/.", j("a/b"), true, nil},
		{"missing file", j("a/new.txt"), j("a/new.txt"), false, nil},
		{"missing dirs", j("a/new/deeper/x.txt"), j("a/new/deeper/x.txt"), false, nil},
		{"missing under a link", j("linkdir/new/x"), j("a/new/x"), false, nil},
		{"missing under an outside link", j("out/new"), filepath.Join(base, "outside/new"), false, nil},
		{"dotdot below missing", j("a/new/../x"), "", false, ErrDotDotMissing},
		{"dangling link", j("dangling"), "", false, ErrDanglingLink},
		{"dangling link with more path", j("dangling/x"), "", false, ErrDanglingLink},
		{"dangling in the middle of the target", j("dangdir"), "", false, ErrDanglingLink},
		{"loop", j("loop1"), "", false, ErrLinkLoop},
		{"self loop", j("self/x"), "", false, ErrLinkLoop},
		{"file as a directory", j("a/b/file.txt/x"), "", false, ErrNotDirectory},
		{"dotdot after a file", j("a/b/file.txt/.."), "", false, ErrNotDirectory},
		{"trailing slash after a file", j("a/b/file.txt") + "/", "", false, ErrNotDirectory},
		{"relative", "a/b", "", false, ErrNotAbsolute},
		{"empty", "", "", false, ErrNotAbsolute},
	}
	e := env.NewHost()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, exists, err := Canonicalize(context.Background(), e, tc.in)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Canonicalize(%q) = %q, %v, %v; want error %v", tc.in, got, exists, err, tc.err)
				}
				if got != "" {
					t.Errorf("an error came with the path %q", got)
				}
				return
			}
			if err != nil || got != tc.want || exists != tc.exists {
				t.Fatalf("Canonicalize(%q) = %q, %v, %v; want %q, %v", tc.in, got, exists, err, tc.want, tc.exists)
			}
			if exists {
				// The kernel's answer, through the standard library's own walk.
				if ev, err := filepath.EvalSymlinks(tc.in); err != nil || ev != got {
					t.Errorf("EvalSymlinks(%q) = %q, %v; Canonicalize said %q", tc.in, ev, err, got)
				}
			}
		})
	}
}

func TestCanonicalizeProcSelfRoot(t *testing.T) {
	t.Parallel()
	if _, err := os.Lstat("/proc/self/root"); err != nil {
		t.Skip("no /proc/self/root here")
	}
	_, root := linkTree(t)
	got, ok, err := Canonicalize(context.Background(), env.NewHost(), "/proc/self/root"+root+"/a/b/file.txt")
	if err != nil || !ok || got != filepath.Join(root, "a/b/file.txt") {
		t.Fatalf("through /proc/self/root: %q, %v, %v; want the file's own canonical path", got, ok, err)
	}
}

func TestCanonicalizeRefusesFaults(t *testing.T) {
	t.Parallel()
	_, root := linkTree(t)
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	tests := []struct {
		name string
		fail map[string]error
		ci   bool
		ctx  context.Context
		in   string
		want error
	}{
		{"unreadable ancestor", map[string]error{"lstat " + root + "/a": syscall.EACCES}, false, ctx, root + "/a/b/file.txt", fs.ErrPermission},
		{"unreadable ancestor of a missing file", map[string]error{"lstat " + root + "/a/b": syscall.EACCES}, false, ctx, root + "/a/b/new", fs.ErrPermission},
		{"unreadable link", map[string]error{"readlink " + root + "/linkdir": syscall.EACCES}, false, ctx, root + "/linkdir/b", fs.ErrPermission},
		{"I/O error", map[string]error{"lstat " + root + "/a/b/file.txt": syscall.EIO}, false, ctx, root + "/a/b/file.txt", syscall.EIO},
		{"unlistable directory on a case-insensitive env", map[string]error{"readdir " + root + "/a": syscall.EACCES}, true, ctx, root + "/a/b", fs.ErrPermission},
		{"cancelled", nil, false, cancelled, root + "/a", context.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := &hookEnv{ExecutionEnv: env.NewHost(), fail: tc.fail, ci: tc.ci}
			got, ok, err := Canonicalize(tc.ctx, e, tc.in)
			if !errors.Is(err, tc.want) || got != "" || ok {
				t.Fatalf("Canonicalize(%q) = %q, %v, %v; want error %v", tc.in, got, ok, err, tc.want)
			}
		})
	}
}

func TestCanonicalizeCaseInsensitive(t *testing.T) {
	t.Parallel()
	base := realTempDir(t)
	tree(t, base, "Proj/Src/Main.go", "amb/ab", "amb/AB", "Proj/Link -> Src")
	e := foldEnv{env.NewHost()}
	tests := []struct {
		in     string
		want   string
		exists bool
		err    error
	}{
		{base + "/proj/src/main.go", base + "/Proj/Src/Main.go", true, nil},
		{base + "/PROJ/SRC/MAIN.GO", base + "/Proj/Src/Main.go", true, nil},
		{base + "/proj/link/main.go", base + "/Proj/Src/Main.go", true, nil},
		{base + "/proj/src/New.go", base + "/Proj/Src/New.go", false, nil},
		{base + "/amb/ab", base + "/amb/ab", true, nil},
		{base + "/amb/aB", "", false, ErrSpelling},
	}
	for _, tc := range tests {
		got, exists, err := Canonicalize(context.Background(), e, tc.in)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("Canonicalize(%q) = %q, %v, %v; want error %v", tc.in, got, exists, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want || exists != tc.exists {
			t.Errorf("Canonicalize(%q) = %q, %v, %v; want %q, %v", tc.in, got, exists, err, tc.want, tc.exists)
		}
	}
}

// A dangling link is refused; once its target exists, the link resolves to the target
// and is judged there — it never lands where a projection guessed.
func TestCanonicalizeDanglingThenCreated(t *testing.T) {
	t.Parallel()
	base, root := linkTree(t)
	tree(t, base, "root/later -> ../outside/later")
	e := env.NewHost()
	f, err := New(context.Background(), Config{Env: e, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Canonicalize(context.Background(), e, root+"/later"); !errors.Is(err, ErrDanglingLink) {
		t.Fatalf("dangling link: %v, want ErrDanglingLink", err)
	}
	if _, err := f.Resolve(context.Background(), "later", Write); sema.CodeOf(err) != CodeUnresolvable {
		t.Fatalf("write through a dangling link: %v, want %s", err, CodeUnresolvable)
	}
	tree(t, base, "outside/later")
	got, ok, err := Canonicalize(context.Background(), e, root+"/later")
	if err != nil || !ok || got != filepath.Join(base, "outside/later") {
		t.Fatalf("after the target was created: %q, %v, %v", got, ok, err)
	}
	if _, err := f.Resolve(context.Background(), "later", Write); sema.CodeOf(err) != CodeNotInRoot {
		t.Fatalf("write through the link once its target exists: %v, want %s", err, CodeNotInRoot)
	}
}

func TestCanonicalizeMemEnvMatchesHost(t *testing.T) {
	t.Parallel()
	m := newMemEnv()
	m.dir("/r")
	m.dir("/r/a")
	m.file("/r/a/f")
	m.link("/r/l", "a")
	m.link("/r/d", "/r/none")
	for in, want := range map[string]string{"/r/l/f": "/r/a/f", "/r/a/f": "/r/a/f", "/r/l/../a": "/r/a"} {
		got, ok, err := Canonicalize(context.Background(), m, in)
		if err != nil || !ok || got != want {
			t.Errorf("Canonicalize(%q) = %q, %v, %v; want %q", in, got, ok, err, want)
		}
	}
	if _, _, err := Canonicalize(context.Background(), m, "/r/d"); !errors.Is(err, ErrDanglingLink) {
		t.Errorf("dangling link in memEnv: %v", err)
	}
}
