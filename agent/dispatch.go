package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/tools"
)

// dispatch runs the tool calls of one model turn and returns one tool_result block per
// call, in call order. When every call is to a read tool they run concurrently;
// otherwise they run one after another, in order, so a write never races another call
// of its own turn. No call is left unanswered: an unknown tool, bad input, a panic and
// cancellation all become error results.
func (l *leg) dispatch(ctx context.Context, turn int, calls []model.Block) []model.Block {
	for _, c := range calls {
		l.emit(Event{Type: EventToolUse, Turn: turn, ToolUse: &ToolUse{ID: c.ID, Name: c.Name, Input: c.Input}})
	}
	results := make([]tools.Result, len(calls))
	if l.allReadOnly(calls) && len(calls) > 1 {
		var wg sync.WaitGroup
		for i, c := range calls {
			wg.Go(func() { results[i] = l.runTool(ctx, c) })
		}
		wg.Wait()
	} else {
		for i, c := range calls {
			results[i] = l.runTool(ctx, c)
		}
	}
	l.flush(turn) // permission events and notices of these calls precede their results
	blocks := make([]model.Block, len(calls))
	for i, c := range calls {
		r := results[i]
		if r.EditedFile != "" {
			l.noteEdited(r.EditedFile)
		}
		content := r.Content
		if len(content) == 0 {
			content = []model.Block{model.TextBlock("(no output)")}
		}
		blocks[i] = model.Block{Kind: model.KindToolResult, ID: c.ID, Content: content, IsError: r.IsError}
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
	input, refused := l.judge(ctx, t, call)
	if refused != nil {
		return *refused
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
	return sema.Notice{Code: "tool.panic", Message: fmt.Sprintf("the tool %s panicked: %v", tool, p), Detail: map[string]any{"tool": tool, "stack": string(stack)}}
}
