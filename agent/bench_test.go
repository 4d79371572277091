package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/hooks"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/sandbox"
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

// BenchmarkPreToolUseHooks is the cost hooks add to a tool call: tasks of 20 Read calls
// with no hooks, with 10 PreToolUse command hooks none of which matches Read, with one
// matching command hook (`exit 0`: a shell started, fed the call's JSON, and waited
// for — in the shell sandbox where the machine has one), and with one matching Go hook.
// The per-call metric divides a task's time by its calls; the added cost of a kind of
// hook is its ns/call minus the "none" case's.
func BenchmarkPreToolUseHooks(b *testing.B) {
	const calls = 20
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\nbeta\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	var nonMatching []hooks.Hook
	for _, m := range []string{"Bash", "Edit|Write", "MultiEdit", "mcp__github__.*", "NotebookEdit", "WebFetch", "Glob|Grep", "Task", "mcp__memory__.*", "TodoWrite"} {
		nonMatching = append(nonMatching, hooks.Hook{Event: hooks.PreToolUse, Matcher: m, Command: "exit 2"})
	}
	allow := func(context.Context, hooks.Input) (hooks.Output, error) { return hooks.Output{}, nil }
	command := []hooks.Hook{{Event: hooks.PreToolUse, Matcher: "Read", Command: "exit 0"}}
	for _, c := range []struct {
		name    string
		list    []hooks.Hook
		sandbox sandbox.Mode
	}{
		{"none", nil, ""},
		{"nonmatching=10", nonMatching, ""},
		{"command=1", command, ""},
		{"command=1/sandbox=off", command, sandbox.ModeOff},
		{"func=1", []hooks.Hook{{Event: hooks.PreToolUse, Matcher: "Read", Func: allow}}, ""},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := agent.New(agent.Deps{Provider: loopProvider{input: json.RawMessage(`{"file_path":"a.txt"}`)}, Hooks: &agent.Hooks{Events: c.list},
					Shell: &agent.ShellOptions{Sandbox: c.sandbox}})
				res, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "read", Root: dir, MaxTurns: calls})
				if err != nil {
					b.Fatal(err)
				}
				if res.Status != sema.StatusMaxTurns || len(res.PermissionDenials) != 0 {
					b.Fatalf("status %s, denials %+v", res.Status, res.PermissionDenials)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*calls), "ns/call")
		})
	}
}
