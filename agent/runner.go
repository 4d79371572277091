package agent

import (
	"context"
	"crypto/rand"
	"fmt"
	"iter"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
)

// Runner runs tasks. It holds only the deployment's Deps; it is safe for concurrent use
// and keeps no task state between calls.
type Runner struct {
	deps Deps
}

// New returns a Runner over deps. Defaults are filled in here (Env: the host; Now:
// time.Now); a missing Provider is refused by Run, so that the refusal carries a code.
func New(deps Deps) *Runner {
	if deps.Env == nil {
		deps.Env = env.NewHost()
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	return &Runner{deps: deps}
}

// Run runs one task to its end. The error is non-nil only when the run is refused before
// its first turn, as a *sema.Error whose code names the refusal: config.* for the spec
// or the deps, and another package's code for what the spec asks that cannot be done
// here, such as sandbox.unavailable (the sandbox is on and commands cannot be confined),
// session.not_found or session.root_mismatch (the session to resume), or session.busy
// (another run is continuing that session; see Resume.Wait). Every failure
// after that — a model error, cancellation, the turn limit — is a TaskResult status.
func (r *Runner) Run(ctx context.Context, spec TaskSpec) (*TaskResult, error) {
	return r.run(ctx, spec, nil, nil)
}

// Events runs one task and streams what happens: system/init first, then the model's
// responses, tool calls and results, notices and permission events, and the TaskResult
// as the last event. Breaking out of the range cancels the run. A refused spec yields a
// single error.
func (r *Runner) Events(ctx context.Context, spec TaskSpec) iter.Seq2[Event, error] {
	return r.events(ctx, spec, nil)
}

func (r *Runner) events(ctx context.Context, spec TaskSpec, answer *Answer) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stopped := false
		emit := func(e Event) {
			if stopped {
				return
			}
			if !yield(e, nil) {
				stopped = true
				cancel()
			}
		}
		res, err := r.run(ctx, spec, answer, emit)
		if stopped {
			return
		}
		if err != nil {
			yield(Event{}, err)
			return
		}
		yield(Event{Type: EventResult, Turn: res.NumTurns, Result: res}, nil)
	}
}

// run prepares and runs one leg; answer is set when the leg resumes a parked question.
func (r *Runner) run(ctx context.Context, spec TaskSpec, answer *Answer, emit func(Event)) (*TaskResult, error) {
	if emit == nil {
		emit = func(Event) {}
	}
	// The leg's own context: a lost session lease cancels it with that cause.
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	l, err := prepare(ctx, &r.deps, spec, answer, emit, stop, nil)
	if err != nil {
		if answer != nil {
			return nil, wrapConfigRefused(err)
		}
		return nil, err
	}
	spec.Control.bind(l.modes)
	defer spec.Control.bind(nil)
	return l.loop(ctx), nil
}

// Resume answers a parked question and continues the leg: spec names the session
// (Resume.SessionID) and carries the re-supplied configuration, answer the decision. The
// checkpoint is claimed once, atomically; a second answer fails with
// checkpoint.already_claimed, whose message and detail say how the leg that ran the first
// answer ended ("answered_leg_status") and, when the session waits at a newer question,
// which ("open_checkpoint"); a configuration prepare refuses fails with
// checkpoint.config_refused before anything is claimed. The resumed leg runs on like any
// other: it may end completed, or park again at the model's next question with a new
// checkpoint — TaskResult.Parked says which. TaskResult.Answered reports the answered
// call and its result, also when the leg fails after it (a model error on the next
// request): the call ran, the session holds its result, and a plain resume continues. The
// resumed leg starts with what the model had read in the session, so an approved edit
// of a file read earlier runs if the file is as it was read. spec.Prompt may be empty.
//
// The resumed leg's mode comes from the checkpoint: spec.PermissionMode when set, else
// the mode the leg that parked recorded — except that approving (or editing) a
// plan_review question (the model's ExitPlanMode) asked in plan leaves plan: the leg
// runs in the mode it had before plan (none recorded: the root's settings default, else
// default), or in the mode spec.PermissionMode names when that is not plan; a re-passed
// plan does not keep an approved plan open. A denied plan review stays in plan.
func (r *Runner) Resume(ctx context.Context, spec TaskSpec, answer Answer) (*TaskResult, error) {
	return r.run(ctx, spec, &answer, nil)
}

// ResumeEvents is Resume as a stream, as Events is to Run: the same answer, claimed the
// same way, with the resumed leg's events and its TaskResult as the last event.
func (r *Runner) ResumeEvents(ctx context.Context, spec TaskSpec, answer Answer) iter.Seq2[Event, error] {
	return r.events(ctx, spec, &answer)
}

// newSessionID returns a random RFC 4122 version 4 UUID.
func newSessionID() string {
	var b [16]byte
	rand.Read(b[:]) // crypto/rand.Read never fails (it panics instead)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// configError is a refusal at a door.
func configError(code, format string, args ...any) *sema.Error {
	return sema.Errorf(code, format, args...)
}
