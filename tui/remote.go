package tui

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/permission"
)

// CodeRemoteStream is the error of a prompt whose task's event stream broke or could not
// be read: the task may still run on the service.
const CodeRemoteStream = "tui.remote_stream"

// taskTotals is the ParentToolUseID of the response event that carries a task's usage
// (see follower.result); no call of a model has it.
const taskTotals = "sema-attach:task-totals"

// cancelWait bounds how long an interrupted prompt follows its cancelled task for the
// result the service records.
const cancelWait = 10 * time.Second

// Remote is the Backend over a running `sema serve`: each prompt is a task of one
// session, its events come from the task's stream, and a question the service parks (a
// checkpoint) is put to the person through the approver and answered with a decision.
//
// What a service cannot do is not faked. The model's text arrives a response at a time
// (the service's stream carries no partial text). The permission mode cannot change
// while a task runs (the API has no such call): SetMode applies to the next prompt's
// task and says so in its answer. An interrupt cancels the task on the service.
type Remote struct {
	c        *client.Client
	base     client.TaskSpec
	approver permission.Approver

	mu      sync.Mutex
	session string          // the session the prompts continue; "" before the first
	mode    permission.Mode // the person's choice for the next task; "" keeps the session's
	running string          // the task a prompt follows now; "" between prompts
}

// NewRemote returns a back-end whose prompts run as tasks of spec (its Cwd, Model and
// limits; without Prompt) on the service c calls. A spec that names a session (Resume)
// makes every prompt continue it; otherwise the first prompt's session is continued by
// the later ones. approver answers the parked questions (an *Approver shows them as the
// screen's dialog); nil denies each one.
func NewRemote(c *client.Client, spec client.TaskSpec, approver permission.Approver) *Remote {
	r := &Remote{c: c, base: spec, approver: approver, session: spec.Resume}
	r.base.Resume, r.base.ForkSession = "", false
	return r
}

// Session is the session the prompts continue; "" before the first prompt of a new one.
func (r *Remote) Session() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.session
}

// Prompt implements Backend: it submits the task, follows its events to the task's end,
// and answers each checkpoint on the way.
func (r *Remote) Prompt(ctx context.Context, prompt string, emit func(agent.Event)) error {
	spec := r.spec(prompt)
	task, err := r.c.SubmitTask(ctx, spec)
	if err != nil {
		return err
	}
	if task.SessionID != "" {
		r.setSession(task.SessionID)
	}
	r.mu.Lock()
	r.running = task.TaskID
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.running = ""
		r.mu.Unlock()
	}()
	f := &follower{r: r, task: task.TaskID, emit: emit}
	return f.run(ctx)
}

// spec is the next prompt's task.
func (r *Remote) spec(prompt string) client.TaskSpec {
	r.mu.Lock()
	defer r.mu.Unlock()
	spec := r.base
	spec.Prompt = prompt
	spec.Resume = r.session
	if r.mode != "" {
		spec.PermissionMode = string(r.mode)
	}
	return spec
}

func (r *Remote) setSession(id string) {
	r.mu.Lock()
	r.session = id
	r.mu.Unlock()
}

// SetMode implements Backend: the running task, if any, changes mode on the service
// (POST /v1/tasks/{id}/mode), and the mode is kept for the next prompt's task. The
// answer is the mode in force when the running leg took the change at once; else the
// mode asked for (another process of the service runs the leg, or it waits at a
// question: the leg that runs next applies it, and its stream says so). A mode the
// service refuses for the running task is refused here, and not kept.
func (r *Remote) SetMode(ctx context.Context, mode permission.Mode) (permission.Mode, error) {
	r.mu.Lock()
	running := r.running
	r.mu.Unlock()
	effective := mode
	if running != "" {
		got, err := r.c.SetMode(ctx, running, string(mode))
		var ce *client.Error
		switch {
		case errors.As(err, &ce) && ce.Code == "task.conflict":
			// The task ended meanwhile: the next one takes the mode.
		case err != nil:
			return "", err
		case got.Applied:
			effective = permission.Mode(got.PermissionMode)
		}
	}
	r.mu.Lock()
	r.mode = mode
	r.mu.Unlock()
	return effective, nil
}

// follower follows one task's stream: it converts each event for the screen, answers
// the checkpoints, and gathers the legs' cost and usage into the task's one result.
type follower struct {
	r    *Remote
	task string
	emit func(agent.Event)

	after int64     // the last event read
	legs  legTotals // the parked legs' cost and usage, added to the last result
	done  bool      // the task's last result was emitted
	// said is the turn of the leg's last whole response: a piece of streaming text
	// of that turn or before that arrives after it is late, and left out.
	said int
}

// legTotals sums what the legs of one task cost: a parked leg's result is not shown (the
// task goes on), its cost and usage count in the task's result.
type legTotals struct {
	cost    float64
	unknown bool
	usage   model.Usage
}

func (f *follower) run(ctx context.Context) error {
	err := f.follow(ctx, ctx)
	if f.done {
		return nil
	}
	if ctx.Err() != nil {
		return f.interrupted()
	}
	if err == nil {
		err = sema.Errorf(CodeRemoteStream, "the event stream of task %s ended before its result; `GET /v1/tasks/%s` tells how it ended", f.task, f.task)
	}
	return err
}

// follow reads the task's events after f.after until its last result. decideCtx is the
// context the checkpoints are answered in (the prompt's; an interrupted prompt answers
// none).
func (f *follower) follow(ctx, decideCtx context.Context) error {
	for ev, err := range f.r.c.Events(ctx, f.task, f.after, client.WithText()) {
		if err != nil {
			return sema.Errorf(CodeRemoteStream, "the event stream of task %s broke: %v", f.task, err)
		}
		if ev.Type == client.EventText {
			// A piece of the answer as it is written (no id: it moves nothing).
			if t, ok := ev.Text(); ok && ev.ParentToolUseID == "" && ev.Turn > f.said {
				f.emit(agent.Event{Type: agent.EventText, Turn: ev.Turn, Text: t.Text})
			}
			continue
		}
		f.after = ev.ID
		switch {
		case ev.Type == client.EventSystem:
			f.said = 0 // a new leg
		case ev.Type == client.EventAssistant && ev.ParentToolUseID == "":
			f.said = ev.Turn
		}
		if ev.Type == client.EventResult && ev.ParentToolUseID == "" {
			if err := f.result(decideCtx, ev); err != nil {
				return err
			}
			continue
		}
		if a, ok := convert(ev); ok {
			if a.Type == agent.EventInit && a.Manifest != nil && a.Manifest.SessionID != "" {
				f.r.setSession(a.Manifest.SessionID)
			}
			f.emit(a)
		}
	}
	return nil
}

// result handles a leg's end: a parked leg's checkpoint is put to the approver and
// decided; the task's last result is emitted with every leg's cost and usage.
func (f *follower) result(ctx context.Context, ev client.Event) error {
	var res agent.TaskResult
	if err := json.Unmarshal(ev.Data, &res); err != nil {
		return sema.Errorf(CodeRemoteStream, "event %d of task %s is not a result: %v", ev.ID, f.task, err)
	}
	var cp struct {
		Checkpoint *client.Checkpoint `json:"checkpoint"`
	}
	json.Unmarshal(ev.Data, &cp)
	f.legs.usage = f.legs.usage.Add(res.Usage)
	if res.TotalCostUSD == nil {
		f.legs.unknown = true
	} else {
		f.legs.cost += *res.TotalCostUSD
	}
	if res.Status == sema.StatusAwaitingApproval && cp.Checkpoint != nil {
		if ctx.Err() != nil {
			return nil // interrupted: the task is being cancelled, the question with it
		}
		return f.decide(ctx, res.Manifest.Mode.Effective, *cp.Checkpoint)
	}
	// The usage reaches the status line's counters on a response, as a local leg's does.
	// The service reports only the task's total, which is not the size of one request, so
	// it comes as a delegated leg's response does (ParentToolUseID set): counted in the
	// tokens, not taken for the context's fill.
	f.emit(agent.Event{Type: agent.EventAssistant, Response: &model.Response{Usage: f.legs.usage}, ParentToolUseID: taskTotals})
	res.Usage = f.legs.usage
	res.TotalCostUSD = nil
	if !f.legs.unknown {
		c := f.legs.cost
		res.TotalCostUSD = &c
	}
	f.emit(agent.Event{Type: agent.EventResult, Result: &res})
	f.done = true
	return nil
}

// decide puts a checkpoint to the approver and sends its answer; the task's stream then
// goes on with the resumed leg.
func (f *follower) decide(ctx context.Context, mode string, cp client.Checkpoint) error {
	req := permission.ApprovalRequest{
		Tool:  cp.Tool,
		Input: cp.Input,
		Ask:   permission.Decision{Behavior: permission.Ask, Reason: cp.Message, Gate: cp.Gate, PersonOnly: cp.Gate == permission.GatePlanReview},
		Mode:  permission.Mode(mode),
	}
	d := permission.ApprovalDecision{Behavior: permission.Deny, Reason: "nobody at this terminal can answer it"}
	if f.r.approver != nil {
		var err error
		if d, err = f.r.approver.Approve(ctx, req); err != nil {
			d = permission.ApprovalDecision{Behavior: permission.Deny, Reason: err.Error()}
		}
	}
	if ctx.Err() != nil {
		return nil // interrupted while the question was open: the task is cancelled instead
	}
	dec := client.Decision{Decision: "deny", Message: d.Reason}
	if d.Behavior == permission.Allow {
		dec = client.Decision{Decision: "allow", Input: d.UpdatedInput}
	}
	_, err := f.r.c.Decide(ctx, cp.ID, dec)
	var ce *client.Error
	if errors.As(err, &ce) && ce.Code == codeAlreadyClaimed {
		// Answered meanwhile over the API (sema approve, another screen): the task goes on
		// by that decision, and the stream shows what it was.
		f.emit(agent.Event{Type: agent.EventNotice, Notice: &sema.Notice{Code: codeAlreadyClaimed,
			Message: "the question about " + cp.Tool + " was answered elsewhere before this screen's answer"}})
		return nil
	}
	return err
}

// codeAlreadyClaimed is the service's answer to a second decision on a checkpoint.
const codeAlreadyClaimed = "checkpoint.already_claimed"

// interrupted cancels the task on the service and follows it to its recorded end, so the
// screen gets the result an interrupted local leg gives; when the service does not answer
// in time, the result says the task was cancelled as far as this screen knows.
func (f *follower) interrupted() error {
	ctx, cancel := context.WithTimeout(context.Background(), cancelWait)
	defer cancel()
	if _, err := f.r.c.Cancel(ctx, f.task); err == nil {
		stopped, stop := context.WithCancel(ctx)
		stop() // no checkpoint is answered after the interrupt
		f.follow(ctx, stopped)
	}
	if !f.done {
		f.emit(agent.Event{Type: agent.EventResult, Result: &agent.TaskResult{
			SessionID: f.r.Session(), Status: sema.StatusCancelled,
			Error: sema.Errorf(agent.CodeCancelled, "interrupted; task %s was asked to cancel on the service", f.task),
		}})
	}
	return nil
}
