//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// The view is the filesystem a confined command sees: a new root holding only what the
// policy grants, each at its own path, made in the helper's mount namespace and then made
// the root with pivot_root. Landlock decides what may be done to a path; the view decides
// what is there at all, which closes what Landlock does not mediate:
//
//   - a unix socket is reached by connect() whatever Landlock says, and through a
//     read-only bind as well. Read trees are therefore read-only overlays (with an empty
//     second layer, since overlayfs wants two lower layers without an upper one): an
//     overlay shows its own inode for a socket file, which no listener is bound to, so
//     connect() is refused. Only sockets in the Write trees (binds of the real tree), in
//     the private temp directory and those a setting grants by path are reachable;
//   - chmod, chown, utime and setxattr are not Landlock rights: everything outside the
//     Write trees is on a read-only mount, where they fail with EROFS; what is not
//     granted is not there;
//   - the runtime directories (/run, /var/run, /var/tmp, /tmp) where daemons, databases
//     and agents keep their sockets are empty (or, for /tmp, the private temp directory);
//   - /dev holds only the granted devices and a devpts instance of its own: a command
//     makes its own ptys and reaches no other terminal's;
//   - /proc is a fresh mount of the command's own PID namespace when the helper is its
//     first process, else the machine's, read-only.
//
// The view is built before pivot_root, from the machine's paths; every mount point is
// reached from the view's root without following a symbolic link, every mount is made
// from a descriptor (open_tree, fsmount, move_mount).

// viewKind is what a placement puts at its path.
type viewKind int

const (
	viewRead   viewKind = iota // a Read tree: read-only overlay (a directory) or bind (a file)
	viewPseudo                 // a kernel filesystem beneath a Read tree: read-only recursive bind
	viewMask                   // an empty tmpfs over a runtime directory
	viewDev                    // the private /dev
	viewProc                   // /proc
	viewTmp                    // the private temp directory at /tmp
	viewWrite                  // a Write tree: read-write recursive bind
	viewCache                  // a shared cache: an overlay whose upper layer is private
	viewSocket                 // a socket granted by path: a bind of the socket file
	viewFile                   // a file the system needs (resolv.conf's target): read-only bind
	viewSkel                   // a Read tree holding mounts, in a user namespace: a tmpfs whose entries are the tree's, each placed alone
)

// viewRank orders placements at the same path: the higher rank is made, the other
// dropped (a cache over a Write tree at the same path is a cache).
var viewRank = map[viewKind]int{
	viewRead: 1, viewPseudo: 1, viewSkel: 1, viewMask: 2, viewDev: 3, viewProc: 3, viewTmp: 4, viewWrite: 5,
	viewSocket: 6, viewFile: 6, viewCache: 7,
}

type placement struct {
	path string
	kind viewKind
	src  string // the machine's path mounted there; "" for made filesystems
}

// runtimeDirs are where daemons, databases and agents keep their sockets: a Read tree
// holding one shows it empty.
var runtimeDirs = []string{"/run", "/var/run", "/var/tmp"}

// replaced reports whether the view shows something else than the machine's tree at
// path: the runtime directories, /tmp, /dev and /proc.
func replaced(path string) bool {
	return slices.Contains(runtimeDirs, path) || path == "/tmp" || path == "/dev" || path == "/proc"
}

// viewResult is what the view adds to the Landlock grants: its own places, at their
// view paths.
type viewResult struct {
	read, write []string
}

type view struct {
	p      *Policy
	root   int  // the view's root mount (O_PATH)
	made   bool // the root is a tmpfs the view made (not a copy of the machine's root)
	userNS bool // the helper is in a user namespace (overlayfs needs userxattr)
	empty  int  // an empty directory: the second lower layer of read-only overlays (-1: not made yet)
	// mergedLower: the kernel has no data-only lower layers (before Linux 6.5), so the
	// second layer of a read-only overlay is an empty directory merged with the tree.
	mergedLower bool
	// rootLinks are the symbolic links in the machine's root directory, as the starter
	// found them (nil: list them here).
	rootLinks []string
	mounts    []hostMount
	// planned are the paths the plan places: a tree laid out entry by entry leaves them
	// to their own placement.
	planned map[string]bool
	done    []placement
	// created are the directories the view made in a tmpfs of its own, and the roots of
	// those tmpfs: the places whose machine counterpart may hold symbolic links the view
	// must have too.
	created []string
	// tmpfs are the tmpfs mounts the view made (root, masks): read-only once filled.
	tmpfs []int
	// pseudo are the paths bound recursively: what lies beneath came along.
	pseudo []string
	res    viewResult
}

// buildView makes the command's view and makes it the root; the working directory is
// entered again inside it. Nothing of the machine's mounts is changed: the helper is in
// a mount namespace of its own, whose mounts it first makes private.
func buildView(p *Policy, pidOne bool, machine string) (res viewResult, err error) {
	cwd, err := unix.Getwd()
	if err != nil {
		return res, fmt.Errorf("reading the working directory: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return res, fmt.Errorf("making mounts private: %w", err)
	}
	userNS, mounts, rootLinks := machineFromEnv(machine)
	v := &view{p: p, root: -1, empty: -1, userNS: userNS, mounts: mounts, rootLinks: rootLinks, planned: map[string]bool{}}
	plan, writeOpen, readOpen := planView(p, v.mounts)
	for _, pl := range plan {
		v.planned[pl.path] = true
	}
	if err := v.makeRoot(writeOpen, readOpen); err != nil {
		return res, fmt.Errorf("making the view's root: %w", err)
	}
	for _, pl := range plan {
		if (pl.kind == viewRead || pl.kind == viewPseudo) && beneathAny(v.pseudo, pl.path) {
			continue // came with a recursive bind
		}
		if err := v.place(pl, pidOne, writeOpen); err != nil {
			return res, fmt.Errorf("placing %s in the view: %w", pl.path, err)
		}
	}
	if err := v.resolvConf(); err != nil {
		return res, fmt.Errorf("placing resolv.conf's target in the view: %w", err)
	}
	v.links()
	for _, path := range p.Hidden {
		if err := v.hide(path); err != nil {
			return res, fmt.Errorf("hiding %s: %w", path, err)
		}
	}
	for _, path := range p.ReadOnly {
		if err := v.readOnly(path); err != nil {
			return res, fmt.Errorf("making %s read-only: %w", path, err)
		}
	}
	for _, fd := range v.tmpfs {
		if err := setReadOnly(fd, false); err != nil {
			return res, fmt.Errorf("making the view's directories read-only: %w", err)
		}
	}
	if err := v.pivot(cwd); err != nil {
		return res, err
	}
	return v.res, nil
}

// planView lists what goes where, parents before children. writeOpen: the root is the
// machine's, writable ("/" is a Write tree); readOpen: the root is the machine's,
// read-only ("/" is a Read tree).
func planView(p *Policy, mounts []hostMount) (plan []placement, writeOpen, readOpen bool) {
	writeOpen = slices.Contains(p.Write, "/")
	readOpen = !writeOpen && slices.Contains(p.Read, "/")
	inWrite := func(x string) bool { return beneathAny(p.Write, x) }
	inRead := func(x string) bool { return beneathAny(p.Read, x) }
	add := func(path string, kind viewKind, src string) {
		plan = append(plan, placement{path: path, kind: kind, src: src})
	}
	add("/dev", viewDev, "")
	add("/proc", viewProc, "")
	var covered []string // places whose content is not the machine's tree beneath them
	covered = append(covered, "/dev", "/proc")
	if !writeOpen {
		for _, m := range runtimeDirs {
			if inRead(m) && !inWrite(m) && isDir(m) {
				add(m, viewMask, "")
				covered = append(covered, m)
			}
		}
		switch {
		case inWrite("/tmp"):
		case p.TempDir != "":
			add("/tmp", viewTmp, p.TempDir)
			covered = append(covered, "/tmp")
		case inRead("/tmp"):
			add("/tmp", viewMask, "")
			covered = append(covered, "/tmp")
		}
		for i, r := range p.Read {
			switch {
			case r == "/" || within("/proc", r) || r == "/dev":
			case slices.ContainsFunc(p.Read, func(o string) bool { return o != r && within(o, r) && !replaced(o) }) ||
				slices.Index(p.Read, r) != i:
				// shown by the tree it lies in
			case within("/dev", r):
				add(r, viewPseudo, r)
			case slices.Contains(runtimeDirs, r) || r == "/tmp":
				// masked above
			default:
				add(r, viewRead, r)
			}
		}
	}
	for _, w := range p.Write {
		if w != "/" && !within("/proc", w) {
			add(w, viewWrite, w)
		}
	}
	covered = append(covered, p.Write...)
	for _, d := range p.Devices {
		if !within("/dev", d) && !inWrite(d) {
			add(d, viewWrite, d)
		}
	}
	for _, c := range p.Caches {
		add(c, viewCache, c)
		covered = append(covered, c)
	}
	for _, s := range p.Sockets {
		if !inWrite(s) {
			add(s, viewSocket, s)
		}
	}
	// What is mounted beneath a Read tree on the machine is not in its overlay (overlayfs
	// does not cross mounts): each such mount is placed too, unless something else covers
	// it.
	if !writeOpen {
		for _, m := range mounts {
			if m.path == "/" || !inRead(m.path) || slices.Contains(p.Read, m.path) || beneathAny(covered, m.path) {
				continue
			}
			kind := viewRead
			if m.pseudo {
				kind = viewPseudo
			}
			add(m.path, kind, m.path)
		}
	}
	// Parents first (a path sorts after every prefix of it); at one path, the highest
	// rank alone.
	slices.SortStableFunc(plan, func(a, b placement) int { return strings.Compare(a.path, b.path) })
	out := plan[:0]
	for _, pl := range plan {
		if n := len(out); n > 0 && out[n-1].path == pl.path {
			if viewRank[pl.kind] > viewRank[out[n-1].kind] {
				out[n-1] = pl
			}
			continue
		}
		out = append(out, pl)
	}
	return out, writeOpen, readOpen
}

// makeRoot makes the view's root and attaches it over the machine's root, where it is
// reached through its descriptor only until pivot_root: a tmpfs of its own, or under an
// open face the machine's root itself (read-only overlay, or a writable copy).
func (v *view) makeRoot(writeOpen, readOpen bool) error {
	var err error
	switch {
	case writeOpen:
		v.root, err = cloneAt(unix.AT_FDCWD, "/", true, false)
	case readOpen && v.userNS:
		// A user namespace may not overlay a tree holding mounts (that would show what
		// they cover): the root is laid out entry by entry instead.
		v.root, err = newTmpfs("mode=0755,size=1m", 0)
		v.made = true
	case readOpen:
		var fd int
		if fd, err = openFollow("/"); err == nil {
			v.root, err = v.readOverlay(fd)
			unix.Close(fd)
		}
	default:
		v.root, err = newTmpfs("mode=0755", 0)
		v.made = true
	}
	if err != nil {
		return err
	}
	if v.made {
		v.tmpfs = append(v.tmpfs, v.root)
		v.created = append(v.created, "/")
	}
	if err := unix.MoveMount(v.root, "", unix.AT_FDCWD, "/", unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return err
	}
	if readOpen && v.userNS {
		return v.expand("/")
	}
	return nil
}

// hasMounts reports whether something is mounted beneath path on the machine.
func (v *view) hasMounts(path string) bool {
	for _, m := range v.mounts {
		if m.path != path && within(path, m.path) {
			return true
		}
	}
	return false
}

// skeleton places the Read tree at path as a tmpfs holding the tree's entries, each
// placed alone (expand): what a user namespace does with a tree holding mounts.
func (v *view) skeleton(path string) error {
	fs, err := newTmpfs("mode=0755,size=1m", 0)
	if err != nil {
		return err
	}
	err = v.attach(fs, path, true)
	if err != nil {
		unix.Close(fs)
		return err
	}
	v.tmpfs = append(v.tmpfs, fs)
	v.done = append(v.done, placement{path: path, kind: viewSkel, src: path})
	return v.expand(path)
}

// expand places the entries of the machine's directory path in the view's directory
// path, a tmpfs of its own: a directory as a read-only overlay (or, holding mounts, as a
// skeleton of its own), a file as a read-only bind, a symbolic link as the same link; a
// socket not at all. Entries the plan places itself are left to it.
func (v *view) expand(path string) error {
	ents, err := os.ReadDir(path)
	if err != nil {
		return err
	}
	dir, err := v.open(path)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	for _, e := range ents {
		p := filepath.Join(path, e.Name())
		if v.planned[p] {
			continue
		}
		if e.Type()&os.ModeSymlink != 0 {
			if target, err := os.Readlink(p); err == nil {
				unix.Symlinkat(target, dir, e.Name())
			}
			continue
		}
		if e.IsDir() && v.hasMounts(p) {
			if err := v.skeleton(p); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			continue
		}
		if err := v.placeTree(p); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

// placeTree places the machine's path at its own path in the view: a directory as a
// read-only overlay, a file as a read-only bind, a socket not at all.
func (v *view) placeTree(path string) error {
	src, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	} else if err != nil {
		return err
	}
	defer unix.Close(src)
	var st unix.Stat_t
	if err := unix.Fstat(src, &st); err != nil {
		return err
	}
	var tree int
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFSOCK, unix.S_IFLNK:
		return nil
	case unix.S_IFDIR:
		if isPseudo(src) {
			tree, err = cloneAt(src, "", true, true)
		} else {
			tree, err = v.readOverlay(src)
		}
	default:
		tree, err = cloneAt(src, "", false, true)
	}
	if err != nil {
		return err
	}
	defer unix.Close(tree)
	if err := v.attach(tree, path, st.Mode&unix.S_IFMT == unix.S_IFDIR); err != nil {
		return err
	}
	// Recorded like any placement: what is later placed beneath it (a Write tree under
	// an expanded /) is then opened through the view with no link followed, not made
	// by a path through the machine's own content.
	v.done = append(v.done, placement{path: path, kind: viewRead, src: path})
	return nil
}

// place makes one placement.
func (v *view) place(pl placement, pidOne, writeOpen bool) error {
	var (
		tree int
		dir  = true
		err  error
	)
	switch pl.kind {
	case viewDev:
		return v.makeDev()
	case viewProc:
		return v.makeProc(pidOne, writeOpen)
	case viewMask:
		if ok, tmp := v.creatable(pl.path); ok && !tmp && !v.isMountedOn(pl.path) {
			// In a tmpfs of the view's own, an empty directory is enough.
			fd, err := v.mkdirs(pl.path)
			if err != nil {
				return err
			}
			unix.Close(fd)
			if !slices.Contains(v.created, pl.path) {
				v.created = append(v.created, pl.path)
			}
			v.done = append(v.done, pl)
			return nil
		}
		if tree, err = newTmpfs("mode=0755,size=64k", unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC); err != nil {
			return err
		}
		if err := v.attach(tree, pl.path, true); err != nil {
			return err
		}
		v.tmpfs = append(v.tmpfs, tree)
		v.created = append(v.created, pl.path)
		v.done = append(v.done, pl)
		return nil
	case viewCache:
		tree, err = v.cacheOverlay(pl.src)
	default:
		// Most places are directories: one system call tells. (err is place's own: what
		// the clone below fails with must reach the check after the switch.)
		var src int
		src, err = unix.Open(pl.src, unix.O_PATH|unix.O_CLOEXEC|unix.O_DIRECTORY, 0)
		mode := uint32(unix.S_IFDIR)
		if errors.Is(err, unix.ENOTDIR) {
			src, err = openFollow(pl.src)
			var st unix.Stat_t
			if err == nil {
				err = unix.Fstat(src, &st)
			}
			mode = st.Mode & unix.S_IFMT
		}
		if errors.Is(err, unix.ENOENT) {
			return nil // gone since the policy was made: nothing to place
		} else if err != nil {
			return err
		}
		defer unix.Close(src)
		dir = mode == unix.S_IFDIR
		switch pl.kind {
		case viewRead:
			switch {
			case mode == unix.S_IFSOCK:
				return nil // a socket in a Read tree is not reachable
			case dir && v.pseudoAt(pl.src, src):
				pl.kind = viewPseudo
				tree, err = cloneAt(src, "", true, true)
			case dir && v.userNS && v.hasMounts(pl.path):
				return v.skeleton(pl.path)
			case dir:
				tree, err = v.readOverlay(src)
			default:
				tree, err = cloneAt(src, "", false, true)
			}
		case viewPseudo, viewFile:
			tree, err = cloneAt(src, "", dir, true)
		case viewSocket:
			if mode != unix.S_IFSOCK {
				return fmt.Errorf("%s is granted as a socket but is not one", pl.src)
			}
			tree, err = cloneAt(src, "", false, false)
		default: // viewWrite, viewTmp
			tree, err = cloneAt(src, "", dir, false)
		}
	}
	if err != nil {
		return err
	}
	if err := v.attach(tree, pl.path, dir); err != nil {
		return err
	}
	unix.Close(tree)
	switch pl.kind {
	case viewPseudo:
		v.pseudo = append(v.pseudo, pl.path)
	case viewCache:
		v.res.write = append(v.res.write, pl.path)
	}
	v.done = append(v.done, pl)
	return nil
}

// attach mounts tree at path in the view, making the mount point (a directory, or an
// empty file for a file) where the view may make it.
func (v *view) attach(tree int, path string, dir bool) error {
	if dir && v.ownTmpfs(path) {
		// Everything on the way is a directory the view made: no link to fear.
		rel := strings.TrimPrefix(path, "/")
		err := unix.Mkdirat(v.root, rel, 0o755)
		if errors.Is(err, unix.ENOENT) {
			var fd int
			if fd, err = v.mkdirs(filepath.Dir(path)); err == nil {
				unix.Close(fd)
				err = unix.Mkdirat(v.root, rel, 0o755)
			}
		}
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return err
		}
		if err := unix.MoveMount(tree, "", v.root, rel, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return err
		}
		v.created = slices.DeleteFunc(v.created, func(c string) bool { return c == path })
		return nil
	}
	var at int
	var err error
	if dir {
		at, err = v.mkdirs(path)
	} else {
		at, err = v.mkfile(path)
	}
	if err != nil {
		return err
	}
	defer unix.Close(at)
	if err := unix.MoveMount(tree, "", at, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return err
	}
	// A mount point is covered: nothing of the machine's directory shows there.
	v.created = slices.DeleteFunc(v.created, func(c string) bool { return c == path })
	return nil
}

// open opens path in the view (O_PATH) without following a symbolic link in any
// component: a trailing link is opened itself.
func (v *view) open(path string) (int, error) {
	rel := strings.TrimPrefix(path, "/")
	if rel == "" {
		rel = "."
	}
	return unix.Openat2(v.root, rel, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH,
	})
}

// ownTmpfs reports whether path lies in the view's own root tmpfs, with no mount of the
// machine's tree on the way.
func (v *view) ownTmpfs(path string) bool {
	return v.made && path != "/" && v.container(path) == nil
}

// isMountedOn reports whether the view placed something at exactly path.
func (v *view) isMountedOn(path string) bool {
	return slices.ContainsFunc(v.done, func(d placement) bool { return d.path == path })
}

// container is the placement path lies in (the deepest one made), nil for the root.
func (v *view) container(path string) *placement {
	var best *placement
	for i := range v.done {
		if within(v.done[i].path, path) && (best == nil || len(v.done[i].path) > len(best.path)) {
			best = &v.done[i]
		}
	}
	return best
}

// creatable reports whether the view may make entries in the directory at path: in the
// tmpfs it made, and in the private temp directory at /tmp, where the mount points of
// granted places beneath the machine's /tmp are made (they stay, as empty directories,
// in the temp directory).
func (v *view) creatable(path string) (ok, tmp bool) {
	c := v.container(path)
	if c == nil {
		return v.made, false
	}
	switch c.kind {
	case viewMask, viewDev, viewSkel:
		return true, false
	case viewTmp:
		return true, true
	}
	return false, false
}

// mkdirs returns the directory at path in the view, making it and its parents where the
// view may.
func (v *view) mkdirs(path string) (int, error) {
	fd, err := v.open(path)
	if err == nil {
		if isDirFD(fd) {
			return fd, nil
		}
		unix.Close(fd)
		err = unix.ENOTDIR
	}
	ok, tmp := v.creatable(path)
	if path == "/" || !ok || !(errors.Is(err, unix.ENOENT) || tmp && (errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP))) {
		return -1, err
	}
	parent, perr := v.mkdirs(filepath.Dir(path))
	if perr != nil {
		return -1, perr
	}
	defer unix.Close(parent)
	base := filepath.Base(path)
	if tmp && !errors.Is(err, unix.ENOENT) {
		// A command replaced a mount point in its temp directory with something else:
		// put the directory back.
		unix.Unlinkat(parent, base, 0)
	}
	if err := unix.Mkdirat(parent, base, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, err
	}
	if !tmp {
		v.created = append(v.created, path)
	}
	return v.open(path)
}

// mkfile returns the file at path in the view, making an empty one (a mount point)
// where the view may.
func (v *view) mkfile(path string) (int, error) {
	fd, err := v.open(path)
	if err == nil || !errors.Is(err, unix.ENOENT) {
		return fd, err
	}
	if ok, _ := v.creatable(path); !ok {
		return -1, err
	}
	parent, err := v.mkdirs(filepath.Dir(path))
	if err != nil {
		return -1, err
	}
	defer unix.Close(parent)
	f, err := unix.Openat(parent, filepath.Base(path), unix.O_CREAT|unix.O_EXCL|unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o444)
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, err
	}
	if err == nil {
		unix.Close(f)
	}
	return v.open(path)
}

// visible reports whether the machine's path is shown in the view: it lies in a
// placement that shows the machine's tree, or is a directory the view made.
func (v *view) visible(path string) bool {
	if beneathAny(v.p.Hidden, path) {
		return false
	}
	c := v.container(path)
	if c == nil {
		return !v.made || slices.Contains(v.created, path)
	}
	switch c.kind {
	case viewMask, viewDev, viewProc:
		return c.path == path || slices.Contains(v.created, path)
	case viewTmp:
		return false
	}
	return true
}

// links makes the symbolic links of the machine's directories that the view made
// itself (/bin -> usr/bin, /lib64, a /run/current-system, …) where they point to what
// the view shows.
func (v *view) links() {
	for _, dir := range v.created {
		var dfd = -1
		names := v.rootLinks
		if dir != "/" || names == nil {
			names = symlinksIn(dir)
		}
		for _, name := range names {
			path := filepath.Join(dir, name)
			if v.planned[path] || slices.Contains(v.created, path) {
				continue // the view has something there already
			}
			link, err := os.Readlink(path)
			if err != nil {
				continue
			}
			// Most links name their target in one step (usr/bin); the others are
			// resolved in full.
			target := link
			if !filepath.IsAbs(target) {
				target = filepath.Join(dir, target)
			}
			if !v.visible(filepath.Clean(target)) {
				resolved, err := filepath.EvalSymlinks(path)
				if err != nil || !v.visible(resolved) {
					continue
				}
			}
			if dfd < 0 {
				if dfd, err = v.open(dir); err != nil {
					break
				}
			}
			unix.Symlinkat(link, dfd, name)
		}
		if dfd >= 0 {
			unix.Close(dfd)
		}
	}
}

// symlinksIn lists the names of the symbolic links in the machine's directory dir, from
// the directory entries' types (no stat of each).
func symlinksIn(dir string) []string {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	var out []string
	buf := make([]byte, 8192)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil || n <= 0 {
			return out
		}
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(b[16]) | int(b[17])<<8
			if reclen < 19 || reclen > len(b) {
				break
			}
			if b[18] == unix.DT_LNK {
				name := b[19:reclen]
				if i := slices.Index(name, 0); i >= 0 {
					name = name[:i]
				}
				out = append(out, string(name))
			}
			b = b[reclen:]
		}
	}
}

// hide hides path in the view: an empty read-only tmpfs over a directory, the
// machine's /dev/null, read-only, over anything else.
func (v *view) hide(path string) error {
	at, err := v.open(path)
	if errors.Is(err, unix.ENOENT) {
		return nil
	} else if err != nil {
		return err
	}
	defer unix.Close(at)
	var tree int
	if isDirFD(at) {
		tree, err = newTmpfs("mode=0555,size=4k", unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	} else {
		tree, err = cloneAt(unix.AT_FDCWD, "/dev/null", false, true)
	}
	if err != nil {
		return err
	}
	defer unix.Close(tree)
	return unix.MoveMount(tree, "", at, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
}

// readOnly covers path in the view with a read-only copy of itself (and of what is
// mounted beneath it).
func (v *view) readOnly(path string) error {
	at, err := v.open(path)
	if errors.Is(err, unix.ENOENT) {
		return nil
	} else if err != nil {
		return err
	}
	defer unix.Close(at)
	tree, err := cloneAt(at, "", isDirFD(at), true)
	if err != nil {
		return err
	}
	defer unix.Close(tree)
	return unix.MoveMount(tree, "", at, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
}

// pivot makes the view the root, lets go of the machine's root and enters the working
// directory again, in the view: the old one still names the machine's tree.
func (v *view) pivot(cwd string) error {
	if err := unix.Fchdir(v.root); err != nil {
		return err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the machine's root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	if err := unix.Chdir(cwd); err != nil {
		return fmt.Errorf("the working directory %s is not in the sandbox's view of the filesystem: %w", cwd, err)
	}
	return nil
}
