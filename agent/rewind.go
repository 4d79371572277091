package agent

import (
	"context"
	"encoding/json"
	"io/fs"
	"sync"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/internal/lease"
	"github.com/sema-agent/sema/internal/rewindpoint"
	"github.com/sema-agent/sema/internal/transcript"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/tools/files"
)

// RewindSpec asks to return a session to the start of one of its turns.
type RewindSpec struct {
	// SessionID is the session to rewind; one the store does not hold fails with
	// session.not_found.
	SessionID string
	// ToTurn is the turn to return to (turns are numbered from 1 across every leg of
	// the session); 0 is the session's beginning.
	ToTurn int
	// Files restores every file the session's write tools changed at or after the turn
	// to what it was at the turn's start (a file created since is deleted).
	Files bool
	// Conversation moves the session's head back, so the next resume continues from the
	// turn's start.
	Conversation bool
	// DryRun lists what Files would do, changing nothing.
	DryRun bool
	// AcceptPartialRestore restores what can be restored when some files are in conflict;
	// otherwise anything short of a full restore is refused (history.partial_restore).
	AcceptPartialRestore bool
	// Force restores files in conflict too: files whose bytes are no longer what the
	// agent last left there (someone changed them). Their current bytes are saved first,
	// so Undo brings them back.
	Force bool
	// Undo returns the files to where they were just before the session's most recent
	// rewind (an undo is itself a rewind, so undoing again redoes). It goes with Files
	// alone: ToTurn is ignored, and the conversation is not moved. A session never
	// rewound is refused with history.nothing_to_undo.
	Undo bool
	// Diff puts a unified diff (the file now → what the rewind leaves) in each ledger
	// entry that changes or is in conflict.
	Diff bool
	// Wait waits, as long as ctx lasts, for a run continuing the session to end, instead
	// of failing with session.busy (as Resume.Wait does for a leg).
	Wait bool
}

// RewindResult is what a rewind did.
type RewindResult struct {
	// Ledger is the per-file account of the file rewind.
	Ledger *history.Ledger `json:"ledger,omitempty"`
	// Head is the transcript entry the conversation now continues from.
	Head string `json:"head,omitempty"`
	// Recovered are the files a shell command changed before its process was killed,
	// found in its durable snapshot and recorded for rewind by this rewind, before it
	// planned anything (see CodeBashRecovered).
	Recovered []string `json:"recovered,omitempty"`
}

// Rewind returns a session's files and/or conversation to the start of a turn. A
// delegated child session cannot rewind its root's files (history.child_cannot_rewind),
// and a file rewind through an env of another filesystem than the one the session was
// created on is refused (history.filesystem_mismatch): its history names that tree's
// files.
func (r *Runner) Rewind(ctx context.Context, spec RewindSpec) (*RewindResult, error) {
	if r.deps.Store == nil {
		return nil, configError(CodeStoreMissing, "rewinding needs a session store; set Deps.Store")
	}
	spec, err := checkRewind(spec)
	if err != nil {
		return nil, err
	}
	s, err := r.deps.Store.Get(ctx, spec.SessionID)
	if err != nil {
		return nil, err
	}
	if spec.Files {
		// The records name the files of the tree the session was created on; through an
		// env of another tree a rewind would write them into that tree's files.
		if err := history.RefuseOtherFilesystem(s.ID, s.FSID, history.FilesystemIdentity(r.deps.Env)); err != nil {
			return nil, err
		}
	}
	// A rewind writes the session's files and head: it is the session's one writer while
	// it runs, like a leg (a running leg makes it session.busy, or is waited for), and
	// renews its lease as a leg does. Its entries are written under the lease's claim.
	// A rewind that loses its lease (stopped past it, and another run took the session
	// over) changes nothing more: its checks are stale, and the files are the other
	// run's now. Each file's change looks at ctx first.
	outer := ctx
	ctx, lose := context.WithCancelCause(ctx)
	defer lose(nil)
	held, err := lease.Hold(ctx, r.deps.Store, s.ID, leaseTTL(&r.deps), spec.Wait, func(err error) { lose(err) })
	if err != nil {
		return nil, err
	}
	defer held.Release(context.WithoutCancel(ctx))
	out, err := r.rewindHeld(ctx, s, spec, held)
	if cause := context.Cause(ctx); outer.Err() == nil && sema.IsCode(cause, session.CodeLeaseLost) {
		return out, cause
	}
	return out, err
}

// rewindHeld is Rewind once the session's lease is held.
func (r *Runner) rewindHeld(ctx context.Context, s session.Session, spec RewindSpec, held *lease.Held) (*RewindResult, error) {
	recovered, err := r.prepareFileRewind(ctx, s, spec)
	if err != nil {
		return nil, err
	}
	if spec.Undo {
		out, err := r.rewindFiles(ctx, s.HistoryScope(), s.ID, spec, nil)
		if out != nil {
			out.Recovered = recovered
		}
		return out, err
	}
	return r.rewindToTurn(ctx, s, spec, held.Claim(), recovered)
}

// checkRewind refuses a spec that asks for nothing or for what cannot go together, and
// returns it with what an undo implies (the files).
func checkRewind(spec RewindSpec) (RewindSpec, error) {
	if spec.Undo && spec.Conversation {
		return spec, configError(CodeRewindInvalid, "an undo returns the files to where they were before the last rewind; it does not move the conversation")
	}
	if spec.Undo {
		spec.Files = true
	}
	if !spec.Files && !spec.Conversation {
		return spec, configError(CodeRewindInvalid, "say what to rewind: the files, the conversation, or both")
	}
	if spec.ToTurn < 0 {
		return spec, configError(CodeRewindInvalid, "turn %d does not exist; turns count from 1", spec.ToTurn)
	}
	return spec, nil
}

// prepareFileRewind readies the session's tree for a file rewind, under the lease: it
// cleans up what interrupted atomic writes left, and records what killed shell commands
// changed. It returns the files so recovered.
func (r *Runner) prepareFileRewind(ctx context.Context, s session.Session, spec RewindSpec) ([]string, error) {
	if _, host := r.deps.Env.(*env.Host); host && spec.Files && !spec.DryRun && s.Root != "" {
		// What an interrupted atomic write left behind goes with the rewind that cleans up.
		env.CleanStaleTemps(ctx, s.Root)
	}
	if !spec.Files || s.HistoryScope() != s.ID {
		return nil, nil
	}
	// A killed process's shell command may have changed files its records do not
	// name yet: they are recorded first, or the rewind does not claim to restore.
	rec, err := recoverStages(ctx, &r.deps, s.ID)
	if err != nil {
		return nil, err
	}
	return rec.Recorded, nil
}

// rewindToTurn returns the files and/or conversation to the start of spec.ToTurn, then
// records that the restored files must be read again.
func (r *Runner) rewindToTurn(ctx context.Context, s session.Session, spec RewindSpec, claim *session.Claim, recovered []string) (*RewindResult, error) {
	chain, err := r.deps.Store.Transcript(ctx, s.ID, "")
	if err != nil {
		return nil, err
	}
	head, at, found := transcript.TurnStart(chain, spec.ToTurn)
	if !found {
		return nil, sema.Errorf(history.CodeTurnInvalid, "session %s has no turn %d", s.ID, spec.ToTurn)
	}
	out := &RewindResult{}
	if spec.Files {
		if out, err = r.rewindFiles(ctx, s.HistoryScope(), s.ID, spec, at); err != nil {
			if out != nil {
				out.Recovered = recovered
			}
			return out, err
		}
		out.Recovered = recovered
	}
	if spec.Conversation && !spec.DryRun {
		// A marker entry on the earlier entry becomes the head: later entries stay stored
		// (a branch), but the next resume continues from here.
		payload, _ := json.Marshal(transcript.Rewind{ToTurn: spec.ToTurn})
		marker := rewindMarker(s.ID, head, payload)
		marker.Claim = claim
		id, err := r.deps.Store.Append(ctx, marker)
		if err != nil {
			return out, err
		}
		out.Head = id
	}
	return out, forgetRestored(ctx, r.deps.Store, claim, out.Ledger)
}

// rewindFiles runs the file half of a rewind, or an undo. at is how many boundaries the
// scope held when the turn started, as its assistant entry recorded (nil: not recorded).
func (r *Runner) rewindFiles(ctx context.Context, scope, sessionID string, spec RewindSpec, at *int) (*RewindResult, error) {
	if r.deps.History == nil {
		return nil, configError(CodeHistoryMissing, "rewinding files needs a file-history store; set Deps.History")
	}
	files := history.NewFiles(r.deps.History, r.deps.Env)
	opts := history.RewindOptions{
		DryRun: spec.DryRun, AcceptPartialRestore: spec.AcceptPartialRestore, SessionID: sessionID, Force: spec.Force, Diff: spec.Diff,
	}
	var ledger history.Ledger
	var err error
	switch {
	case spec.Undo:
		ledger, err = files.Undo(ctx, scope, opts)
	case at != nil:
		ledger, err = rewindFrom(ctx, r.deps.History, files, scope, spec.ToTurn, *at, false, opts)
	default:
		ledger, err = files.Rewind(ctx, scope, spec.ToTurn, opts)
	}
	return &RewindResult{Ledger: &ledger}, err
}

// rewindBeforeRun applies the spec's file rewind (Resume.Files: RewindFilesTo, or
// RestoreFilesAt Resume.At) before the leg's first turn.
func (l *leg) rewindBeforeRun(ctx context.Context) error {
	rs := l.spec.resume()
	turn, restoresAt := -1, false
	if t, ok := rs.Files.Turn(); ok {
		turn = t
	} else {
		restoresAt = rs.Files.RestoresAt()
	}
	// The chain's turn (for RestoreFilesAt, the end of its last turn) when its assistant
	// entry says where the turn started among the scope's boundaries; else the newest
	// boundary of the turn's number.
	p, ok := rewindpoint.ForResume(turn, restoresAt, l.resume.turns, l.resume.boundaries)
	if !ok {
		return nil
	}
	files := history.NewFiles(l.deps.History, l.deps.Env)
	opts := history.RewindOptions{AcceptPartialRestore: rs.AcceptPartialRestore, SessionID: l.sessionID}
	var ledger history.Ledger
	var err error
	if p.Counted {
		ledger, err = rewindFrom(ctx, l.deps.History, files, l.historyScope, p.Turn, p.At, p.End, opts)
	} else {
		ledger, err = files.Rewind(ctx, l.historyScope, p.Turn, opts)
	}
	l.rewindNotes = ledger.Entries
	return err
}

// afterImages maps each file the write lane is about to write to the history record its
// first-touch seat returned, so the write, once it succeeded, can say what it left there.
type afterImages struct {
	mu   sync.Mutex
	recs map[string]history.Record
}

func (a *afterImages) track(key string, rec history.Record, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.recs == nil {
		a.recs = map[string]history.Record{}
	}
	if ok {
		a.recs[key] = rec
	} else {
		delete(a.recs, key)
	}
}

func (a *afterImages) take(key string) (history.Record, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	rec, ok := a.recs[key]
	delete(a.recs, key)
	return rec, ok
}

// writeEnv is the write lane's view of the env when the runner keeps file history:
// before a WriteFile begins, the sha256 of its bytes is recorded as what the write is
// about to leave (history.Files.Intend), and once it succeeded, as what the agent left in
// the file. A run killed in between — the bytes landed, their outcome unconfirmed —
// leaves a file a rewind still knows as the agent's. The lane holds the file's lock from
// its history seat through the write, so the record taken here is the one that seat
// returned for this write. A write that failed confirms nothing: the file holds the
// bytes it held or the intended ones, and a rewind will not overwrite anything else
// without force.
type writeEnv struct {
	env.ExecutionEnv
	l *leg
}

// WriteFile records what the write is about to leave, writes through to the env, then
// records what the write left.
func (w *writeEnv) WriteFile(ctx context.Context, path string, data []byte, perm fs.FileMode) error {
	return w.l.recordWrite(ctx, path, data, func() error { return w.ExecutionEnv.WriteFile(ctx, path, data, perm) })
}

// writeBuffers is writeEnv for the writes the lane hands the editor (files.Buffers): the
// same records around the editor's write, which saves the bytes to the file.
type writeBuffers struct {
	files.Buffers
	l *leg
}

// WriteText records what the write is about to leave, hands the text to the editor,
// then records what the write left.
func (w *writeBuffers) WriteText(ctx context.Context, path, text string) error {
	return w.l.recordWrite(ctx, path, []byte(text), func() error { return w.Buffers.WriteText(ctx, path, text) })
}

// recordWrite runs write, the write of data to path, between the two history records.
func (l *leg) recordWrite(ctx context.Context, path string, data []byte, write func() error) error {
	rec, tracked := l.afters.take(path)
	intended := false
	if tracked {
		if err := l.files.Intend(context.WithoutCancel(ctx), rec, data); err != nil {
			l.notice(sema.Notice{Code: CodeAfterFailed, Message: "what a write is about to leave in " + path + " could not be recorded; a rewind will treat the file as changed outside the agent: " + err.Error(),
				Detail: map[string]any{"path": path}})
		} else {
			intended = true
		}
	}
	if err := write(); err != nil {
		return err
	}
	if !tracked {
		return nil
	}
	if err := l.files.Wrote(context.WithoutCancel(ctx), rec, data); err != nil && intended {
		// The intended bytes stay recorded (Record.Pending): a rewind still knows them as
		// the agent's. An Intend that failed has said so already.
		l.notice(sema.Notice{Code: CodeAfterFailed, Message: "what a write left in " + path + " could not be confirmed; a rewind restores the file while it holds exactly these bytes, and treats anything else there as changed outside the agent: " + err.Error(),
			Detail: map[string]any{"path": path}})
	}
	return nil
}
