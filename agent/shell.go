package agent

import (
	"context"
	"fmt"

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
		ExtraEnv:                l.layered.Env,
		EnvPassthrough:          l.envPassthrough(),
	}
	if c := l.bashRecorder(); c != nil {
		l.bashChanges, cfg.Changes = c, lazyBoundary{c}
	} else if c := l.protectRecorder(); c != nil {
		cfg.Changes = c // file history off: the walk guards the protected paths alone
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
	l.endSweep()
	if l.shell == nil {
		return nil
	}
	if l.deps.shell().KeepBackgroundTasks {
		l.bashChanges.closeStage(ctx, true)
		var out []BackgroundTask
		for _, t := range l.shell.Running() {
			out = append(out, BackgroundTask{ID: t.ID, Command: t.Command, PID: t.PID, Output: t.OutputFile})
		}
		return out
	}
	if err := l.shell.Shutdown(context.WithoutCancel(ctx)); err != nil {
		l.notice(sema.Notice{Code: CodeShellShutdownFailed, Message: "background tasks could not all be stopped: " + err.Error()})
	}
	l.bashChanges.closeStage(context.WithoutCancel(ctx), false)
	return nil
}

// sweepTemps removes, while the leg runs, the temporary files that atomic writes of a
// process killed mid-write left in the write roots (env.CleanStaleTemps: only that exact
// name pattern, only files whose writer is provably dead or, when that cannot be told,
// older than a minute). It walks on a goroutine of its own, so a
// large tree never delays the first model request; the walk is bounded
// (env.MaxStaleTempWalk) and ends with ctx, and endSweep waits for it.
func (l *leg) sweepTemps(ctx context.Context) {
	if _, ok := l.deps.Env.(*env.Host); !ok || l.spec.ReadOnly {
		return
	}
	done := make(chan struct{})
	roots := l.fence.WriteRoots()
	go func() {
		defer close(done)
		var removed []string
		for _, r := range roots {
			removed = append(removed, env.CleanStaleTemps(ctx, r)...)
		}
		if len(removed) > 0 {
			l.notice(sema.Notice{Code: CodeStaleTempsRemoved, Message: fmt.Sprintf("removed %d temporary file(s) an interrupted write had left behind", len(removed)),
				Detail: map[string]any{"paths": removed}})
		}
	}()
	l.stopSweep = func() { <-done }
}

// endSweep waits for the leg's temp sweep, if one runs.
func (l *leg) endSweep() {
	if l.stopSweep != nil {
		l.stopSweep()
		l.stopSweep = nil
	}
}
