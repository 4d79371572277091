package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/tools"
)

// dispatchFrom runs the tool calls of one model turn from index start on and returns one
// tool_result block per call answered, in call order, after prior (the results of the
// calls before start, when a parked turn resumes). When every call is to a read tool
// they run concurrently; otherwise one after another, in order, so a write never races
// another call of its own turn. No call is left unanswered: an unknown tool, bad input,
// a panic and cancellation all become error results. A question that parks stops the
// turn at that call; the calls after it are not run.
func (l *leg) dispatchFrom(ctx context.Context, turn int, calls []model.Block, start int, prior []model.Block) []model.Block {
	if start > 0 || prior != nil {
		if l.approval == nil {
			// A plain resume moved past the question: nothing after it ran, unless an
			// approval was given and its call started.
			return append(append([]model.Block(nil), prior...), l.abandoned(ctx, calls, start)...)
		}
	}
	rest := calls[start:]
	for _, c := range rest {
		l.emit(Event{Type: EventToolUse, Turn: turn, ToolUse: &ToolUse{ID: c.ID, Name: c.Name, Input: c.Input}})
	}
	results := make([]tools.Result, len(rest))
	ran := len(rest)
	if l.allReadOnly(rest) && len(rest) > 1 && l.spec.OnAsk != OnAskPark && l.approval == nil {
		var wg sync.WaitGroup
		for i, c := range rest {
			wg.Go(func() { results[i] = l.runTool(ctx, c) })
		}
		wg.Wait()
	} else {
		for i, c := range rest {
			if i == 0 && l.approval != nil {
				results[i] = l.answerPending(ctx, c)
			} else {
				results[i] = l.runTool(ctx, c)
			}
			if l.parkPending() {
				ran = i
				break
			}
			if l.recordFailed() != nil {
				// The session can no longer remember what runs: no further call starts.
				for j := i + 1; j < len(rest); j++ {
					results[j] = tools.Fail(CodeSessionRecordFailed, "The call was not run: the run stopped because the session could not be recorded.")
				}
				break
			}
		}
	}
	l.flush(turn) // permission events and notices of these calls precede their results
	blocks := append(make([]model.Block, 0, len(calls)), prior...)
	for i, c := range rest[:ran] {
		r := results[i]
		if r.EditedFile != "" && !r.IsError {
			// Only writes that landed: a failed write that may have changed the file says
			// so in its own result, and is not reported as an edit.
			l.noteEdited(r.EditedFile)
		}
		content := r.Content
		if len(content) == 0 {
			content = []model.Block{model.TextBlock("(no output)")}
		}
		blocks = append(blocks, model.Block{Kind: model.KindToolResult, ID: c.ID, Content: content, IsError: r.IsError})
		l.emit(Event{Type: EventToolResult, Turn: turn, ToolResult: &ToolResult{ID: c.ID, Name: c.Name, IsError: r.IsError, Code: r.Code, Text: r.TextOf()}})
	}
	return blocks
}

func (l *leg) allReadOnly(calls []model.Block) bool {
	for _, c := range calls {
		t := l.roster.Lookup(c.Name)
		if t == nil || t.Spec().Effect != tools.EffectRead {
			return false
		}
	}
	return true
}

// runTool runs one call and always returns a result.
func (l *leg) runTool(ctx context.Context, call model.Block) (res tools.Result) {
	if err := ctx.Err(); err != nil {
		return tools.Fail(tools.CodeCancelled, "The call was not run: the task was cancelled.")
	}
	t := l.roster.Lookup(call.Name)
	if t == nil {
		return tools.Fail(tools.CodeUnknown, "There is no tool named %q. Available tools: %v.", call.Name, l.roster.Names())
	}
	input := call.Input
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(input, &obj); err != nil {
		return tools.Fail(tools.CodeInputInvalid, "The input of %s is not a JSON object: %v.", call.Name, err)
	}
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
	// this call may have run. Without it the call does not run at all.
	if _, ok := l.record(ctx, entryCallStarted, callStartedEntry{ID: call.ID, Tool: call.Name}); !ok {
		return tools.Fail(CodeSessionRecordFailed, "The call was not run: the session could not record that it was starting.")
	}
	ctx = context.WithValue(ctx, callKey{}, runningCall{name: call.Name, input: input})
	res = t.Run(ctx, input)
	return res
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
