package agent

import (
	"context"
	"sync"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/internal/gate"
	"github.com/sema-agent/sema/permission"
)

// Control changes a running task from outside: create one, put it in TaskSpec.Control,
// and call its methods while the run (Run, Events, Resume or ResumeEvents) is in
// progress, from another goroutine. A Control
// serves one run at a time; before the run has prepared its leg, and after it ended,
// its methods refuse with run.not_running.
type Control struct {
	mu    sync.Mutex
	modes *gate.ModeController
	// compact holds a compaction asked for and not yet made, with its instructions.
	compact *string
}

// Compact asks the running task to compact its conversation before its next model
// request (the command line's compact control request); instructions, when not empty,
// say what the summary must keep. The compaction is reported as an EventCompaction; one
// that fails ends the run (context.compaction_failed). Before the run has prepared its
// leg, and after it ended, Compact refuses with run.not_running.
func (c *Control) Compact(instructions string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.modes == nil {
		return sema.Errorf(CodeNotRunning, "the task is not running; a compaction can be asked for only while it runs")
	}
	c.compact = &instructions
	return nil
}

// takeCompact returns a compaction asked for, once.
func (c *Control) takeCompact() (string, bool) {
	if c == nil {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.compact == nil {
		return "", false
	}
	s := *c.compact
	c.compact = nil
	return s, true
}

// SetPermissionMode changes the running task's permission mode (the command line's
// set_permission_mode control request). The answer is the mode receipt after the change:
// a word the deployment denies folds (and the receipt says why); a change to auto whose
// classifier cannot be armed is refused and the previous mode stays.
func (c *Control) SetPermissionMode(ctx context.Context, mode permission.Mode) (permission.Receipt, error) {
	c.mu.Lock()
	m := c.modes
	c.mu.Unlock()
	if m == nil {
		return permission.Receipt{}, sema.Errorf(CodeNotRunning, "the task is not running; a mode can be set only while it runs")
	}
	return m.Steer(ctx, mode)
}

func (c *Control) bind(m *gate.ModeController) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.modes = m
	c.mu.Unlock()
}
