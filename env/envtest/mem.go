package envtest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sema-agent/sema/env"
)

// Mem is an in-memory ExecutionEnv: a tree of directories, regular files and symbolic
// links behind one mutex, so every operation is atomic. It answers with the host's error
// shapes (*fs.PathError wrapping a syscall.Errno) and keeps the host's rules: ReadFile,
// WriteFile and Remove do not follow a symlink in the final component, WriteFile keeps an
// existing file's mode. It exists for tests and benchmarks that must not measure a disk.
// The zero value is not usable; call NewMem.
type Mem struct {
	mu       sync.Mutex
	nodes    map[string]*memNode
	identity string
	ino      uint64
}

type memNode struct {
	mode   fs.FileMode // type bits and permission bits
	data   []byte      // regular files
	target string      // symbolic links
	mtime  time.Time
	ino    uint64
}

var _ env.BatchWriter = (*Mem)(nil)

var memSeq atomic.Uint64

// NewMem returns an empty tree holding only the directory "/".
func NewMem() *Mem {
	m := &Mem{nodes: map[string]*memNode{}, identity: "mem:" + strconv.FormatUint(memSeq.Add(1), 10)}
	m.nodes["/"] = m.newNode(fs.ModeDir | 0o755)
	return m
}

func (m *Mem) newNode(mode fs.FileMode) *memNode {
	m.ino++
	return &memNode{mode: mode, mtime: time.Now(), ino: m.ino}
}

// Identity names this tree; every Mem is its own tree.
func (m *Mem) Identity() string { return m.identity }

// CaseInsensitive is false: names compare byte for byte.
func (m *Mem) CaseInsensitive() bool { return false }

// maxMemLinks bounds symlink expansion as the kernel's ELOOP does.
const maxMemLinks = 40

// resolve returns the clean path of the node p names with every symlink in its directory
// part resolved (and in the final component too when follow is set). The returned node
// is nil, with err ENOENT, when the final component does not exist but its parent does.
// Callers hold m.mu.
func (m *Mem) resolve(p string, follow bool) (string, *memNode, error) {
	if !filepath.IsAbs(p) {
		return "", nil, syscall.EINVAL
	}
	p = filepath.Clean(p)
	cur, rest := "/", p[1:]
	// While no link was expanded and no ".." met, cur is a prefix of p and the next path
	// is a substring of p: the walk allocates nothing.
	aligned := true
	links := 0
	for rest != "" {
		name, tail, _ := strings.Cut(rest, "/")
		rest = tail
		switch name {
		case "", ".":
			continue
		case "..":
			cur, aligned = filepath.Dir(cur), false
			continue
		}
		var next string
		if aligned {
			end := len(cur) + 1 + len(name)
			if cur == "/" {
				end--
			}
			next = p[:end]
		} else {
			next = filepath.Join(cur, name)
		}
		n, ok := m.nodes[next]
		last := rest == ""
		if !ok {
			if last {
				return next, nil, syscall.ENOENT
			}
			return "", nil, syscall.ENOENT
		}
		if n.mode&fs.ModeSymlink != 0 && (!last || follow) {
			links++
			if links > maxMemLinks {
				return "", nil, syscall.ELOOP
			}
			target := filepath.Clean(n.target)
			if filepath.IsAbs(target) {
				cur, target = "/", target[1:]
			}
			if rest != "" {
				target += "/" + rest
			}
			rest, aligned = target, false
			continue
		}
		if !last && !n.mode.IsDir() {
			return "", nil, syscall.ENOTDIR
		}
		cur = next
	}
	return cur, m.nodes[cur], nil
}

func pathErr(op, path string, err error) error { return &fs.PathError{Op: op, Path: path, Err: err} }

func (m *Mem) info(p string, n *memNode) env.FileInfo {
	return env.FileInfo{Name: filepath.Base(p), Size: int64(len(n.data)), Mode: n.mode, ModTime: n.mtime, Ino: n.ino, Nlink: 1}
}

func (m *Mem) stat(ctx context.Context, op, path string, follow bool) (env.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return env.FileInfo{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	p, n, err := m.resolve(path, follow)
	if err != nil {
		return env.FileInfo{}, pathErr(op, path, err)
	}
	return m.info(p, n), nil
}

// Stat describes path, following symlinks.
func (m *Mem) Stat(ctx context.Context, path string) (env.FileInfo, error) {
	return m.stat(ctx, "stat", path, true)
}

// Lstat describes path without following a final symlink.
func (m *Mem) Lstat(ctx context.Context, path string) (env.FileInfo, error) {
	return m.stat(ctx, "lstat", path, false)
}

// Readlink returns the target of the symbolic link at path (EINVAL for anything else).
func (m *Mem) Readlink(ctx context.Context, path string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, n, err := m.resolve(path, false)
	if err != nil {
		return "", pathErr("readlink", path, err)
	}
	if n.mode&fs.ModeSymlink == 0 {
		return "", pathErr("readlink", path, syscall.EINVAL)
	}
	return n.target, nil
}

// ReadDir lists the directory at path, sorted by name.
func (m *Mem) ReadDir(ctx context.Context, path string) ([]env.DirEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	p, n, err := m.resolve(path, true)
	if err != nil {
		return nil, pathErr("open", path, err)
	}
	if !n.mode.IsDir() {
		return nil, pathErr("readdirent", path, syscall.ENOTDIR)
	}
	var out []env.DirEntry
	for name, c := range m.nodes {
		if name != "/" && filepath.Dir(name) == p {
			out = append(out, env.DirEntry{Name: filepath.Base(name), Type: c.mode.Type()})
		}
	}
	slices.SortFunc(out, func(a, b env.DirEntry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// ReadFile returns a copy of the regular file at path; a final symlink is ELOOP, as the
// host's O_NOFOLLOW open answers.
func (m *Mem) ReadFile(ctx context.Context, path string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, n, err := m.resolve(path, false)
	if err != nil {
		return nil, pathErr("open", path, err)
	}
	switch {
	case n.mode&fs.ModeSymlink != 0:
		return nil, pathErr("open", path, syscall.ELOOP)
	case n.mode.IsDir():
		return nil, pathErr("read", path, syscall.EISDIR)
	}
	return bytes.Clone(n.data), nil
}

// Open returns a reader over a snapshot of the file, with ReadFile's rules.
func (m *Mem) Open(ctx context.Context, path string) (io.ReadCloser, error) {
	b, err := m.ReadFile(ctx, path)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

// parentDir returns the resolved directory that will hold path's final component, or
// the error a create there meets. Callers hold m.mu.
func (m *Mem) parentDir(path string) (string, error) {
	dir, _, err := m.resolve(filepath.Dir(filepath.Clean(path)), true)
	if err != nil {
		return "", err
	}
	if !m.nodes[dir].mode.IsDir() {
		return "", syscall.ENOTDIR
	}
	return dir, nil
}

// WriteFile replaces path with data in one step. A final symlink is ELOOP and a
// directory EISDIR; an existing file keeps its mode, a new one gets perm.
func (m *Mem) WriteFile(ctx context.Context, path string, data []byte, perm fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.write(path, data, perm)
}

// WriteFiles (env.BatchWriter) writes each file as WriteFile does, all under one hold
// of the lock: the batch is atomic as a whole here, which the contract (each file old
// or new) allows.
func (m *Mem) WriteFiles(ctx context.Context, files []env.FileWrite) []error {
	if err := ctx.Err(); err != nil {
		errs := make([]error, len(files))
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for i, f := range files {
		if err := m.write(f.Path, f.Data, f.Perm); err != nil {
			if errs == nil {
				errs = make([]error, len(files))
			}
			errs[i] = err
		}
	}
	return errs
}

// write is WriteFile under m.mu.
func (m *Mem) write(path string, data []byte, perm fs.FileMode) error {
	dir, err := m.parentDir(path)
	if err != nil {
		return pathErr("write", path, err)
	}
	p := filepath.Join(dir, filepath.Base(path))
	n := m.nodes[p]
	switch {
	case n == nil:
		n = m.newNode(perm.Perm())
		m.nodes[p] = n
	case n.mode&fs.ModeSymlink != 0:
		return pathErr("write", path, syscall.ELOOP)
	case n.mode.IsDir():
		return pathErr("write", path, syscall.EISDIR)
	}
	n.data = bytes.Clone(data)
	n.mtime = time.Now()
	return nil
}

// CreateExclusive creates path with data, EEXIST when anything is there.
func (m *Mem) CreateExclusive(ctx context.Context, path string, data []byte, perm fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, err := m.parentDir(path)
	if err != nil {
		return pathErr("open", path, err)
	}
	p := filepath.Join(dir, filepath.Base(path))
	if _, ok := m.nodes[p]; ok {
		return pathErr("open", path, syscall.EEXIST)
	}
	n := m.newNode(perm.Perm())
	n.data = bytes.Clone(data)
	m.nodes[p] = n
	return nil
}

// Mkdir creates one directory (EEXIST when anything is there).
func (m *Mem) Mkdir(ctx context.Context, path string, perm fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, err := m.parentDir(path)
	if err != nil {
		return pathErr("mkdir", path, err)
	}
	p := filepath.Join(dir, filepath.Base(path))
	if _, ok := m.nodes[p]; ok {
		return pathErr("mkdir", path, syscall.EEXIST)
	}
	m.nodes[p] = m.newNode(fs.ModeDir | perm.Perm())
	return nil
}

// Remove removes a file, a link (never its target) or an empty directory.
func (m *Mem) Remove(ctx context.Context, path string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	p, n, err := m.resolve(path, false)
	if err != nil {
		return pathErr("remove", path, err)
	}
	if p == "/" {
		return pathErr("remove", path, syscall.EBUSY)
	}
	if n.mode.IsDir() {
		for name := range m.nodes {
			if name != p && filepath.Dir(name) == p {
				return pathErr("remove", path, syscall.ENOTEMPTY)
			}
		}
	}
	delete(m.nodes, p)
	return nil
}

// Chmod sets the permission bits of path, following symlinks.
func (m *Mem) Chmod(ctx context.Context, path string, mode fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, n, err := m.resolve(path, true)
	if err != nil {
		return pathErr("chmod", path, err)
	}
	n.mode = n.mode.Type() | mode.Perm()
	return nil
}

// Symlink creates a symbolic link at path pointing to target (which need not exist).
// It is not part of ExecutionEnv: tests use it to build trees.
func (m *Mem) Symlink(target, path string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, err := m.parentDir(path)
	if err != nil {
		return pathErr("symlink", path, err)
	}
	p := filepath.Join(dir, filepath.Base(path))
	if _, ok := m.nodes[p]; ok {
		return pathErr("symlink", path, syscall.EEXIST)
	}
	n := m.newNode(fs.ModeSymlink | 0o777)
	n.target = target
	m.nodes[p] = n
	return nil
}

// MkdirAll creates path and its missing parents, as os.MkdirAll does. Like Symlink it
// is a test convenience outside ExecutionEnv.
func (m *Mem) MkdirAll(path string, perm fs.FileMode) error {
	cur := "/"
	for _, name := range splitPath(path) {
		cur = filepath.Join(cur, name)
		err := m.Mkdir(context.Background(), cur, perm)
		if err == nil || errors.Is(err, syscall.EEXIST) {
			continue
		}
		return err
	}
	fi, err := m.Stat(context.Background(), path)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return pathErr("mkdir", path, syscall.ENOTDIR)
	}
	return nil
}

func splitPath(p string) []string {
	var out []string
	for _, s := range strings.Split(filepath.Clean(p), "/") {
		if s != "" && s != "." {
			out = append(out, s)
		}
	}
	return out
}
