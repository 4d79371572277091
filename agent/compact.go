package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/sema-agent/sema"
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

// compactKeepTurns is how many of the latest turns a compaction keeps as they are.
const compactKeepTurns = 3

// clearStub is the size, in bytes, above which an old tool result's body is cleared: a
// short answer costs less than the sentence that would replace it.
const clearStub = 256

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

// compactionEntry records a compaction in the transcript. The entries before it stay
// stored, so the session can still be read, branched and rewound across it; replay
// applies it to the conversation it rebuilt, which gives the conversation the model
// continued with.
type compactionEntry struct {
	// Kind is "clear" (old tool results' bodies replaced by a stub) or "summary" (the
	// conversation before the kept turns replaced by a summary).
	Kind string `json:"kind"`
	// Keep is how many of the latest turns (assistant messages and what follows each) are
	// kept as they are.
	Keep int `json:"keep"`
	// Summary is the summary that replaces the earlier conversation (kind summary).
	Summary string `json:"summary,omitempty"`
	// Reason says what asked for it: auto (the window's threshold), overflow (the
	// provider refused a request as too long) or manual (Runner.Compact, the control).
	Reason string `json:"reason"`
	// TokensBefore and TokensAfter are the conversation's size, estimated, around it.
	TokensBefore int64 `json:"tokens_before"`
	TokensAfter  int64 `json:"tokens_after"`
}

const (
	compactionClear   = "clear"
	compactionSummary = "summary"
)

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

// applyCompaction returns the conversation c leaves of msgs. It is a pure function of
// its inputs, so that replay rebuilds exactly the conversation the leg continued with.
func applyCompaction(msgs []model.Message, c compactionEntry) []model.Message {
	cut := keptFrom(msgs, c.Keep)
	switch c.Kind {
	case compactionClear:
		out := make([]model.Message, len(msgs))
		copy(out, msgs)
		for i := range out[:cut] {
			out[i] = clearResults(out[i])
		}
		return out
	case compactionSummary:
		out := []model.Message{summaryMessage(c.Summary)}
		for _, m := range msgs[cut:] {
			if m.Role == model.RoleUser {
				out = appendUser(out, m)
			} else {
				out = append(out, m)
			}
		}
		return out
	}
	return msgs
}

// keptFrom is the index of the first message of the keep latest turns: the keep-th
// assistant message from the end; 0 when there are fewer.
func keptFrom(msgs []model.Message, keep int) int {
	seen := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == model.RoleAssistant {
			seen++
			if seen == keep {
				return i
			}
		}
	}
	return 0
}

// clearResults replaces the bodies of m's large tool results with a stub that says what
// was there; the call and its id stay, so the conversation stays whole.
func clearResults(m model.Message) model.Message {
	changed := false
	content := make([]model.Block, len(m.Content))
	for i, b := range m.Content {
		content[i] = b
		if b.Kind != model.KindToolResult {
			continue
		}
		n := blocksSize(b.Content)
		if n <= clearStub {
			continue
		}
		b.Content = []model.Block{model.TextBlock(fmt.Sprintf("[This result was cleared to save context (%d bytes). Run the call again if you need it.]", n))}
		content[i], changed = b, true
	}
	if !changed {
		return m
	}
	return model.Message{Role: m.Role, Content: content}
}

// blocksSize is the size of blocks in bytes as the estimate counts them: text and input
// as they are, an image as what providers charge for one of the largest they accept
// (about 1,600 tokens), not its bytes.
func blocksSize(bs []model.Block) int {
	n := 0
	for _, b := range bs {
		n += len(b.Text) + len(b.Input) + blocksSize(b.Content)
		if b.Kind == model.KindImage {
			n += imageEstimate
		}
	}
	return n
}

// imageEstimate is an image's weight in the estimate, in bytes (four a token).
const imageEstimate = 6400

// summaryMessage opens a compacted conversation.
func summaryMessage(summary string) model.Message {
	return model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock(
		"This session continues an earlier conversation that was compacted to fit the context window. " +
			"The summary below replaces the earlier turns; the latest turns follow as they were.\n\n<summary>\n" +
			strings.TrimSpace(summary) + "\n</summary>")}}
}

// compactionPrompt is the summary request's system prompt.
const compactionPrompt = `You are summarising a conversation between a user and a coding agent so that the agent can continue the same task with the summary in place of the conversation. The agent will see nothing of the earlier turns but your summary, followed by its latest turns.

Write a summary that keeps everything needed to continue, in this order:
1. The task: the user's requests, in their own words where they matter, and every constraint they gave.
2. Decisions made and why, and approaches tried that failed.
3. Files: every file read, created, changed or deleted, with its path and its current state (what was changed in it, what is still to change).
4. Commands run that matter (tests, builds) and their outcome.
5. Open problems, errors not yet solved, and the next steps the agent was about to take.
6. The todo list, if there is one, with each item's status.

Be specific: paths, names, numbers and error messages exactly. Omit pleasantries. Do not call tools. Answer with the summary only.`

// estimateTokens is the local estimate of a conversation's size: four bytes a token.
func estimateTokens(msgs []model.Message) int64 {
	n := 0
	for _, m := range msgs {
		n += 8 + blocksSize(m.Content)
	}
	return int64(n/4 + 1)
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
		return l.ctx.reported + estimateTokens(msgs[l.ctx.msgs:])
	}
	return fixed + estimateTokens(msgs)
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
	before := l.nextRequestTokens(msgs)
	w := int64(l.window())
	if w == 0 && reason == "overflow" {
		// No window is known, but the provider refused this much: work to less.
		w = before * 9 / 10
	}
	clear := compactionEntry{Kind: compactionClear, Keep: compactKeepTurns, Reason: reason, TokensBefore: before}
	cleared := applyCompaction(msgs, clear)
	clear.TokensAfter = int64(len(l.system)/4) + l.specTokens + estimateTokens(cleared)
	if reason == "auto" && w > 0 && float64(clear.TokensAfter) < 0.6*float64(w) {
		return l.commitCompaction(ctx, cleared, clear, turn)
	}
	summary, err := l.summarize(ctx, cleared, instructions, w)
	if err != nil {
		return msgs, err
	}
	if clear.TokensAfter < before {
		if _, err := l.commitCompaction(ctx, cleared, clear, turn); err != nil {
			return msgs, err
		}
	}
	keep := compactKeepTurns
	if w > 0 {
		// The kept turns must leave room: fewer of them when they alone are large.
		for keep > 1 && float64(estimateTokens(cleared[keptFrom(cleared, keep):])) > 0.3*float64(w) {
			keep--
		}
	}
	sum := compactionEntry{Kind: compactionSummary, Keep: keep, Summary: summary, Reason: reason, TokensBefore: clear.TokensAfter}
	out := applyCompaction(cleared, sum)
	sum.TokensAfter = int64(len(l.system)/4) + l.specTokens + estimateTokens(out)
	return l.commitCompaction(ctx, out, sum, turn)
}

// commitCompaction records a compaction and reports it; the leg continues from out.
func (l *leg) commitCompaction(ctx context.Context, out []model.Message, c compactionEntry, turn int) ([]model.Message, error) {
	if _, ok := l.record(ctx, entryCompaction, c); !ok {
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
	text := renderConversation(msgs)
	if w > 0 {
		budget := int(0.7*float64(w))*4 - len(compactionPrompt)
		if budget < 4096 {
			budget = 4096
		}
		if len(text) > budget {
			cut := len(text) - budget
			text = fmt.Sprintf("[the first %d bytes of the conversation did not fit and are not shown]\n", cut) + text[cut:]
		}
	}
	ask := "Here is the conversation to summarise:\n\n<conversation>\n" + text + "\n</conversation>\n\nSummarise it as the system prompt says."
	if s := strings.TrimSpace(instructions); s != "" {
		ask += " In particular: " + s
	}
	req := &model.Request{Model: l.spec.Model, System: compactionPrompt, MaxTokens: l.spec.MaxTokens,
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
	text = strings.TrimSpace(resp.Text())
	if text == "" {
		return "", sema.Errorf(CodeCompactionFailed, "the conversation could not be compacted: the model answered the summary request with no text")
	}
	return text, nil
}

// renderConversation spells a conversation out as text for the summary request.
func renderConversation(msgs []model.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		for _, bl := range m.Content {
			switch bl.Kind {
			case model.KindText:
				fmt.Fprintf(&b, "%s: %s\n", m.Role, bl.Text)
			case model.KindToolUse:
				fmt.Fprintf(&b, "%s called %s %s\n", m.Role, bl.Name, bl.Input)
			case model.KindToolResult:
				status := "result"
				if bl.IsError {
					status = "error"
				}
				fmt.Fprintf(&b, "tool %s: %s\n", status, blocksText(bl.Content))
			case model.KindImage:
				b.WriteString("[an image]\n")
			}
		}
	}
	return b.String()
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
		res.Status, res.Error = sema.StatusError, asSemaError(err)
		l.finish(ctx, res, l.resume.messages, 0)
		return nil, err
	}
	l.finish(ctx, res, out, 0)
	if n := len(res.Compactions); n > 0 {
		return &res.Compactions[n-1], nil
	}
	return nil, sema.Errorf(CodeCompactionFailed, "session %s was not compacted", sessionID)
}
