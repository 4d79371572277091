package files

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	iofs "io/fs"
	"sync"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/tools"
)

// Codes of the write lane's answers. The lane also answers with the read tools' codes
// where the fact is the same (CodeFileNotFound, CodeIsDirectory, CodeNotRegular,
// CodeReadFailed, CodeFileTooLarge), with the fence's for refused paths, and with the
// permission seat's (tools.CodePermissionDenied, tools.CodePermissionFailed).
const (
	CodeNotRead            = "fs.not_read"             // an existing file was not read by this session
	CodeChangedSinceRead   = "fs.changed_since_read"   // the file changed after this session read it
	CodeEditNotFound       = "fs.edit_not_found"       // old_string does not occur
	CodeEditNotUnique      = "fs.edit_not_unique"      // old_string occurs more than once without replace_all
	CodeEditNoop           = "fs.edit_noop"            // the edit would change nothing
	CodeWriteFailed        = "fs.write_failed"         // the env write failed; the answer names the errno
	CodeBeforeWriteRefused = "fs.before_write_refused" // a BeforeWrite refusal that gave no code
	CodeBeforeWriteFailed  = "fs.before_write_failed"  // the BeforeWrite hook errored, panicked or hung
	CodeMemorySecret       = "fs.memory_secret"        // a secret on its way into a memory directory
	CodeHistoryUnprotected = "history.unprotected"     // TrackFileEdit refused: the edit could not be recorded for rewind
	CodeHistoryTrackFailed = "history.track_failed"    // TrackFileEdit errored, panicked or hung
)

// newFilePerm is the mode of a file the lane creates; newDirPerm of a parent directory
// it creates (the umask still narrows the latter).
const (
	newFilePerm = 0o644
	newDirPerm  = 0o755
)

// WriteTools returns Write, Edit, MultiEdit and NotebookEdit. They share one write
// lane: the one path every call of theirs takes to the disk. Its stations run in this
// order, and the first refusal ends the call with a structured tool error and nothing
// written:
//
//  1. argument checks — the tool's own, on its input; the checks that need the file's
//     text (old_string found, unique, cell present) run right after station 3, still
//     before any hook;
//  2. containment — Fence.Resolve with the write face (fs.* codes);
//  3. read-before-edit — an existing file may be changed only if this session read it
//     (fs.not_read) and its size and content hash still match that read
//     (fs.changed_since_read); a new file needs no read. With Config.Buffers, the
//     content of a text file is the editor's (an unsaved buffer the model read is what
//     is checked and edited);
//  4. the permission hook, with the final content and a diff;
//  5. BeforeWrite — the deployment's hook, then the engine's memory write-scan; an
//     error, a panic or a hook still running when ctx ends fails closed;
//  6. TrackFileEdit — the first-touch history record: a refusal answers
//     history.unprotected (the edit could not be undone, so it is not made), and an
//     error, a panic or a hang history.track_failed;
//  7. the env write: the file is re-checked against what station 3 saw, missing parent
//     directories are created one by one (each re-resolved through the fence), and
//     env.WriteFile replaces the file atomically — or, for text whose content station 3
//     took from Config.Buffers (and a new file), Buffers.WriteText hands it to the
//     editor, which saves it (fs.editor_write_failed when it does not confirm);
//  8. on a failed write, the Annul station 6 returned is called: ProofProven when the
//     errno guarantees nothing was written (EACCES, EPERM, EROFS, ENOENT, EEXIST,
//     EISDIR, ELOOP) or the write was never attempted, ProofVerify otherwise; the
//     write's error is the answer (fs.write_failed, naming the errno);
//  9. FileEdited — fired, not awaited, once per call whose write did not provably write
//     nothing: a success or an ambiguous failure.
//
// Stations 3 to 9 of one file run under a per-file lock shared by every lane of the
// process, so concurrent edits of a file by two sessions are serialized and the second
// one fails fs.changed_since_read instead of clobbering the first. A Config without a
// ReadState gets an empty one (every existing file then counts as unread), so a wiring
// mistake refuses edits rather than allowing blind ones.
func WriteTools(cfg Config, lc LaneConfig) []tools.Tool {
	l := newLane(cfg, lc)
	return []tools.Tool{&writeTool{l}, &editTool{l}, &multiEditTool{l}, &notebookEditTool{l}}
}

// lane is the write lane of one leg's tools.
type lane struct {
	cfg Config
	lc  LaneConfig
	// observers counts FileEdited calls in flight; nothing waits for it but tests.
	observers sync.WaitGroup
}

func newLane(cfg Config, lc LaneConfig) *lane {
	if cfg.ReadState == nil {
		cfg.ReadState = NewReadState()
	}
	return &lane{cfg: cfg, lc: lc}
}

// mutation is one call's way through the lane.
type mutation struct {
	tool    string // the tool the model called
	hook    string // the tool name the write-lane hooks receive (HookWrite, HookEdit, HookNotebookEdit)
	spelled string // the path as the model spelled it
	// apply turns the file as it is now into the final text, or refuses with an error
	// Result (the argument checks that need the file's text).
	apply func(now current) (change, *tools.Result)
}

// current is the file at station 3.
type current struct {
	exists bool
	text   string
	info   env.FileInfo
	// buffered says the text is the editor's (Config.Buffers), and the write goes
	// back through it.
	buffered bool
}

// change is what a mutation wants written.
type change struct {
	text string
	// summary is the first sentence of the answer.
	summary string
	// showDiff appends the diff snippet to the answer.
	showDiff bool
}

// heldLock is the per-file lock of one call. Ownership may be handed to a goroutine
// that must finish first (a hook that answered after the lane stopped waiting).
type heldLock struct {
	unlock func()
	handed bool
}

func (h *heldLock) release() {
	if !h.handed {
		h.unlock()
	}
}

// handOff transfers the lock to whoever closes done.
func (h *heldLock) handOff(done <-chan struct{}) {
	h.handed = true
	go func() {
		<-done
		h.unlock()
	}()
}

// run takes m through stations 2 to 9; the tool has done station 1's input checks.
func (l *lane) run(ctx context.Context, m mutation) tools.Result {
	if ctx.Err() != nil {
		return writeCancelled(m.spelled)
	}
	p, err := l.cfg.Fence.Resolve(ctx, m.spelled, fence.Write)
	if err != nil {
		if ctx.Err() != nil {
			return writeCancelled(m.spelled)
		}
		return tools.FromError(err, fence.CodeUnresolvable)
	}
	key := p.Canonical
	unlock, err := laneLocks.lock(ctx, lockKey(l.cfg.Env, key))
	if err != nil {
		return writeCancelled(m.spelled)
	}
	held := &heldLock{unlock: unlock}
	defer held.release()

	now, refusal := l.readBeforeEdit(ctx, m, key)
	if refusal != nil {
		return *refusal
	}
	ch, refusal := m.apply(now)
	if refusal != nil {
		return *refusal
	}
	var diff string
	if ch.showDiff || l.lc.Hooks.Permission != nil {
		diff = unifiedDiff(m.spelled, now.text, ch.text)
	}
	if r := l.askPermission(ctx, m, p, now.exists, ch.text, diff); r != nil {
		return *r
	}
	if r := l.beforeWrite(ctx, m, key, ch.text); r != nil {
		return *r
	}
	annul, r := l.track(ctx, m, key, held)
	if r != nil {
		return *r
	}
	data := []byte(ch.text)
	hash := hashAside(data)
	if touched, err := l.write(ctx, key, now, data); err != nil {
		return l.failed(ctx, m, key, err, touched, annul, held)
	}

	l.recordWritten(ctx, key, int64(len(data)), hash())
	l.observe(m, key)
	msg := ch.summary
	if ch.showDiff && diff != "" {
		msg += "\n" + diff
	}
	res := tools.Text(msg)
	res.EditedFile = key
	return res
}

func writeCancelled(spelled string) tools.Result {
	return tools.Fail(tools.CodeCancelled, "The call was cancelled before %s was written; nothing was written.", spelled)
}

// readBeforeEdit is station 3: it returns the file as it is now, refusing a file this
// session has not read or that changed since.
func (l *lane) readBeforeEdit(ctx context.Context, m mutation, key string) (current, *tools.Result) {
	e := l.cfg.Env
	fi, err := e.Lstat(ctx, key)
	if errors.Is(err, iofs.ErrNotExist) {
		// A new file is created through the editor too, which then holds it.
		return current{buffered: l.viaEditor(m)}, nil
	}
	if err != nil {
		return current{}, l.unreadable(ctx, m, err)
	}
	switch {
	case fi.IsSymlink():
		// The fence resolved every link; one appearing now was swapped in since.
		r := tools.Fail(fence.CodeUnresolvable, "%s changed into a symbolic link while it was being resolved; nothing was written.", m.spelled)
		return current{}, &r
	case fi.IsDir():
		r := tools.Fail(CodeIsDirectory, "%s is a directory; give the path of a file.", m.spelled)
		return current{}, &r
	case !fi.IsRegular():
		r := tools.Fail(CodeNotRegular, "%s is not a regular file; only regular files can be written.", m.spelled)
		return current{}, &r
	}
	if fi.Size > l.lc.maxFileBytes() {
		r := tools.Fail(CodeFileTooLarge, "%s is %d bytes, more than the write tools change (%d); edit it with a command instead.", m.spelled, fi.Size, l.lc.maxFileBytes())
		return current{}, &r
	}
	rec, ok := l.cfg.ReadState.Lookup(key)
	if !ok {
		r := tools.Fail(CodeNotRead, "%s has not been read in this session. Read it first, then write to it.", m.spelled)
		return current{}, &r
	}
	changed := func() (current, *tools.Result) {
		r := tools.Fail(CodeChangedSinceRead, "%s has changed since it was last read (by the user, a command or another session). Read it again, then retry the edit.", m.spelled)
		return current{}, &r
	}
	if l.cfg.Buffers == nil && rec.Size != fi.Size {
		// Without an editor the size on the disk settles a change before any read.
		return changed()
	}
	data, buffered, err := l.laneContent(ctx, m, key, fi.Size)
	if err != nil {
		return current{}, l.unreadable(ctx, m, err)
	}
	if buffered && int64(len(data)) > l.lc.maxFileBytes() {
		r := tools.Fail(CodeFileTooLarge, "%s is %d bytes in the editor, more than the write tools change (%d); edit it with a command instead.", m.spelled, len(data), l.lc.maxFileBytes())
		return current{}, &r
	}
	if int64(len(data)) != rec.Size || contentHash(data) != rec.Hash {
		return changed()
	}
	return current{exists: true, text: string(data), info: fi, buffered: buffered}, nil
}

func (l *lane) unreadable(ctx context.Context, m mutation, err error) *tools.Result {
	if ctx.Err() != nil {
		r := writeCancelled(m.spelled)
		return &r
	}
	var se *sema.Error
	if errors.As(err, &se) && (se.Code == CodeHardLink || se.Code == CodeEditorReadFailed) {
		r := tools.Fail(se.Code, "%s; nothing was written.", se.Message)
		return &r
	}
	r := tools.Fail(CodeReadFailed, "%s could not be checked before writing (%s); nothing was written.", m.spelled, describeErr(err))
	return &r
}

// contentHash is the hex sha256 ReadRecord.Hash holds.
func contentHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// hashAsideMin is the size from which the hash of the bytes being written is computed
// on another goroutine while the env writes and syncs them; below it, a goroutine
// costs more than it hides.
const hashAsideMin = 1 << 20

// hashAside starts hashing data and returns a function that yields the hash.
func hashAside(data []byte) func() string {
	if len(data) < hashAsideMin {
		return func() string { return contentHash(data) }
	}
	ch := make(chan string, 1)
	go func() { ch <- contentHash(data) }()
	return func() string { return <-ch }
}

// askPermission is station 4.
func (l *lane) askPermission(ctx context.Context, m mutation, p fence.Path, exists bool, text, diff string) *tools.Result {
	h := l.lc.Hooks.Permission
	if h == nil {
		return nil
	}
	req := PermissionRequest{Tool: m.tool, Path: m.spelled, Key: p.Canonical, Exists: exists, Content: text, Diff: diff,
		Protected: p.Protected, ProtectedReason: p.ProtectedReason}
	g, abandoned, _ := callHook(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, h(ctx, req) })
	switch {
	case abandoned || (g.err != nil && ctx.Err() != nil):
		r := tools.Fail(tools.CodePermissionFailed, "The write to %s was not made: the permission check did not answer before the call ended. Nothing was written.", m.spelled)
		return &r
	case g.panicked:
		r := tools.Fail(tools.CodePermissionFailed, "The write to %s was not made: the permission check failed (%s). Nothing was written.", m.spelled, g.failure())
		return &r
	case g.err != nil:
		code := sema.CodeOf(g.err)
		if code == "" {
			code = tools.CodePermissionDenied
		}
		// The code travels in the result's Code; the sentence carries only the message.
		r := tools.Fail(code, "The write to %s was not permitted: %s", m.spelled, sema.MessageOf(g.err))
		return &r
	}
	return nil
}

// beforeWrite is station 5: the deployment's content gate, then the memory scan.
func (l *lane) beforeWrite(ctx context.Context, m mutation, key, text string) *tools.Result {
	if h := l.lc.Hooks.BeforeWrite; h != nil {
		req := BeforeWriteRequest{Tool: m.hook, Path: m.spelled, Key: key, Content: text}
		g, abandoned, _ := callHook(ctx, func(ctx context.Context) (BeforeWriteResult, error) { return h(ctx, req) })
		if abandoned {
			r := tools.Fail(CodeBeforeWriteFailed, "The write to %s was not made: the content check did not answer before the call ended. Nothing was written.", m.spelled)
			return &r
		}
		if f := g.failure(); f != "" {
			r := tools.Fail(CodeBeforeWriteFailed, "The write to %s was not made: the content check failed (%s). Nothing was written.", m.spelled, f)
			return &r
		}
		if !g.v.OK {
			code, reason := g.v.Code, g.v.Reason
			if code == "" {
				code = CodeBeforeWriteRefused
			}
			if reason == "" {
				reason = "the content check refused it"
			}
			r := tools.Fail(code, "The write to %s was refused: %s", m.spelled, reason)
			return &r
		}
	}
	if l.lc.inMemoryDir(key) {
		if kind, line := memorySecret(text); kind != "" {
			r := tools.Fail(CodeMemorySecret, "The write to %s was refused: line %d holds what looks like a %s, and memory files are read back into later sessions. Leave the secret out (describe where it is kept instead) and write again.", m.spelled, line, kind)
			return &r
		}
	}
	return nil
}

// track is station 6. It returns the Annul to call if the write fails.
func (l *lane) track(ctx context.Context, m mutation, key string, held *heldLock) (func(context.Context, Proof), *tools.Result) {
	h := l.lc.Hooks.TrackFileEdit
	if h == nil {
		return nil, nil
	}
	req := TrackEditRequest{Tool: m.hook, Path: m.spelled, Key: key}
	g, abandoned, late := callHook(ctx, func(ctx context.Context) (TrackEditResult, error) { return h(ctx, req) })
	if abandoned {
		// The hook may still mint a record. Keep the file locked until it answers, and
		// retract what it minted: this write never happened.
		done := make(chan struct{})
		held.handOff(done)
		go func() {
			defer close(done)
			if g := <-late; !g.panicked && g.v.Annul != nil {
				l.annul(ctx, g.v.Annul, ProofProven)
			}
		}()
		r := tools.Fail(CodeHistoryTrackFailed, "The edit of %s was not made: file history did not answer before the call ended. Nothing was written.", m.spelled)
		return nil, &r
	}
	if f := g.failure(); f != "" || !g.v.OK {
		if !g.panicked && g.v.Annul != nil {
			l.annulWithin(ctx, g.v.Annul, ProofProven, held)
		}
		if f != "" {
			r := tools.Fail(CodeHistoryTrackFailed, "The edit of %s was not made: file history could not record it (%s). Nothing was written.", m.spelled, f)
			return nil, &r
		}
		text := g.v.Refusal
		if text == "" {
			text = fmt.Sprintf("The edit of %s was refused: file history could not record its previous content.", m.spelled)
		}
		r := tools.Fail(CodeHistoryUnprotected, "%s", text)
		return nil, &r
	}
	return g.v.Annul, nil
}
