package tui

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/commands"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/subagent"
)

// The slash commands that need more than the events ask the back-end through these
// small interfaces; a back-end that does not implement one makes its command say so.

// ModelSwitcher is a back-end whose later legs can run another model.
type ModelSwitcher interface {
	// SetModel resolves ref as the command line resolves --model and makes it the
	// model of every later leg; it returns the model's name.
	SetModel(ctx context.Context, ref string) (string, error)
}

// Compacter is a back-end that can compact the session's conversation.
type Compacter interface {
	// Compact compacts the conversation: the running leg's before its next request
	// (nil info: asked, reported by an EventCompaction), else the stored session's now.
	Compact(ctx context.Context, instructions string) (*agent.CompactionInfo, error)
}

// PermissionReporter is a back-end that can say which permission rules are in force.
type PermissionReporter interface {
	// Permissions reports the rules the next leg would apply, each with its seat.
	Permissions(ctx context.Context) (*agent.PermissionReport, error)
}

// AgentLister is a back-end that can list the agent types the Task tool offers.
type AgentLister interface {
	// Agents lists the agent types, in the catalog's order; an error with a list says
	// what was left out of it.
	Agents(ctx context.Context) ([]subagent.Definition, error)
}

// CommandLister is a back-end that expands custom commands (package commands): a
// prompt "/name args" naming one of them is sent as a prompt, and the back-end expands
// it as the headless command line does.
type CommandLister interface {
	// Commands lists the custom commands a prompt may invoke, sorted by name.
	Commands() []*commands.Command
}

// ModelOpener builds the runner of a model reference and returns it with the model's
// name; the command line's, so that /model resolves a name as --model does.
type ModelOpener func(ref string) (*agent.Runner, string, error)

// localExtras are the parts of Local the slash commands use.
type localExtras struct {
	open     ModelOpener
	next     *agent.Runner // the runner of a model switched to, taken by the next leg
	nextName string
	commands *commands.Set
	trusted  bool // the workspace is trusted: its commands' allowed-tools apply
}

// SetModelOpener lets /model switch the model of later legs through open.
func (l *Local) SetModelOpener(open ModelOpener) {
	l.mu.Lock()
	l.extras.open = open
	l.mu.Unlock()
}

// SetCommands makes set's custom commands invocable; trusted says the workspace is
// trusted, so that its commands' allowed-tools apply as they do headless.
func (l *Local) SetCommands(set *commands.Set, trusted bool) {
	l.mu.Lock()
	l.extras.commands, l.extras.trusted = set, trusted
	l.mu.Unlock()
}

// SetModel implements ModelSwitcher.
func (l *Local) SetModel(_ context.Context, ref string) (string, error) {
	l.mu.Lock()
	open := l.extras.open
	l.mu.Unlock()
	if open == nil {
		return "", sema.Errorf(CodeNotOffered, "this session cannot switch models; start sema again with --model %s", ref)
	}
	r, name, err := open(ref)
	if err != nil {
		return "", err
	}
	l.mu.Lock()
	l.extras.next, l.extras.nextName = r, name
	l.mu.Unlock()
	return name, nil
}

// takeModelLocked moves a switched-to model into the base of the legs.
func (l *Local) takeModelLocked() {
	if l.extras.next != nil {
		l.runner, l.base.Model = l.extras.next, l.extras.nextName
		l.extras.next = nil
	}
}

// Compact implements Compacter: the running leg is asked through its control; between
// legs the stored session is compacted at once (Runner.Compact).
func (l *Local) Compact(ctx context.Context, instructions string) (*agent.CompactionInfo, error) {
	l.mu.Lock()
	ctl, session, runner := l.control, l.session, l.runner
	l.mu.Unlock()
	if ctl != nil {
		err := ctl.Compact(instructions)
		if err == nil || !sema.IsCode(err, agent.CodeNotRunning) {
			return nil, err
		}
	}
	if session == "" {
		return nil, sema.Errorf(CodeNothingToCompact, "there is no conversation to compact yet; send a prompt first")
	}
	return runner.Compact(ctx, session, instructions)
}

// Permissions implements PermissionReporter: the rules the next leg would apply.
func (l *Local) Permissions(ctx context.Context) (*agent.PermissionReport, error) {
	l.mu.Lock()
	spec, runner := l.base, l.runner
	if l.mode != "" {
		spec.PermissionMode = l.mode
	}
	l.mu.Unlock()
	spec.Resume, spec.Control = nil, nil
	return runner.Permissions(ctx, spec, nil)
}

// Agents implements AgentLister: the built-in types and the task root's agent files
// (.claude/agents, .sema/agents), with the files that could not be loaded as the error.
// The person's ~/.claude/agents and a deployment's own types are not read here.
func (l *Local) Agents(ctx context.Context) ([]subagent.Definition, error) {
	l.mu.Lock()
	root := l.base.Root
	l.mu.Unlock()
	project, problems := subagent.Load(ctx, env.NewHost(), root)
	c := subagent.NewCatalog(subagent.BuiltIns(), project)
	var out []subagent.Definition
	for _, n := range c.Names() {
		d, _ := c.Lookup(n)
		out = append(out, d)
	}
	return out, errors.Join(problems...)
}

// Commands implements CommandLister.
func (l *Local) Commands() []*commands.Command {
	l.mu.Lock()
	set := l.extras.commands
	l.mu.Unlock()
	if set == nil {
		return nil
	}
	return set.Commands()
}

// expanded is a prompt read as a custom command: the prompt it expands to, the allow
// rules and the model it gives its leg, and the notices to show.
type expanded struct {
	prompt  string
	allowed []string
	model   string // the command's model for this leg; "" for the session's
	notes   []sema.Notice
}

// expand reads prompt as a custom command, as the headless command line does. Any
// other prompt comes back unchanged.
func (l *Local) expand(prompt string) (expanded, error) {
	l.mu.Lock()
	set, trusted := l.extras.commands, l.extras.trusted
	l.mu.Unlock()
	if set == nil {
		return expanded{prompt: prompt}, nil
	}
	if _, _, ok := commands.Split(prompt); !ok {
		return expanded{prompt: prompt}, nil
	}
	inv, err := set.Resolve(prompt)
	if err != nil || inv == nil {
		return expanded{prompt: prompt}, err
	}
	c := inv.Command
	allowed, model := c.AllowedTools, c.Model
	var notes []sema.Notice
	if c.Scope == commands.ScopeProject && !trusted {
		if len(allowed) > 0 || model != "" {
			notes = append(notes, sema.Notice{Code: agent.CodeProjectSettingsUntrusted, Message: fmt.Sprintf(
				"/%s is the workspace's command (%s): its allowed-tools and model apply only in a trusted workspace and were dropped; trust the workspace with sema trust, or run with --trust-project", c.Name, c.Path)})
		}
		allowed, model = nil, ""
		for _, sh := range c.Shadows {
			if sh.Scope == commands.ScopeUser {
				notes = append(notes, sema.Notice{Code: CodeCommandShadowed, Message: fmt.Sprintf("/%s is the workspace's command (%s), not your own %s", c.Name, c.Path, sh.Path)})
				break
			}
		}
	}
	return expanded{prompt: inv.Prompt, allowed: allowed, model: model, notes: notes}, nil
}

// commandRunner is the runner and model name a command's leg runs on: the command's
// model, opened as /model opens one, for that leg alone; the session's own without one.
// A back-end that cannot open models runs it on the session's, and says so.
func (l *Local) commandRunner(e *expanded, runner *agent.Runner, spec *agent.TaskSpec) (*agent.Runner, error) {
	if e.model == "" {
		return runner, nil
	}
	l.mu.Lock()
	open := l.extras.open
	l.mu.Unlock()
	if open == nil {
		e.notes = append(e.notes, sema.Notice{Code: CodeCommandModel, Message: fmt.Sprintf(
			"the command names the model %s; this session cannot switch models, so it runs on its own", e.model)})
		return runner, nil
	}
	r, name, err := open(e.model)
	if err != nil {
		return nil, err
	}
	spec.Model = name
	e.notes = append(e.notes, sema.Notice{Code: CodeCommandModel, Message: fmt.Sprintf("this command runs on %s (its model), for this turn", name)})
	return r, nil
}

// serialEmit makes emit safe to call from several goroutines (a provider's retries),
// one event at a time.
func serialEmit(emit func(agent.Event)) func(agent.Event) {
	var mu sync.Mutex
	return func(ev agent.Event) {
		mu.Lock()
		defer mu.Unlock()
		emit(ev)
	}
}

// retryNotices turns the provider's retries into notices of the leg: the screen shows
// them in the conversation instead of a line on stderr drawn over it.
func retryNotices(ctx context.Context, emit func(agent.Event)) context.Context {
	return model.WithRetryObserver(ctx, func(r model.Retry) {
		why := r.Reason
		if r.Status != 0 {
			why = fmt.Sprintf("HTTP %d", r.Status)
		}
		n := sema.Notice{Code: CodeRetry, Message: fmt.Sprintf("retrying the model request in %s (%s)", r.Wait.Round(100*time.Millisecond), why)}
		emit(agent.Event{Type: agent.EventNotice, Notice: &n})
	})
}

// withAllowed adds a command's allow rules to one leg's spec.
func withAllowed(spec *agent.TaskSpec, allowed []string) {
	if len(allowed) > 0 {
		spec.AllowedTools = slices.Concat(spec.AllowedTools, allowed)
	}
}

// The codes the session's own refusals and notices carry.
const (
	// CodeNotOffered: the back-end does not offer what a slash command asks.
	CodeNotOffered = "tui.not_offered"
	// CodeNothingToCompact: /compact before the session has a conversation.
	CodeNothingToCompact = "tui.nothing_to_compact"
	// CodeCommandModel: a custom command's leg runs on the command's model (or could not).
	CodeCommandModel = "tui.command_model"
	// CodeCommandShadowed: an untrusted workspace's command hides the person's own
	// command of the same name (the command line's notice of the same code).
	CodeCommandShadowed = "config.command_shadowed"
	// CodeRetry: the provider sends a model request again.
	CodeRetry = "tui.retry"
)
