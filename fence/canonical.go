package fence

import (
	"context"
	"errors"
	"io/fs"
	"strings"

	"github.com/sema-agent/sema/env"
)

// Causes of a refused canonicalization. Canonicalize returns them wrapped in an
// *fs.PathError whose Path names the component at which resolution stopped, so
// errors.Is(err, ErrDanglingLink) works and the message says where.
var (
	// ErrNotAbsolute: Canonicalize was given a relative path.
	ErrNotAbsolute = errors.New("not an absolute path")
	// ErrDanglingLink: a symbolic link points at something that does not exist. The
	// path is refused rather than projected, because a later create through the link
	// would land wherever the link points, not where the projection says.
	ErrDanglingLink = errors.New("dangling symbolic link")
	// ErrLinkLoop: more than 40 symbolic links were expanded, as the kernel's ELOOP.
	ErrLinkLoop = errors.New("too many levels of symbolic links")
	// ErrDotDotMissing: ".." follows a component that does not exist, so it cannot be
	// resolved against a real directory.
	ErrDotDotMissing = errors.New("'..' below a path that does not exist")
	// ErrNotDirectory: a component that is not a directory is followed by more path.
	ErrNotDirectory = errors.New("not a directory")
	// ErrSpelling: on a case-insensitive env, an existing name matches no directory entry
	// exactly and not exactly one entry without case, so its on-disk spelling is unknown.
	ErrSpelling = errors.New("name does not match exactly one directory entry")
	// ErrEmptyLink: a symbolic link with an empty target.
	ErrEmptyLink = errors.New("symbolic link with an empty target")
)

// maxLinks bounds symlink expansion, as the kernel's ELOOP does.
const maxLinks = 40

// Canonicalize resolves every symbolic link of the absolute path p through e, with the
// kernel's semantics: components are resolved left to right, a link's target replaces
// it (relative targets against the link's directory), and ".." steps to the parent of
// what was resolved so far — after the links before it, not lexically.
//
// The answer is result-shaped; exactly one of these holds:
//   - ok: err == nil, exists == true, canonical is the absolute path with no symbolic
//     link, "." or ".." in it (on a case-insensitive env, every component is spelled as
//     the directory entry on disk);
//   - not found: err == nil, exists == false, canonical is the canonical deepest
//     existing ancestor with the missing rest appended as spelled (a ".." in that rest
//     is an error, since it would step out of a directory that is not there);
//   - error: err != nil, canonical == "". A dangling link (also one met in the middle
//     of a link's target), a loop, an unreadable ancestor, a non-directory followed by
//     more path, or any error of the env other than "does not exist". The answer is
//     never guessed.
//
// p is not cleaned lexically first: "/r/link/../x" resolves link before "..".
func Canonicalize(ctx context.Context, e env.ExecutionEnv, p string) (canonical string, exists bool, err error) {
	if !strings.HasPrefix(p, "/") {
		return "", false, &fs.PathError{Op: "canonicalize", Path: p, Err: ErrNotAbsolute}
	}
	fold := e.CaseInsensitive()
	// todo is a stack of components still to resolve, the next one on top (at the end),
	// so a link's target can be pushed in front of the rest without copying it.
	todo := pushPath(make([]string, 0, 24), p)
	// mustExist counts the components on top of todo that came from link targets: they
	// name what a link points at, so a missing one makes the link dangling rather than
	// the path merely "not yet created".
	mustExist := 0
	links := 0
	lastLink := ""
	cur := "" // the resolved prefix; "" is the root directory
	// curInP records that cur == p[:len(cur)], so the next path to look up can be sliced
	// out of p instead of built: the common spelling is already canonical.
	curInP := true
	for len(todo) > 0 {
		name := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		fromLink := mustExist > 0
		if fromLink {
			mustExist--
		}
		switch name {
		case ".":
			// The component before it was checked to be a directory.
			continue
		case "..":
			// cur has no links in it, so its lexical parent is its real parent.
			if i := strings.LastIndexByte(cur, '/'); i >= 0 {
				cur = cur[:i]
			}
			continue
		}
		var next string
		if end := len(cur) + 1 + len(name); curInP && end <= len(p) && p[len(cur)] == '/' && p[len(cur)+1:end] == name {
			next = p[:end]
		} else {
			next = cur + "/" + name
			curInP = false
		}
		fi, err := e.Lstat(ctx, next)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				return "", false, err
			}
			if fromLink {
				return "", false, &fs.PathError{Op: "canonicalize", Path: lastLink, Err: ErrDanglingLink}
			}
			return projectMissing(next, todo)
		}
		if fold {
			onDisk, err := onDiskName(ctx, e, cur, name)
			if err != nil {
				return "", false, err
			}
			if onDisk != name {
				next = cur + "/" + onDisk
				curInP = false
			}
		}
		if !fi.IsSymlink() {
			if len(todo) > 0 && !fi.IsDir() {
				return "", false, &fs.PathError{Op: "canonicalize", Path: next, Err: ErrNotDirectory}
			}
			cur = next
			continue
		}
		links++
		if links > maxLinks {
			return "", false, &fs.PathError{Op: "canonicalize", Path: next, Err: ErrLinkLoop}
		}
		target, err := e.Readlink(ctx, next)
		if err != nil {
			return "", false, err
		}
		if target == "" {
			return "", false, &fs.PathError{Op: "canonicalize", Path: next, Err: ErrEmptyLink}
		}
		if target[0] == '/' {
			cur = ""
			curInP = true
		}
		before := len(todo)
		todo = pushPath(todo, target)
		mustExist += len(todo) - before
		lastLink = next
	}
	if cur == "" {
		return "/", true, nil
	}
	return cur, true, nil
}

// projectMissing builds the not-found answer: missing (the first component that does
// not exist, under a canonical parent) followed by the rest of todo as spelled.
func projectMissing(missing string, todo []string) (string, bool, error) {
	n := len(missing)
	for _, r := range todo {
		if r == ".." {
			return "", false, &fs.PathError{Op: "canonicalize", Path: missing, Err: ErrDotDotMissing}
		}
		n += 1 + len(r)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(missing)
	for i := len(todo) - 1; i >= 0; i-- {
		if todo[i] == "." {
			continue
		}
		b.WriteByte('/')
		b.WriteString(todo[i])
	}
	return b.String(), false, nil
}

// pushPath pushes the components of p onto the stack todo so that p's first component
// ends on top. Empty components ("//") are dropped; a trailing slash becomes a final
// "." so that "file/" is refused like "file/." (the kernel answers ENOTDIR to both).
func pushPath(todo []string, p string) []string {
	end := len(p)
	for end > 0 && p[end-1] == '/' {
		end--
	}
	if end > 0 && end < len(p) {
		todo = append(todo, ".")
	}
	for end > 0 {
		start := strings.LastIndexByte(p[:end], '/') + 1
		todo = append(todo, p[start:end])
		end = start
		for end > 0 && p[end-1] == '/' {
			end--
		}
	}
	return todo
}

// onDiskName returns the spelling of name in directory dir ("" = the root) as the
// directory lists it, for an env whose names compare without case. An exact entry wins;
// otherwise exactly one entry must match without case. Without this, "/W/Proj" and
// "/w/proj" would be two canonical spellings of one directory, and a comparison of
// canonical paths (containment, the swallowed-root rule, the state directory) could be
// walked around by changing case.
func onDiskName(ctx context.Context, e env.ExecutionEnv, dir, name string) (string, error) {
	if dir == "" {
		dir = "/"
	}
	ents, err := e.ReadDir(ctx, dir)
	if err != nil {
		return "", err
	}
	match, n := "", 0
	for _, d := range ents {
		if d.Name == name {
			return name, nil
		}
		if strings.EqualFold(d.Name, name) {
			match = d.Name
			n++
		}
	}
	if n != 1 {
		return "", &fs.PathError{Op: "canonicalize", Path: joinDir(dir, name), Err: ErrSpelling}
	}
	return match, nil
}

// joinDir joins a canonical directory and one name without cleaning.
func joinDir(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}
