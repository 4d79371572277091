// Command customtool mounts a tool of its own next to sema's: a read-effect tool runs
// without a question, and one with a write effect runs only because a rule allows it
// (without the rule the question would be denied: nobody is there to answer it).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/examples/internal/demo"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/tools"
)

// clock answers with the time: reading it changes nothing (tools.EffectRead).
type clock struct{}

func (clock) Spec() tools.Spec {
	return tools.Spec{Name: "Clock", Description: "The current time in UTC.", Effect: tools.EffectRead,
		InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false}`)}
}

func (clock) Run(ctx context.Context, _ json.RawMessage) tools.Result {
	return tools.Text(time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC).Format(time.RFC3339))
}

// ticket files a ticket in some tracker: a write, so the permission fold asks about it.
type ticket struct{ filed *[]string }

func (ticket) Spec() tools.Spec {
	return tools.Spec{Name: "FileTicket", Description: "Files a ticket.", Effect: tools.EffectWrite,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}},"required":["title"]}`)}
}

func (t ticket) Run(ctx context.Context, input json.RawMessage) tools.Result {
	var in struct{ Title string }
	if err := json.Unmarshal(input, &in); err != nil {
		return tools.Fail(tools.CodeInputInvalid, "the input is not {\"title\": string}: %v", err)
	}
	*t.filed = append(*t.filed, in.Title)
	return tools.Text("filed: " + in.Title)
}

func main() {
	root, _ := demo.Workspace("README.md", "hello\n")
	var filed []string
	model := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "Clock", Input: json.RawMessage(`{}`)}, {Name: "FileTicket", Input: json.RawMessage(`{"title":"review at 15:00"}`)}}},
		{Text: "Filed the review ticket."},
	}})
	rules := demo.Must(permission.ParseRules([]string{"FileTicket"}, nil, nil))
	runner := agent.New(agent.Deps{Provider: model, Tools: []tools.Tool{clock{}, ticket{&filed}}, Policy: &agent.Policy{Rules: rules}})
	res := demo.Must(runner.Run(context.Background(), agent.TaskSpec{Prompt: "file a review ticket for now", Root: root}))
	fmt.Println(res.Status, res.Result)
	fmt.Println("tickets:", filed, "denials:", len(res.PermissionDenials))
}
