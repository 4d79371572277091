package agent

import (
	"context"
	"encoding/json"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/history"
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
}

// RewindResult is what a rewind did.
type RewindResult struct {
	// Ledger is the per-file account of the file rewind.
	Ledger *history.Ledger `json:"ledger,omitempty"`
	// Head is the transcript entry the conversation now continues from.
	Head string `json:"head,omitempty"`
}

// Rewind returns a session's files and/or conversation to the start of a turn. A
// delegated child session cannot rewind its root's files (history.child_cannot_rewind).
// Bash changes are not in file history and are not undone.
func (r *Runner) Rewind(ctx context.Context, spec RewindSpec) (*RewindResult, error) {
	if r.deps.Store == nil {
		return nil, configError(CodeStoreMissing, "rewinding needs a session store; set Deps.Store")
	}
	if !spec.Files && !spec.Conversation {
		return nil, configError(CodeRewindInvalid, "say what to rewind: the files, the conversation, or both")
	}
	if spec.ToTurn < 0 {
		return nil, configError(CodeRewindInvalid, "turn %d does not exist; turns count from 1", spec.ToTurn)
	}
	s, err := r.deps.Store.Get(ctx, spec.SessionID)
	if err != nil {
		return nil, err
	}
	chain, err := r.deps.Store.Transcript(ctx, s.ID, "")
	if err != nil {
		return nil, err
	}
	// The conversation returns to the entry before turn N's response.
	head, found := "", spec.ToTurn == 0
	for _, e := range chain {
		if e.Kind == entryAssistant {
			var a assistantEntry
			if json.Unmarshal(e.Payload, &a) == nil && a.Turn >= spec.ToTurn && spec.ToTurn > 0 {
				found = true
				break
			}
		}
		head = e.ID
	}
	if !found {
		return nil, sema.Errorf(history.CodeTurnInvalid, "session %s has no turn %d", s.ID, spec.ToTurn)
	}
	out := &RewindResult{}
	if spec.Files {
		if r.deps.History == nil {
			return nil, configError(CodeHistoryMissing, "rewinding files needs a file-history store; set Deps.History")
		}
		files := history.NewFiles(r.deps.History, r.deps.Env)
		ledger, err := files.Rewind(ctx, s.HistoryScope(), spec.ToTurn, history.RewindOptions{
			DryRun: spec.DryRun, AcceptPartialRestore: spec.AcceptPartialRestore, SessionID: s.ID,
		})
		out.Ledger = &ledger
		if err != nil {
			return out, err
		}
	}
	if spec.Conversation && !spec.DryRun {
		// A marker entry on the earlier entry becomes the head: later entries stay stored
		// (a branch), but the next resume continues from here.
		payload, _ := json.Marshal(rewindEntry{ToTurn: spec.ToTurn})
		id, err := r.deps.Store.Append(ctx, rewindMarker(s.ID, head, payload))
		if err != nil {
			return out, err
		}
		out.Head = id
	}
	return out, forgetRestored(ctx, r.deps.Store, s.ID, out.Ledger)
}

// rewindBeforeRun applies the spec's file rewind (Resume.Files: RewindFilesTo, or
// RestoreFilesAt Resume.At) before the leg's first turn.
func (l *leg) rewindBeforeRun(ctx context.Context) error {
	rs := l.spec.resume()
	turn := -1
	if t, ok := rs.Files.Turn(); ok {
		turn = t
	} else if rs.Files.RestoresAt() {
		turn = l.resume.turns + 1 // the branch starts before the turn after At
	}
	if turn < 0 {
		return nil
	}
	files := history.NewFiles(l.deps.History, l.deps.Env)
	ledger, err := files.Rewind(ctx, l.historyScope, turn, history.RewindOptions{AcceptPartialRestore: rs.AcceptPartialRestore, SessionID: l.sessionID})
	l.rewindNotes = ledger.Entries
	return err
}
