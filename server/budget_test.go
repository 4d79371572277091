package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/pricing"
	"github.com/sema-agent/sema/server"
)

func TestBudgetQuestionAnsweredWithARaiseOverTheAPI(t *testing.T) {
	eachStore(t, testBudgetQuestionRaise)
}

// A task whose next request would pass its dollar budget parks a budget question; an
// allow without a raise (or with one not above the spending) is refused by name and the
// question stays open; an allow with a higher budget continues the task to its end.
func testBudgetQuestionRaise(t *testing.T, st store) {
	f := newFixtureWith(t, st, func(base string) []scripted.Turn {
		return []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{{Name: "Glob", Input: json.RawMessage(`{"pattern":"*.txt"}`)}}, Usage: &model.Usage{InputTokens: 100_000}},
			{Text: "done", Usage: &model.Usage{InputTokens: 10}},
		}
	}, func(cfg *server.Config) {
		// At 10 dollars a million tokens, the first turn costs 1 dollar.
		cfg.Prices = map[string]pricing.Price{"scripted": {Input: 10, Output: 10, CacheWrite: 10, CacheRead: 10}}
	})
	ctx := context.Background()
	c := f.client(t, "acme", f.base)
	task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "look", Cwd: f.base, MaxBudgetUSD: 1.0001})
	if err != nil {
		t.Fatal(err)
	}
	parked := waitStatus(t, c, task.TaskID, client.StatusAwaitingApproval)
	cps, err := c.Checkpoints(ctx, "open")
	if err != nil || len(cps) != 1 || cps[0].ID != parked.CheckpointID || cps[0].Gate != "budget" || !strings.Contains(cps[0].Message, "$1.0000 of $1.0001 is spent") {
		t.Fatalf("open checkpoints: %+v, %v", cps, err)
	}
	for _, d := range []client.Decision{
		{Decision: "allow"},
		{Decision: "allow", Budget: &client.BudgetRaise{MaxBudgetUSD: 0.5}},
		{Decision: "deny", Budget: &client.BudgetRaise{MaxBudgetUSD: 2}},
	} {
		if _, err := c.Decide(ctx, cps[0].ID, d); codeOf(err) != "budget.raise_invalid" {
			t.Fatalf("decision %+v: %v", d, err)
		}
	}
	// A person answering may not lift the tenant's bound per task.
	if err := f.srv.SetPolicy(ctx, "acme", server.Policy{MaxUSDPerTask: 1.5}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Decide(ctx, cps[0].ID, client.Decision{Decision: "allow", Budget: &client.BudgetRaise{MaxBudgetUSD: 2}}); codeOf(err) != server.CodePolicyBudget {
		t.Fatalf("a raise above the policy: %v", err)
	}
	if err := f.srv.SetPolicy(ctx, "acme", server.Policy{}); err != nil {
		t.Fatal(err)
	}
	if open, _ := c.Checkpoints(ctx, "open"); len(open) != 1 {
		t.Fatalf("a refused decision closed the question: %+v", open)
	}
	if _, err := c.Decide(ctx, cps[0].ID, client.Decision{Decision: "allow", Budget: &client.BudgetRaise{MaxBudgetUSD: 2}}); err != nil {
		t.Fatal(err)
	}
	done := waitStatus(t, c, task.TaskID, "completed")
	var res map[string]any
	if err := json.Unmarshal(done.Result, &res); err != nil || res["result"] != "done" {
		t.Fatalf("result %s", done.Result)
	}
	var gates []string
	for _, ev := range follow(t, c, task.TaskID, 0) {
		var obj struct {
			Type       string `json:"type"`
			Checkpoint *struct {
				Gate string `json:"gate"`
			} `json:"checkpoint"`
		}
		json.Unmarshal(ev.Data, &obj)
		if obj.Type == "result" && obj.Checkpoint != nil {
			gates = append(gates, obj.Checkpoint.Gate)
		}
	}
	if strings.Join(gates, ",") != "budget" {
		t.Fatalf("the stream's parked results name gates %v, want budget", gates)
	}
}
