package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/session"
)

// loop runs the leg's turns until the model stops, the turn limit is reached, a
// question parks the leg, or ctx ends, and returns the finished TaskResult.
func (l *leg) loop(ctx context.Context) *TaskResult {
	res := &TaskResult{SessionID: l.sessionID, Manifest: l.manifest}
	l.flush(0)
	l.emit(Event{Type: EventInit, Manifest: &res.Manifest})
	l.announceEnv() // after init: a stream still opens with the manifest

	msgs := l.resume.messages
	turn := l.resume.turns // turns are numbered across every leg of the session
	first := turn
	if p := l.resume.parked; p != nil {
		// The chain ends at a parked turn: finish it first, with the approver's decision
		// for the pending call (Resume), or with every unanswered call refused (a plain
		// resume that moved on).
		calls := lastCalls(msgs)
		l.resumeParkedTurn(ctx, turn)
		results := l.dispatchFrom(ctx, turn, calls, p)
		if l.parked(ctx, res, turn, calls, results) {
			return l.finish(ctx, res, msgs, turn-first)
		}
		msgs = append(msgs, l.recordResults(ctx, results))
		if l.stopped(res) {
			return l.finish(ctx, res, msgs, turn-first)
		}
	}
	if open := lastCallsOpen(msgs); l.resume.parked == nil && len(open) > 0 {
		// The previous leg stopped between a response and its tool results (a crash, a
		// kill, a transcript write that failed): answer its calls with what is known of
		// them, so the conversation is whole again.
		msgs = append(msgs, l.recordResults(ctx, l.abandonedInterrupted(ctx, open)))
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
		res.Status, res.Error = sema.StatusError, blocked
		return l.finish(ctx, res, msgs, turn-first)
	}
	if l.spec.Prompt != "" {
		m := model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock(l.spec.Prompt)}}
		m = withContext(m, append(extra, promptExtra...))
		msgs = appendUser(msgs, m)
		l.recordLater(ctx, entryUser, m)
	}
	if l.stopped(res) {
		return l.finish(ctx, res, msgs, turn-first)
	}
	if n := len(msgs); l.spec.resume().Continue && n > 0 && msgs[n-1].Role == model.RoleAssistant {
		// Continue with nothing to answer: the transcript ends with the model's answer (the
		// stopped leg had finished its work), so that answer is the result.
		res.Result, res.Status = (&model.Response{Content: msgs[n-1].Content}).Text(), sema.StatusCompleted
		return l.finish(ctx, res, msgs, turn-first)
	}
	stopBlocks := 0
	for {
		if l.spec.MaxTurns > 0 && turn-first >= l.spec.MaxTurns {
			res.Status = sema.StatusMaxTurns
			break
		}
		if ctx.Err() != nil {
			l.cancelled(res, context.Cause(ctx))
			break
		}
		if l.overBudget(res, msgs) {
			break // a compaction's summary request would carry about this much too
		}
		compacted, err := l.maybeCompact(ctx, msgs, turn)
		if err != nil {
			l.failed(ctx, res, err)
			break
		}
		msgs = compacted
		if l.overBudget(res, msgs) {
			break
		}
		turn++
		l.turnsRun.Store(int64(turn - first))
		at := l.beginTurn(ctx, turn)
		stored := l.flushBeforeRequest(ctx)
		if stored == nil {
			l.stopped(res)
			break
		}
		resp, err := l.request(ctx, turn, msgs)
		if !stored() {
			l.stopped(res) // the answer to a prompt the session could not store is dropped
			break
		}
		if sema.IsCode(err, model.CodeContextTooLong) && ctx.Err() == nil {
			// The provider knows the window better than the estimate: compact and send the
			// turn's request once more.
			if msgs, err = l.compact(ctx, msgs, "overflow", "", turn); err == nil {
				resp, err = l.request(ctx, turn, msgs)
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				l.cancelled(res, context.Cause(ctx))
			} else {
				res.Status = sema.StatusError
				res.Error = asSemaError(err)
			}
			break
		}
		res.Usage = res.Usage.Add(resp.Usage)
		l.charge(resp)
		msg := model.Message{Role: model.RoleAssistant, Content: resp.Content}
		msgs = append(msgs, msg)
		l.noteContext(resp.Usage, len(msgs))
		l.recordLater(ctx, entryAssistant, assistantEntry{Turn: turn, Message: msg, Intents: true, Boundaries: at})
		l.mu.Lock()
		l.transcript = msgs
		l.mu.Unlock()
		l.emit(Event{Type: EventAssistant, Turn: turn, Message: &msg, Response: resp})
		if text := resp.Text(); text != "" {
			res.Result = text
		}
		if l.stopped(res) {
			break // the response is not stored: none of its calls may run
		}
		calls := resp.ToolCalls()
		if len(calls) == 0 {
			if reason, goOn := l.stopHooks(ctx, stopBlocks > 0); goOn && ctx.Err() == nil {
				if stopBlocks++; stopBlocks <= maxStopBlocks {
					// A Stop hook sends the model back to work with its reason.
					m := model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock(reason)}}
					msgs = appendUser(msgs, m)
					l.record(ctx, entryUser, m)
					if l.stopped(res) {
						break
					}
					continue
				}
				l.notice(sema.Notice{Code: CodeStopHookLoop, Message: fmt.Sprintf("the Stop hooks blocked %d stops in a row; the leg stopped anyway", maxStopBlocks)})
			}
			res.Status = sema.StatusCompleted
			break
		}
		stopBlocks = 0
		results := l.dispatchFrom(ctx, turn, calls, nil)
		if l.parked(ctx, res, turn, calls, results) {
			break
		}
		msgs = append(msgs, l.recordResults(ctx, results))
		l.flush(turn)
		if l.stopped(res) {
			break
		}
	}
	return l.finish(ctx, res, msgs, turn-first)
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

// failed ends the result with err: cancelled when ctx ended, else an error.
func (l *leg) failed(ctx context.Context, res *TaskResult, err error) {
	if ctx.Err() != nil {
		l.cancelled(res, context.Cause(ctx))
		return
	}
	res.Status = sema.StatusError
	res.Error = asSemaError(err)
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
	l.recordLater(ctx, entryToolResults, m)
	l.storeReadState(ctx)
	// Stored before the next request: one is never sent for a conversation the session
	// could not record.
	l.flushRecords(ctx)
	return m
}

// lastCalls returns the tool calls of the conversation's last assistant message.
func lastCalls(msgs []model.Message) []model.Block {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == model.RoleAssistant {
			r := model.Response{Content: msgs[i].Content}
			return r.ToolCalls()
		}
	}
	return nil
}

// lastCallsOpen returns the tool calls of a conversation that ends at an assistant
// message (calls nobody answered), else nil.
func lastCallsOpen(msgs []model.Message) []model.Block {
	if len(msgs) == 0 || msgs[len(msgs)-1].Role != model.RoleAssistant {
		return nil
	}
	return lastCalls(msgs)
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

func (l *leg) cancelled(res *TaskResult, cause error) {
	if sema.IsCode(cause, session.CodeLeaseLost) {
		// Not the caller's cancellation: the session was taken over by another run.
		res.Status = sema.StatusError
		res.Error = &sema.Error{Code: session.CodeLeaseLost, Message: "the run stopped: " + sema.MessageOf(cause), Err: cause}
		return
	}
	res.Status = sema.StatusCancelled
	res.Error = &sema.Error{Code: CodeCancelled, Message: "the run was cancelled", Err: cause}
}

// asSemaError keeps a provider's coded error, and codes anything else as a model failure.
func asSemaError(err error) *sema.Error {
	var se *sema.Error
	if errors.As(err, &se) {
		return se
	}
	return &sema.Error{Code: model.CodeError, Message: err.Error(), Err: err}
}
