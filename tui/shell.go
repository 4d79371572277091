package tui

import (
	"context"

	"github.com/sema-agent/sema/agent"
)

// Shell implements ShellRunner: line runs as a leg of its own (agent.TaskSpec.ShellLine)
// that continues the session as Prompt's legs do — the first starts it — so its output
// is in the conversation the next prompt's model reads. The leg asks no model: the gate
// judges the line as a Bash call, and typing it is the approval of a question the gate
// would put to the person.
func (l *Local) Shell(ctx context.Context, line string, emit func(agent.Event)) error {
	emit = serialEmit(emit)
	spec := l.leg("")
	spec.ShellLine = line
	defer l.endLeg()
	for ev, err := range l.runner.Events(ctx, spec) {
		if err != nil {
			return err
		}
		if ev.Type == agent.EventInit && ev.Manifest != nil && ev.ParentToolUseID == "" {
			l.mu.Lock()
			l.session = ev.Manifest.SessionID // a first leg's new session: later legs continue it
			l.mu.Unlock()
		}
		emit(ev)
	}
	return nil
}
