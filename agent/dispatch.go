package agent

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/internal/callplan"
	"github.com/sema-agent/sema/internal/toolcall"
	"github.com/sema-agent/sema/internal/transcript"
	"github.com/sema-agent/sema/mcp"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/tools"
)

// dispatchFrom runs the tool calls of one model turn and returns one tool_result block
// per call answered, in call order. p is the parked entry a resumed leg finishes (nil
// for a new turn): its pending call gets the person's answer, the results it kept are
// kept, and the calls after it run. When every call is to a read tool, or every call is
// a Task call, they run concurrently (Task calls bounded by Delegation.MaxConcurrent);
// otherwise one after another, in order, so a write never races another call of its own
// turn. No call is left unanswered: an unknown tool, bad input, a panic and cancellation
// all become error results. A question that parks stops the turn at that call
// (l.turnPark says which); the calls after it are not run, except those of a
// concurrent batch, whose results the parked entry keeps.
func (l *leg) dispatchFrom(ctx context.Context, turn int, calls []model.Block, p *parkedEntry) []model.Block {
	start := 0
	var prior []model.Block
	if p != nil {
		start, prior = p.Pending, p.Results
		if l.approval == nil {
			// A plain resume moved past the question: nothing after it ran, unless an
			// approval was given and its call started.
			return append(append([]model.Block(nil), prior...), l.abandoned(ctx, calls, p)...)
		}
	}
	l.resetParks()
	l.turnPark = nil
	b := l.openBatch(turn, start, calls[start:], p)
	if l.approval != nil {
		c := b.rest[0]
		b.results[0] = l.runPumped(turn, c, func() tools.Result { return l.answerPending(l.callCtx(ctx, c, start), c) })
		b.settled[0] = true
	}
	todo := callplan.Unsettled(b.settled)
	switch callplan.Plan(l.callKinds(b.rest, todo), l.spec.OnAsk == OnAskPark || l.mayDefer()) {
	case callplan.InOrder:
		l.runInOrder(ctx, b, todo)
	case callplan.ReadsAtOnce:
		l.runAtOnce(ctx, b, todo, false)
	case callplan.TasksAtOnce:
		l.runAtOnce(ctx, b, todo, true)
	}
	l.flush(turn) // permission events and notices of these calls precede their results
	return l.answerBatch(b, len(calls), prior)
}

// callBatch is the calls of a turn that run now (those from start on, in rest), what
// each returned, which are settled (they ran, or the parked entry answers them), and
// the results the parked entry kept, by index in rest.
type callBatch struct {
	turn    int
	start   int
	rest    []model.Block
	results []tools.Result
	settled []bool
	kept    map[int]model.Block
}

// openBatch announces the calls that run now and settles those the parked entry p
// answers already: a result it kept, or a child of the call that still waits.
func (l *leg) openBatch(turn, start int, rest []model.Block, p *parkedEntry) *callBatch {
	for _, c := range rest {
		l.emit(Event{Type: EventToolUse, Turn: turn, ToolUse: &ToolUse{ID: c.ID, Name: c.Name, Input: c.Input}})
	}
	b := &callBatch{turn: turn, start: start, rest: rest, results: make([]tools.Result, len(rest)),
		settled: make([]bool, len(rest)), kept: map[int]model.Block{}}
	if p != nil {
		for i := range rest {
			if k, ok := p.Later[start+i]; ok {
				b.kept[i], b.settled[i] = k, true
			}
			if w, ok := p.Waiting[start+i]; ok {
				l.setChildPark(start+i, w)
				b.settled[i] = true
			}
		}
	}
	return b
}

// runAtOnce runs the calls todo concurrently; while Task calls run (tasks), the loop
// goroutine streams their children's events.
func (l *leg) runAtOnce(ctx context.Context, b *callBatch, todo []int, tasks bool) {
	var wg sync.WaitGroup
	for _, i := range todo {
		c := b.rest[i]
		wg.Go(func() { b.results[i] = l.runTool(l.callCtx(ctx, c, b.start+i), c) })
	}
	if tasks {
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		l.pump(b.turn, done)
	}
	wg.Wait()
	for _, i := range todo {
		b.settled[i] = true
	}
}

// runInOrder runs the calls todo one after another. It stops at a call that parks (and
// before one after an earlier question), and when the session can no longer record,
// answers every call not started with an error instead of running it.
func (l *leg) runInOrder(ctx context.Context, b *callBatch, todo []int) {
	for n, i := range todo {
		if f := l.firstPark(); f >= 0 && f < b.start+i {
			break // a question before this call waits for a person
		}
		c := b.rest[i]
		b.results[i] = l.runPumped(b.turn, c, func() tools.Result { return l.runTool(l.callCtx(ctx, c, b.start+i), c) })
		b.settled[i] = true
		if l.parkedAt(b.start + i) {
			break
		}
		if l.recordFailed() != nil {
			// The session can no longer remember what runs: no further call starts.
			for _, j := range todo[n+1:] {
				b.results[j] = tools.Fail(CodeSessionRecordFailed, "The call was not run: the run stopped because the session could not be recorded.")
				b.settled[j] = true
			}
			break
		}
	}
}

// answerBatch returns the turn's tool_result blocks: prior (those the parked entry
// kept of the calls before start), then one per call up to the first that parks. When
// one parks, l.turnPark keeps what the parked entry needs of the calls after it.
func (l *leg) answerBatch(b *callBatch, ncalls int, prior []model.Block) []model.Block {
	end := len(b.rest)
	pend := l.firstPark()
	if pend >= 0 {
		end = pend - b.start
	}
	blocks := append(make([]model.Block, 0, ncalls), prior...)
	for i, c := range b.rest[:end] {
		blocks = append(blocks, l.resultBlock(b.turn, c, b.results[i], b.kept, i))
	}
	if pend >= 0 {
		l.turnPark = l.parkTurn(b, pend, end)
	}
	return blocks
}

// parkTurn is the turnPark of a batch whose call pend (end in rest) waits for a person:
// of each call after it, the child that waits, or the result kept, or nothing when the
// call runs again on resume.
func (l *leg) parkTurn(b *callBatch, pend, end int) *turnPark {
	tp := &turnPark{pending: pend}
	l.parks.mu.Lock()
	tp.own, tp.child = l.parks.own[pend], l.parks.children[pend]
	for i := end + 1; i < len(b.rest); i++ {
		abs := b.start + i
		switch callplan.AfterPark(l.parks.children[abs] != nil, l.parks.own[abs] != nil, b.settled[i]) {
		case callplan.ChildWaits:
			if tp.waiting == nil {
				tp.waiting = map[int]*childPark{}
			}
			tp.waiting[abs] = l.parks.children[abs]
		case callplan.KeepsResult:
			if tp.later == nil {
				tp.later = map[int]model.Block{}
			}
			tp.later[abs] = model.Block{} // filled below, outside the lock
		case callplan.RunsAgain:
			// Asked, or never started: the call runs when the leg resumes.
		}
	}
	l.parks.mu.Unlock()
	for abs := range tp.later {
		i := abs - b.start
		tp.later[abs] = l.resultBlock(b.turn, b.rest[i], b.results[i], b.kept, i)
	}
	return tp
}

// turnPark is the first call of a dispatched turn that waits for a person, with what the
// parked entry keeps of the calls after it.
type turnPark struct {
	pending int
	own     *parkRequest
	child   *childPark
	later   map[int]model.Block
	waiting map[int]*childPark
}

// resultBlock is a call's tool_result block, emitted as its event: a result the parked
// entry kept, or the result the call returned now.
func (l *leg) resultBlock(turn int, c model.Block, r tools.Result, kept map[int]model.Block, i int) model.Block {
	if b, ok := kept[i]; ok {
		l.emit(Event{Type: EventToolResult, Turn: turn, ToolResult: &ToolResult{ID: c.ID, Name: c.Name, IsError: b.IsError, Text: blocksText(b.Content)}})
		return b
	}
	if r.EditedFile != "" && !r.IsError {
		// Only writes that landed: a failed write that may have changed the file says
		// so in its own result, and is not reported as an edit.
		l.noteEdited(r.EditedFile)
	}
	l.emit(Event{Type: EventToolResult, Turn: turn, ToolResult: &ToolResult{ID: c.ID, Name: c.Name, IsError: r.IsError, Code: r.Code, Text: r.TextOf()}})
	return toolcall.Block(c.ID, r)
}

func blocksText(bs []model.Block) string {
	return tools.Result{Content: bs}.TextOf()
}

// callCtx is the context a call runs in: it names the call, so that a question it
// parks and a child it delegates to know which call they belong to.
func (l *leg) callCtx(ctx context.Context, c model.Block, index int) context.Context {
	return context.WithValue(ctx, callRefKey{}, callRef{id: c.ID, index: index})
}

// callKinds is what the plan needs of the calls todo: a call to a tool the roster does
// not hold runs alone, a Task call delegates, and any other reads or writes as its
// tool's effect says.
func (l *leg) callKinds(rest []model.Block, todo []int) []callplan.Kind {
	kinds := make([]callplan.Kind, len(todo))
	for n, i := range todo {
		t := l.tools().Lookup(rest[i].Name)
		switch {
		case t == nil:
			kinds[n] = callplan.Writes
		case rest[i].Name == "Task":
			kinds[n] = callplan.Delegates
		case l.effectOf(t) == tools.EffectRead:
			kinds[n] = callplan.Reads
		default:
			kinds[n] = callplan.Writes
		}
	}
	return kinds
}

// runPumped runs one call; a Task call runs off the loop goroutine while the loop
// streams its child's events.
func (l *leg) runPumped(turn int, c model.Block, run func() tools.Result) tools.Result {
	if c.Name != "Task" {
		return run()
	}
	var r tools.Result
	done := make(chan struct{})
	go func() {
		defer close(done)
		r = run()
	}()
	l.pump(turn, done)
	return r
}

// runTool runs one call and always returns a result.
func (l *leg) runTool(ctx context.Context, call model.Block) (res tools.Result) {
	if err := ctx.Err(); err != nil {
		return tools.Fail(tools.CodeCancelled, "The call was not run: the task was cancelled.")
	}
	roster := l.tools()
	t := roster.Lookup(call.Name)
	if t == nil {
		return toolcall.Unknown(call.Name, roster.Names())
	}
	input, malformed := toolcall.Input(call.Name, call.Input)
	if malformed != nil {
		return *malformed
	}
	defer l.interruptAfter(call.ID)
	defer func() {
		if p := recover(); p != nil {
			res = tools.Fail(tools.CodePanic, "%s failed with an internal error: %v.", call.Name, p)
			l.notice(noticePanic(call.Name, p, debug.Stack()))
		}
	}()
	call.Input = input
	input, byPerson, refused := l.judge(ctx, t, call)
	if refused != nil {
		return *refused
	}
	if byPerson {
		// The sandbox lets a command a person approved write protected paths.
		ctx = sandbox.WithApproval(ctx)
	}
	// The intent is stored before the tool runs: a leg resuming after a crash then knows
	// this call may have run. Without it the call does not run at all. A call that only
	// reads needs none (a commit less per turn): whether it ran or not, it changed
	// nothing, and a resumed model is told to run it again (abandonedInterrupted).
	if !l.readsOnly(t) {
		if _, ok := l.record(ctx, transcript.KindCallStarted, transcript.CallStarted{ID: call.ID, Tool: call.Name}); !ok {
			return tools.Fail(CodeSessionRecordFailed, "The call was not run: the session could not record that it was starting.")
		}
	}
	ctx = context.WithValue(ctx, callKey{}, runningCall{name: call.Name, input: input})
	res = l.runObserved(ctx, t, call.Name, input)
	return l.postToolUse(ctx, call.Name, call.ID, input, res)
}

// readsOnly reports whether t is one of the engine's own tools that only read (Read,
// Glob, Grep, LS, WebFetch, BashOutput, bash_readonly): a tool of the embedder's or an
// MCP server's is taken at its word for permissions, never for what a crash may have
// left half done.
func (l *leg) readsOnly(t tools.Tool) bool {
	if _, isMCP := mcp.ServerOf(t); isMCP {
		return false
	}
	spec := t.Spec()
	return spec.Effect == tools.EffectRead && l.isEngineTool(spec.Name)
}

func (l *leg) noteEdited(path string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range l.edited {
		if p == path {
			return
		}
	}
	l.edited = append(l.edited, path)
}

func noticePanic(tool string, p any, stack []byte) sema.Notice {
	return sema.Notice{Code: tools.CodePanic, Message: fmt.Sprintf("the tool %s panicked: %v", tool, p), Detail: map[string]any{"tool": tool, "stack": string(stack)}}
}
