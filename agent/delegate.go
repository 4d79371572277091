package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/internal/childleg"
	"github.com/sema-agent/sema/internal/transcript"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/subagent"
	"github.com/sema-agent/sema/tools"
)

// Delegation configures the Task tool and the child legs it runs. The zero value (and
// a nil Deps.Delegation) is the default of every field.
type Delegation struct {
	// Agents are the deployment's agent types for the Task tool. They join the built-in
	// ones (general-purpose, Explore, Plan) and the task root's .claude/agents/*.md and
	// .sema/agents/*.md files, and replace any of those with the same name. A definition
	// subagent.Validate refuses refuses the run (config.delegation_invalid). Default:
	// none.
	Agents []subagent.Definition
	// Off unmounts the Task tool: no leg delegates. Default false.
	Off bool
	// MaxConcurrent bounds the Task calls of one turn that run at once; the others wait
	// for a slot. Zero (the default): DefaultMaxConcurrentTasks. Negative is refused
	// (config.delegation_invalid).
	MaxConcurrent int
	// MaxDepth is how deep delegation nests: 1 lets the task's own leg delegate and gives
	// its children no Task tool, 2 lets those children delegate once more, and so on.
	// Zero (the default): DefaultMaxDelegationDepth. Negative is refused
	// (config.delegation_invalid).
	MaxDepth int
}

const (
	// DefaultMaxConcurrentTasks is how many Task calls of one turn run at once by default.
	DefaultMaxConcurrentTasks = 4
	// DefaultMaxDelegationDepth is how deep delegation nests by default: children do not
	// delegate.
	DefaultMaxDelegationDepth = 1
)

func (d *Deps) delegation() Delegation {
	if d.Delegation == nil {
		return Delegation{}
	}
	return *d.Delegation
}

func (d Delegation) maxConcurrent() int {
	if d.MaxConcurrent == 0 {
		return DefaultMaxConcurrentTasks
	}
	return d.MaxConcurrent
}

func (d Delegation) maxDepth() int {
	if d.MaxDepth == 0 {
		return DefaultMaxDelegationDepth
	}
	return d.MaxDepth
}

// validateDelegation is the door's part for Deps.Delegation.
func validateDelegation(deps *Deps) error {
	dg := deps.delegation()
	if dg.MaxConcurrent < 0 || dg.MaxDepth < 0 {
		return configError(CodeDelegationInvalid, "Deps.Delegation bounds must not be negative (MaxConcurrent %d, MaxDepth %d); use 0 for the defaults, or Off to turn delegation off",
			dg.MaxConcurrent, dg.MaxDepth)
	}
	for i, d := range dg.Agents {
		if err := subagent.Validate(d); err != nil {
			return (&sema.Error{Code: CodeDelegationInvalid, Message: fmt.Sprintf("Deps.Delegation.Agents[%d] is refused: %s", i, sema.MessageOf(err)), Err: err}).
				With("code", sema.CodeOf(err)).With("index", i)
		}
	}
	return nil
}

// link is what a child leg knows of the leg that delegated it.
type link struct {
	parent *leg
	// toolUseID is the parent's Task call this child answers.
	toolUseID   string
	def         subagent.Definition
	description string
	// depth is 1 for a child of the task's own leg.
	depth int
	// claimed is the checkpoint a resuming parent already claimed for this child: the
	// child runs the decision without claiming it again.
	claimed *session.Checkpoint
}

// depth is how deep the leg is in its delegation chain: 0 for the task's own leg.
func (l *leg) depth() int {
	if l.link == nil {
		return 0
	}
	return l.link.depth
}

// mayDelegate reports whether the leg mounts the Task tool.
func (l *leg) mayDelegate() bool {
	return !l.deps.delegation().Off && l.depth() < l.deps.delegation().maxDepth()
}

// prepareAgents builds the catalog of agent types: the built-ins, the person's
// ~/.claude/agents files (with Claude Code's files on), the root's .claude/agents and
// .sema/agents files, then the deployment's (Deps.Delegation.Agents), a later definition of a name
// replacing an earlier one. A child uses its parent's catalog.
func (l *leg) prepareAgents(ctx context.Context) {
	if l.link != nil {
		l.agents = l.link.parent.agents
		return
	}
	if !l.mayDelegate() {
		return
	}
	var user []subagent.Definition
	var problems []error
	if l.layered.ClaudeCompat {
		user, problems = subagent.LoadUser(ctx, l.deps.Env, l.home())
	}
	project, more := subagent.Load(ctx, l.deps.Env, l.fence.Root())
	for _, p := range append(problems, more...) {
		l.notice(sema.Notice{Code: CodeSubagentProblem, Message: "an agent definition was not loaded: " + sema.MessageOf(p),
			Detail: map[string]any{"cause": sema.CodeOf(p)}})
	}
	l.agents = subagent.NewCatalog(subagent.BuiltIns(), user, project, l.deps.delegation().Agents)
}

// taskTool is the Task tool: it runs a child leg to completion and answers with the
// child's final text. Its spec, whose description lists the leg's agent types, is built
// once: it is read at every request and every call, and the catalog never changes.
type taskTool struct {
	l    *leg
	spec tools.Spec
}

func newTaskTool(l *leg) *taskTool {
	return &taskTool{l: l, spec: childleg.Spec(l.agents.Describe())}
}

func (t *taskTool) Spec() tools.Spec { return t.spec }

func (t *taskTool) Run(ctx context.Context, input json.RawMessage) tools.Result {
	in, refused := childleg.Parse(input)
	if refused != nil {
		return *refused
	}
	def, ok := t.l.agents.Lookup(in.SubagentType)
	if !ok {
		return tools.FromError(t.l.agents.UnknownType(in.SubagentType), subagent.CodeTypeUnknown)
	}
	call, _ := ctx.Value(callRefKey{}).(callRef)
	return t.l.delegate(ctx, call, def, in)
}

// delegate runs one Task call's child leg.
func (l *leg) delegate(ctx context.Context, call callRef, def subagent.Definition, in childleg.Input) tools.Result {
	spec, res := l.childSpec(def, in.Prompt)
	if res != nil {
		return *res
	}
	select {
	case l.taskSlots <- struct{}{}:
		defer func() { <-l.taskSlots }()
	case <-ctx.Done():
		return tools.Fail(tools.CodeCancelled, "The call was not run: the task was cancelled.")
	}
	lk := &link{parent: l, toolUseID: call.id, def: def, description: in.Description, depth: l.depth() + 1}
	r, err := l.runChild(ctx, spec, nil, lk)
	return l.childOutcome(ctx, call, lk, r, err)
}

// childSpec is the task a child leg runs: the parent's roots, faces, rules, sandbox and
// way of answering questions, what the definition decides (childleg.Derive), and no
// more tokens or dollars than the parent has left.
func (l *leg) childSpec(def subagent.Definition, prompt string) (TaskSpec, *tools.Result) {
	p := l.spec
	own, refused := childleg.Derive(childleg.Parent{Model: p.Model, Provider: l.deps.Provider.Name(), ReadOnly: p.ReadOnly,
		MaxTurns: p.MaxTurns, TurnsRun: int(l.turnsRun.Load())}, def)
	spec := TaskSpec{
		Prompt:                    prompt,
		Root:                      l.fence.Root(),
		Model:                     own.Model,
		AppendSystemPrompt:        own.Prompt,
		MaxTokens:                 p.MaxTokens,
		PermissionMode:            own.Mode,
		AllowedTools:              p.AllowedTools,
		DisallowedTools:           p.DisallowedTools,
		AskTools:                  p.AskTools,
		AdditionalDirectories:     p.AdditionalDirectories,
		AdditionalReadDirectories: p.AdditionalReadDirectories,
		ReadFace:                  p.ReadFace,
		WriteFace:                 p.WriteFace,
		ReadOnly:                  own.ReadOnly,
		Sandbox:                   p.Sandbox,
		SandboxNetwork:            p.SandboxNetwork,
		OnAsk:                     p.OnAsk,
		Scratchpad:                p.Scratchpad,
		FileHistory:               p.FileHistory,
		MaxTurns:                  own.MaxTurns,
	}
	if refused != nil {
		return spec, refused
	}
	if r := l.childBudget(&spec); r != nil {
		return spec, r
	}
	return spec, nil
}

// runChild prepares and runs a child leg under this leg, streaming its events into this
// leg's stream. answer is set when the child resumes a parked question.
func (l *leg) runChild(ctx context.Context, spec TaskSpec, answer *Answer, lk *link) (*TaskResult, error) {
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	child, err := prepare(ctx, l.deps, spec, answer, l.childEmitter(lk), stop, lk)
	if err != nil {
		return nil, err
	}
	l.enqueue(Event{Type: EventSubagentStart, Subagent: &SubagentRun{
		ToolUseID: lk.toolUseID, Type: lk.def.Name, Description: lk.description, SessionID: child.sessionID, Status: sema.StatusRunning}})
	return child.loop(ctx), nil
}

// childEmitter forwards a child's events into this leg's stream, marked with the Task
// call they belong to. The child's init, text pieces and result are left out: its start
// and end are this leg's subagent events.
func (l *leg) childEmitter(lk *link) func(Event) {
	return func(ev Event) {
		switch ev.Type {
		case EventInit, EventText, EventResult:
			return
		}
		if ev.ParentToolUseID == "" {
			ev.ParentToolUseID = lk.toolUseID
		}
		l.enqueue(ev)
	}
}

// childOutcome turns a child's end into the Task call's result, and adds the child's
// usage, per-model usage and cost, edits and permission denials to this leg's.
func (l *leg) childOutcome(ctx context.Context, call callRef, lk *link, r *TaskResult, err error) tools.Result {
	if err != nil {
		run := SubagentRun{ToolUseID: lk.toolUseID, Type: lk.def.Name, Description: lk.description, Status: sema.StatusError}
		cancelled := ctx.Err() != nil
		if cancelled {
			run.Status = sema.StatusCancelled
		}
		l.mu.Lock()
		l.subagents = append(l.subagents, run)
		l.mu.Unlock()
		l.enqueue(Event{Type: EventSubagentEnd, Subagent: &run})
		return childleg.NotStarted(lk.def.Name, err, cancelled)
	}
	run := SubagentRun{ToolUseID: lk.toolUseID, Type: lk.def.Name, Description: lk.description, SessionID: r.SessionID,
		Status: r.Status, NumTurns: r.NumTurns, Usage: r.Usage, EditedFiles: r.EditedFiles}
	l.mu.Lock()
	l.subagents = append(l.subagents, run)
	l.childUsage = l.childUsage.Add(r.Usage)
	// The child's refusals are this leg's too, named by the child they came from. Their
	// permission events already reached this leg's stream through childEmitter.
	for _, d := range r.PermissionDenials {
		d.Subagent = &SubagentRef{SessionID: r.SessionID, ToolUseID: lk.toolUseID, Type: lk.def.Name, Description: lk.description, Nested: d.Subagent}
		l.denials = append(l.denials, d)
	}
	l.keepChildClamps(r.Notices)
	l.mu.Unlock()
	l.addChildCosts(r.ModelUsage)
	for _, p := range r.EditedFiles {
		l.noteEdited(p)
	}
	if r.Answered != nil {
		// The person's answer reached the child: the call it ran is the answered call.
		l.answered = r.Answered
	}
	l.enqueue(Event{Type: EventSubagentEnd, Subagent: &run})
	if r.Status == sema.StatusAwaitingApproval {
		cp := *r.Checkpoint
		l.setChildPark(call.index, &childPark{SessionID: r.SessionID, ToolUseID: lk.toolUseID, Type: lk.def.Name, Description: lk.description, Checkpoint: cp})
	}
	end := childleg.End{Status: r.Status, Result: r.Result, NumTurns: r.NumTurns}
	if r.Error != nil {
		end.Err = r.Error
	}
	return childleg.Answer(lk.def.Name, end)
}

// childPark is a delegated child's parked question that parks this leg: the child's
// session, the Task call it answers, and the child's checkpoint.
type childPark struct {
	SessionID   string         `json:"session_id"`
	ToolUseID   string         `json:"tool_use_id"`
	Type        string         `json:"type"`
	Description string         `json:"description,omitempty"`
	Checkpoint  CheckpointInfo `json:"checkpoint"`
}

// ref is how a parked result names the child.
func (c *childPark) ref() *SubagentRef {
	return &SubagentRef{SessionID: c.SessionID, ToolUseID: c.ToolUseID, Type: c.Type, Description: c.Description, Nested: c.Checkpoint.Subagent}
}

// resumeDelegated continues the child whose question a person answered: it claims
// nothing (the parent claimed the checkpoint in prepare), runs the child's resumed leg
// with the answer, and answers the Task call with how the child ended — its final text,
// or its next question, which parks this leg again.
func (l *leg) resumeDelegated(ctx context.Context, call callRef, a *approval) tools.Result {
	park := a.child
	def, ok := l.agents.Lookup(park.Type)
	if !ok {
		return tools.FromError(l.agents.UnknownType(park.Type), subagent.CodeTypeUnknown)
	}
	spec, res := l.childSpec(def, "")
	if res != nil {
		return *res
	}
	spec.Resume = &Resume{SessionID: park.SessionID}
	answer := &Answer{CheckpointID: a.checkpoint, Allow: a.allow, Reason: a.reason}
	if a.allow && a.edited {
		answer.UpdatedInput = a.input
	}
	lk := &link{parent: l, toolUseID: park.ToolUseID, def: def, description: park.Description, depth: l.depth() + 1, claimed: a.claimed}
	r, err := l.runChild(ctx, spec, answer, lk)
	return l.childOutcome(ctx, call, lk, r, err)
}

// delegationEntry is the first entry of a child's transcript: which leg delegated it,
// through which Task call, as which agent type.
type delegationEntry struct {
	ParentSession string `json:"parent_session"`
	ToolUseID     string `json:"tool_use_id"`
	Type          string `json:"type"`
	Description   string `json:"description,omitempty"`
	Depth         int    `json:"depth"`
}

// childSession creates a child leg's session: a child of the parent's session
// (session.Session.ParentID, which is how a session's children are found), recording
// file history into the lineage's scope when it works on the same tree. Its first entry
// names the Task call it answers.
func (l *leg) childSession(ctx context.Context) (session.Session, error) {
	p := l.link.parent
	root, fsID := l.fence.Root(), history.FilesystemIdentity(l.deps.Env)
	lineage := &history.Lineage{Scope: p.historyScope, Root: p.fence.Root(), FS: history.FilesystemIdentity(p.deps.Env)}
	scope := history.ResolveScope(lineage, root, fsID, "")
	s, err := l.store.Create(ctx, l.newSession(session.Session{Root: root, FSID: fsID, Model: l.spec.Model,
		Title: title(l.link.description), ParentID: p.sessionID, Scope: scope}))
	if err != nil {
		return s, err
	}
	payload, _ := json.Marshal(delegationEntry{ParentSession: p.sessionID, ToolUseID: l.link.toolUseID, Type: l.link.def.Name, Description: l.link.description, Depth: l.link.depth})
	if _, err := l.store.Append(ctx, session.Entry{SessionID: s.ID, Kind: transcript.KindDelegation, Payload: payload, Claim: l.writeClaim()}); err != nil {
		return s, err
	}
	return s, nil
}

// filterChildTools keeps the tools the child's definition allows (childleg.Tools), and
// the Task tool only where delegation may nest deeper. A name the definition lists that
// the leg does not mount is announced.
func (l *leg) filterChildTools(r tools.Roster) tools.Roster {
	def := l.link.def
	out, missing := childleg.Tools(r, def)
	if len(missing) > 0 {
		l.notice(sema.Notice{Code: CodeSubagentProblem, Message: fmt.Sprintf("the %s agent lists tools this leg does not have: %s", def.Name, strings.Join(missing, ", ")),
			Detail: map[string]any{"agent": def.Name, "tools": missing}})
	}
	return out
}

// callRef names the call being run: its id and its index among its turn's calls.
type callRef struct {
	id    string
	index int
}

type callRefKey struct{}

// parkSet is what the calls of the turn being dispatched left waiting for a person: the
// leg's own questions (OnAskPark) and its children's, by call index.
type parkSet struct {
	mu       sync.Mutex
	own      map[int]*parkRequest
	children map[int]*childPark
}

func (l *leg) resetParks() {
	l.parks.mu.Lock()
	l.parks.own, l.parks.children = map[int]*parkRequest{}, map[int]*childPark{}
	l.parks.mu.Unlock()
}

func (l *leg) setChildPark(index int, c *childPark) {
	l.parks.mu.Lock()
	defer l.parks.mu.Unlock()
	if l.parks.children == nil {
		l.parks.children = map[int]*childPark{}
	}
	l.parks.children[index] = c
}

// parkedAt reports whether the call at index waits for a person.
func (l *leg) parkedAt(index int) bool {
	l.parks.mu.Lock()
	defer l.parks.mu.Unlock()
	return l.parks.own[index] != nil || l.parks.children[index] != nil
}

// firstPark returns the first call of the turn that waits for a person, or -1.
func (l *leg) firstPark() int {
	l.parks.mu.Lock()
	defer l.parks.mu.Unlock()
	first := -1
	for i := range l.parks.own {
		if first < 0 || i < first {
			first = i
		}
	}
	for i := range l.parks.children {
		if first < 0 || i < first {
			first = i
		}
	}
	return first
}

// enqueue queues an event raised off the loop goroutine and wakes the loop when it is
// waiting for Task calls, so that a child's progress streams as it happens.
func (l *leg) enqueue(ev Event) {
	l.mu.Lock()
	l.pending = append(l.pending, ev)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// pump flushes queued events while work runs off the loop goroutine, until done closes.
func (l *leg) pump(turn int, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-l.wake:
			l.flush(turn)
		}
	}
}

// usageWithChildren is the leg's own usage plus its children's.
func (l *leg) usageWithChildren(u model.Usage) model.Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return u.Add(l.childUsage)
}

// approvalAgent labels a child's questions with its agent type, so a person knows who
// asks.
func (l *leg) approvalAgent(req permission.ApprovalRequest) permission.ApprovalRequest {
	if l.link != nil && req.Agent == "" {
		req.Agent = l.link.def.Name
	}
	return req
}

// keepChildClamps adds a child's face clamp notices to this leg's, once per code. The
// clamp (a read-only child narrowing the deployment's open face) is the one silent
// branch of the face order, and its notice is its only trace: a run with no notice sink
// (Deps.OnNotice) that reads only its result must still see it. The event already
// reached this leg's stream through childEmitter. The caller holds l.mu.
func (l *leg) keepChildClamps(notices []sema.Notice) {
	for _, n := range notices {
		if n.Code != fence.CodeReadFaceClamped && n.Code != fence.CodeWriteFaceClamped {
			continue
		}
		if !slices.ContainsFunc(l.notices, func(m sema.Notice) bool { return m.Code == n.Code }) {
			l.notices = append(l.notices, n)
		}
	}
}
