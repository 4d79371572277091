package history

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"syscall"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
)

// Files is a history Store bound to the env whose files it records and restores. It
// holds no state of its own; make one per run (or share one across runs of one env).
type Files struct {
	store Store
	env   env.ExecutionEnv
}

// NewFiles binds store to e.
func NewFiles(store Store, e env.ExecutionEnv) *Files { return &Files{store: store, env: e} }

// Proof says how Annul may retract a record after the write it protected failed.
type Proof string

const (
	// ProofProven: the write's error guarantees nothing was written (EACCES, EROFS, …);
	// the record is dropped outright.
	ProofProven Proof = "proven"
	// ProofVerify: the write failed ambiguously; the record is dropped only if the file
	// still holds its recorded pre-image (or is still absent).
	ProofVerify Proof = "verify"
)

// Track records the pre-image of the file at key (a canonical absolute path) before its
// first change after the scope's newest boundary. It returns the record in force and
// minted=true when this call made it; a later Track of the same key in the same boundary
// returns the first record and minted=false without reading the file. A missing file
// (or one under a parent that is not a directory) is recorded as existed-not.
//
// Track fails — and the caller must not write — when the pre-image cannot be recorded
// durably: the file cannot be read, it is not a regular file (CodeNotAFile), or the store
// fails (CodeRecordFailed).
func (f *Files) Track(ctx context.Context, scope, key string) (Record, bool, error) {
	if err := CheckScope(scope); err != nil {
		return Record{}, false, err
	}
	if err := CheckKey(key); err != nil {
		return Record{}, false, err
	}
	if rec, ok, err := f.store.Lookup(ctx, scope, key); err != nil {
		return Record{}, false, recordFailed(key, err)
	} else if ok {
		return rec, false, nil
	}
	rec := Record{Scope: scope, Key: key}
	var content []byte
	fi, err := f.env.Lstat(ctx, key)
	switch {
	case absent(err):
	case err != nil:
		return Record{}, false, recordFailed(key, err)
	case !fi.IsRegular():
		return Record{}, false, sema.Errorf(CodeNotAFile, "%s is a %s, not a regular file; file history records regular files only", key, kindOf(fi)).With("key", key)
	default:
		if content, err = f.env.ReadFile(ctx, key); err != nil {
			return Record{}, false, recordFailed(key, err)
		}
		rec.Existed, rec.Mode = true, fi.Mode&ModeBits
	}
	got, minted, err := f.store.Insert(ctx, rec, content)
	if err != nil {
		return Record{}, false, recordFailed(key, err)
	}
	return got, minted, nil
}

// Wrote records that a write of rec's file succeeded and left data there: its sha256
// becomes rec's After, what a rewind compares the file with to tell the agent's bytes
// from anyone else's. Call it after every write that succeeded, with the record Track
// returned for it (minted or not); never after a write that failed, whose outcome is
// unknown — the file then keeps its last known After (and the Pending of Intend), and a
// rewind that finds other bytes there counts them as someone else's.
func (f *Files) Wrote(ctx context.Context, rec Record, data []byte) error {
	return f.store.SetAfter(ctx, rec.ID, SumOf(data))
}

// Intend records, before a write of rec's file begins, the sha256 of the bytes it is
// about to write as the record's Pending. A run killed after the write landed and before
// Wrote then leaves a file a rewind still knows as the agent's; one killed before it
// landed leaves the bytes it knew already. Call it right before the write, with the
// record Track returned for it; a failure leaves the write unrecorded, as a Wrote that
// failed does.
func (f *Files) Intend(ctx context.Context, rec Record, data []byte) error {
	return f.store.SetPending(ctx, rec.ID, SumOf(data))
}

// Annul retracts a record minted by Track whose write then failed, so a failed edit
// leaves no trace in history. With ProofProven the record is deleted; with ProofVerify
// the file is read again and the record deleted only if it still holds the pre-image
// (the same bytes, or still absent for an existed-not record) — otherwise the failed
// write may have changed it and the record must stay to undo that. It reports whether
// the record was deleted. Annul only ever deletes rec; call it only with a record this
// edit minted.
func (f *Files) Annul(ctx context.Context, rec Record, proof Proof) (bool, error) {
	switch proof {
	case ProofProven:
	case ProofVerify:
		same, err := f.holdsPreImage(ctx, rec)
		if err != nil || !same {
			// A file that cannot be read proves nothing: keep the record.
			return false, nil
		}
	default:
		return false, sema.Errorf(CodeProofInvalid, "annul proof %q is not %q or %q", proof, ProofProven, ProofVerify).With("proof", string(proof))
	}
	if err := f.store.Delete(ctx, rec.ID); err != nil {
		return false, err
	}
	return true, nil
}

func (f *Files) holdsPreImage(ctx context.Context, rec Record) (bool, error) {
	if !rec.Existed {
		_, err := f.env.Lstat(ctx, rec.Key)
		if absent(err) {
			return true, nil
		}
		return false, err
	}
	data, err := f.env.ReadFile(ctx, rec.Key)
	if err != nil {
		return false, err
	}
	return SumOf(data) == rec.Sum, nil
}

// absent reports whether err says the path does not exist: no such file, or a parent
// that is not a directory (so nothing can be there).
func absent(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

func kindOf(fi env.FileInfo) string {
	switch {
	case fi.IsDir():
		return "directory"
	case fi.IsSymlink():
		return "symbolic link"
	case fi.IsRegular():
		return "regular file"
	}
	return "special file"
}

// recordFailed wraps a failure to record in CodeRecordFailed; a refusal of this package
// (a bad key, a blob missing) keeps its own code. The cause stays reachable with
// errors.Is (a cancelled context, an errno).
func recordFailed(key string, err error) error {
	var se *sema.Error
	if errors.As(err, &se) && strings.HasPrefix(se.Code, "history.") {
		return err
	}
	return sema.Errorf(CodeRecordFailed, "could not record the pre-image of %s, so it cannot be written unprotected: %w", key, err).With("key", key)
}
