package shell

import (
	"context"

	"github.com/sema-agent/sema/tools"
)

// CodeChangesUnrecorded: the write roots could not be snapshotted before a Bash command,
// so what it would change could not be undone; the command did not run.
const CodeChangesUnrecorded = "history.record_failed"

// ChangeRecorder records in file history what Bash commands change in the write roots
// (Config.Changes). The set calls it around every Bash command it could not prove
// read-only; bash_readonly's commands are proven, so never.
type ChangeRecorder interface {
	// Before snapshots the write roots before a command starts, so every file's
	// pre-image is in hand; background says the command becomes a background task, whose
	// changes are recorded at the next snapshot (the next Bash call or turn boundary).
	// An error refuses the command, which then does not run; notes go into the answer.
	Before(ctx context.Context, background bool) (notes []string, err error)
	// After walks the roots again once the command ended (or was moved to the background)
	// and records what it created, changed and deleted; its notes go into the answer.
	After(ctx context.Context) []string
}

// snapshotBefore runs the recorder's Before for a Bash command, unless there is none or
// the command is proven read-only (a proof costs far less than a walk). It returns
// whether After is owed, the notes, and a refusal when the snapshot failed.
func (s *Set) snapshotBefore(ctx context.Context, command string, background bool) (bool, []string, *tools.Result) {
	if s.cfg.Changes == nil || s.proveReadOnly(ctx, command) == nil {
		return false, nil, nil
	}
	// The recorder stages what it keeps in the scratch directory.
	if err := s.ensureScratch(); err != nil {
		r := tools.FromError(err, CodeChangesUnrecorded)
		return false, nil, &r
	}
	notes, err := s.cfg.Changes.Before(ctx, background)
	if err != nil {
		r := tools.Fail(CodeChangesUnrecorded, "The command did not run: the workspace could not be snapshotted for file history first (%v), and a change that cannot be undone is not made.", err)
		return false, nil, &r
	}
	return !background, notes, nil
}
