package tui

import (
	"context"
	"sync"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/session"
)

// Backend is what the screen drives: a prompt runs one leg whose events come back in
// order, and the permission mode changes for the running leg and every later one.
// Questions to the person do not pass through it: the back-end's gate asks an Approver.
type Backend interface {
	// Prompt runs one leg for prompt and calls emit with each of its events, the
	// result last, before it returns. Cancelling ctx interrupts the leg (it still ends
	// with its result event). A non-nil error means the leg was refused before it
	// started.
	Prompt(ctx context.Context, prompt string, emit func(agent.Event)) error
	// SetMode changes the permission mode: of the running leg, when there is one, and
	// of every later leg. It returns the mode in force.
	SetMode(ctx context.Context, mode permission.Mode) (permission.Mode, error)
}

// ShellRunner is a Backend that also runs the person's shell lines (a "!" line): the
// line runs as one Bash call through the back-end's permission gate, and its output
// joins the conversation for the model's next prompt. Local implements it; a back-end
// without it (Remote) cannot run shell lines, and the screen says so.
type ShellRunner interface {
	// Shell runs line as one leg (agent.TaskSpec.ShellLine) and calls emit with its
	// events, the result last, as Prompt does.
	Shell(ctx context.Context, line string, emit func(agent.Event)) error
}

// Local is the Backend over an in-process agent.Runner. Its first prompt starts a
// session; every later one continues it (TaskSpec.Resume), so the model sees the whole
// conversation and the session can be continued later by any process.
type Local struct {
	runner *agent.Runner
	base   agent.TaskSpec

	mu      sync.Mutex
	session string          // the session the legs continue; "" before the first
	legs    int             // legs started
	mode    permission.Mode // the person's choice; "" keeps what the session recorded
	control *agent.Control  // the running leg's; nil between legs

	store  session.Store // for Sessions (WithStores); nil without
	hist   history.Store
	extras localExtras
}

// NewLocal returns a back-end that runs each prompt as a leg of spec on runner. spec is
// the command line's task without its prompt; a spec that already resumes a session
// (--continue, --resume) makes every prompt continue that session.
func NewLocal(runner *agent.Runner, spec agent.TaskSpec) *Local {
	l := &Local{runner: runner, base: spec}
	if spec.Resume != nil {
		l.session = spec.Resume.SessionID
	}
	return l
}

// Prompt implements Backend.
func (l *Local) Prompt(ctx context.Context, prompt string, emit func(agent.Event)) error {
	return l.prompt(ctx, prompt, nil, emit)
}

// prompt runs one leg for prompt with images attached (PromptImages).
func (l *Local) prompt(ctx context.Context, prompt string, images []agent.Image, emit func(agent.Event)) error {
	e, err := l.expand(prompt)
	if err != nil {
		return err
	}
	emit = serialEmit(emit)
	ctx = retryNotices(ctx, emit)
	spec := l.leg(e.prompt)
	spec.Images = images
	withAllowed(&spec, e.allowed)
	defer l.endLeg()
	l.mu.Lock()
	runner := l.runner
	l.mu.Unlock()
	if runner, err = l.commandRunner(&e, runner, &spec); err != nil {
		return err
	}
	for i := range e.notes {
		emit(agent.Event{Type: agent.EventNotice, Notice: &e.notes[i]})
	}
	for ev, err := range runner.Events(ctx, spec) {
		if err != nil {
			return err
		}
		if ev.Type == agent.EventInit && ev.Manifest != nil && ev.ParentToolUseID == "" {
			l.mu.Lock()
			l.session = ev.Manifest.SessionID // new, resumed or forked: later legs continue it
			l.mu.Unlock()
		}
		emit(ev)
	}
	return nil
}

// leg builds the spec of the next leg: the first starts (or forks) as the command line
// said; every later one continues the session at its head.
func (l *Local) leg(prompt string) agent.TaskSpec {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.takeModelLocked()
	spec := l.base
	spec.Prompt = prompt
	ctl := &agent.Control{}
	spec.Control = ctl
	l.control = ctl
	l.legs++
	if l.legs > 1 && l.session != "" {
		spec.Resume = &agent.Resume{SessionID: l.session}
		// A continued session keeps the mode it recorded unless the person chose one.
		spec.PermissionMode = l.mode
	} else if l.mode != "" {
		spec.PermissionMode = l.mode
	}
	return spec
}

func (l *Local) endLeg() {
	l.mu.Lock()
	l.control = nil
	l.mu.Unlock()
}

// SetMode implements Backend. A mode the running leg refuses (auto without a classifier)
// is not kept for the later legs either, and the refusal comes with the mode in force.
func (l *Local) SetMode(ctx context.Context, mode permission.Mode) (permission.Mode, error) {
	l.mu.Lock()
	ctl := l.control
	l.mu.Unlock()
	effective := mode
	if ctl != nil {
		r, err := ctl.SetPermissionMode(ctx, mode)
		switch {
		case err == nil:
			effective = r.Effective
		case !sema.IsCode(err, agent.CodeNotRunning): // the leg ended meanwhile: the next takes the mode
			return r.Effective, err
		}
	}
	l.mu.Lock()
	l.mode = mode
	l.mu.Unlock()
	return effective, nil
}
