package files

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/tools"
)

// Stations 7 to 9 of the write lane, and the Annul calls of stations 6 and 8.

// annul calls a history Annul with its panics recovered, on a context that outlives the
// call's (a write that failed because the call was cancelled must still be retracted)
// but expires after AnnulWait.
func (l *lane) annul(ctx context.Context, annul func(context.Context, Proof), proof Proof) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.lc.annulWait())
	defer cancel()
	defer func() { _ = recover() }()
	annul(actx, proof)
}

// annulWithin runs annul and waits for it at most AnnulWait; an Annul that overruns
// keeps the file locked until it returns, so no later write of the path can interleave
// with the retraction.
func (l *lane) annulWithin(ctx context.Context, annul func(context.Context, Proof), proof Proof, held *heldLock) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.annul(ctx, annul, proof)
	}()
	t := time.NewTimer(l.lc.annulWait())
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		held.handOff(done)
	}
}

// errChanged is station 7's refusal when the file moved since station 3.
var errChanged = errors.New("changed since it was checked")

// write is station 7. touched reports whether env.WriteFile was called: an error
// before that (the re-check, a parent directory) wrote nothing to the file.
func (l *lane) write(ctx context.Context, key string, now current, data []byte) (touched bool, err error) {
	e := l.cfg.Env
	// Stations 4 to 6 may have waited on a person or a store; the file must still be
	// the one station 3 judged.
	fi, err := e.Lstat(ctx, key)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		if now.exists {
			return false, errChanged
		}
		if err := l.makeParents(ctx, key); err != nil {
			return false, err
		}
	case err != nil:
		return false, err
	case !now.exists || fi.Size != now.info.Size || !fi.ModTime.Equal(now.info.ModTime) || fi.Ino != now.info.Ino || fi.Mode != now.info.Mode:
		return false, errChanged
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the env panicked while writing: %v", r)
		}
	}()
	touched = true
	if now.buffered {
		return touched, l.writeBuffer(ctx, key, data)
	}
	return touched, e.WriteFile(ctx, key, data, newFilePerm)
}

// makeParents creates the missing directories above key, top down. Each one is judged
// by the fence (under the write face in force) before it is made and re-resolved after,
// so a directory swapped for a link in between cannot carry the write out of the roots.
func (l *lane) makeParents(ctx context.Context, key string) error {
	e := l.cfg.Env
	var missing []string
	for d := filepath.Dir(key); ; d = filepath.Dir(d) {
		fi, err := e.Lstat(ctx, d)
		if err == nil {
			if !fi.IsDir() {
				return &iofs.PathError{Op: "mkdir", Path: d, Err: syscall.ENOTDIR}
			}
			break
		}
		if !errors.Is(err, iofs.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		d := missing[i]
		if p, err := l.cfg.Fence.Resolve(ctx, d, fence.Write); err != nil {
			return err
		} else if p.Canonical != d {
			return sema.Errorf(fence.CodeUnresolvable, "the directory %s changed before it could be created", d)
		}
		if err := e.Mkdir(ctx, d, newDirPerm); err != nil && !errors.Is(err, iofs.ErrExist) {
			return err
		}
		p, err := l.cfg.Fence.Resolve(ctx, d, fence.Write)
		if err != nil {
			return err
		}
		if p.Canonical != d || !p.Exists {
			return sema.Errorf(fence.CodeUnresolvable, "the directory %s changed while it was being created", d)
		}
	}
	return nil
}

// failed is stations 8 and 9 for a write that did not succeed.
func (l *lane) failed(ctx context.Context, m mutation, key string, err error, touched bool, annul func(context.Context, Proof), held *heldLock) tools.Result {
	proof := ProofProven
	if touched {
		proof = proofOf(err)
	}
	if annul != nil {
		l.annulWithin(ctx, annul, proof, held)
	}
	var res tools.Result
	switch {
	case !touched && ctx.Err() != nil:
		res = writeCancelled(m.spelled)
	case errors.Is(err, errChanged):
		res = tools.Fail(CodeChangedSinceRead, "%s changed while the write was being approved; nothing was written. Read it again, then retry.", m.spelled)
	case sema.CodeOf(err) != "":
		res = tools.FromError(err, CodeWriteFailed)
	case proof == ProofProven:
		res = tools.Fail(CodeWriteFailed, "Writing %s failed (%s); nothing was written.", m.spelled, describeErr(err))
	default:
		res = tools.Fail(CodeWriteFailed, "Writing %s failed (%s); the file may be partly changed. Read it before editing it again.", m.spelled, describeErr(err))
	}
	if proof == ProofVerify {
		l.observe(m, key)
		res.EditedFile = key
	}
	return res
}

// describeErr names the errno first, so the model (and a person reading the
// transcript) sees ENOSPC rather than only "no space left on device".
func describeErr(err error) string {
	if n := errnoName(err); n != "" {
		return n + ": " + err.Error()
	}
	return err.Error()
}

// recordWritten points the read-state at the bytes just written, so a second edit of
// the same file in this session needs no new read.
func (l *lane) recordWritten(ctx context.Context, key string, size int64, hash string) {
	rec := ReadRecord{Size: size, Hash: hash}
	if fi, err := l.cfg.Env.Lstat(context.WithoutCancel(ctx), key); err == nil {
		rec.ModTime = fi.ModTime
	}
	l.cfg.ReadState.Record(key, rec)
}

// observe is station 9: the FileEdited hook on its own goroutine, not awaited, its
// panic recovered.
func (l *lane) observe(m mutation, key string) {
	h := l.lc.Hooks.FileEdited
	if h == nil {
		return
	}
	n := FileEditedNotice{Tool: m.hook, Path: m.spelled, Key: key}
	l.observers.Add(1)
	go func() {
		defer l.observers.Done()
		defer func() { _ = recover() }()
		h(n)
	}()
}
