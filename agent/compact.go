package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/internal/compact"
	"github.com/sema-agent/sema/internal/runend"
	"github.com/sema-agent/sema/internal/transcript"
	"github.com/sema-agent/sema/model"
)

// ContextOptions tune how a leg keeps its conversation inside the model's context
// window. The zero value (and a nil Deps.Context) is the default of every field.
type ContextOptions struct {
	// Window is the model's context window in tokens. Zero: the window the model package
	// knows for the model's family (model.ContextWindow), else none — and then the
	// conversation is compacted only when the provider says it is too long.
	Window int
	// Threshold is the share of the window a request may fill before the conversation is
	// compacted first, between 0.1 and 0.99. Zero: DefaultCompactThreshold. Anything else
	// is refused (config.context_invalid).
	Threshold float64
	// Off turns automatic compaction off: requests are sent whole until the provider
	// refuses one (model.context_too_long), which then ends the leg. Runner.Compact and
	// the compact control still compact on request. Default false.
	Off bool
}

// DefaultCompactThreshold is the share of the context window a request may fill before
// the conversation is compacted.
const DefaultCompactThreshold = 0.85

func (d *Deps) contextOptions() ContextOptions {
	if d.Context == nil {
		return ContextOptions{}
	}
	return *d.Context
}

// validateContext is the door's part for Deps.Context.
func validateContext(deps *Deps) error {
	o := deps.contextOptions()
	if o.Window < 0 {
		return configError(CodeContextInvalid, "Deps.Context.Window is %d; give the model's window in tokens, or 0 for the known one", o.Window)
	}
	if o.Threshold != 0 && (o.Threshold < 0.1 || o.Threshold > 0.99) {
		return configError(CodeContextInvalid, "Deps.Context.Threshold is %v; give a share of the window between 0.1 and 0.99, or 0 for %v", o.Threshold, DefaultCompactThreshold)
	}
	return nil
}

// CompactionInfo describes one compaction (EventCompaction, TaskResult.Compactions).
type CompactionInfo struct {
	// Kind is "clear" or "summary" (see ContextOptions).
	Kind string `json:"kind"`
	// Reason is auto, overflow or manual.
	Reason string `json:"reason"`
	// TokensBefore is the conversation's estimated size before it, in tokens.
	TokensBefore int64 `json:"tokens_before"`
	// TokensAfter is the conversation's estimated size after it, in tokens.
	TokensAfter int64 `json:"tokens_after"`
}

// window is the leg's context window in tokens; 0 when unknown.
func (l *leg) window() int {
	if w := l.deps.contextOptions().Window; w > 0 {
		return w
	}
	w, _ := model.ContextWindow(l.spec.Model)
	return w
}

// threshold is the share of the window a request may fill.
func (l *leg) threshold() float64 {
	if t := l.deps.contextOptions().Threshold; t > 0 {
		return t
	}
	return DefaultCompactThreshold
}

// nextRequestTokens estimates the size of the request msgs would make: what the provider
// reported for the last request and its answer, plus an estimate of what was added
// since; the whole estimate before the first answer.
func (l *leg) nextRequestTokens(msgs []model.Message) int64 {
	fixed := int64(len(l.system)/4) + l.specTokens
	if l.ctx.reported > 0 && l.ctx.msgs <= len(msgs) {
		return l.ctx.reported + compact.EstimateTokens(msgs[l.ctx.msgs:])
	}
	return fixed + compact.EstimateTokens(msgs)
}

// noteContext records the provider's report of a request's size, for the next estimate.
func (l *leg) noteContext(u model.Usage, msgs int) {
	total := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens + u.OutputTokens
	if total > 0 {
		l.ctx.reported, l.ctx.msgs = total, msgs
	}
}

// maybeCompact compacts msgs when the next request would pass the window's threshold, or
// when a compaction was asked for (Control.Compact).
func (l *leg) maybeCompact(ctx context.Context, msgs []model.Message, turn int) ([]model.Message, error) {
	if instructions, asked := l.spec.Control.takeCompact(); asked {
		return l.compact(ctx, msgs, "manual", instructions, turn)
	}
	w := l.window()
	if w == 0 || l.deps.contextOptions().Off {
		return msgs, nil
	}
	if float64(l.nextRequestTokens(msgs)) < l.threshold()*float64(w) {
		return msgs, nil
	}
	return l.compact(ctx, msgs, "auto", "", turn)
}

// compact makes the conversation smaller: first by clearing old tool results, which is
// enough when they were what filled the window; then, if not (or when asked for), by
// replacing the turns before the latest ones with a summary the model writes. Each step
// is recorded in the transcript before the leg goes on. A summary request that fails
// leaves the conversation and the transcript as they were, and the error ends the leg.
func (l *leg) compact(ctx context.Context, msgs []model.Message, reason, instructions string, turn int) ([]model.Message, error) {
	trigger := reason
	if trigger == "overflow" {
		trigger = "auto"
	}
	l.preCompactHooks(ctx, trigger, instructions)
	return compact.Run(ctx, msgs, l.nextRequestTokens(msgs), l.window(), reason, compact.Leg{
		Fixed: int64(len(l.system)/4) + l.specTokens,
		Summarize: func(ctx context.Context, msgs []model.Message, w int64) (string, error) {
			return l.summarize(ctx, msgs, instructions, w)
		},
		Commit: func(ctx context.Context, out []model.Message, c compact.Entry) ([]model.Message, error) {
			return l.commitCompaction(ctx, out, c, turn)
		},
	})
}

// commitCompaction records a compaction and reports it; the leg continues from out.
func (l *leg) commitCompaction(ctx context.Context, out []model.Message, c compact.Entry, turn int) ([]model.Message, error) {
	if _, ok := l.record(ctx, transcript.KindCompaction, c); !ok {
		return nil, l.recordFailed()
	}
	l.ctx.reported, l.ctx.msgs = 0, 0 // the next estimate is of the new conversation
	info := CompactionInfo{Kind: c.Kind, Reason: c.Reason, TokensBefore: c.TokensBefore, TokensAfter: c.TokensAfter}
	l.mu.Lock()
	l.compactions = append(l.compactions, info)
	l.mu.Unlock()
	l.notice(sema.Notice{Code: CodeCompacted, Message: fmt.Sprintf("the conversation was compacted (%s, %s): about %d tokens → %d", c.Kind, c.Reason, c.TokensBefore, c.TokensAfter),
		Detail: map[string]any{"kind": c.Kind, "reason": c.Reason, "tokens_before": c.TokensBefore, "tokens_after": c.TokensAfter}})
	l.enqueue(Event{Type: EventCompaction, Compaction: &info})
	l.flush(turn)
	return out, nil
}

// summarize asks the leg's model for the summary of msgs. The conversation goes to it
// as one text — calls and results spelled out — so that the request needs no tool
// definitions and fits where the conversation itself did not: w (the window, 0 when
// unknown) bounds it, its oldest part cut first.
func (l *leg) summarize(ctx context.Context, msgs []model.Message, instructions string, w int64) (string, error) {
	ask := compact.Ask(msgs, instructions, w)
	req := &model.Request{Model: l.spec.Model, System: compact.Prompt, MaxTokens: l.spec.MaxTokens,
		Messages: []model.Message{{Role: model.RoleUser, Content: []model.Block{model.TextBlock(ask)}}}}
	resp, err := l.deps.Provider.Stream(ctx, req, nil)
	if err != nil {
		return "", (&sema.Error{Code: CodeCompactionFailed, Message: "the conversation could not be compacted: the summary request failed: " + sema.MessageOf(err), Err: err}).
			With("cause", sema.CodeOf(err))
	}
	l.mu.Lock()
	l.sideUsage = l.sideUsage.Add(resp.Usage)
	l.mu.Unlock()
	l.charge(resp)
	text := strings.TrimSpace(resp.Text())
	if text == "" {
		return "", sema.Errorf(CodeCompactionFailed, "the conversation could not be compacted: the model answered the summary request with no text")
	}
	return text, nil
}

// contextState is what the leg knows of its conversation's size.
type contextState struct {
	// reported is the size the provider reported for the last request and its answer;
	// msgs is how many messages that request and answer were.
	reported int64
	msgs     int
}

// Compact compacts a stored session's conversation now, as a leg of its own that runs no
// turn: the old tool results are cleared and the turns before the latest ones replaced
// by a summary the model writes, following instructions when they are not empty. The
// next resume continues from the compacted conversation; every earlier entry stays in
// the transcript. It needs Deps.Store; the session must not be waiting at a parked
// question (context.compact_parked) and must not be busy (session.busy). A summary
// request that fails leaves the session as it was (context.compaction_failed).
func (r *Runner) Compact(ctx context.Context, sessionID, instructions string) (*CompactionInfo, error) {
	if r.deps.Store == nil {
		return nil, configError(CodeStoreMissing, "compacting a session needs a session store; set Deps.Store")
	}
	s, err := r.deps.Store.Get(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	spec := TaskSpec{Root: s.Root, Model: s.Model, Resume: &Resume{SessionID: sessionID}, OnAsk: OnAskDeny, compactOnly: true}
	l, err := prepare(ctx, &r.deps, spec, nil, func(Event) {}, stop, nil)
	if err != nil {
		return nil, err
	}
	res := &TaskResult{SessionID: l.sessionID, Manifest: l.manifest, Status: sema.StatusCompleted}
	if l.resume.parked != nil {
		res.Status = sema.StatusError
		l.finish(ctx, res, l.resume.messages, 0)
		return nil, sema.Errorf(CodeCompactParked, "session %s waits at a parked question (checkpoint %s); answer it before compacting", sessionID, l.resume.parked.Checkpoint)
	}
	out, err := l.compact(ctx, l.resume.messages, "manual", instructions, l.resume.turns)
	if err != nil {
		res.Status, res.Error = sema.StatusError, runend.Coded(err)
		l.finish(ctx, res, l.resume.messages, 0)
		return nil, err
	}
	l.finish(ctx, res, out, 0)
	if n := len(res.Compactions); n > 0 {
		return &res.Compactions[n-1], nil
	}
	return nil, sema.Errorf(CodeCompactionFailed, "session %s was not compacted", sessionID)
}
