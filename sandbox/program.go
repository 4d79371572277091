package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// ProgramReadable returns what a confined long-running program — an MCP server started
// from its configuration — must read besides the system and the toolchains on PATH: the
// directory of the program itself (a program installed outside PATH, as npm installs a
// server's bin into node_modules/.bin), the node_modules tree it lives in, and the
// directory of every argument that names an existing file (a script given to an
// interpreter). The policy's hidden paths (the credential stores) stay hidden beneath
// these grants.
func ProgramReadable(argv []string) []string {
	var out []string
	add := func(p string) {
		if p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for i, a := range argv {
		if i == 0 {
			if p, err := exec.LookPath(a); err == nil {
				a = p
			}
		}
		if !filepath.IsAbs(a) {
			continue
		}
		paths := []string{a}
		if r, err := filepath.EvalSymlinks(a); err == nil && r != a {
			paths = append(paths, r)
		}
		for _, p := range paths {
			if fi, err := os.Stat(p); err != nil || fi.IsDir() {
				continue
			}
			add(filepath.Dir(p))
			if k := strings.LastIndex(p, "/node_modules/"); k >= 0 {
				add(p[:k+len("/node_modules")])
			}
		}
	}
	return out
}

// TempDir makes a private temporary directory (mode 0700) for confined programs, named
// with prefix; RemoveTempDir removes it when they are done.
func TempDir(prefix string) (string, error) { return os.MkdirTemp("", prefix) }

// RemoveTempDir removes a directory TempDir made, with everything in it.
func RemoveTempDir(dir string) error { return os.RemoveAll(dir) }
