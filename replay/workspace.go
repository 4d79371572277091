package replay

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/history"
)

// DefaultMaxBytes bounds the copy of a workspace: a replay of a session whose root holds
// more refuses (CodeWorkspaceTooLarge) rather than fill the disk.
const DefaultMaxBytes int64 = 1 << 30

// maxFiles bounds the number of entries copied, for the same reason.
const maxFiles = 500_000

// scratchDir checks the directory a replay runs in: missing (it is made) or empty, and
// apart from the workspace it copies (neither inside the other).
func scratchDir(dir, root string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return sema.Errorf(CodeScratchInvalid, "cannot resolve --in %q: %v", dir, err)
	}
	if inside(abs, root) || inside(root, abs) {
		return sema.Errorf(CodeScratchInvalid, "--in %s and the session's workspace %s overlap; give a directory outside the workspace", dir, root).With("path", dir)
	}
	ents, err := os.ReadDir(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return os.MkdirAll(abs, 0o700)
	case err != nil:
		return sema.Errorf(CodeScratchInvalid, "--in %s cannot be used: %v; give an empty or missing directory", dir, err).With("path", dir)
	case len(ents) > 0:
		return sema.Errorf(CodeScratchInvalid, "--in %s is not empty (%d entries); give an empty or missing directory: the replay copies the workspace into it", dir, len(ents)).With("path", dir)
	}
	return nil
}

// inside reports whether p is dir or below it.
func inside(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// copyTree copies root into scratch (which exists and is empty): directories, regular
// files with their permission bits, and symlinks — a link that points into root points
// into scratch instead, so no write through it reaches the workspace. Other files
// (sockets, devices, pipes) and skip (the state directory, when it lies in the
// workspace) are left out. It refuses a tree over maxBytes.
//
// Modification times are kept (Glob and ls order by them); a directory's are set by the
// function it returns, which the caller calls once it has changed the copy's entries.
func copyTree(ctx context.Context, root, scratch, skip string, maxBytes int64) (func(), error) {
	var total int64
	files := 0
	type dirTime struct {
		path string
		mod  time.Time
	}
	var dirs []dirTime
	setDirTimes := func() {
		for i := len(dirs) - 1; i >= 0; i-- {
			os.Chtimes(dirs[i].path, time.Time{}, dirs[i].mod)
		}
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if skip != "" && p == skip {
			return filepath.SkipDir
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(scratch, rel)
		if files++; files > maxFiles {
			return sema.Errorf(CodeWorkspaceTooLarge, "the workspace %s holds more than %d files; replay copies it whole, so replay a smaller workspace", root, maxFiles)
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			dirs = append(dirs, dirTime{dst, fi.ModTime()})
			if rel == "." {
				return os.Chmod(scratch, fi.Mode().Perm()|0o700)
			}
			return os.Mkdir(dst, fi.Mode().Perm()|0o700)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if filepath.IsAbs(target) && inside(target, root) {
				r, _ := filepath.Rel(root, target)
				target = filepath.Join(scratch, r)
			}
			return os.Symlink(target, dst)
		case d.Type().IsRegular():
			if total += fi.Size(); total > maxBytes {
				return sema.Errorf(CodeWorkspaceTooLarge, "the workspace %s holds more than %d bytes; replay copies it whole, so replay a smaller workspace or raise the limit", root, maxBytes).With("max_bytes", maxBytes)
			}
			if err := copyFile(p, dst, fi.Mode()); err != nil {
				return err
			}
			return os.Chtimes(dst, time.Time{}, fi.ModTime())
		}
		return nil
	})
	return setDirTimes, err
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, mode&history.ModeBits)
}

// restoreBefore puts back in scratch, a copy of root, each file the session changed as
// the session first found it: the earliest file-history record of each path (its bytes
// and mode, or its absence). A file created in the session is removed, with the
// directories it leaves empty. It returns what it could not restore, one sentence each:
// a path outside the workspace, a pre-image whose bytes were not kept.
func restoreBefore(ctx context.Context, h history.Store, scope, root, scratch string) (restored []string, notes []string, err error) {
	recs, err := h.Records(ctx, scope, 0)
	if err != nil {
		return nil, nil, err
	}
	seen := map[string]bool{}
	for _, r := range recs {
		if seen[r.Key] {
			continue
		}
		seen[r.Key] = true
		if !inside(r.Key, root) || r.Key == root {
			notes = append(notes, r.Key+" lies outside the workspace; it is not restored")
			continue
		}
		rel, _ := filepath.Rel(root, r.Key)
		dst := filepath.Join(scratch, rel)
		switch {
		case !r.Existed:
			if err := os.Remove(dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, nil, err
			}
			removeEmptyParents(filepath.Dir(dst), scratch)
		case r.Lost || r.Sum == "":
			notes = append(notes, rel+": its bytes before the session were not kept; it is replayed as it is now")
			continue
		default:
			data, err := h.Blob(ctx, r.Sum)
			if err != nil {
				return nil, nil, err
			}
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return nil, nil, err
			}
			if err := os.RemoveAll(dst); err != nil {
				return nil, nil, err
			}
			if err := os.WriteFile(dst, data, 0o600); err != nil {
				return nil, nil, err
			}
			if err := os.Chmod(dst, r.Mode&history.ModeBits); err != nil {
				return nil, nil, err
			}
		}
		restored = append(restored, rel)
	}
	return restored, notes, nil
}

// removeEmptyParents removes dir and its parents up to (not including) top while they
// are empty: the directories a removed file was most likely made for.
func removeEmptyParents(dir, top string) {
	for dir != top && inside(dir, top) {
		if os.Remove(dir) != nil {
			return
		}
		dir = filepath.Dir(dir)
	}
}
