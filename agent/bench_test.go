package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
)

// loopProvider answers every request with the same Read call, so a benchmark can run as
// many turns as it likes without building a script of b.N turns.
type loopProvider struct{ input json.RawMessage }

func (loopProvider) Name() string { return "loop" }

func (p loopProvider) Stream(ctx context.Context, req *model.Request, _ func(model.Delta)) (*model.Response, error) {
	return &model.Response{
		Content:    []model.Block{{Kind: model.KindToolUse, ID: "toolu_1", Name: "Read", Input: p.input}},
		StopReason: model.StopToolUse,
	}, nil
}

// BenchmarkTurnOverhead is the runner's cost per turn: one model response (a provider
// that answers instantly) and one Read call of a small file, with the transcript
// growing as it does in a real run. b.N turns run in one task.
func BenchmarkTurnOverhead(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\nbeta\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	r := agent.New(agent.Deps{Provider: loopProvider{input: json.RawMessage(`{"file_path":"a.txt"}`)}})
	b.ReportAllocs()
	b.ResetTimer()
	res, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "read", Root: dir, MaxTurns: b.N})
	if err != nil {
		b.Fatal(err)
	}
	if res.Status != sema.StatusMaxTurns || res.NumTurns != b.N {
		b.Fatalf("status %s after %d turns", res.Status, res.NumTurns)
	}
}

// BenchmarkShortTask is a whole two-turn task with the scripted provider: prepare (fence,
// tools, system prompt), one Read, the final answer.
func BenchmarkShortTask(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	script := scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "Read", Input: json.RawMessage(`{"file_path":"a.txt"}`)}}},
		{Text: "done"},
	}}
	b.ReportAllocs()
	for b.Loop() {
		r := agent.New(agent.Deps{Provider: scripted.New(script)})
		res, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "read", Root: dir})
		if err != nil || res.Status != sema.StatusCompleted {
			b.Fatalf("%v %v", err, res.Status)
		}
	}
}
