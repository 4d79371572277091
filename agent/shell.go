package agent

import (
	"context"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/internal/gate"
	"github.com/sema-agent/sema/tools/shell"
)

// fullShell reports whether Bash will be mounted: the env can run programs and the leg
// is not read-only. The fence reads it (a bash-less leg keeps its faces at roots).
func (l *leg) fullShell() bool {
	_, ok := l.deps.Env.(env.Executor)
	return ok && !l.spec.ReadOnly
}

// mountShell builds the leg's shell tools when the env can run programs: Bash with its
// background tasks, or bash_readonly for a read-only leg. The permission fold judges
// every command in the dispatcher, like every other call that is not a file write.
func (l *leg) mountShell() error {
	if _, ok := l.deps.Env.(env.Executor); !ok {
		return nil
	}
	cfg := shell.Config{
		Env:                     l.deps.Env,
		Fence:                   l.fence,
		ReadOnly:                l.spec.ReadOnly,
		ReadonlyAllow:           l.deps.shell().ReadonlyAllow,
		CommitCoAuthor:          l.deps.shell().CommitCoAuthor,
		AutoBackgroundOnTimeout: l.deps.shell().AutoBackgroundOnTimeout,
		Sandbox:                 l.sandbox,
		ReadDenial:              l.readDenial(),
	}
	if c := l.bashRecorder(); c != nil {
		l.bashChanges, cfg.Changes = c, c
	}
	set, err := shell.New(cfg)
	if err != nil {
		return err
	}
	l.shell = set
	return nil
}

// readDenial is the gate's judgement of reads for the leg's scope; the zero value when
// no gate was built.
func (l *leg) readDenial() gate.ReadDenial {
	if l.gate == nil {
		return gate.ReadDenial{}
	}
	return l.gate.ReadDenial(l.scope)
}

// stopShell ends the leg's shell: background tasks are stopped unless the deployment
// keeps them, in which case the running ones are reported.
func (l *leg) stopShell(ctx context.Context) []BackgroundTask {
	if l.shell == nil {
		return nil
	}
	if l.deps.shell().KeepBackgroundTasks {
		var out []BackgroundTask
		for _, t := range l.shell.Running() {
			out = append(out, BackgroundTask{ID: t.ID, Command: t.Command, PID: t.PID, Output: t.OutputFile})
		}
		return out
	}
	if err := l.shell.Shutdown(context.WithoutCancel(ctx)); err != nil {
		l.notice(sema.Notice{Code: CodeShellShutdownFailed, Message: "background tasks could not all be stopped: " + err.Error()})
	}
	return nil
}
