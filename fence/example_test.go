package fence_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
)

// A run builds one Fence over its task root and judges every path its file tools name.
// Under the roots face (the default) a write inside the root is admitted, a write
// outside it or a ".." that climbs out of it is refused, a write to a protected path
// is admitted but marked for the permission gate to ask a person, and the state
// directory is refused under every face.
func ExampleFence_Resolve() {
	ctx := context.Background()
	base, err := os.MkdirTemp("", "sema-fence-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(base)
	root := filepath.Join(base, "repo")
	for _, dir := range []string{"src", ".git"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			fmt.Println(err)
			return
		}
	}

	f, err := fence.New(ctx, fence.Config{
		Env:      env.NewHost(),
		Root:     root,
		StateDir: filepath.Join(root, ".state"),
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	for _, spelled := range []string{
		"src/main.go",                        // relative to the task root
		filepath.Join(base, "outside.txt"),   // beside the root, not in it
		"src/../../outside.txt",              // a ".." escape
		"gone/../../outside.txt",             // ".." below a missing directory
		filepath.Join(root+"-evil", "x.txt"), // shares the root's prefix, not its components
		".git/hooks/pre-commit",              // protected
		".state/sessions.db",                 // the state directory
	} {
		p, err := f.Resolve(ctx, spelled, fence.Write)
		switch {
		case err != nil:
			fmt.Printf("%-24s refused: %s\n", short(base, spelled), sema.CodeOf(err))
		case p.Protected:
			fmt.Printf("%-24s admitted, protected: a person is asked\n", short(base, spelled))
		default:
			fmt.Printf("%-24s admitted as %s\n", short(base, spelled), short(base, p.Canonical))
		}
	}
	// Output:
	// src/main.go              admitted as $TMP/repo/src/main.go
	// $TMP/outside.txt         refused: fs.path_not_in_root
	// src/../../outside.txt    refused: fs.path_not_in_root
	// gone/../../outside.txt   refused: fs.path_unresolvable
	// $TMP/repo-evil/x.txt     refused: fs.path_not_in_root
	// .git/hooks/pre-commit    admitted, protected: a person is asked
	// .state/sessions.db       refused: fs.path_denied
}

// short spells a path under the example's temporary directory as $TMP/…, so the
// output does not depend on where the directory was made.
func short(base, p string) string {
	if canonical, err := filepath.EvalSymlinks(base); err == nil && strings.HasPrefix(p, canonical) {
		return "$TMP" + strings.TrimPrefix(p, canonical)
	}
	return strings.Replace(p, base, "$TMP", 1)
}

// Containment compares whole components of canonical paths, never string prefixes.
func ExampleContains() {
	fmt.Println(fence.Contains("/x/proj", "/x/proj/src/a.go"))
	fmt.Println(fence.Contains("/x/proj", "/x/proj"))
	fmt.Println(fence.Contains("/x/proj", "/x/proj-evil/a.go"))
	fmt.Println(fence.Contains("/x/proj", "/x/proj/../etc")) // not canonical-shaped
	// Output:
	// true
	// true
	// false
	// false
}

// Canonicalize resolves links with the kernel's semantics, through the env the tools
// use. A link inside the root that points outside it canonicalizes outside, which is
// where the fence judges it; a dangling link is refused rather than guessed.
func ExampleCanonicalize() {
	ctx := context.Background()
	base, err := os.MkdirTemp("", "sema-canonical-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(base)
	root := filepath.Join(base, "repo")
	_ = os.MkdirAll(root, 0o755)
	_ = os.Mkdir(filepath.Join(base, "elsewhere"), 0o755)
	_ = os.Symlink(filepath.Join(base, "elsewhere"), filepath.Join(root, "link"))
	_ = os.Symlink(filepath.Join(base, "missing"), filepath.Join(root, "dangling"))

	host := env.NewHost()
	c, exists, err := fence.Canonicalize(ctx, host, filepath.Join(root, "link", "new.txt"))
	fmt.Println(short(base, c), exists, err)

	_, _, err = fence.Canonicalize(ctx, host, filepath.Join(root, "dangling", "x"))
	fmt.Println(err != nil)
	// Output:
	// $TMP/elsewhere/new.txt false <nil>
	// true
}

// The face of each kind is resolved once, by one order: here a task asks for an open
// write face under org governance, and is refused; with no seat at all the face is
// roots.
func ExampleResolveFace() {
	_, err := fence.ResolveFace(fence.FaceInputs{
		Kind:        fence.Write,
		Task:        fence.FaceSeat("open"),
		OrgGoverned: true,
	})
	fmt.Println(sema.CodeOf(err))

	face, err := fence.ResolveFace(fence.FaceInputs{Kind: fence.Read})
	fmt.Println(face, err)
	// Output:
	// config.write_face_open_refused
	// roots <nil>
}
