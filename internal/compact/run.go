package compact

import (
	"context"

	"github.com/sema-agent/sema/model"
)

// Leg is what a compaction needs of the leg whose conversation it compacts.
type Leg struct {
	// Fixed is what every request carries beside the conversation (the system prompt and
	// the tool specs), in tokens as EstimateTokens counts them.
	Fixed int64
	// Summarize asks the leg's model for the summary of msgs, the request bounded by w
	// (the window, 0 when unknown; see Ask).
	Summarize func(ctx context.Context, msgs []model.Message, w int64) (string, error)
	// Commit records a step in the transcript and reports it; the leg continues from
	// the conversation it returns.
	Commit func(ctx context.Context, out []model.Message, e Entry) ([]model.Message, error)
}

// Run makes the conversation msgs smaller: first by clearing old tool results, which is
// enough when they were what filled the window; then, if not (or when asked for), by
// replacing the turns before the latest ones with a summary the model writes. before is
// the next request's size, window the model's window in tokens (0 when unknown), reason
// what asked (auto, overflow or manual). Each step is committed before the next. A
// summary request that fails commits nothing, and Run returns msgs with its error.
func Run(ctx context.Context, msgs []model.Message, before int64, window int, reason string, l Leg) ([]model.Message, error) {
	w := int64(window)
	if w == 0 && reason == "overflow" {
		// No window is known, but the provider refused this much: work to less.
		w = before * 9 / 10
	}
	clear := Entry{Kind: Clear, Keep: KeepTurns, Reason: reason, TokensBefore: before}
	cleared := Apply(msgs, clear)
	clear.TokensAfter = l.Fixed + EstimateTokens(cleared)
	if reason == "auto" && w > 0 && float64(clear.TokensAfter) < 0.6*float64(w) {
		return l.Commit(ctx, cleared, clear)
	}
	summary, err := l.Summarize(ctx, cleared, w)
	if err != nil {
		return msgs, err
	}
	if clear.TokensAfter < before {
		if _, err := l.Commit(ctx, cleared, clear); err != nil {
			return msgs, err
		}
	}
	keep := KeepTurns
	if w > 0 {
		// The kept turns must leave room: fewer of them when they alone are large.
		for keep > 1 && float64(EstimateTokens(cleared[KeptFrom(cleared, keep):])) > 0.3*float64(w) {
			keep--
		}
	}
	sum := Entry{Kind: Summary, Keep: keep, Summary: summary, Reason: reason, TokensBefore: clear.TokensAfter}
	out := Apply(cleared, sum)
	sum.TokensAfter = l.Fixed + EstimateTokens(out)
	return l.Commit(ctx, out, sum)
}
