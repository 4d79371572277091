package agent

import (
	"context"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/session"
)

// FileHistoryCapture is one layer's switch of file-history recording: the deployment's
// (Deps.FileHistoryCapture) or the task's (TaskSpec.FileHistory). A leg records only when
// no layer turned recording off; the deployment's off wins over a task's on. It is a word,
// not a bool, so that a layer that said nothing is told apart from one that said on, and
// a misspelled word is refused (config.file_history_invalid) rather than read as either.
type FileHistoryCapture string

const (
	// FileHistoryDefault says nothing: the leg records when the deployment wired a history
	// seat (Deps.History with Deps.Store, or Hooks.TrackFileEdit) and no other layer
	// turned recording off.
	FileHistoryDefault FileHistoryCapture = ""
	// FileHistoryOn asks for recording. It cannot turn on what another layer turned off
	// or what the deployment did not wire: the deployment's seat refuses a run without a
	// history seat (config.history_missing, config.store_missing), and a task's on that
	// cannot be honoured runs without recording, with a history.capture_off notice.
	FileHistoryOn FileHistoryCapture = "on"
	// FileHistoryOff turns recording off for the leg: no first-touch records, no turn
	// boundaries (a rewind cannot return to its turns), neither the runner's own history
	// nor the deployment's Hooks.TrackFileEdit seat is called, and the manifest's
	// file_history says disabled.
	FileHistoryOff FileHistoryCapture = "off"
)

func (c FileHistoryCapture) valid() bool {
	return c == FileHistoryDefault || c == FileHistoryOn || c == FileHistoryOff
}

// fileCapture is what the layers and the session's filesystem left of the leg's
// file-history recording.
type fileCapture struct {
	// offBy names the seat that turned every recording off (Deps.FileHistoryCapture,
	// TaskSpec.FileHistory); empty when none did.
	offBy string
	// otherTree: the resumed session's history was recorded on another filesystem, so the
	// runner's own history does not record this leg. A deployment's TrackFileEdit seat,
	// which keeps its records where the deployment chose, still runs.
	otherTree bool
}

// own reports whether the runner's own history may record the leg.
func (c fileCapture) own() bool { return c.offBy == "" && !c.otherTree }

// validateFileHistory is the door of the two capture seats and of the deployment's
// first-touch failure policy: a word or a policy outside its set is refused (an unknown
// policy read as either answer would run an edit its author meant otherwise), and so
// is a deployment's on with no history seat to honour it.
func validateFileHistory(deps *Deps, spec *TaskSpec) error {
	if p := deps.policy().FileHistoryPolicy; p != RefuseUnprotected && p != ProceedUnprotected {
		return configError(CodeFileHistoryPolicyInvalid, "unknown Deps.Policy.FileHistoryPolicy %d; use agent.RefuseUnprotected or agent.ProceedUnprotected", int(p))
	}
	if !deps.FileHistoryCapture.valid() {
		return configError(CodeFileHistoryInvalid, "unknown Deps.FileHistoryCapture %q; use on or off (or leave it empty)", deps.FileHistoryCapture)
	}
	if !spec.FileHistory.valid() {
		return configError(CodeFileHistoryInvalid, "unknown TaskSpec.FileHistory %q; use on or off (or leave it empty)", spec.FileHistory)
	}
	if deps.FileHistoryCapture != FileHistoryOn || deps.hooks().TrackFileEdit != nil {
		return nil
	}
	if deps.History == nil {
		return configError(CodeHistoryMissing, "Deps.FileHistoryCapture is on but no file-history store is wired; set Deps.History (or Hooks.TrackFileEdit)")
	}
	if deps.Store == nil {
		return configError(CodeStoreMissing, "Deps.FileHistoryCapture is on but file history needs a session store; set Deps.Store")
	}
	return nil
}

// resolveCapture decides, before anything is written, whether the leg records file
// history, and refuses a file rewind of a session whose history lives on another
// filesystem.
//
// A resume or a fork whose env is a view of another tree than the one the session was
// created on (its FSID against history.FilesystemIdentity) cannot record into, nor
// rewind, that session's history: its records name the other tree's files, and the
// session's history scope is fixed at its creation. A Resume.Files rewind is refused
// (history.filesystem_mismatch); any other such leg runs without the runner's own
// history, with a history.filesystem_changed notice giving both identities.
func (l *leg) resolveCapture(loaded *session.Session) error {
	deps, spec := l.deps, l.spec
	switch {
	case deps.FileHistoryCapture == FileHistoryOff:
		l.capture.offBy = "Deps.FileHistoryCapture"
	case spec.FileHistory == FileHistoryOff:
		l.capture.offBy = "TaskSpec.FileHistory"
	}
	ownWired := deps.History != nil && deps.Store != nil && deps.hooks().TrackFileEdit == nil
	if spec.FileHistory == FileHistoryOn {
		switch {
		case l.capture.offBy != "":
			l.notice(sema.Notice{Code: CodeCaptureOff, Message: "file history is off for this run: the deployment turned it off (Deps.FileHistoryCapture), which a task's on does not override",
				Detail: map[string]any{"layer": "deployment", "seat": l.capture.offBy}})
		case !ownWired && deps.hooks().TrackFileEdit == nil:
			l.notice(sema.Notice{Code: CodeCaptureOff, Message: "file history is off for this run: the deployment wires no file-history store (Deps.History with Deps.Store)",
				Detail: map[string]any{"layer": "deployment", "seat": "Deps.History"}})
		}
	}
	if loaded == nil {
		return nil
	}
	current := history.FilesystemIdentity(deps.Env)
	err := history.RefuseOtherFilesystem(loaded.ID, loaded.FSID, current)
	if err == nil {
		return nil
	}
	if !spec.resume().Files.Keeps() {
		return err
	}
	if ownWired && l.capture.offBy == "" {
		l.capture.otherTree = true
		l.notice(sema.Notice{Code: CodeFilesystemChanged,
			Message: "file history is off for this run: session " + loaded.ID + " was recorded on another filesystem than this run's env, so this run's edits are not recorded into it and its turns cannot be rewound",
			Detail:  map[string]any{"session_id": loaded.ID, "recorded": loaded.FSID, "current": current}})
	}
	return nil
}

// lazyBoundary is the shell's change recorder: a command that may change files mints the
// turn's file-history boundary before its snapshot, so what it changes is recorded at
// that turn (see ensureBoundary). A command proven read-only reaches no recorder and
// mints nothing.
type lazyBoundary struct{ *bashChanges }

// Before mints the turn's boundary, then snapshots the write roots. A boundary that
// cannot be minted refuses the command, as a snapshot that cannot be taken does, unless
// the deployment chose to proceed unprotected.
func (c lazyBoundary) Before(ctx context.Context, background bool) ([]string, error) {
	if err := c.l.ensureBoundary(ctx); err != nil && c.l.deps.policy().FileHistoryPolicy != ProceedUnprotected {
		return nil, err
	}
	c.SetTurn(c.l.boundTurn())
	return c.bashChanges.Before(ctx, background)
}
