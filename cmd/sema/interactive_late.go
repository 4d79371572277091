package main

import (
	"context"
	"runtime/debug"
	"sync"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/commands"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/subagent"
	"github.com/sema-agent/sema/tui"
)

// lateBackend is the screen's back-end while the state directory opens: the screen draws
// its first frame at once, and every call waits until the directory is open and the
// back-end over it (a *tui.Local) is built, then is that back-end's. Opening the
// directory (SQLite, its schema checked) took 5–30 ms before the first frame. It has
// every method of *tui.Local the screen calls, so the screen finds the same optional
// interfaces on it (TestLateBackendHasLocalsMethods holds that).
type lateBackend struct {
	ready chan struct{} // closed once local or err is set
	once  sync.Once
	local *tui.Local
	err   error // why the back-end could not be built; every call returns it
}

func newLateBackend() *lateBackend { return &lateBackend{ready: make(chan struct{})} }

// set makes the back-end local, or the error err, for every call waiting and to come.
func (b *lateBackend) set(local *tui.Local, err error) {
	b.once.Do(func() {
		b.local, b.err = local, err
		close(b.ready)
	})
}

// wait returns the back-end once it is built, or why it is not (ctx's end included).
func (b *lateBackend) wait(ctx context.Context) (*tui.Local, error) {
	select {
	case <-b.ready:
		return b.local, b.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// now waits with no context, for the calls that take none (they are quick once the
// directory is open, and it opens or fails within the session's start).
func (b *lateBackend) now() *tui.Local {
	<-b.ready
	return b.local
}

func (b *lateBackend) Prompt(ctx context.Context, prompt string, emit func(agent.Event)) error {
	l, err := b.wait(ctx)
	if err != nil {
		return err
	}
	defer releaseMemory()
	return l.Prompt(ctx, prompt, emit)
}

func (b *lateBackend) PromptImages(ctx context.Context, prompt string, images []string, emit func(agent.Event)) error {
	l, err := b.wait(ctx)
	if err != nil {
		return err
	}
	defer releaseMemory()
	return l.PromptImages(ctx, prompt, images, emit)
}

func (b *lateBackend) PromptWith(ctx context.Context, prompt string, images []agent.Image, emit func(agent.Event)) error {
	l, err := b.wait(ctx)
	if err != nil {
		return err
	}
	defer releaseMemory()
	return l.PromptWith(ctx, prompt, images, emit)
}

func (b *lateBackend) Shell(ctx context.Context, line string, emit func(agent.Event)) error {
	l, err := b.wait(ctx)
	if err != nil {
		return err
	}
	defer releaseMemory()
	return l.Shell(ctx, line, emit)
}

func (b *lateBackend) SetMode(ctx context.Context, mode permission.Mode) (permission.Mode, error) {
	l, err := b.wait(ctx)
	if err != nil {
		return mode, err
	}
	return l.SetMode(ctx, mode)
}

func (b *lateBackend) Agents(ctx context.Context) ([]subagent.Definition, error) {
	l, err := b.wait(ctx)
	if err != nil {
		return nil, err
	}
	return l.Agents(ctx)
}

func (b *lateBackend) Answer(ctx context.Context, id string, allow bool, reason string, emit func(agent.Event)) error {
	l, err := b.wait(ctx)
	if err != nil {
		return err
	}
	defer releaseMemory()
	return l.Answer(ctx, id, allow, reason, emit)
}

func (b *lateBackend) AnswerBudget(ctx context.Context, id string, raise agent.BudgetRaise, emit func(agent.Event)) error {
	l, err := b.wait(ctx)
	if err != nil {
		return err
	}
	defer releaseMemory()
	return l.AnswerBudget(ctx, id, raise, emit)
}

func (b *lateBackend) Clear() {
	if l := b.now(); l != nil {
		l.Clear()
	}
}

func (b *lateBackend) Commands() []*commands.Command {
	if l := b.now(); l != nil {
		return l.Commands()
	}
	return nil
}

func (b *lateBackend) Compact(ctx context.Context, instructions string) (*agent.CompactionInfo, error) {
	l, err := b.wait(ctx)
	if err != nil {
		return nil, err
	}
	return l.Compact(ctx, instructions)
}

func (b *lateBackend) List(ctx context.Context) ([]tui.SessionSummary, error) {
	l, err := b.wait(ctx)
	if err != nil {
		return nil, err
	}
	return l.List(ctx)
}

func (b *lateBackend) Pending(ctx context.Context) ([]tui.PendingQuestion, error) {
	l, err := b.wait(ctx)
	if err != nil {
		return nil, err
	}
	return l.Pending(ctx)
}

func (b *lateBackend) Permissions(ctx context.Context) (*agent.PermissionReport, error) {
	l, err := b.wait(ctx)
	if err != nil {
		return nil, err
	}
	return l.Permissions(ctx)
}

func (b *lateBackend) Rewind(ctx context.Context, spec agent.RewindSpec) (*agent.RewindResult, error) {
	l, err := b.wait(ctx)
	if err != nil {
		return nil, err
	}
	return l.Rewind(ctx, spec)
}

func (b *lateBackend) SetModel(ctx context.Context, ref string) (string, error) {
	l, err := b.wait(ctx)
	if err != nil {
		return "", err
	}
	return l.SetModel(ctx, ref)
}

func (b *lateBackend) Switch(ctx context.Context, id string) (tui.SessionView, error) {
	l, err := b.wait(ctx)
	if err != nil {
		return tui.SessionView{}, err
	}
	return l.Switch(ctx, id)
}

func (b *lateBackend) Turns(ctx context.Context) ([]tui.TurnSummary, error) {
	l, err := b.wait(ctx)
	if err != nil {
		return nil, err
	}
	return l.Turns(ctx)
}

// releaseMemory gives the memory a leg's streaming left behind back to the system once
// the leg has ended: the session then waits for the person, and without it the process
// kept the heap's peak (twice the live heap) resident until the runtime returned it bit
// by bit. One collection a leg.
func releaseMemory() { debug.FreeOSMemory() }
