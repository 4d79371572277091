package replay_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/replay"
	"github.com/sema-agent/sema/model/scripted"
)

// A Recorder stands in for the provider a run uses and writes down what it answered.
// Here the "real" provider is a scripted one, so that the example needs no key; in use
// it is anthropic.New or openai.New.
func ExampleRecorder() {
	real := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{Text: "Let me look.", ToolCalls: []scripted.ToolCall{{ID: "toolu_1", Name: "Glob", Input: []byte(`{"pattern":"*.go"}`)}}},
		{Text: "There is one Go file.", Usage: &model.Usage{InputTokens: 40, OutputTokens: 6}},
	}})
	rec := replay.NewRecorder(real)
	for range 2 {
		if _, err := rec.Stream(context.Background(), &model.Request{}, nil); err != nil {
			fmt.Println(err)
			return
		}
	}
	dir, err := os.MkdirTemp("", "recording")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "session.json")
	if err := rec.WriteFile(path); err != nil {
		fmt.Println(err)
		return
	}
	data, _ := os.ReadFile(path)
	fmt.Print(string(data))
	// Output:
	// {"turns": [
	// {"text":"Let me look.","tool_calls":[{"id":"toolu_1","name":"Glob","input":{"pattern":"*.go"}}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":4,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}},
	// {"text":"There is one Go file.","stop_reason":"end_turn","usage":{"input_tokens":40,"output_tokens":6,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}
	// ]}
}

// A replay serves a recording's responses in order, with no network: a test of code
// that embeds an agent drives it with the answers a real model once gave, and checks
// at the end that the run asked for every one of them.
func ExampleLoad() {
	dir, err := os.MkdirTemp("", "replay")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "session.json")
	recording := `{"turns": [
{"text":"Let me look.","tool_calls":[{"id":"toolu_1","name":"Glob","input":{"pattern":"*.go"}}],"stop_reason":"tool_use"},
{"error":{"code":"model.overloaded","message":"The API is overloaded; try again in a few minutes."}},
{"text":"There is one Go file.","stop_reason":"end_turn"}
]}`
	if err := os.WriteFile(path, []byte(recording), 0o600); err != nil {
		fmt.Println(err)
		return
	}
	p, err := replay.Load(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 4 {
		resp, err := p.Stream(context.Background(), &model.Request{}, nil)
		if err != nil {
			fmt.Println(err)
			continue
		}
		for _, call := range resp.ToolCalls() {
			fmt.Println("call", call.ID, call.Name, string(call.Input))
		}
		fmt.Println(resp.StopReason, resp.Text())
	}
	fmt.Println("left:", p.Remaining())
	// Output:
	// call toolu_1 Glob {"pattern":"*.go"}
	// tool_use Let me look.
	// model.overloaded: The API is overloaded; try again in a few minutes.
	// end_turn There is one Go file.
	// model.script_exhausted: the run asked the model for response 4, and the recording ends before it; record the run again
	// left: 0
}
