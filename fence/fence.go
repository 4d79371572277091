package fence

import (
	"context"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
)

// Kind says which face judges a path.
type Kind int

const (
	// Read is judged by the read face against the read roots.
	Read Kind = iota
	// Write is judged by the write face against the write roots, and marked when
	// protected.
	Write
)

// String returns "read" or "write", the word refusals and codes use for the face; an
// out-of-range value prints as "kind(N)".
func (k Kind) String() string {
	switch k {
	case Read:
		return "read"
	case Write:
		return "write"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Error codes of refused paths. Each refusal names the path as spelled and lists, in
// its detail, the roots that may be used.
const (
	// CodeNotInRoot refuses a path that resolves outside every root of its face while
	// that face is "roots".
	CodeNotInRoot = "fs.path_not_in_root"
	// CodeUnresolvable refuses an empty path, or one Canonicalize cannot resolve (a
	// dangling link, a loop, an unreadable ancestor).
	CodeUnresolvable = "fs.path_unresolvable"
	// CodeProtected is the refusal of a write to a protected path (ProtectedError) by a
	// caller that will not ask a person; Resolve itself only marks such a path.
	CodeProtected = "fs.path_protected"
	// CodeDenied refuses a path in the deny set (sema's state directory, a deployment
	// deny glob), under either face.
	CodeDenied = "fs.path_denied"
)

// Codes of New's own refusals and notices.
const (
	// CodeEnvMissing refuses a Config without an Env.
	CodeEnvMissing = "config.env_missing"
	// CodeRootInvalid refuses a task root that is not absolute or does not resolve to
	// an existing directory.
	CodeRootInvalid = "config.root_invalid"
	// CodeRootSkipped is the notice for a declared root that does not resolve.
	CodeRootSkipped = "fence.root_skipped"
)

// Config declares a run's containment. Its zero value (with Env and Root set) is a
// fence whose faces are both roots, with the task root as the only root, no deny set
// beyond nothing and no advertised directories.
type Config struct {
	// Env is the env every path is resolved through. Required.
	Env env.ExecutionEnv
	// Root is the task root, absolute; relative paths resolve against it. It must
	// resolve to an existing directory. Required.
	Root string
	// AdditionalDirectories are extra write (and read) roots. A relative entry is
	// relative to Root. An entry that does not resolve to an existing directory is
	// skipped with a fence.root_skipped notice.
	AdditionalDirectories []string
	// AdditionalReadDirectories are extra read-only roots, skipped like
	// AdditionalDirectories when they do not resolve.
	AdditionalReadDirectories []string

	// TaskReadFace and TaskWriteFace are the task's face seats (TaskSpec.ReadFace,
	// TaskSpec.WriteFace), raw: nil declares nothing; anything but "open" or "roots" is
	// refused by New (see CheckFaceValue).
	TaskReadFace, TaskWriteFace *string
	// DeploymentReadFace and DeploymentWriteFace are the deployment's face seats
	// (Deps.Policy.ReadFace, Deps.Policy.WriteFace), raw, with the same rules.
	DeploymentReadFace, DeploymentWriteFace *string
	// ReadOnlyMount is the verifier's read-only mount: both faces are roots and a task
	// seat "open" is refused. Default false.
	ReadOnlyMount bool
	// OrgGoverned declares org governance: faces default to roots and a task seat may
	// not open one. Default false.
	OrgGoverned bool
	// FullShellReachable reports whether Bash can be mounted on this leg. Default false,
	// which changes nothing today: a face with no explicit word is roots either way.
	FullShellReachable bool
	// ModeWriteFace is the write face the permission mode states ("" for none;
	// bypassPermissions states FaceOpen). No mode states a read face.
	ModeWriteFace Face

	// StateDir is sema's state directory (sessions, history, blobs), absolute. It and
	// everything beneath it are denied for reads and writes under every face. Empty: no
	// state directory is denied. It need not exist yet; if it cannot be resolved safely
	// New refuses (config.state_dir_unresolvable).
	StateDir string
	// DenyGlobs are the deployment's deny patterns (doublestar syntax) over canonical
	// absolute paths. A matched path and everything beneath it are denied for reads and
	// writes under every face. A pattern without a leading "/" matches at any depth
	// ("**/*.pem", ".env"). On a case-insensitive env they match without case. An
	// invalid pattern makes New refuse (config.deny_glob_invalid).
	DenyGlobs []string
	// Home is the home directory CredentialStores are relative to: every path in a
	// credential store is refused for reads and writes under every face (fs.path_denied),
	// as the deny set is, and a kernel sandbox hides the same places from its commands.
	// Stores are judged by path at each call, so one made during the run is refused too.
	// Empty: no home-relative store is judged.
	Home string
	// RuntimeDir is the user's runtime directory ($XDG_RUNTIME_DIR), which
	// RuntimeCredentialStores are relative to. Empty: none is judged.
	RuntimeDir string
	// Hidden adds places to the credential stores (the settings' and the deployment's
	// sandbox.hidden): absolute, "~/" or relative to Home.
	Hidden []string

	// Scratchpad is the deployment's scratchpad directory. It is admitted as a write root
	// when it resolves (it is created with a marker file when missing); otherwise it is
	// skipped with a notice. Zero: no scratchpad.
	Scratchpad AdvertisedSpec
	// MemoryDir is the memory engine's directory, admitted like Scratchpad but never
	// created here (the memory engine creates it first). Zero: no memory directory.
	MemoryDir AdvertisedSpec

	// OnNotice receives announcements: a skipped root, a skipped advertised directory, a
	// clamped face. May be nil.
	OnNotice func(sema.Notice)
}

// Fence is the resolved containment of one run. It is immutable after New and safe for
// concurrent use.
type Fence struct {
	env        env.ExecutionEnv
	fold       bool
	root       string
	writeRoots []string
	readRoots  []string
	// anchors are the roots the protected set is judged below: the task root, and each
	// declared additional root (write or read) that is not itself protected.
	anchors []string
	// declared is the one memoized answer per declared root spelling.
	declared   map[string]declaredAnswer
	readFace   Face
	writeFace  Face
	deny       denySet
	creds      credentialSet
	advertised []AdvertisedDir
}

type declaredAnswer struct {
	canonical string
	ok        bool
}

// Path is a judged path.
type Path struct {
	// Spelled is the path as the caller (the model) wrote it.
	Spelled string
	// Canonical is the absolute path with every symlink resolved; for a path that does
	// not exist, the deepest existing ancestor is canonical and the rest appended. It is
	// the path callers must open: reopening Spelled would resolve it again.
	Canonical string
	// Exists reports whether the canonical path existed when it was resolved.
	Exists bool
	// Root is the deepest root of the judged kind that holds Canonical; "" when none
	// does (possible only under the open face).
	Root string
	// Protected reports, for a write, that Canonical is in the protected set: the
	// fence admits it, and the permission gate turns it into a question for a person.
	// Always false for a read.
	Protected bool
	// ProtectedReason says why, when Protected.
	ProtectedReason string
}

// New resolves the run's containment once: both faces, the task root, every declared
// root, the deny set and the advertised directories, in that order. Every consumer of
// the run reads these answers from the Fence instead of resolving them again.
//
// Refusals are *sema.Error: a bad face value or a face contradiction (config.*_face_*),
// a missing env, a task root that is not an existing directory, an invalid deny glob or
// an unresolvable state directory. A declared root or advertised directory that does
// not resolve is not an error: it is skipped and announced through cfg.OnNotice.
func New(ctx context.Context, cfg Config) (*Fence, error) {
	// The value gate fires before anything else, so a garbage seat refuses regardless
	// of the leg's shape.
	notify := cfg.OnNotice
	if notify == nil {
		notify = func(sema.Notice) {}
	}
	// Each face is resolved exactly once per New, and New runs once per run, so the
	// clamp notice reaches the run's sink at most once per face.
	readFace, err := ResolveFace(FaceInputs{
		Kind: Read, Task: cfg.TaskReadFace, Deployment: cfg.DeploymentReadFace,
		ReadOnlyMount: cfg.ReadOnlyMount, OrgGoverned: cfg.OrgGoverned, FullShellReachable: cfg.FullShellReachable,
		OnDeploymentClamp: func() { notify(DeploymentClampNotice(Read)) },
	})
	if err != nil {
		return nil, err
	}
	writeFace, err := ResolveFace(FaceInputs{
		Kind: Write, Task: cfg.TaskWriteFace, Deployment: cfg.DeploymentWriteFace,
		ReadOnlyMount: cfg.ReadOnlyMount, OrgGoverned: cfg.OrgGoverned, FullShellReachable: cfg.FullShellReachable,
		ModeFace:          cfg.ModeWriteFace,
		OnDeploymentClamp: func() { notify(DeploymentClampNotice(Write)) },
	})
	if err != nil {
		return nil, err
	}

	if cfg.Env == nil {
		return nil, sema.Errorf(CodeEnvMissing, "fence: no env given")
	}
	if !strings.HasPrefix(cfg.Root, "/") {
		return nil, sema.Errorf(CodeRootInvalid, "the task root %q is not an absolute path; give an absolute path", cfg.Root).With("path", cfg.Root)
	}
	root, exists, err := Canonicalize(ctx, cfg.Env, cfg.Root)
	if err == nil && exists {
		var fi env.FileInfo
		if fi, err = cfg.Env.Lstat(ctx, root); err == nil && !fi.IsDir() {
			exists = false
		}
	}
	if err != nil || !exists {
		return nil, sema.Errorf(CodeRootInvalid, "the task root %q does not resolve to an existing directory; give an existing directory", cfg.Root).
			With("path", cfg.Root)
	}

	f := &Fence{
		env: cfg.Env, fold: cfg.Env.CaseInsensitive(), root: root,
		readFace: readFace, writeFace: writeFace,
		declared: map[string]declaredAnswer{},
	}
	f.writeRoots = []string{root}
	f.anchors = []string{root}

	var writeExtra, readExtra []string
	for _, d := range cfg.AdditionalDirectories {
		if c, ok := f.resolveDeclared(ctx, d, "AdditionalDirectories", notify); ok {
			writeExtra = append(writeExtra, c)
		}
	}
	for _, d := range cfg.AdditionalReadDirectories {
		if c, ok := f.resolveDeclared(ctx, d, "AdditionalReadDirectories", notify); ok {
			readExtra = append(readExtra, c)
		}
	}
	declaredRoots := appendNew(appendNew([]string{root}, writeExtra...), readExtra...)
	// A declared root inside a protected place (an added ".git", or a link to one) is
	// not an anchor, or adding it would unprotect everything in it.
	for _, r := range declaredRoots[1:] {
		if p, _ := f.IsProtected(r); !p {
			f.anchors = append(f.anchors, r)
		}
	}

	if f.deny, err = buildDeny(ctx, &cfg, f.fold); err != nil {
		return nil, err
	}
	f.creds = buildCredentials(ctx, &cfg, f.fold)

	// The swallowed-root rule judges against every root the fence holds before any
	// advertiser is admitted, so the order of the advertisers cannot change a verdict.
	fenceRoots := declaredRoots
	var admitted []string
	for _, a := range []struct {
		kind Advertiser
		spec AdvertisedSpec
	}{{AdvertiserScratchpad, cfg.Scratchpad}, {AdvertiserMemory, cfg.MemoryDir}} {
		if a.spec.Path == "" {
			continue
		}
		v := f.admitAdvertised(ctx, a.kind, a.spec, fenceRoots, notify)
		f.advertised = append(f.advertised, v)
		if v.Admitted {
			admitted = append(admitted, v.Canonical)
		}
	}

	f.writeRoots = appendNew(appendNew(f.writeRoots, writeExtra...), admitted...)
	f.readRoots = appendNew(append([]string(nil), f.writeRoots...), readExtra...)
	return f, nil
}

// resolveDeclared canonicalizes a declared root spelling once, announcing a skip.
func (f *Fence) resolveDeclared(ctx context.Context, spelled, seat string, notify func(sema.Notice)) (string, bool) {
	if a, seen := f.declared[spelled]; seen {
		return a.canonical, a.ok
	}
	abs := spelled
	if !strings.HasPrefix(abs, "/") {
		abs = f.root + "/" + spelled
	}
	c, exists, err := Canonicalize(ctx, f.env, abs)
	reason := ""
	switch {
	case spelled == "":
		reason = "it is empty"
	case err != nil:
		reason = "it cannot be resolved safely (" + err.Error() + ")"
	case !exists:
		reason = "it does not exist"
	default:
		if fi, err := f.env.Lstat(ctx, c); err != nil || !fi.IsDir() {
			reason = "it is not a directory"
		}
	}
	if reason != "" {
		f.declared[spelled] = declaredAnswer{}
		notify(sema.Notice{
			Code:    CodeRootSkipped,
			Message: "the directory " + spelled + " in " + seat + " was skipped: " + reason,
			Detail:  map[string]any{"path": spelled, "seat": seat, "reason": reason},
		})
		return "", false
	}
	f.declared[spelled] = declaredAnswer{canonical: c, ok: true}
	return c, true
}

func appendNew(list []string, add ...string) []string {
	for _, a := range add {
		dup := false
		for _, l := range list {
			if l == a {
				dup = true
				break
			}
		}
		if !dup {
			list = append(list, a)
		}
	}
	return list
}

// DeclaredRoot returns the one answer New got for a declared root spelling (an entry
// of AdditionalDirectories or AdditionalReadDirectories, as spelled there): its
// canonical path, or ok=false when it was skipped or never declared.
func (f *Fence) DeclaredRoot(spelled string) (canonical string, ok bool) {
	a := f.declared[spelled]
	return a.canonical, a.ok
}

// Root is the canonical task root.
func (f *Fence) Root() string { return f.root }

// WriteRoots are the canonical write roots: the task root first, then the additional
// directories, then the admitted advertised directories.
func (f *Fence) WriteRoots() []string { return append([]string(nil), f.writeRoots...) }

// ReadRoots are the canonical read roots: the write roots, then the read-only ones.
func (f *Fence) ReadRoots() []string { return append([]string(nil), f.readRoots...) }

// ReadFace is the resolved read face.
func (f *Fence) ReadFace() Face { return f.readFace }

// WriteFace is the resolved write face.
func (f *Fence) WriteFace() Face { return f.writeFace }

// Face is the resolved face of kind.
func (f *Fence) Face(kind Kind) Face {
	if kind == Write {
		return f.writeFace
	}
	return f.readFace
}

// Env is the env the fence resolves through.
func (f *Fence) Env() env.ExecutionEnv { return f.env }

// Abs makes spelled absolute against the task root and cleans it lexically. It is for
// display; Resolve does not clean lexically, because "link/.." means the parent of the
// link's target.
func (f *Fence) Abs(spelled string) string {
	if filepath.IsAbs(spelled) {
		return filepath.Clean(spelled)
	}
	return filepath.Join(f.root, spelled)
}

func (f *Fence) roots(kind Kind) []string {
	if kind == Write {
		return f.writeRoots
	}
	return f.readRoots
}

// Resolve canonicalizes spelled (absolute, or relative to the task root) through the
// env and judges it for kind: the deny set (under every face), then containment (only
// under the roots face), then, for a write, the protected set (which marks the Path
// instead of refusing). A refusal is a *sema.Error with code fs.path_unresolvable,
// fs.path_denied or fs.path_not_in_root, naming the path as spelled and, in its detail,
// the roots that may be used.
//
// Callers must open Path.Canonical, never spelled. The env opens the final component
// with O_NOFOLLOW, so a link swapped in there after Resolve is not followed.
func (f *Fence) Resolve(ctx context.Context, spelled string, kind Kind) (Path, error) {
	roots := f.roots(kind)
	if spelled == "" {
		return Path{}, sema.Errorf(CodeUnresolvable, "the path is empty; give a file path inside %s", strings.Join(roots, ", ")).
			With("path", spelled).With("roots", roots)
	}
	abs := spelled
	if !strings.HasPrefix(abs, "/") {
		abs = f.root + "/" + spelled
	}
	c, exists, err := Canonicalize(ctx, f.env, abs)
	if err != nil {
		return Path{}, sema.Errorf(CodeUnresolvable, "the path %q cannot be resolved safely (%w); use a path whose links all point at existing files inside %s", spelled, err, strings.Join(roots, ", ")).
			With("path", spelled).With("roots", roots)
	}
	if f.deny.denied(c) {
		return Path{}, sema.Errorf(CodeDenied, "the path %q is in a location the file tools never read or write; use a path inside %s", spelled, strings.Join(roots, ", ")).
			With("path", spelled).With("roots", roots)
	}
	if store := f.creds.holds(c, path.Clean(abs)); store != "" {
		return Path{}, f.credentialError(spelled, store, roots)
	}
	in := deepestRoot(roots, c)
	if in == "" && f.Face(kind) == FaceRoots {
		return Path{}, sema.Errorf(CodeNotInRoot, "the path %q is outside the %s roots; use a path inside %s", spelled, kind, strings.Join(roots, ", ")).
			With("path", spelled).With("resolved", c).With("roots", roots)
	}
	p := Path{Spelled: spelled, Canonical: c, Exists: exists, Root: in}
	if kind == Write {
		p.Protected, p.ProtectedReason = f.IsProtected(c)
	}
	return p, nil
}

// deepestRoot returns the longest of roots holding c, which must be canonical-shaped.
func deepestRoot(roots []string, c string) string {
	best := ""
	for _, r := range roots {
		if len(r) > len(best) && within(r, c) {
			best = r
		}
	}
	return best
}

// Inside reports whether the canonical path c lies in one of kind's roots. It does not
// consult the face: under the open face a path may be admitted while not Inside.
func (f *Fence) Inside(c string, kind Kind) bool {
	return isCanonicalShape(c) && deepestRoot(f.roots(kind), c) != ""
}

// Contains reports whether the canonical path p equals root or lies beneath it,
// comparing whole path components ("/a/b" does not contain "/a/bc"). Both must be
// canonical-shaped (absolute, no empty, "." or ".." component, no trailing slash); for
// anything else it answers false.
func Contains(root, p string) bool {
	if !isCanonicalShape(root) || !isCanonicalShape(p) {
		return false
	}
	return within(root, p)
}

// within is Contains for paths already known to be canonical-shaped (roots and the
// answers of Canonicalize).
func within(root, p string) bool {
	if root == p || root == "/" {
		return true
	}
	return len(p) > len(root) && p[len(root)] == '/' && p[:len(root)] == root
}

// isCanonicalShape reports whether p is absolute and clean: filepath.Clean(p) == p
// without allocating.
func isCanonicalShape(p string) bool {
	if p == "/" {
		return true
	}
	if len(p) < 2 || p[0] != '/' || p[len(p)-1] == '/' {
		return false
	}
	start := 1
	for i := 1; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		switch p[start:i] {
		case "", ".", "..":
			return false
		}
		start = i + 1
	}
	return true
}
