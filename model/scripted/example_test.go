package scripted_test

import (
	"context"
	"fmt"

	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
)

// A scripted model answers each request with the next turn of its script: tests and
// demos get a real conversation with no network.
func ExampleParse() {
	script, err := scripted.Parse([]byte(`{"turns": [
		{"text": "Let me look.", "tool_calls": [{"name": "Glob", "input": {"pattern": "**/*.go"}}]},
		{"text": "There are two Go files."}
	]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	p := scripted.New(script)
	for range 2 {
		resp, err := p.Stream(context.Background(), &model.Request{}, nil)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(resp.StopReason, len(resp.ToolCalls()), resp.Text())
	}
	_, err = p.Stream(context.Background(), &model.Request{}, nil)
	fmt.Println(err)
	// Output:
	// tool_use 1 Let me look.
	// end_turn 0 There are two Go files.
	// model.script_exhausted: the model script has no turn 3
}
