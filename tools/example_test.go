package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/tools"
)

// An embedder's own tool, taking its input decoded. The runner mounts it from
// agent.Deps.Tools after the engine's tools; the permission gate reads its Effect.
func ExampleFuncOf() {
	type wordCount struct {
		Text string `json:"text"`
	}
	counter := tools.FuncOf(tools.Spec{
		Name:        "WordCount",
		Description: "Counts the words of a text.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		Effect:      tools.EffectRead, // it only reads: calls in one turn may run together
	}, func(ctx context.Context, in wordCount) tools.Result {
		if in.Text == "" {
			return tools.Fail("wordcount.empty", "text is empty; pass the text to count")
		}
		return tools.Text(fmt.Sprint(len(strings.Fields(in.Text))))
	})

	for _, input := range []string{
		`{"text":"the quick brown fox"}`,
		`{"text":""}`,
		`{"txt":"misspelled field"}`, // refused before run is called
	} {
		r := counter.Run(context.Background(), json.RawMessage(input))
		if r.IsError {
			fmt.Println("error", r.Code)
			continue
		}
		fmt.Println("ok", r.TextOf())
	}
	// Output:
	// ok 4
	// error wordcount.empty
	// error tool.input_invalid
}

// Func takes the model's input as sent, for a tool that reads it itself.
func ExampleFunc() {
	echo := tools.Func(tools.Spec{
		Name:        "Echo",
		Description: "Answers with its input.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Effect:      tools.EffectRead,
	}, func(ctx context.Context, input json.RawMessage) tools.Result {
		return tools.Text(string(input))
	})

	fmt.Println(echo.Spec().Name, echo.Run(context.Background(), json.RawMessage(`{"hello":"world"}`)).TextOf())
	// Output:
	// Echo {"hello":"world"}
}

// Validate refuses a spec the permission gate would misread; the runner calls it on
// every agent.Deps.Tools spec before a run starts.
func ExampleSpec_Validate() {
	good := tools.Spec{Name: "Lookup", Effect: tools.EffectRead}
	fmt.Println(good.Validate())

	guessed := tools.Spec{Name: "Deploy", Effect: "network"}
	fmt.Println(sema.CodeOf(guessed.Validate()))

	// A question only a passthrough tool would put is a mistake too.
	stray := tools.Spec{Name: "Ping", PassthroughQuestion: "Ping the host?"}
	fmt.Println(sema.CodeOf(stray.Validate()))
	// Output:
	// <nil>
	// config.tool_spec_invalid
	// config.tool_spec_invalid
}

// Decode is strict: a field the model misspelled is refused, not ignored.
func ExampleDecode() {
	var in struct {
		Path string `json:"path"`
	}
	fmt.Println(tools.Decode(json.RawMessage(`{"path":"a.txt"}`), &in), in.Path)
	fmt.Println(tools.Decode(json.RawMessage(`{"paht":"a.txt"}`), &in) != nil)
	// Output:
	// <nil> a.txt
	// true
}

// FromError keeps the code of a *sema.Error, so a tool built on library calls answers
// with the code the library refused with.
func ExampleFromError() {
	err := sema.Errorf("inventory.sku_unknown", "no item with SKU %q; list the SKUs with ListItems", "X-1")
	r := tools.FromError(err, "inventory.failed")
	fmt.Println(r.IsError, r.Code, r.TextOf())

	r = tools.FromError(fmt.Errorf("connection reset"), "inventory.failed")
	fmt.Println(r.IsError, r.Code, r.TextOf())
	// Output:
	// true inventory.sku_unknown no item with SKU "X-1"; list the SKUs with ListItems
	// true inventory.failed connection reset
}

func ExampleRoster() {
	noop := func(ctx context.Context, input json.RawMessage) tools.Result { return tools.Text("") }
	roster := tools.Roster{
		tools.Func(tools.Spec{Name: "Alpha", Effect: tools.EffectRead}, noop),
		tools.Func(tools.Spec{Name: "Beta", Effect: tools.EffectExec}, noop),
	}
	fmt.Println(roster.Names())
	fmt.Println(roster.Lookup("Beta").Spec().Effect)
	fmt.Println(roster.Lookup("Gamma") == nil)
	// Output:
	// [Alpha Beta]
	// exec
	// true
}
