package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
)

// asAnthropic is a scripted provider that calls itself anthropic and records the model
// each request names.
type asAnthropic struct {
	model.Provider
	mu     sync.Mutex
	models []string
}

func (p *asAnthropic) Name() string { return "anthropic" }

func (p *asAnthropic) Stream(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	p.mu.Lock()
	p.models = append(p.models, req.Model)
	p.mu.Unlock()
	return p.Provider.Stream(ctx, req, onDelta)
}

// An agent file's model: haiku is the newest haiku the provider knows, as in Claude
// Code; sent as written, the API would refuse the alias.
func TestAgentFileModelAlias(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	def := "---\nname: quick\ndescription: answers fast\nmodel: haiku\n---\nAnswer briefly.\n"
	if err := os.MkdirAll(filepath.Join(root, ".sema", "agents"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".sema", "agents", "quick.md"), []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &asAnthropic{Provider: scripted.New(scripted.Script{
		Turns:   []scripted.Turn{{ToolCalls: []scripted.ToolCall{taskCall("t1", "quick", "ask", "CHILD answer")}}, {Text: "done"}},
		Threads: []scripted.Thread{{Match: "CHILD", Turns: []scripted.Turn{{Text: "answered"}}}},
	})}
	_, res := collect(t, agent.New(agent.Deps{Provider: p}).Events(context.Background(), agent.TaskSpec{Prompt: "go", Root: root, Model: "claude-sonnet-4-5"}))
	if res.Status != sema.StatusCompleted {
		t.Fatalf("%s %v", res.Status, res.Error)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := map[string]bool{}
	for _, m := range p.models {
		seen[m] = true
	}
	if len(seen) != 2 || !seen["claude-sonnet-4-5"] || !seen["claude-haiku-4-5"] {
		t.Errorf("requests named %q; want the parent's claude-sonnet-4-5 and the agent's claude-haiku-4-5", p.models)
	}
}
