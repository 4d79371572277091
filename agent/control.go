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
