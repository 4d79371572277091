package history

import (
	"crypto/rand"
	"fmt"
	"reflect"
	"strconv"
	"sync/atomic"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
)

// Lineage is what a delegating parent hands a child run about its file history: the
// scope it records into and the tree coordinates of that history. A root run has none.
type Lineage struct {
	// Scope is the scope the parent records into (its own session, or its root's).
	Scope string
	// Root is the parent's canonical history root.
	Root string
	// FS is the FilesystemIdentity of the tree Root is on.
	FS string
}

// ResolveScope returns the scope a run records into: the lineage's scope when the run
// works on the same tree as its delegating parent — the same canonical root AND the same
// filesystem identity — so a rewind of the root session also undoes its children's
// edits; otherwise (a root run, another root, another filesystem) the run's own session.
func ResolveScope(lineage *Lineage, root, fsID, sessionID string) string {
	if lineage != nil && lineage.Scope != "" && lineage.Root == root && lineage.FS == fsID {
		return lineage.Scope
	}
	return sessionID
}

// instancePrefix marks identities minted for envs that attest to no tree.
const instancePrefix = "instance:"

var (
	// processNonce keeps instance identities of two processes from ever matching.
	processNonce = rand.Text()[:10]
	instanceSeq  atomic.Uint64
)

// FilesystemIdentity names the filesystem an env is a view of, the second coordinate of
// tree identity, from what the env states about itself rather than from its paths:
//   - the host env (and every env declaring the host's identity, env.HostIdentity) is
//     the host's one tree, "host";
//   - an env that names its tree (env.ExecutionEnv.Identity, e.g. a remote sandbox's
//     provider and id) is that tree: two envs naming the same tree share history;
//   - an env that names nothing (an empty Identity) is attested to nothing, so it is its
//     own tree: a per-instance token that matches only the same env value in this
//     process (a child handed its parent's env object) and never a fresh env.
//
// A per-instance token is derived from the env's address, so it is meaningful only while
// the env is alive (a parent's env outlives its children's runs) and never outside the
// process; an env that is not a pointer has no instance to share and gets a fresh token
// on every call.
func FilesystemIdentity(e env.ExecutionEnv) string {
	if e == nil {
		return instancePrefix + processNonce + ":" + strconv.FormatUint(instanceSeq.Add(1), 10)
	}
	if id := e.Identity(); id != "" {
		return id
	}
	v := reflect.ValueOf(e)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Chan, reflect.UnsafePointer:
		return instancePrefix + processNonce + ":" + v.Type().String() + "@" + strconv.FormatUint(uint64(v.Pointer()), 16)
	}
	return instancePrefix + processNonce + ":" + strconv.FormatUint(instanceSeq.Add(1), 10)
}

// RefuseOtherFilesystem refuses to rewind, through an env whose FilesystemIdentity is
// current, the history of a session recorded on the tree whose identity is recorded: its
// records' paths and pre-images belong to that tree, and restoring them on another would
// write one tree's bytes into a different tree's files. It returns nil when both name the
// same tree, and a CodeFilesystemMismatch error otherwise; an empty recorded identity (a
// session that names no tree) names none, so it matches nothing.
func RefuseOtherFilesystem(sessionID, recorded, current string) error {
	if recorded != "" && recorded == current {
		return nil
	}
	return sema.Errorf(CodeFilesystemMismatch, "session %s's files live on another filesystem (%s) than this run's (%q); its file history cannot be rewound here",
		sessionID, orUnknown(recorded), current).
		With("session_id", sessionID).With("recorded", recorded).With("current", current)
}

func orUnknown(id string) string {
	if id == "" {
		return "not recorded"
	}
	return fmt.Sprintf("%q", id)
}
