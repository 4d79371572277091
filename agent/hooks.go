package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/hooks"
	"github.com/sema-agent/sema/internal/hookfold"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/tools"
)

// Codes of the hook events the runner acts on.
const (
	// CodePromptBlocked ends a run whose prompt a UserPromptSubmit hook blocked.
	CodePromptBlocked = "hooks.prompt_blocked"
	// CodeHookStopped ends a run a hook stopped (continue: false).
	CodeHookStopped = "hooks.stopped"
	// CodeStopHookLoop is the notice of a leg that stopped although its Stop hooks kept
	// blocking: after maxStopBlocks blocks in a row the leg ends anyway.
	CodeStopHookLoop = "hooks.stop_loop"
)

// maxStopBlocks bounds how many times in a row Stop hooks may send a leg back to work:
// a hook that always blocks must not keep a run going forever.
const maxStopBlocks = 8

// legHooks are the hooks a leg runs: the settings files' and the deployment's, with
// where their commands run. A child leg shares its parent's.
type legHooks struct {
	set    *hooks.Set
	runner *hooks.Runner
}

// prepareHooks compiles the settings files' hooks and Deps.Hooks.Events into the leg's
// set; their commands run in the task root, in the leg's sandbox policy where it has
// one, with the settings' environment. A set that cannot compile refuses the run.
func (l *leg) prepareHooks() error {
	if l.link != nil {
		l.hooks = l.link.parent.hooks
		return nil
	}
	list := append(slices.Clip(l.layered.Hooks), l.deps.hooks().Events...)
	if len(list) == 0 {
		return nil
	}
	set, err := hooks.NewSet(list)
	if err != nil {
		return err
	}
	r := &hooks.Runner{ProjectDir: l.spec.Root, Env: l.layered.Env, EnvPassthrough: l.envPassthrough()}
	if ex, ok := l.deps.Env.(env.Executor); ok {
		r.Exec = ex
	}
	if l.sandbox != nil {
		r.Wrap = l.hookWrap()
	}
	l.hooks = &legHooks{set: set, runner: r}
	return nil
}

// hookWrap confines a hook's command as the leg's shell commands are confined: it
// writes only inside the write roots, the temp directory and the toolchain caches, and
// reads no credential store nor the state directory. The network is the shell's.
//
// The leg's hooks share one private temp directory (TMPDIR, and /tmp in the view) made
// at the first hook, and a private write layer over the toolchain caches in it (where
// the kernel cannot lay one, private caches that start cold, as for commands): a hook that runs `go vet` or a linter builds as a command
// does, and what it writes never reaches the caches later builds outside use. The
// directory goes when the leg ends (removeHookTemp).
func (l *leg) hookWrap() func(env.ExecRequest) (env.ExecRequest, error) {
	return func(req env.ExecRequest) (env.ExecRequest, error) {
		tmp, err := l.hookTempDir()
		if err != nil {
			return req, err
		}
		o := l.sandbox.Options
		o.TempDir = tmp
		o.CacheLayer = filepath.Join(tmp, "cache")
		o.Readable = append(slices.Clip(o.Readable), sandbox.ProgramReadable(req.Argv)...)
		p := sandbox.ForFence(l.fence, o).WithProtected(l.fence, false)
		if len(p.Caches) > 0 && !l.sandbox.Kernel.Overlay {
			var cacheEnv []string
			p, cacheEnv = p.PrivateCaches()
			req.Env = append(slices.Clip(req.Env), cacheEnv...)
		}
		req.Env = append(slices.Clip(req.Env), "TMPDIR="+tmp)
		return l.sandbox.Kernel.Wrap(req, p)
	}
}

// hookTempDir is the hooks' private temp directory, made on first use.
func (l *leg) hookTempDir() (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hookTemp == "" {
		tmp, err := sandbox.TempDir("sema-hook-")
		if err != nil {
			return "", err
		}
		if err := os.Mkdir(filepath.Join(tmp, "cache"), 0o700); err != nil {
			sandbox.RemoveTempDir(tmp)
			return "", err
		}
		l.hookTemp = tmp
	}
	return l.hookTemp, nil
}

// removeHookTemp removes the hooks' temp directory once no hook of the leg can run.
func (l *leg) removeHookTemp() {
	l.mu.Lock()
	tmp := l.hookTemp
	l.hookTemp = ""
	l.mu.Unlock()
	if tmp != "" {
		sandbox.RemoveTempDir(tmp)
	}
}

// has reports whether any hook listens to event.
func (l *leg) hasHooks(event hooks.Event) bool {
	return l.hooks != nil && l.hooks.set.Has(event)
}

// hookInput is the facts every event's input carries. The mode is read to report it
// (Observed): a hook's input must not start the leg's classifier arming, which only the
// leg's own decision read may start.
func (l *leg) hookInput() hooks.Input {
	in := hooks.Input{SessionID: l.sessionID, Cwd: l.spec.Root}
	if l.modes != nil {
		in.PermissionMode = string(l.modes.Observed())
	}
	return in
}

// runHooks runs the hooks of event for target and reports what they say to the person:
// messages, and failures (which, outside PreToolUse, never block).
func (l *leg) runHooks(ctx context.Context, event hooks.Event, target string, in hooks.Input) hooks.Result {
	res := l.hooks.set.Run(ctx, l.hooks.runner, event, target, in)
	for _, m := range res.Messages {
		l.notice(hookfold.MessageNotice(event, m))
	}
	if event != hooks.PreToolUse {
		for _, f := range res.Failures {
			l.notice(hookfold.FailureNotice(event, f))
		}
	}
	if msg, ok := hookfold.StopsRun(event, res); ok {
		l.hookStop.CompareAndSwap(nil, &sema.Error{Code: CodeHookStopped, Message: msg})
	}
	return res
}

// preToolUseHook is the settings files' and the deployment's PreToolUse hooks as one
// seat of the permission fold (station 2): a failure of any of them refuses the call,
// and an allow never overrides a deny rule, a protected path or the fence (the fold's
// order sees to that). Nil when no hook listens.
func (l *leg) preToolUseHook() permission.Hook {
	if !l.hasHooks(hooks.PreToolUse) {
		return nil
	}
	return func(ctx context.Context, call permission.Call) (permission.HookDecision, error) {
		if len(l.hooks.set.Matching(hooks.PreToolUse, call.Tool)) == 0 {
			return permission.HookDecision{}, nil
		}
		in := l.hookInput()
		in.ToolName, in.ToolInput = call.Tool, call.Input
		if ref, ok := ctx.Value(callRefKey{}).(callRef); ok {
			in.ToolUseID = ref.id
		}
		res := l.runHooks(ctx, hooks.PreToolUse, call.Tool, in)
		if len(res.Failures) > 0 {
			l.notice(hookfold.FailureNotice(hooks.PreToolUse, res.Failures[0]))
		}
		return hookfold.PreToolUse(res)
	}
}

// postToolUse runs the PostToolUse (or, for a failed call, PostToolUseFailure) hooks of
// a call that ran and adds what they say for the model to its result: a block's reason
// and their additional context.
func (l *leg) postToolUse(ctx context.Context, name, id string, input json.RawMessage, r tools.Result) tools.Result {
	event := hookfold.PostToolUseEvent(r)
	if !l.hasHooks(event) || len(l.hooks.set.Matching(event, name)) == 0 {
		return r
	}
	in := l.hookInput()
	in.ToolName, in.ToolInput, in.ToolUseID = name, input, id
	res := l.runHooks(ctx, event, name, hookfold.PostToolUseInput(in, r, blocksText(r.Content)))
	if add := hookfold.PostToolUseFeedback(event, res); len(add) > 0 {
		r.Content = append(slices.Clip(r.Content), model.TextBlock("\n"+strings.Join(add, "\n")))
	}
	return r
}

// promptHooks runs the UserPromptSubmit hooks on the leg's prompt. It returns the
// context they add, or the refusal of a prompt they blocked.
func (l *leg) promptHooks(ctx context.Context) ([]string, *sema.Error) {
	if l.spec.Prompt == "" || !l.hasHooks(hooks.UserPromptSubmit) {
		return nil, nil
	}
	in := l.hookInput()
	in.Prompt = l.spec.Prompt
	res := l.runHooks(ctx, hooks.UserPromptSubmit, "", in)
	if msg, blocked := hookfold.PromptBlocked(res); blocked {
		return nil, &sema.Error{Code: CodePromptBlocked, Message: msg}
	}
	return res.Context, nil
}

// sessionStartHooks runs the SessionStart hooks for source (startup, resume, compact)
// and returns the context they add.
func (l *leg) sessionStartHooks(ctx context.Context, source string) []string {
	if !l.hasHooks(hooks.SessionStart) {
		return nil
	}
	in := l.hookInput()
	in.Source = source
	return l.runHooks(ctx, hooks.SessionStart, source, in).Context
}

// stopHooks runs the Stop (a child: SubagentStop) hooks when the model has answered
// without a call. It returns the reason to go on with when one blocked the stop.
func (l *leg) stopHooks(ctx context.Context, active bool) (string, bool) {
	event := hooks.Stop
	in := l.hookInput()
	if l.link != nil {
		event = hooks.SubagentStop
		in.AgentID, in.AgentType = l.sessionID, l.link.def.Name
	}
	if !l.hasHooks(event) {
		return "", false
	}
	in.StopHookActive = active
	return hookfold.Continue(event, l.runHooks(ctx, event, "", in))
}

// sessionEndHooks runs the SessionEnd hooks as the leg ends.
func (l *leg) sessionEndHooks(ctx context.Context, reason string) {
	if l.link != nil || !l.hasHooks(hooks.SessionEnd) {
		return
	}
	in := l.hookInput()
	in.Reason = reason
	l.runHooks(context.WithoutCancel(ctx), hooks.SessionEnd, reason, in)
}

// preCompactHooks runs the PreCompact hooks for trigger (manual, auto).
func (l *leg) preCompactHooks(ctx context.Context, trigger, instructions string) {
	if !l.hasHooks(hooks.PreCompact) {
		return
	}
	in := l.hookInput()
	in.Trigger, in.CustomInstructions = trigger, instructions
	l.runHooks(ctx, hooks.PreCompact, trigger, in)
}

// notifyHooks runs the Notification hooks when a question waits for a person.
func (l *leg) notifyHooks(ctx context.Context, tool string) {
	if !l.hasHooks(hooks.Notification) {
		return
	}
	in := hookfold.NotificationInput(l.hookInput(), tool)
	l.runHooks(ctx, hooks.Notification, in.NotificationType, in)
}

// withContext adds the hooks' context to a user message for the model.
func withContext(m model.Message, extra []string) model.Message {
	if len(extra) == 0 {
		return m
	}
	m.Content = append(slices.Clip(m.Content), model.TextBlock("<hook-context>\n"+strings.Join(extra, "\n")+"\n</hook-context>"))
	return m
}
