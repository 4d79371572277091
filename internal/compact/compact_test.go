package compact

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sema-agent/sema/model"
)

// turn is one assistant call and the user message with its result of size n.
func turn(id string, n int) []model.Message {
	return []model.Message{
		{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.KindToolUse, ID: id, Name: "Read"}}},
		{Role: model.RoleUser, Content: []model.Block{{Kind: model.KindToolResult, ID: id, Content: []model.Block{model.TextBlock(strings.Repeat("x", n))}}}},
	}
}

func conversation(turns, n int) []model.Message {
	msgs := []model.Message{{Role: model.RoleUser, Content: []model.Block{model.TextBlock("do it")}}}
	for i := range turns {
		msgs = append(msgs, turn(string(rune('a'+i)), n)...)
	}
	return msgs
}

// A clear stubs the large results before the kept turns and leaves the rest, and the
// calls stay paired with their results.
func TestApplyClear(t *testing.T) {
	msgs := conversation(5, 1000)
	msgs[2].Content[0].Content = []model.Block{model.TextBlock("short")}
	out := Apply(msgs, Entry{Kind: Clear, Keep: 3})
	if len(out) != len(msgs) {
		t.Fatalf("a clear changed the conversation's length: %d of %d", len(out), len(msgs))
	}
	cut := KeptFrom(msgs, 3)
	for i, m := range out {
		for _, b := range m.Content {
			if b.Kind != model.KindToolResult {
				continue
			}
			text := b.Content[0].Text
			switch {
			case i == 2 && text != "short":
				t.Errorf("a short result was cleared: %q", text)
			case i != 2 && i < cut && !strings.Contains(text, "cleared to save context (1000 bytes)"):
				t.Errorf("message %d before the kept turns was not cleared: %.40q", i, text)
			case i >= cut && len(text) != 1000:
				t.Errorf("message %d of a kept turn was cleared", i)
			}
		}
	}
	if len(msgs[4].Content[0].Content[0].Text) != 1000 {
		t.Fatal("Apply changed its input")
	}
}

// A summary replaces everything before the kept turns with one user message.
func TestApplySummary(t *testing.T) {
	msgs := conversation(5, 10)
	out := Apply(msgs, Entry{Kind: Summary, Keep: 2, Summary: "  what happened  "})
	if len(out) != 1+2*2 || out[0].Role != model.RoleUser || !strings.Contains(out[0].Content[0].Text, "<summary>\nwhat happened\n</summary>") {
		t.Fatalf("summary: %+v", out)
	}
	if out[1].Role != model.RoleAssistant || out[1].Content[0].ID != "d" {
		t.Fatalf("the kept turns do not follow the summary: %+v", out[1])
	}
}

// An auto compaction whose clear leaves enough room stops there, without a summary;
// one that does not asks for a summary and commits both steps.
func TestRunStopsAtTheClearWhenItIsEnough(t *testing.T) {
	msgs := conversation(6, 4000)
	var got []Entry
	leg := func(summarized *bool) Leg {
		return Leg{
			Summarize: func(context.Context, []model.Message, int64) (string, error) { *summarized = true; return "sum", nil },
			Commit: func(_ context.Context, out []model.Message, e Entry) ([]model.Message, error) {
				got = append(got, e)
				return out, nil
			},
		}
	}
	var summarized bool
	if _, err := Run(t.Context(), msgs, EstimateTokens(msgs), 20000, "auto", leg(&summarized)); err != nil {
		t.Fatal(err)
	}
	if summarized || len(got) != 1 || got[0].Kind != Clear {
		t.Fatalf("a clear that was enough: summarized %v, steps %+v", summarized, got)
	}
	got = nil
	if _, err := Run(t.Context(), msgs, EstimateTokens(msgs), 4000, "auto", leg(&summarized)); err != nil {
		t.Fatal(err)
	}
	if !summarized || len(got) != 2 || got[1].Kind != Summary || got[1].TokensBefore != got[0].TokensAfter {
		t.Fatalf("a clear that was not enough: summarized %v, steps %+v", summarized, got)
	}
}

// A failed summary commits nothing and leaves the conversation as it was.
func TestRunFailedSummaryCommitsNothing(t *testing.T) {
	msgs := conversation(4, 100)
	boom := errors.New("boom")
	out, err := Run(t.Context(), msgs, EstimateTokens(msgs), 0, "manual", Leg{
		Summarize: func(context.Context, []model.Message, int64) (string, error) { return "", boom },
		Commit: func(context.Context, []model.Message, Entry) ([]model.Message, error) {
			t.Fatal("a step was committed")
			return nil, nil
		},
	})
	if !errors.Is(err, boom) || len(out) != len(msgs) {
		t.Fatalf("Run = %d messages, %v", len(out), err)
	}
}
