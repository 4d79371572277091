package history

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"path/filepath"
	"strings"
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
	// SetAfter records on the record with id what the agent left at its key after a write
	// that succeeded: the hex sha256 of the bytes, or AfterAbsent. A later call replaces
	// it (the last write wins); an after that is neither is refused with
	// CodeAfterInvalid. Setting it on a record that is gone is not an error.
	SetAfter(ctx context.Context, id int64, after string) error
	// SetPending records on the record with id what a write about to begin will leave at
	// its key (the hex sha256 of its bytes, or AfterAbsent), before the write begins: a
	// run killed between the write and its SetAfter leaves the file holding bytes the
	// record still names as the agent's. SetAfter clears it; a later SetPending replaces
	// it. An after that is neither a sha256 nor AfterAbsent is refused with
	// CodeAfterInvalid. Setting it on a record that is gone is not an error.
	SetPending(ctx context.Context, id int64, after string) error
	// MintRewind mints a rewind boundary in scope (see KindRewind) — it becomes the
	// scope's newest — and stores saved at it, in one transaction: either the boundary
	// and every record exist afterwards, or nothing does. Each saved entry is a file's
	// state before the rewind changes it, as Insert takes one (Scope is set to scope; a
	// key given twice keeps its first entry), with After set to what the rewind is about
	// to leave there (an After that is neither empty, a sha256 nor AfterAbsent is refused
	// with CodeAfterInvalid). It returns the boundary and the records, a repeated key
	// dropped, in the order given.
	MintRewind(ctx context.Context, scope string, turn int, saved []Saved) (Boundary, []Record, error)
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

// blobsReader is a Store that reads many blobs for less than one Blob call each costs
// (the SQLite store: one query for hundreds). A rewind reads the pre-images of all the
// files it restores through it when the store is one. The answer holds each sum the
// store has, once; a sum it lacks is left out.
type blobsReader interface {
	blobsOf(ctx context.Context, sums []string) (map[string][]byte, error)
}

var (
	_ blobsReader = (*SQLite)(nil)
	_ blobsReader = (*Memory)(nil)
)

// Boundary is the start of a turn, the point a rewind returns to.
type Boundary struct {
	// ID orders boundaries across the store: a later mint has a larger ID.
	ID int64 `json:"id"`
	// Scope is the history scope the boundary belongs to (see ResolveScope): a
	// session's ID, or its delegating root's.
	Scope string `json:"scope"`
	// Turn is the turn that starts here, numbered from 1; for a rewind boundary, the
	// turn that rewind returned to (0: the scope's beginning, and an undo).
	Turn int `json:"turn"`
	// Kind says what minted the boundary: KindTurn or KindRewind.
	Kind BoundaryKind `json:"kind"`
	// CreatedAt is when the boundary was minted, in UTC.
	CreatedAt time.Time `json:"created_at"`
}

// BoundaryKind says what minted a boundary.
type BoundaryKind string

const (
	// KindTurn is a turn's start, the point a rewind returns to.
	KindTurn BoundaryKind = "turn"
	// KindRewind is a rewind: its records hold the files as they were just before the
	// rewind changed them, so an undo can return them there. A rewind to a turn never
	// stops at one.
	KindRewind BoundaryKind = "rewind"
)

// Saved is one file's state before a rewind changes it (see Store.MintRewind).
type Saved struct {
	// Record holds Key, Existed and Mode, as Insert reads them, and After: what the
	// rewind will leave at Key.
	Record Record
	// Content is the file's bytes; ignored when !Record.Existed.
	Content []byte
}

// AfterAbsent is the Record.After of a file the agent (or a rewind) left absent.
const AfterAbsent = "absent"

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
	// empty when !Existed, and when Lost.
	Sum string `json:"sum,omitempty"`
	// Lost marks a file that existed but whose pre-image's bytes were not kept — over
	// the size cap of a shell command's snapshot, or lost with the snapshot of a command
	// whose process died — so a rewind cannot restore it, and says so (StatusFailed)
	// rather than leave it out. Mode and Size are kept; Insert stores no blob for it. The
	// stores read it back as Existed with no Sum.
	Lost bool `json:"lost,omitempty"`
	// Mode is the pre-image's permission bits, with setuid, setgid and sticky; zero
	// when !Existed.
	Mode fs.FileMode `json:"mode,omitempty"`
	// Size is the pre-image's length in bytes; zero when !Existed.
	Size int64 `json:"size,omitempty"`
	// After is what the agent last left at Key during this boundary, set after each
	// write that succeeded (SetAfter): the hex sha256 of the bytes, or AfterAbsent. Empty
	// means unknown — no write succeeded yet, or its outcome was ambiguous — so a rewind
	// cannot tell the agent's bytes from someone else's there.
	After string `json:"after,omitempty"`
	// Pending is what a write begun after the last SetAfter was to leave at Key
	// (SetPending): its outcome is unknown — the run may have died before it could
	// confirm it — so the file may hold these bytes, the agent's, or After's.
	Pending string `json:"pending,omitempty"`
	// CreatedAt is when the record was inserted, in UTC.
	CreatedAt time.Time `json:"created_at"`
}

// Codes of the errors this package returns.
const (
	CodeRecordFailed       = "history.record_failed"       // a pre-image could not be recorded durably
	CodeNotAFile           = "history.not_a_file"          // the path is a directory, a link or a device
	CodeKeyInvalid         = "history.key_invalid"         // the key is not an absolute clean path
	CodeScopeInvalid       = "history.scope_invalid"       // an empty scope
	CodeTurnInvalid        = "history.turn_invalid"        // a boundary turn below 1 (and the runner's rewind to a turn the session never had)
	CodeBoundaryNotFound   = "history.boundary_not_found"  // Rewind to a turn the scope never minted
	CodePartialRestore     = "history.partial_restore"     // Rewind could not restore every file
	CodeChildCannotRewind  = "history.child_cannot_rewind" // a delegated child asked to rewind
	CodeProofInvalid       = "history.proof_invalid"       // Annul with a proof that is not proven or verify
	CodeBlobMissing        = "history.blob_missing"        // a record's blob is not in the store
	CodeCarryConflict      = "history.carry_conflict"      // CarryFork into a scope that already records
	CodeAfterInvalid       = "history.after_invalid"       // SetAfter with neither a sha256 nor AfterAbsent
	CodeNothingToUndo      = "history.nothing_to_undo"     // Undo in a scope that was never rewound
	CodeSaveFailed         = "history.save_failed"         // a rewind could not save the files' current state first, so it changed nothing
	CodeFilesystemMismatch = "history.filesystem_mismatch" // a rewind on another filesystem than the one the history was recorded on
)

// The validation and refusals every store shares, exported for the stores outside this
// package (pgstore): whichever store a deployment runs, the same input is refused with
// the same code and the same sentence, which the conformance suite (historytest) checks.

// ModeBits are the mode bits a record keeps and a restore puts back.
const ModeBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// SumOf is the hex sha256 of b: the name of its blob.
func SumOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func now() time.Time { return time.Now().Round(0).UTC() }

// CheckScope refuses an empty scope.
func CheckScope(scope string) error {
	if scope == "" {
		return sema.Errorf(CodeScopeInvalid, "a history scope (the recording session's id) is required")
	}
	return nil
}

// CheckKey refuses a key that is not an absolute, clean path.
func CheckKey(key string) error {
	if !filepath.IsAbs(key) || filepath.Clean(key) != key {
		return sema.Errorf(CodeKeyInvalid, "history keys are canonical absolute paths; canonicalize %q through the fence first", key).With("key", key)
	}
	return nil
}

// CheckTurn refuses a turn below 1.
func CheckTurn(turn int) error {
	if turn < 1 {
		return sema.Errorf(CodeTurnInvalid, "turns are numbered from 1; cannot mint a boundary for turn %d", turn).With("turn", turn)
	}
	return nil
}

// CheckAfter refuses an after-image that is neither a lowercase hex sha256 nor AfterAbsent.
func CheckAfter(after string) error {
	if after == AfterAbsent {
		return nil
	}
	if len(after) == sha256.Size*2 {
		if _, err := hex.DecodeString(after); err == nil && strings.ToLower(after) == after {
			return nil
		}
	}
	return sema.Errorf(CodeAfterInvalid, "an after-image is a lowercase hex sha256 or %q, not %q", AfterAbsent, after).With("after", after)
}

// PrepareSaved validates a rewind's saved states before anything is stored, and drops a
// key given twice (the first entry is the state the file had).
func PrepareSaved(scope string, turn int, saved []Saved) ([]Saved, error) {
	if err := CheckScope(scope); err != nil {
		return nil, err
	}
	if turn < 0 {
		return nil, CheckTurn(turn)
	}
	out := make([]Saved, 0, len(saved))
	seen := map[string]bool{}
	for _, sv := range saved {
		sv.Record.Scope = scope
		rec, err := PrepareInsert(sv.Record, sv.Content)
		if err != nil {
			return nil, err
		}
		if sv.Record.After != "" {
			if err := CheckAfter(sv.Record.After); err != nil {
				return nil, err
			}
		}
		if seen[rec.Key] {
			continue
		}
		seen[rec.Key] = true
		rec.After = sv.Record.After
		if !rec.Existed {
			sv.Content = nil
		}
		out = append(out, Saved{Record: rec, Content: sv.Content})
	}
	return out, nil
}

// BlobMissing is the refusal of a blob sum the store does not hold.
func BlobMissing(s string) error {
	return sema.Errorf(CodeBlobMissing, "the history store has no blob %s; the store was changed outside sema", s).With("sum", s)
}

// CarryConflict is CarryFork's refusal of a target scope that already records.
func CarryConflict(from, to string) error {
	return sema.Errorf(CodeCarryConflict, "scope %q already records history of its own; carry a fork's history before its first boundary", to).
		With("from", from).With("to", to)
}
