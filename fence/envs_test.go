package fence

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
)

// hookEnv wraps an env: it can claim case-insensitivity, fail chosen operations on
// chosen paths, and run a hook after Mkdir (to plant something between the fence's
// steps, as a concurrent process would).
type hookEnv struct {
	env.ExecutionEnv
	ci bool
	// fail maps "op path" ("lstat /x", "readlink /x", "readdir /x", "mkdir /x",
	// "create /x") to the error that operation returns.
	fail       map[string]error
	afterMkdir func(path string)
	mu         sync.Mutex
	calls      []string
}

func (h *hookEnv) CaseInsensitive() bool { return h.ci }

func (h *hookEnv) check(op, path string) error {
	h.mu.Lock()
	h.calls = append(h.calls, op+" "+path)
	h.mu.Unlock()
	if err, ok := h.fail[op+" "+path]; ok {
		return &fs.PathError{Op: op, Path: path, Err: err}
	}
	return nil
}

func (h *hookEnv) Lstat(ctx context.Context, p string) (env.FileInfo, error) {
	if err := h.check("lstat", p); err != nil {
		return env.FileInfo{}, err
	}
	return h.ExecutionEnv.Lstat(ctx, p)
}

func (h *hookEnv) Readlink(ctx context.Context, p string) (string, error) {
	if err := h.check("readlink", p); err != nil {
		return "", err
	}
	return h.ExecutionEnv.Readlink(ctx, p)
}

func (h *hookEnv) ReadDir(ctx context.Context, p string) ([]env.DirEntry, error) {
	if err := h.check("readdir", p); err != nil {
		return nil, err
	}
	return h.ExecutionEnv.ReadDir(ctx, p)
}

func (h *hookEnv) Mkdir(ctx context.Context, p string, perm fs.FileMode) error {
	if err := h.check("mkdir", p); err != nil {
		return err
	}
	err := h.ExecutionEnv.Mkdir(ctx, p, perm)
	if err == nil && h.afterMkdir != nil {
		h.afterMkdir(p)
	}
	return err
}

func (h *hookEnv) CreateExclusive(ctx context.Context, p string, data []byte, perm fs.FileMode) error {
	if err := h.check("create", p); err != nil {
		return err
	}
	return h.ExecutionEnv.CreateExclusive(ctx, p, data, perm)
}

// foldEnv is a case-insensitive view of a host directory tree, as a macOS or Windows
// volume would be: a name finds the entry that matches it without case. Listings and
// link targets keep their on-disk spelling.
type foldEnv struct{ env.ExecutionEnv }

func (foldEnv) CaseInsensitive() bool { return true }

// onDisk maps every component of p to the entry that matches it without case (the
// exact one first); components from the first one that matches nothing stay as spelled.
func (foldEnv) onDisk(p string) string {
	out := "/"
	parts := strings.Split(strings.Trim(p, "/"), "/")
	for i, name := range parts {
		if name == "" {
			continue
		}
		next := filepath.Join(out, name)
		if _, err := os.Lstat(next); err == nil {
			out = next
			continue
		}
		ents, err := os.ReadDir(out)
		found := ""
		if err == nil {
			for _, e := range ents {
				if strings.EqualFold(e.Name(), name) {
					found = e.Name()
					break
				}
			}
		}
		if found == "" {
			return filepath.Join(append([]string{out}, parts[i:]...)...)
		}
		out = filepath.Join(out, found)
	}
	return out
}

func (e foldEnv) Lstat(ctx context.Context, p string) (env.FileInfo, error) {
	return e.ExecutionEnv.Lstat(ctx, e.onDisk(p))
}

func (e foldEnv) Stat(ctx context.Context, p string) (env.FileInfo, error) {
	return e.ExecutionEnv.Stat(ctx, e.onDisk(p))
}

func (e foldEnv) Readlink(ctx context.Context, p string) (string, error) {
	return e.ExecutionEnv.Readlink(ctx, e.onDisk(p))
}

func (e foldEnv) ReadDir(ctx context.Context, p string) ([]env.DirEntry, error) {
	return e.ExecutionEnv.ReadDir(ctx, e.onDisk(p))
}

// memEnv is an in-memory tree of directories, files and links, enough for the fence's
// own cost to be measured without system calls.
type memEnv struct {
	nodes map[string]memNode
}

type memNode struct {
	mode   fs.FileMode
	target string
}

func newMemEnv() *memEnv {
	return &memEnv{nodes: map[string]memNode{"/": {mode: fs.ModeDir | 0o755}}}
}

func (m *memEnv) dir(p string)  { m.nodes[p] = memNode{mode: fs.ModeDir | 0o755} }
func (m *memEnv) file(p string) { m.nodes[p] = memNode{mode: 0o644} }
func (m *memEnv) link(p, target string) {
	m.nodes[p] = memNode{mode: fs.ModeSymlink | 0o777, target: target}
}

func (m *memEnv) Identity() string      { return "mem" }
func (m *memEnv) CaseInsensitive() bool { return false }

func (m *memEnv) Lstat(ctx context.Context, p string) (env.FileInfo, error) {
	n, ok := m.nodes[p]
	if !ok {
		return env.FileInfo{}, &fs.PathError{Op: "lstat", Path: p, Err: fs.ErrNotExist}
	}
	return env.FileInfo{Name: filepath.Base(p), Mode: n.mode, ModTime: time.Time{}}, nil
}

func (m *memEnv) Stat(ctx context.Context, p string) (env.FileInfo, error) {
	c, ok, err := Canonicalize(ctx, m, p)
	if err != nil {
		return env.FileInfo{}, err
	}
	if !ok {
		return env.FileInfo{}, &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist}
	}
	return m.Lstat(ctx, c)
}

func (m *memEnv) Readlink(ctx context.Context, p string) (string, error) {
	n, ok := m.nodes[p]
	if !ok || n.mode&fs.ModeSymlink == 0 {
		return "", &fs.PathError{Op: "readlink", Path: p, Err: syscall.EINVAL}
	}
	return n.target, nil
}

func (m *memEnv) ReadDir(ctx context.Context, p string) ([]env.DirEntry, error) {
	var out []env.DirEntry
	for k, n := range m.nodes {
		if k != "/" && filepath.Dir(k) == p {
			out = append(out, env.DirEntry{Name: filepath.Base(k), Type: n.mode.Type()})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (m *memEnv) unsupported(op, p string) error {
	return &fs.PathError{Op: op, Path: p, Err: syscall.ENOTSUP}
}

func (m *memEnv) ReadFile(ctx context.Context, p string) ([]byte, error) {
	return nil, m.unsupported("read", p)
}

func (m *memEnv) Open(ctx context.Context, p string) (io.ReadCloser, error) {
	return nil, m.unsupported("open", p)
}

func (m *memEnv) WriteFile(ctx context.Context, p string, data []byte, perm fs.FileMode) error {
	return m.unsupported("write", p)
}

func (m *memEnv) CreateExclusive(ctx context.Context, p string, data []byte, perm fs.FileMode) error {
	return m.unsupported("create", p)
}

func (m *memEnv) Mkdir(ctx context.Context, p string, perm fs.FileMode) error {
	return m.unsupported("mkdir", p)
}

func (m *memEnv) Remove(ctx context.Context, p string) error { return m.unsupported("remove", p) }

func (m *memEnv) Chmod(ctx context.Context, p string, mode fs.FileMode) error {
	return m.unsupported("chmod", p)
}

// realTempDir is t.TempDir with its own links resolved, so expected canonical paths can
// be spelled from it.
func realTempDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// tree builds a layout under base: entries ending in "/" are directories, "name ->
// target" are symbolic links, anything else is a file holding its own path.
func tree(t testing.TB, base string, entries ...string) {
	t.Helper()
	for _, e := range entries {
		p := filepath.Join(base, e)
		switch {
		case strings.Contains(e, " -> "):
			name, target, _ := strings.Cut(e, " -> ")
			p = filepath.Join(base, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		case strings.HasSuffix(e, "/"):
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		default:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(p), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// notices collects notices; safe for concurrent use.
type notices struct {
	mu   sync.Mutex
	list []sema.Notice
}

func (n *notices) sink(x sema.Notice) {
	n.mu.Lock()
	n.list = append(n.list, x)
	n.mu.Unlock()
}

func (n *notices) codes() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, x := range n.list {
		out = append(out, x.Code)
	}
	return out
}

func (n *notices) withCode(code string) []sema.Notice {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []sema.Notice
	for _, x := range n.list {
		if x.Code == code {
			out = append(out, x)
		}
	}
	return out
}
