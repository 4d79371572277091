package fence

import (
	"context"
	"errors"
	"io/fs"
	"strings"

	"github.com/sema-agent/sema"
)

// Advertiser names who advertises a writable directory to the model.
type Advertiser string

const (
	// AdvertiserScratchpad is the deployment's scratchpad, taught by the environment
	// section of the system prompt. The fence creates it when it is missing.
	AdvertiserScratchpad Advertiser = "scratchpad"
	// AdvertiserMemory is the memory engine's directory, taught by the memory
	// instruction. The memory engine creates it; when it is missing it is skipped.
	AdvertiserMemory Advertiser = "memory"
)

// AdvertisedSpec declares one directory the prompt would advertise as writable.
type AdvertisedSpec struct {
	// Path is the directory as the advertisement spells it; absolute. Empty: nothing is
	// advertised.
	Path string
	// ExpectCanonical is the canonical spelling the advertiser's own gates key on, when
	// it has one. If the fence resolves Path to a different canonical path, writes would
	// be admitted where those gates never look, so the directory is skipped instead.
	ExpectCanonical string
}

// AdvertisedDir is the verdict on one advertised directory.
type AdvertisedDir struct {
	// Kind is who advertises the directory.
	Kind Advertiser
	// Path is the directory as advertised.
	Path string
	// Canonical is its canonical path when it resolved (also for some skips).
	Canonical string
	// Admitted reports that the directory is a write root; only then may the prompt
	// advertise it.
	Admitted bool
	// Reason is the skip reason (one of the Skip* words) when not admitted.
	Reason string
	// Created reports that the fence materialized the directory (scratchpad only).
	Created bool
}

// Skip reasons of an advertised directory, carried in AdvertisedDir.Reason and in the
// detail of the fence.advertised_dir_skipped notice.
const (
	// SkipNotAsked is VerdictOf's answer for an advertiser that declared no directory;
	// no notice is sent for it.
	SkipNotAsked = "not_asked"
	// SkipNotAbsolute: the advertised path is not absolute.
	SkipNotAbsolute = "not_absolute"
	// SkipUnresolvable: the path cannot be canonicalized safely.
	SkipUnresolvable = "unresolvable"
	// SkipNotFound: the directory does not exist and its advertiser is not the
	// scratchpad, the only one the fence creates.
	SkipNotFound = "not_found"
	// SkipNotDirectory: the path resolves to something that is not a directory.
	SkipNotDirectory = "not_directory"
	// SkipCanonicalMismatch: the path resolves somewhere other than
	// AdvertisedSpec.ExpectCanonical, where the advertiser's own gates look.
	SkipCanonicalMismatch = "canonical_mismatch"
	// SkipSwallowsRoot: the directory equals or contains a root, so admitting it would
	// widen the write band over the whole root.
	SkipSwallowsRoot = "swallows_root"
	// SkipDenied: the directory is in the deny set.
	SkipDenied = "denied"
	// SkipProtected: the directory is a protected path (a .git directory, say).
	SkipProtected = "protected"
	// SkipMaterializeFailed: the fence tried to create the scratchpad and could not, or
	// could not prove that the directory and its marker file are the ones it created.
	SkipMaterializeFailed = "materialize_failed"
)

// CodeAdvertisedDirSkipped is the notice announcing an advertised directory the fence
// did not admit; the prompt must not advertise it.
const CodeAdvertisedDirSkipped = "fence.advertised_dir_skipped"

// ScratchpadMarker is the file the fence creates, exclusively, inside a scratchpad it
// materializes.
const ScratchpadMarker = ".sema-scratchpad"

// Swallows reports whether the directory dir equals or contains one of roots, and
// returns the first such root, to name in a refusal. A writable domain that contains a
// fence root is not a small exempt area but the whole workspace: admitting it would
// turn every ordinary write there from a question into an approval. Advertised
// directories and the write gate's exempt directories both apply this one rule. Both
// arguments must already be canonical; Swallows compares spellings, it does not
// resolve them.
func Swallows(dir string, roots []string) (string, bool) {
	for _, r := range roots {
		if Contains(dir, r) {
			return r, true
		}
	}
	return "", false
}

// admitAdvertised judges one advertised directory. fenceRoots are the canonical task
// root and declared roots. It never returns an error: every failure is a skip, announced
// through notify.
func (f *Fence) admitAdvertised(ctx context.Context, kind Advertiser, spec AdvertisedSpec, fenceRoots []string, notify func(sema.Notice)) AdvertisedDir {
	v := AdvertisedDir{Kind: kind, Path: spec.Path}
	skip := func(reason, why string, extra map[string]any) AdvertisedDir {
		v.Reason = reason
		detail := map[string]any{"advertiser": string(kind), "path": spec.Path, "reason": reason}
		if v.Canonical != "" {
			detail["canonical"] = v.Canonical
		}
		for k, x := range extra {
			detail[k] = x
		}
		notify(sema.Notice{
			Code:    CodeAdvertisedDirSkipped,
			Message: "the " + string(kind) + " directory " + spec.Path + " is not writable for the file tools and will not be advertised: " + why,
			Detail:  detail,
		})
		return v
	}
	if !strings.HasPrefix(spec.Path, "/") {
		return skip(SkipNotAbsolute, "it is not an absolute path", nil)
	}
	c, exists, err := Canonicalize(ctx, f.env, spec.Path)
	if err != nil {
		return skip(SkipUnresolvable, "it cannot be resolved safely ("+err.Error()+")", nil)
	}
	if !exists {
		if kind != AdvertiserScratchpad {
			return skip(SkipNotFound, "it does not exist", map[string]any{"projected": c})
		}
		if reason, why := f.materialize(ctx, c); reason != "" {
			return skip(reason, why, map[string]any{"projected": c})
		}
		v.Created = true
		c2, ok, err := Canonicalize(ctx, f.env, spec.Path)
		if err != nil || !ok || c2 != c {
			return skip(SkipMaterializeFailed, "after creating it, it no longer resolves to "+c, map[string]any{"projected": c})
		}
	}
	v.Canonical = c
	fi, err := f.env.Lstat(ctx, c)
	if err != nil || !fi.IsDir() {
		return skip(SkipNotDirectory, "it is not a directory", nil)
	}
	if spec.ExpectCanonical != "" && cleanAbs(spec.ExpectCanonical) != c {
		return skip(SkipCanonicalMismatch, "it resolves to "+c+", but its advertiser expects "+spec.ExpectCanonical,
			map[string]any{"expected": spec.ExpectCanonical})
	}
	if r, ok := Swallows(c, fenceRoots); ok {
		return skip(SkipSwallowsRoot, "it resolves to "+c+", which equals or contains the root "+r, map[string]any{"root": r})
	}
	if f.deny.denied(c) {
		return skip(SkipDenied, "it is in a location the file tools never touch", nil)
	}
	if p, why := f.IsProtected(c); p {
		return skip(SkipProtected, "it is protected ("+why+")", nil)
	}
	v.Admitted = true
	return v
}

// materialize creates the missing scratchpad at the projected canonical path c: the
// missing directories one Mkdir at a time, each under a parent re-resolved to exactly
// where it should be, then the marker with an exclusive create. Nothing is written
// through a file or link planted meanwhile: Mkdir and the exclusive create fail on
// anything already there, and the caller re-resolves the result. It returns a skip
// reason and sentence, or "" on success.
func (f *Fence) materialize(ctx context.Context, c string) (string, string) {
	// The deepest existing ancestor: walk up while the prefix does not exist.
	var missing []string
	dir := c
	for {
		pc, ok, err := Canonicalize(ctx, f.env, dir)
		if err != nil {
			return SkipMaterializeFailed, "its parent cannot be resolved safely (" + err.Error() + ")"
		}
		if ok {
			if pc != dir {
				return SkipMaterializeFailed, "its parent " + dir + " now resolves to " + pc
			}
			break
		}
		i := strings.LastIndexByte(dir, '/')
		missing = append(missing, dir[i+1:])
		dir = dir[:i]
		if dir == "" {
			dir = "/"
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		next := joinDir(dir, missing[i])
		if err := f.env.Mkdir(ctx, next, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return SkipMaterializeFailed, "it could not be created (" + err.Error() + ")"
		}
		// Whatever is there now (ours, or one created concurrently) must be a real
		// directory at exactly this canonical path.
		got, ok, err := Canonicalize(ctx, f.env, next)
		if err != nil || !ok || got != next {
			return SkipMaterializeFailed, "it could not be created where it was expected (" + next + ")"
		}
		fi, err := f.env.Lstat(ctx, next)
		if err != nil || !fi.IsDir() {
			return SkipMaterializeFailed, next + " is not a directory"
		}
		dir = next
	}
	marker := joinDir(c, ScratchpadMarker)
	if err := f.env.CreateExclusive(ctx, marker, []byte("This directory is a sema scratchpad.\n"), 0o600); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return SkipMaterializeFailed, "its marker " + marker + " was already there, so the directory was not created by this run"
		}
		return SkipMaterializeFailed, "its marker could not be created (" + err.Error() + ")"
	}
	fi, err := f.env.Lstat(ctx, marker)
	if err != nil || !fi.IsRegular() {
		return SkipMaterializeFailed, "its marker " + marker + " is not the file this run created"
	}
	return "", ""
}

// cleanAbs cleans an absolute slash path without resolving anything: repeated and
// trailing slashes and "." components are dropped. ".." is kept, so a spelling with
// ".." never equals a canonical path.
func cleanAbs(p string) string {
	var b strings.Builder
	for p != "" {
		var name string
		name, p = nextComponent(p)
		if name == "" || name == "." {
			continue
		}
		b.WriteByte('/')
		b.WriteString(name)
	}
	if b.Len() == 0 {
		return "/"
	}
	return b.String()
}

// Advertised returns the verdicts on the advertised directories, scratchpad first. The
// system prompt advertises only the admitted ones.
func (f *Fence) Advertised() []AdvertisedDir { return append([]AdvertisedDir(nil), f.advertised...) }

// VerdictOf reports whether the advertiser's directory was admitted and, when not, why
// (SkipNotAsked when it advertised nothing).
func (f *Fence) VerdictOf(kind Advertiser) (admitted bool, reason string) {
	for _, a := range f.advertised {
		if a.Kind == kind {
			return a.Admitted, a.Reason
		}
	}
	return false, SkipNotAsked
}
