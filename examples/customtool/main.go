// Command customtool mounts tools of its own next to sema's, each made of a function with
// tools.Func or tools.FuncOf: a read-effect tool runs without a question, and a
// passthrough tool (one that states no permission of its own) runs only because a rule
// allows it — without the rule its question would be denied, as nobody is there to
// answer it.
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

// ticketInput is FileTicket's input; tools.FuncOf decodes it strictly.
type ticketInput struct {
	Title string `json:"title"`
}

func main() {
	root, _ := demo.Workspace("README.md", "hello\n")
	var filed []string

	// Reading the clock changes nothing: a declared read runs in every mode, and calls
	// of it in one turn may run together.
	clock := tools.Func(tools.Spec{Name: "Clock", Description: "The current time in UTC.", Effect: tools.EffectRead,
		InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false}`)},
		func(ctx context.Context, _ json.RawMessage) tools.Result {
			return tools.Text(time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC).Format(time.RFC3339))
		})

	// Filing a ticket writes to another system, and the tool leaves the decision to the
	// deployment: the passthrough seat asks, unless a rule or bypassPermissions allows.
	ticket := tools.FuncOf(tools.Spec{Name: "FileTicket", Description: "Files a ticket.", Effect: tools.EffectWrite,
		PermissionSeat: tools.SeatPassthrough, PassthroughQuestion: "File a ticket in the tracker?",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}},"required":["title"]}`)},
		func(ctx context.Context, in ticketInput) tools.Result {
			if in.Title == "" {
				return tools.Fail(tools.CodeInputInvalid, "title is required")
			}
			filed = append(filed, in.Title)
			return tools.Text("filed: " + in.Title)
		})

	model := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "Clock", Input: json.RawMessage(`{}`)}, {Name: "FileTicket", Input: json.RawMessage(`{"title":"review at 15:00"}`)}}},
		{Text: "Filed the review ticket."},
	}})
	rules := demo.Must(permission.ParseRules([]string{"FileTicket"}, nil, nil))
	runner := agent.New(agent.Deps{Provider: model, Tools: []tools.Tool{clock, ticket}, Policy: &agent.Policy{Rules: rules}})
	res := demo.Must(runner.Run(context.Background(), agent.TaskSpec{Prompt: "file a review ticket for now", Root: root}))
	fmt.Println(res.Status, res.Result)
	fmt.Println("tickets:", filed, "denials:", len(res.PermissionDenials))
}
