// Package compact shrinks a conversation to fit a model's context window: it estimates a
// conversation's size, clears the bodies of old tool results, replaces the turns before
// the latest ones with a summary, and spells the conversation out for the summary
// request. Each step is an Entry, which Apply replays, so a stored transcript rebuilds
// exactly the conversation the leg continued with.
package compact

import (
	"fmt"
	"strings"

	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/tools"
)

// KeepTurns is how many of the latest turns a compaction keeps as they are.
const KeepTurns = 3

// clearStub is the size, in bytes, above which an old tool result's body is cleared: a
// short answer costs less than the sentence that would replace it.
const clearStub = 256

// Entry records a compaction in the transcript. The entries before it stay stored, so
// the session can still be read, branched and rewound across it; replay applies it to
// the conversation it rebuilt, which gives the conversation the model continued with.
type Entry struct {
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

// The kinds of Entry.
const (
	Clear   = "clear"
	Summary = "summary"
)

// Apply returns the conversation c leaves of msgs. It is a pure function of its inputs,
// so that replay rebuilds exactly the conversation the leg continued with.
func Apply(msgs []model.Message, c Entry) []model.Message {
	cut := KeptFrom(msgs, c.Keep)
	switch c.Kind {
	case Clear:
		out := make([]model.Message, len(msgs))
		copy(out, msgs)
		for i := range out[:cut] {
			out[i] = clearResults(out[i])
		}
		return out
	case Summary:
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

// appendUser adds a user message, merging it into a user message that ends the
// conversation, since providers expect the roles to alternate (as the leg's loop
// appends its own).
func appendUser(msgs []model.Message, m model.Message) []model.Message {
	if n := len(msgs); n > 0 && msgs[n-1].Role == model.RoleUser {
		merged := model.Message{Role: model.RoleUser, Content: append(append([]model.Block(nil), msgs[n-1].Content...), m.Content...)}
		return append(msgs[:n-1:n-1], merged)
	}
	return append(msgs, m)
}

// KeptFrom is the index of the first message of the keep latest turns: the keep-th
// assistant message from the end; 0 when there are fewer.
func KeptFrom(msgs []model.Message, keep int) int {
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

// Prompt is the summary request's system prompt.
const Prompt = `You are summarising a conversation between a user and a coding agent so that the agent can continue the same task with the summary in place of the conversation. The agent will see nothing of the earlier turns but your summary, followed by its latest turns.

Write a summary that keeps everything needed to continue, in this order:
1. The task: the user's requests, in their own words where they matter, and every constraint they gave.
2. Decisions made and why, and approaches tried that failed.
3. Files: every file read, created, changed or deleted, with its path and its current state (what was changed in it, what is still to change).
4. Commands run that matter (tests, builds) and their outcome.
5. Open problems, errors not yet solved, and the next steps the agent was about to take.
6. The todo list, if there is one, with each item's status.

Be specific: paths, names, numbers and error messages exactly. Omit pleasantries. Do not call tools. Answer with the summary only.`

// EstimateTokens is the local estimate of a conversation's size: four bytes a token.
func EstimateTokens(msgs []model.Message) int64 {
	n := 0
	for _, m := range msgs {
		n += 8 + blocksSize(m.Content)
	}
	return int64(n/4 + 1)
}

// Ask is the summary request's message: the conversation msgs as one text — calls and
// results spelled out — so that the request needs no tool definitions and fits where
// the conversation itself did not: w (the window, 0 when unknown) bounds it, its oldest
// part cut first. Instructions, when not empty, say what the summary should keep.
func Ask(msgs []model.Message, instructions string, w int64) string {
	text := render(msgs)
	if w > 0 {
		budget := int(0.7*float64(w))*4 - len(Prompt)
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
	return ask
}

// render spells a conversation out as text for the summary request.
func render(msgs []model.Message) string {
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
				fmt.Fprintf(&b, "tool %s: %s\n", status, tools.Result{Content: bl.Content}.TextOf())
			case model.KindImage:
				b.WriteString("[an image]\n")
			}
		}
	}
	return b.String()
}
