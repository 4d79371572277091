package history

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/sema-agent/sema"
)

// Store keeps boundaries, first-touch records and their blobs. Every method is safe for
// concurrent use, and one that fails changes nothing. The method docs are the contract
// that package historytest checks; a new implementation is done when it passes there.
type Store interface {
	// MintBoundary records the start of turn (≥ 1) in scope; it becomes the scope's
	// newest boundary. Minting a turn again (a branch restarted there) adds a boundary.
	MintBoundary(ctx context.Context, scope string, turn int) (Boundary, error)
	// Boundaries lists the scope's boundaries in mint order.
	Boundaries(ctx context.Context, scope string) ([]Boundary, error)
	// Lookup returns the record of key at the scope's newest boundary, if there is one.
	Lookup(ctx context.Context, scope, key string) (Record, bool, error)
	// Insert stores rec (Scope, Key, Existed, Mode, Size; Sum is computed from content)
	// at the scope's newest boundary, in one transaction with its blob — unless that
	// boundary already has a record of the key: then it returns that one and false.
	Insert(ctx context.Context, rec Record, content []byte) (Record, bool, error)
	// Records returns the scope's records at boundaries whose ID is ≥ from, ordered by
	// boundary, then by ID.
	Records(ctx context.Context, scope string, from int64) ([]Record, error)
	// Blob returns the bytes stored under sum.
	Blob(ctx context.Context, sum string) ([]byte, error)
	// Delete removes a record (an annulled first touch), and its blob if no record
	// uses it any more. Deleting a record that is gone is not an error.
	Delete(ctx context.Context, id int64) error
	// CarryFork copies the boundaries and records of scope from into scope to, once:
	// a second carry into to is a no-op. It returns how many records were copied.
	CarryFork(ctx context.Context, from, to string) (int, error)
	// Forget deletes every boundary and record of scope and the blobs no one uses. It
	// also forgets that a fork was carried into scope, so a later CarryFork into it
	// copies again, as into any new scope.
	Forget(ctx context.Context, scope string) error
	// Close releases what the store holds. Calls after Close may fail. A store built on
	// a database it did not open (NewSQLite) leaves that database open for its owner.
	Close() error
}

// Boundary is the start of a turn, the point a rewind returns to.
type Boundary struct {
	// ID orders boundaries across the store: a later mint has a larger ID.
	ID int64 `json:"id"`
	// Scope is the history scope the boundary belongs to (see ResolveScope): a
	// session's ID, or its delegating root's.
	Scope string `json:"scope"`
	// Turn is the turn that starts here, numbered from 1.
	Turn int `json:"turn"`
	// CreatedAt is when the boundary was minted, in UTC.
	CreatedAt time.Time `json:"created_at"`
}

// Record is a file's pre-image before its first change after a boundary.
type Record struct {
	// ID identifies the record in its store; later records have larger IDs. The store
	// assigns it on Insert.
	ID int64 `json:"id"`
	// Scope is the history scope the record belongs to.
	Scope string `json:"scope"`
	// Boundary is the ID of the boundary the record belongs to (0: before the scope's
	// first boundary). The store assigns it on Insert.
	Boundary int64 `json:"boundary"`
	// Turn is that boundary's turn (0 with Boundary 0).
	Turn int `json:"turn"`
	// Key is the canonical path of the file.
	Key string `json:"key"`
	// Existed is false when the file did not exist: its pre-image is "absent".
	Existed bool `json:"existed"`
	// Sum is the lowercase hex sha256 of the pre-image's bytes, the key of its blob;
	// empty when !Existed.
	Sum string `json:"sum,omitempty"`
	// Mode is the pre-image's permission bits, with setuid, setgid and sticky; zero
	// when !Existed.
	Mode fs.FileMode `json:"mode,omitempty"`
	// Size is the pre-image's length in bytes; zero when !Existed.
	Size int64 `json:"size,omitempty"`
	// CreatedAt is when the record was inserted, in UTC.
	CreatedAt time.Time `json:"created_at"`
}

// Codes of the errors this package returns.
const (
	CodeRecordFailed      = "history.record_failed"       // a pre-image could not be recorded durably
	CodeNotAFile          = "history.not_a_file"          // the path is a directory, a link or a device
	CodeKeyInvalid        = "history.key_invalid"         // the key is not an absolute clean path
	CodeScopeInvalid      = "history.scope_invalid"       // an empty scope
	CodeTurnInvalid       = "history.turn_invalid"        // a boundary turn below 1 (and the runner's rewind to a turn the session never had)
	CodeBoundaryNotFound  = "history.boundary_not_found"  // Rewind to a turn the scope never minted
	CodePartialRestore    = "history.partial_restore"     // Rewind could not restore every file
	CodeChildCannotRewind = "history.child_cannot_rewind" // a delegated child asked to rewind
	CodeProofInvalid      = "history.proof_invalid"       // Annul with a proof that is not proven or verify
	CodeBlobMissing       = "history.blob_missing"        // a record's blob is not in the store
	CodeCarryConflict     = "history.carry_conflict"      // CarryFork into a scope that already records
)

// modeBits are the mode bits a record keeps and a restore puts back.
const modeBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func now() time.Time { return time.Now().Round(0).UTC() }

func checkScope(scope string) error {
	if scope == "" {
		return sema.Errorf(CodeScopeInvalid, "a history scope (the recording session's id) is required")
	}
	return nil
}

func checkKey(key string) error {
	if !filepath.IsAbs(key) || filepath.Clean(key) != key {
		return sema.Errorf(CodeKeyInvalid, "history keys are canonical absolute paths; canonicalize %q through the fence first", key).With("key", key)
	}
	return nil
}

func checkTurn(turn int) error {
	if turn < 1 {
		return sema.Errorf(CodeTurnInvalid, "turns are numbered from 1; cannot mint a boundary for turn %d", turn).With("turn", turn)
	}
	return nil
}

func blobMissing(s string) error {
	return sema.Errorf(CodeBlobMissing, "the history store has no blob %s; the store was changed outside sema", s).With("sum", s)
}

func carryConflict(from, to string) error {
	return sema.Errorf(CodeCarryConflict, "scope %q already records history of its own; carry a fork's history before its first boundary", to).
		With("from", from).With("to", to)
}
