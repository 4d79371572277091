package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/hooks"
	"github.com/sema-agent/sema/internal/runend"
	"github.com/sema-agent/sema/internal/toolcall"
	"github.com/sema-agent/sema/internal/transcript"
	"github.com/sema-agent/sema/model"
)

// turnLoop is what the turn loop carries from step to step: the result it fills, the
// conversation so far, the session's turn count and where this leg's turns began, and
// how many stops in a row the Stop hooks blocked.
type turnLoop struct {
	res        *TaskResult
	msgs       []model.Message
	turn       int
	first      int
	stopBlocks int
}

// loop runs the leg's turns until the model stops, the turn limit is reached, a
// question parks the leg, or ctx ends, and returns the finished TaskResult.
func (l *leg) loop(ctx context.Context) *TaskResult {
	s := &turnLoop{res: &TaskResult{SessionID: l.sessionID, Manifest: l.manifest}}
	l.flush(0)
	l.emit(Event{Type: EventInit, Manifest: &s.res.Manifest})
	l.announceEnv() // after init: a stream still opens with the manifest

	s.msgs = l.resume.messages
	s.turn = l.resume.turns // turns are numbered across every leg of the session
	s.first = s.turn
	switch {
	case !l.mendConversation(ctx, s):
	case l.spec.ShellLine != "":
		l.runShellLine(ctx, s) // the person's command: no model request
	case l.openPrompt(ctx, s):
		for l.runTurn(ctx, s) {
		}
	}
	return l.finish(ctx, s.res, s.msgs, s.turn-s.first)
}

// mendConversation answers the calls the resumed conversation left open, so that it is
// whole before a new prompt joins it. It reports whether the leg goes on.
func (l *leg) mendConversation(ctx context.Context, s *turnLoop) bool {
	if p := l.resume.parked; p != nil && p.Budget {
		return l.answerBudget(ctx, s)
	}
	if p := l.resume.parked; p != nil {
		// The chain ends at a parked turn: finish it first, with the approver's decision
		// for the pending call (Resume), or with every unanswered call refused (a plain
		// resume that moved on).
		calls := toolcall.Last(s.msgs)
		l.resumeParkedTurn(ctx, s.turn)
		results := l.dispatchFrom(ctx, s.turn, calls, p)
		if l.parked(ctx, s.res, s.turn, calls, results) {
			return false
		}
		s.msgs = append(s.msgs, l.recordResults(ctx, results))
		return !l.stopped(s.res)
	}
	if open := toolcall.Open(s.msgs); len(open) > 0 {
		// The previous leg stopped between a response and its tool results (a crash, a
		// kill, a transcript write that failed): answer its calls with what is known of
		// them, so the conversation is whole again.
		s.msgs = append(s.msgs, l.recordResults(ctx, l.abandonedInterrupted(ctx, open)))
	}
	return true
}

// openPrompt runs the session's start and prompt hooks and adds the task's prompt, with
// the context they return. It reports whether the leg goes on to its first turn: not
// when a hook blocked the prompt, a write failed, or a continued session has nothing
// to answer.
func (l *leg) openPrompt(ctx context.Context, s *turnLoop) bool {
	if l.hasHooks(hooks.SessionStart) || l.hasHooks(hooks.UserPromptSubmit) {
		// A hook is told the session's id and may look it up: a new session stored
		// beside the first request (openBeside) is stored before one runs.
		if !l.flushRecords(ctx) {
			l.stopped(s.res)
			return false
		}
	}
	var extra []string
	if l.link == nil {
		source := "startup"
		if l.spec.Resume != nil {
			source = "resume"
		}
		extra = l.sessionStartHooks(ctx, source)
	}
	promptExtra, blocked := l.promptHooks(ctx)
	if blocked != nil {
		s.res.Status, s.res.Error = sema.StatusError, blocked
		return false
	}
	if l.spec.Prompt != "" || len(l.spec.Images) > 0 {
		m := model.Message{Role: model.RoleUser, Content: promptBlocks(l.spec.Prompt, l.spec.Images)}
		m = withContext(m, append(extra, promptExtra...))
		s.msgs = appendUser(s.msgs, m)
		l.recordLater(ctx, transcript.KindUser, m)
	}
	if l.stopped(s.res) {
		return false
	}
	if n := len(s.msgs); l.spec.resume().Continue && n > 0 && s.msgs[n-1].Role == model.RoleAssistant {
		// Continue with nothing to answer: the transcript ends with the model's answer (the
		// stopped leg had finished its work), so that answer is the result.
		s.res.Result, s.res.Status = (&model.Response{Content: s.msgs[n-1].Content}).Text(), sema.StatusCompleted
		return false
	}
	return true
}

// runTurn runs one turn: the request, its response, and the response's tool calls (or
// the Stop hooks, when it made none). It reports whether another turn follows.
func (l *leg) runTurn(ctx context.Context, s *turnLoop) bool {
	if !l.turnMayStart(ctx, s) {
		return false
	}
	s.turn++
	l.turnsRun.Store(int64(s.turn - s.first))
	at := l.beginTurn(ctx, s.turn)
	resp, ok := l.requestTurn(ctx, s)
	if !ok {
		return false
	}
	if !l.takeResponse(ctx, s, resp, at) {
		return false // the response is not stored: none of its calls may run
	}
	calls := resp.ToolCalls()
	if len(calls) == 0 {
		return l.answerStop(ctx, s)
	}
	s.stopBlocks = 0
	results := l.dispatchFrom(ctx, s.turn, calls, nil)
	if l.parked(ctx, s.res, s.turn, calls, results) {
		return false
	}
	s.msgs = append(s.msgs, l.recordResults(ctx, results))
	l.flush(s.turn)
	return !l.stopped(s.res)
}

// turnMayStart checks what ends the leg before a turn's request (the turn limit, ctx,
// the budget) and compacts the conversation when the next request would not fit.
func (l *leg) turnMayStart(ctx context.Context, s *turnLoop) bool {
	if l.spec.MaxTurns > 0 && s.turn-s.first >= l.spec.MaxTurns {
		s.res.Status = sema.StatusMaxTurns
		return false
	}
	if ctx.Err() != nil {
		s.res.Status, s.res.Error = runend.Cancelled(context.Cause(ctx))
		return false
	}
	if l.overBudget(ctx, s) {
		return false // a compaction's summary request would carry about this much too
	}
	compacted, err := l.maybeCompact(ctx, s.msgs, s.turn)
	if err != nil {
		s.res.Status, s.res.Error = runend.Failed(ctx, err)
		return false
	}
	s.msgs = compacted
	return !l.overBudget(ctx, s)
}

// requestTurn sends the turn's request once what the leg recorded is stored, and once
// more after a compaction when the provider says the conversation is too long.
func (l *leg) requestTurn(ctx context.Context, s *turnLoop) (*model.Response, bool) {
	stored := l.flushBeforeRequest(ctx)
	if stored == nil {
		l.stopped(s.res)
		return nil, false
	}
	resp, err := l.request(ctx, s.turn, s.msgs)
	if !stored() {
		l.stopped(s.res) // the answer to a prompt the session could not store is dropped
		return nil, false
	}
	if sema.IsCode(err, model.CodeContextTooLong) && ctx.Err() == nil {
		// The provider knows the window better than the estimate: compact and send the
		// turn's request once more.
		if s.msgs, err = l.compact(ctx, s.msgs, "overflow", "", s.turn); err == nil {
			resp, err = l.request(ctx, s.turn, s.msgs)
		}
	}
	if err != nil {
		s.res.Status, s.res.Error = runend.Failed(ctx, err)
		return nil, false
	}
	return resp, true
}

// takeResponse adds the model's response to the conversation: counted, recorded and
// emitted, its text the result so far. It reports whether the leg goes on.
func (l *leg) takeResponse(ctx context.Context, s *turnLoop, resp *model.Response, at *int) bool {
	s.res.Usage = s.res.Usage.Add(resp.Usage)
	l.charge(resp)
	msg := model.Message{Role: model.RoleAssistant, Content: resp.Content}
	s.msgs = append(s.msgs, msg)
	l.noteContext(resp.Usage, len(s.msgs))
	l.recordLater(ctx, transcript.KindAssistant, transcript.Assistant{Turn: s.turn, Message: msg, Intents: true, Boundaries: at})
	l.mu.Lock()
	l.transcript = s.msgs
	l.mu.Unlock()
	l.emit(Event{Type: EventAssistant, Turn: s.turn, Message: &msg, Response: resp})
	if text := resp.Text(); text != "" {
		s.res.Result = text
	}
	return !l.stopped(s.res)
}

// answerStop ends the leg at a response without tool calls, unless a Stop hook sends
// the model back to work (at most maxStopBlocks times in a row). It reports whether
// another turn follows.
func (l *leg) answerStop(ctx context.Context, s *turnLoop) bool {
	if reason, goOn := l.stopHooks(ctx, s.stopBlocks > 0); goOn && ctx.Err() == nil {
		if s.stopBlocks++; s.stopBlocks <= maxStopBlocks {
			// A Stop hook sends the model back to work with its reason.
			m := model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock(reason)}}
			s.msgs = appendUser(s.msgs, m)
			l.record(ctx, transcript.KindUser, m)
			return !l.stopped(s.res)
		}
		l.notice(sema.Notice{Code: CodeStopHookLoop, Message: fmt.Sprintf("the Stop hooks blocked %d stops in a row; the leg stopped anyway", maxStopBlocks)})
	}
	s.res.Status = sema.StatusCompleted
	return false
}

// request sends the turn's request, streaming its text as it comes.
func (l *leg) request(ctx context.Context, turn int, msgs []model.Message) (*model.Response, error) {
	_, specs := l.toolsAndSpecs() // an MCP server's list change shows in the next request
	req := &model.Request{Model: l.spec.Model, System: l.system, Messages: msgs, Tools: specs, MaxTokens: l.spec.MaxTokens}
	start := time.Now()
	defer func() { l.apiTime.Add(int64(time.Since(start))) }()
	return l.deps.Provider.Stream(ctx, req, func(d model.Delta) {
		if d.Kind == model.DeltaText {
			l.emit(Event{Type: EventText, Turn: turn, Text: d.Text})
		}
	})
}

// finish completes the result and closes the session's leg. turns is the number of
// turns the leg ran; they are the last ones of the session's numbering so far.
func (l *leg) finish(ctx context.Context, res *TaskResult, msgs []model.Message, turns int) *TaskResult {
	if !l.flushRecords(ctx) && res.Status != sema.StatusError {
		// The turn's last entries could not be stored: the leg ends as it would have had
		// they been stored one by one.
		l.stopped(res)
	}
	l.sessionEndHooks(ctx, "other")
	res.NumTurns = turns
	res.DurationAPI = time.Duration(l.apiTime.Load())
	if turns > 0 {
		res.FirstTurn = l.resume.turns + 1
		res.LastTurn = l.resume.turns + turns
	}
	res.Messages = msgs
	res.RewindNotes = l.rewindNotes
	res.Answered = l.answered
	res.Usage = l.usageWithChildren(res.Usage)
	res.ModelUsage, res.TotalCostUSD = l.costReport()
	res.Todos = l.todos()
	l.mu.Lock()
	res.Usage = res.Usage.Add(l.sideUsage)
	res.Compactions = append([]CompactionInfo(nil), l.compactions...)
	l.mu.Unlock()
	res.BackgroundTasks = l.stopShell(ctx)
	l.stopMCP()
	l.closeSession(ctx, res.Status)
	l.removeHookTemp() // after SessionEnd's hooks, the last that run
	l.dropLease(ctx)
	if l.opened() != nil {
		res.SessionID = "" // a new session that could not be stored (openBeside) is none to continue
	}
	l.flush(turns)
	l.mu.Lock()
	res.Notices = append([]sema.Notice{}, l.notices...)
	res.EditedFiles = append([]string{}, l.edited...)
	res.PermissionDenials = append([]PermissionDenial{}, l.denials...)
	res.Subagents = append([]SubagentRun(nil), l.subagents...)
	l.mu.Unlock()
	return res
}

func (l *leg) recordResults(ctx context.Context, results []model.Block) model.Message {
	m := model.Message{Role: model.RoleUser, Content: l.withReminders(results)}
	l.recordLater(ctx, transcript.KindToolResults, m)
	l.storeReadState(ctx)
	// Stored before the next request: one is never sent for a conversation the session
	// could not record.
	l.flushRecords(ctx)
	return m
}

// appendUser adds a user message, merging it into a user message that ends the
// conversation (tool results followed by a new prompt), since providers expect the
// roles to alternate.
func appendUser(msgs []model.Message, m model.Message) []model.Message {
	if n := len(msgs); n > 0 && msgs[n-1].Role == model.RoleUser {
		merged := model.Message{Role: model.RoleUser, Content: append(append([]model.Block(nil), msgs[n-1].Content...), m.Content...)}
		return append(msgs[:n-1:n-1], merged)
	}
	return append(msgs, m)
}

// stopped ends the result with the failed transcript write, if one stops the leg.
func (l *leg) stopped(res *TaskResult) bool {
	err := l.recordFailed()
	if err == nil {
		err = l.hookStop.Load()
	}
	if err == nil {
		return false
	}
	res.Status = sema.StatusError
	res.Error = err
	return true
}
