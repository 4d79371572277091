package files

import (
	"context"
	"time"
)

// The tool names the write lane's hooks receive. There are three: MultiEdit is
// an Edit lane and reports as HookEdit to the BeforeWrite, TrackFileEdit and FileEdited
// hooks, so a deployment's content gate, its history store and its observers need no
// fourth case. The permission hook is different — it receives the tool the model called
// ("MultiEdit"), because permission rules name tools.
const (
	HookWrite        = "Write"        // a Write call
	HookEdit         = "Edit"         // an Edit or MultiEdit call
	HookNotebookEdit = "NotebookEdit" // a NotebookEdit call
)

// PermissionRequest is what the permission station (station 4) sees of a write about to
// happen: enough for an approver to show the person what they are saying yes to.
type PermissionRequest struct {
	// Tool is the tool the model called: Write, Edit, MultiEdit or NotebookEdit.
	Tool string
	// Path is the path as the model spelled it.
	Path string
	// Key is the canonical path the bytes will land on.
	Key string
	// Exists reports whether the file exists now (false: the write creates it).
	Exists bool
	// Protected reports that Key is in the fence's protected set (.git/, shell rc
	// files, …): a write there needs a person's yes in every mode but bypassPermissions.
	Protected bool
	// ProtectedReason says why Key is protected ("it is in a .git directory", …), for the
	// approver to show; empty when !Protected.
	ProtectedReason string
	// Content is the final full text about to be written.
	Content string
	// Diff is a unified-diff snippet of the change (capped in length; see Content for
	// the whole text).
	Diff string
}

// PermissionHook is the permission gate's seat inside the lane. A nil error allows the
// write; an error refuses it, with the error's *sema.Error code when it has one
// (tools.CodePermissionDenied otherwise). A panic, or a hook still running when the
// call's ctx ends, refuses with tools.CodePermissionFailed. A nil hook allows every
// write.
type PermissionHook func(ctx context.Context, req PermissionRequest) error

// BeforeWriteRequest is the content gate's question: may these exact bytes land here?
type BeforeWriteRequest struct {
	// Tool is HookWrite, HookEdit or HookNotebookEdit.
	Tool string
	// Path is the path as the model spelled it, the coordinate the model knows.
	Path string
	// Key is the canonical path — what the hook should judge.
	Key string
	// Content is the FINAL full text about to be written (for Edit and NotebookEdit,
	// after the edit was applied; with the file's line endings and byte-order mark).
	Content string
}

// BeforeWriteResult is the content gate's answer. Only OK=true lets the write go on.
// The zero value refuses: a hook that forgets to answer fails closed, loudly, instead of
// letting a write through. A refusal's Code and Reason reach the model; an empty Code is
// reported as "fs.before_write_refused".
type BeforeWriteResult struct {
	// OK lets the write go on; false refuses it.
	OK bool
	// Code is the refusal's stable code, shown to the model; ignored when OK.
	Code string
	// Reason is the refusal's sentence for the model, saying what to change; ignored
	// when OK.
	Reason string
}

// BeforeWriteHook is the deployment's content gate (station 5). It runs before the
// engine's own memory write-scan, and a refusal short-circuits it. An error, a panic,
// or a hook still running when ctx ends fails the write closed with
// "fs.before_write_failed".
type BeforeWriteHook func(ctx context.Context, req BeforeWriteRequest) (BeforeWriteResult, error)

// TrackEditRequest asks the history seat to record the file's pre-image before the
// write (station 6).
type TrackEditRequest struct {
	// Tool is HookWrite, HookEdit or HookNotebookEdit.
	Tool string
	// Path is the path as the model spelled it.
	Path string
	// Key is the canonical path, the identity the history record is keyed on.
	Key string
}

// Proof says which retraction rule an Annul applies.
type Proof string

const (
	// ProofProven: the write's own error guarantees nothing was written, so the record
	// can be dropped outright.
	ProofProven Proof = "proven"
	// ProofVerify: the write failed ambiguously; the history seat must re-read the path
	// and retract the record only if the bytes still equal the recorded pre-image.
	ProofVerify Proof = "verify"
)

// TrackEditResult is the history seat's answer. Only OK=true lets the write go on; the
// zero value refuses (fails closed). A refusal is answered with CodeHistoryUnprotected
// ("history.unprotected": the edit is not made because it could not be undone), and an
// empty Refusal with a standard sentence.
type TrackEditResult struct {
	// OK lets the write go on.
	OK bool
	// Refusal is the sentence the model reads instead of the write's answer, when OK is
	// false. The result's code is CodeHistoryUnprotected; the sentence should not repeat
	// it or any other code.
	Refusal string
	// Annul is set only when THIS call minted the record (a path already tracked belongs
	// to the edit that first touched it and must never be discarded). The lane calls it
	// when the write then fails, with the proof the failure allows. It must not block:
	// the lane waits for it at most LaneConfig.AnnulWait, its panics are recovered, and
	// the original write error is the tool's answer whatever it does.
	Annul func(ctx context.Context, proof Proof)
}

// TrackFileEditHook is the first-touch history seat (station 6). An error, a panic or a
// hook still running when ctx ends fails the write closed with "history.track_failed".
// A hook that answers after the lane gave up and hands back an Annul has it called with
// ProofProven (nothing was written), before any later write of the same path may start.
type TrackFileEditHook func(ctx context.Context, req TrackEditRequest) (TrackEditResult, error)

// FileEditedNotice reports a file that was, or may have been, changed by a write tool.
type FileEditedNotice struct {
	// Tool is HookWrite, HookEdit or HookNotebookEdit.
	Tool string
	// Path is the path as the model spelled it.
	Path string
	// Key is the canonical path the bytes landed on.
	Key string
}

// FileEditedHook observes edits (station 9). It is called once per call whose write did
// not PROVABLY write nothing — a success, or a failure that may have changed the file —
// and never for a refusal or a proven failure. It cannot refuse. It runs on its own
// goroutine, is not awaited, and its panics are recovered.
type FileEditedHook func(FileEditedNotice)

// Hooks are the write lane's seats. Every field may be nil: a nil hook allows (or, for
// FileEdited, observes nothing).
type Hooks struct {
	// Permission is station 4, the permission gate's seat; nil allows every write.
	Permission PermissionHook
	// BeforeWrite is station 5, the deployment's content gate; nil allows every write.
	BeforeWrite BeforeWriteHook
	// TrackFileEdit is station 6, first-touch history; nil allows the write and records
	// nothing.
	TrackFileEdit TrackFileEditHook
	// FileEdited is station 9, the observer of edits; nil observes nothing.
	FileEdited FileEditedHook
}

// LaneConfig is what the write tools need beyond Config.
type LaneConfig struct {
	// Hooks are the lane's seats; the zero value has none.
	Hooks Hooks
	// MemoryDirs are the canonical memory directories the prompt advertises. A write
	// whose canonical path lies inside one of them is scanned for secrets after the
	// deployment's BeforeWrite hook (station 5b). Empty: no memory scan.
	MemoryDirs []string
	// AnnulWait bounds how long a failed write's answer waits for TrackEditResult.Annul;
	// the Annul's ctx expires then too. Zero means 5 seconds.
	AnnulWait time.Duration
	// MaxFileBytes is the largest existing file the lane will load to check and change
	// (the whole file is held in memory, twice, during an edit). Zero means 256 MiB.
	MaxFileBytes int64
}

func (lc LaneConfig) maxFileBytes() int64 {
	if lc.MaxFileBytes > 0 {
		return lc.MaxFileBytes
	}
	return 256 << 20
}

func (lc LaneConfig) annulWait() time.Duration {
	if lc.AnnulWait > 0 {
		return lc.AnnulWait
	}
	return 5 * time.Second
}
