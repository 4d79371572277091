package agent

import (
	"context"
	"encoding/json"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/internal/lease"
	"github.com/sema-agent/sema/internal/shellchange"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/tools/shell"
)

// bashChanges is the leg's recorder of what Bash commands (and MCP tools) change in the
// write roots (package shellchange): file history's records, the guard of the
// protected paths, and the durable stage.
type bashChanges struct {
	*shellchange.Recorder
	l *leg
}

// bashRecorder is the shell's change recorder: on when file history is (the runner's own
// seat) and the leg may write.
func (l *leg) bashRecorder() *bashChanges {
	if l.files == nil || l.spec.ReadOnly {
		return nil
	}
	return l.changeRecorder(true)
}

// protectRecorder is the shell's change recorder when file history is off: the walk
// around each command guards the protected paths and records nothing.
func (l *leg) protectRecorder() *bashChanges {
	if l.spec.ReadOnly {
		return nil
	}
	return l.changeRecorder(false)
}

func (l *leg) changeRecorder(record bool) *bashChanges {
	return &bashChanges{l: l, Recorder: shellchange.New(shellchange.Config{
		Env:                l.deps.Env,
		Fence:              l.fence,
		History:            l.deps.History,
		Record:             record,
		StateDir:           l.deps.StateDir,
		ProceedUnprotected: l.deps.policy().FileHistoryPolicy == ProceedUnprotected,
		Sandboxed:          l.sandbox != nil,
		Leg:                recordedLeg{l},
	})}
}

// atBoundary: see shellchange.Recorder.AtBoundary; nothing without a recorder.
func (c *bashChanges) atBoundary(ctx context.Context) {
	if c != nil {
		c.AtBoundary(ctx)
	}
}

// closeStage: see shellchange.Recorder.CloseStage; nothing without a recorder.
func (c *bashChanges) closeStage(ctx context.Context, kept bool) {
	if c != nil {
		c.CloseStage(ctx, kept)
	}
}

// recordedLeg is what a recorder reads of its leg (shellchange.Leg).
type recordedLeg struct{ l *leg }

func (r recordedLeg) Shell() *shell.Set    { return r.l.shell }
func (r recordedLeg) Notice(n sema.Notice) { r.l.notice(n) }
func (r recordedLeg) SessionID() string    { return r.l.sessionID }
func (r recordedLeg) LegID() string        { r.l.opened(); return r.l.legID }
func (r recordedLeg) Scope() string        { return r.l.historyScope }
func (r recordedLeg) CallID(ctx context.Context) string {
	ref, _ := ctx.Value(callRefKey{}).(callRef)
	return ref.id
}

func (r recordedLeg) Call(ctx context.Context) (json.RawMessage, bool) {
	rc, ok := ctx.Value(callKey{}).(runningCall)
	return rc.input, ok
}

func (r recordedLeg) Edited() []string {
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	return append([]string(nil), r.l.edited...)
}

func (r recordedLeg) Deny(toolUseID string, input json.RawMessage, reason string) {
	r.l.deny(PermissionDenial{Tool: shell.NameBash, ToolUseID: toolUseID, Input: input, Reason: reason, Code: shell.CodeProtectedReverted})
}

// recoverBashStages is the leg's recovery, before its first turn: what a killed
// process's command changed is recorded in the turn it ran in (the scope's newest
// boundary), with a notice.
func (l *leg) recoverBashStages(ctx context.Context) error {
	if l.files == nil || l.link != nil {
		return nil
	}
	rec, err := recoverStages(ctx, l.deps, l.historyScope)
	if err != nil {
		return err
	}
	for _, n := range rec.Notices() {
		l.notice(n)
	}
	return nil
}

// recoverForkSource records, before a fork copies its source's file history, what a
// command of the source left in flight when its process was killed: the fork's own
// recovery looks in the fork's scope, where the source's snapshot is not, and the fork
// would carry a history without the command's changes. Recovery needs the source's lease
// (a live leg of it owns its snapshots), held for the moment it takes; when the source
// is busy, the fork goes on and says what it may miss.
func (l *leg) recoverForkSource(ctx context.Context, src *session.Session) {
	scope := src.HistoryScope()
	if l.deps.History == nil || !shellchange.Staged(l.deps.StateDir, scope) {
		return
	}
	held, err := lease.Hold(ctx, l.store, src.ID, leaseTTL(l.deps), false, func(error) {})
	if err != nil {
		l.notice(sema.Notice{Code: CodeBashRecoveryFailed, Message: "what a killed command of session " + src.ID + " changed could not be recorded before the fork copied its file history (" + sema.MessageOf(err) + "); a rewind of the fork may not restore those files",
			Detail: map[string]any{"scope": scope}})
		return
	}
	defer held.Release(context.WithoutCancel(ctx))
	rec, err := recoverStages(ctx, l.deps, scope)
	if err != nil {
		l.notice(sema.Notice{Code: CodeBashRecoveryFailed, Message: sema.MessageOf(err), Detail: map[string]any{"scope": scope}})
		return
	}
	for _, n := range rec.Notices() {
		l.notice(n)
	}
}

// recoverStages records what the commands that dead processes of scope left in flight
// changed (shellchange.Recover).
func recoverStages(ctx context.Context, deps *Deps, scope string) (shellchange.Recovery, error) {
	return shellchange.Recover(ctx, shellchange.Stores{Env: deps.Env, History: deps.History, StateDir: deps.StateDir}, scope)
}
