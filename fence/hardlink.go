package fence

import (
	"regexp"
	"sync"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
)

// CodeHardLink refuses to read a regular file that has more than one hard link. The
// fence judges paths, and a hard link is the same file under another name, which may
// lie outside the roots or in the deny set: its content cannot be placed.
const CodeHardLink = "fs.hardlink"

// gitObjectFile matches the files of a git object store: git hard-links them when it
// clones a local repository, so their link count says nothing about a file elsewhere.
var gitObjectFile = sync.OnceValue(func() *regexp.Regexp {
	// Compiled on first use: its bounded repeats make it costly to compile at every
	// start of the process.
	return regexp.MustCompile(`/\.git/objects/(?:[0-9a-f]{2}/[0-9a-f]{38,62}|pack/pack-[0-9a-f]{40,64}\.(?:pack|idx|rev|bitmap|mtimes))$`)
})

// HardLinked reports whether fi, the facts of the file at the canonical path, describe a
// regular file with another name: more than one link, and not a file of a git object
// store. An env that does not report link counts (Nlink 0) reports none.
func HardLinked(canonical string, fi env.FileInfo) bool {
	return fi.IsRegular() && fi.Nlink > 1 && !gitObjectFile().MatchString(canonical)
}

// HardLinkError is the CodeHardLink refusal for the path as the caller spelled it; the
// sentence says what to do instead.
func HardLinkError(spelled string) *sema.Error {
	return sema.Errorf(CodeHardLink, "%s has more than one hard link, so the same file may also live outside the workspace under another name, and it is not read; if it belongs to the workspace, copy it (cp FILE COPY) and read the copy, or ask the user", spelled).
		With("path", spelled)
}
