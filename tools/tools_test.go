package tools_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/tools"
)

func TestFunc(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object"}`)
	spec := tools.Spec{Name: "Echo", Description: "echoes", InputSchema: schema, Effect: tools.EffectRead,
		PermissionSeat: tools.SeatPassthrough, PassthroughQuestion: "Echo?", ReadOnlyHint: true, RequiresUserInteraction: true}
	echo := tools.Func(spec, func(_ context.Context, in json.RawMessage) tools.Result { return tools.Text(string(in)) })
	// The caller's schema slice is copied: changing it later changes nothing.
	schema[2] = 'X'
	got := echo.Spec()
	if string(got.InputSchema) != `{"type":"object"}` {
		t.Errorf("schema %s: the tool shares the caller's slice", got.InputSchema)
	}
	if got.Name != spec.Name || got.Description != spec.Description || got.Effect != spec.Effect || got.PermissionSeat != spec.PermissionSeat ||
		got.PassthroughQuestion != spec.PassthroughQuestion || got.ReadOnlyHint != spec.ReadOnlyHint || got.RequiresUserInteraction != spec.RequiresUserInteraction {
		t.Errorf("spec %+v, want %+v", got, spec)
	}
	if r := echo.Run(context.Background(), json.RawMessage(`{"a":1}`)); r.IsError || r.TextOf() != `{"a":1}` {
		t.Errorf("run = %+v", r)
	}
}

func TestFuncOf(t *testing.T) {
	t.Parallel()
	type in struct {
		Title string `json:"title"`
	}
	var ran int
	tool := tools.FuncOf(tools.Spec{Name: "Ticket", Effect: tools.EffectWrite}, func(_ context.Context, v in) tools.Result {
		ran++
		return tools.Text("filed " + v.Title)
	})
	cases := []struct {
		input string
		code  string
		text  string
	}{
		{input: `{"title":"x"}`, text: "filed x"},
		{input: ``, text: "filed "},                            // no input is the empty object
		{input: `{"titel":"x"}`, code: tools.CodeInputInvalid}, // a misspelled field is refused, not ignored
		{input: `{"title":3}`, code: tools.CodeInputInvalid},   // the wrong type
		{input: `not json`, code: tools.CodeInputInvalid},      // not JSON
		{input: `["title"]`, code: tools.CodeInputInvalid},     // not an object
		{input: `{"title":"x","extra":null}`, code: tools.CodeInputInvalid},
	}
	for _, c := range cases {
		before := ran
		r := tool.Run(context.Background(), json.RawMessage(c.input))
		if c.code != "" {
			if !r.IsError || r.Code != c.code || ran != before {
				t.Errorf("%s: error %v code %q ran %v (%s), want code %q without running", c.input, r.IsError, r.Code, ran != before, r.TextOf(), c.code)
			}
			continue
		}
		if r.IsError || r.TextOf() != c.text {
			t.Errorf("%s: %+v, want %q", c.input, r, c.text)
		}
	}
}

func TestFuncRefusesNilRun(t *testing.T) {
	t.Parallel()
	for name, build := range map[string]func(){
		"Func":   func() { tools.Func(tools.Spec{Name: "x"}, nil) },
		"FuncOf": func() { tools.FuncOf[struct{}](tools.Spec{Name: "x"}, nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s with a nil run did not panic", name)
				}
			}()
			build()
		}()
	}
}

// A seat word the gate does not know would be read as another seat: Validate refuses it
// by name, and a question that would never be put.
func TestSpecValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		spec tools.Spec
		want string // a fragment of the refusal; "" = valid
	}{
		{spec: tools.Spec{Name: "a"}},
		{spec: tools.Spec{Name: "a", Effect: tools.EffectRead, ReadOnlyHint: true, RequiresUserInteraction: true}},
		{spec: tools.Spec{Name: "a", Effect: tools.EffectWrite, PermissionSeat: tools.SeatPassthrough, PassthroughQuestion: "File it?"}},
		{spec: tools.Spec{Name: "a", Effect: tools.EffectExec, PermissionSeat: tools.SeatPassthrough}},
		{spec: tools.Spec{}, want: "no name"},
		{spec: tools.Spec{Name: "a", Effect: "readonly"}, want: `effect "readonly"`},
		{spec: tools.Spec{Name: "a", Effect: "Read"}, want: `effect "Read"`},
		{spec: tools.Spec{Name: "a", PermissionSeat: "Passthrough"}, want: `seat "Passthrough"`},
		{spec: tools.Spec{Name: "a", PermissionSeat: "own"}, want: `seat "own"`},
		{spec: tools.Spec{Name: "a", PassthroughQuestion: "Sure?"}, want: "never be put"},
	}
	for _, c := range cases {
		err := c.spec.Validate()
		if c.want == "" {
			if err != nil {
				t.Errorf("%+v: %v", c.spec, err)
			}
			continue
		}
		if !sema.IsCode(err, tools.CodeSpecInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %s mentioning %q", c.spec, err, tools.CodeSpecInvalid, c.want)
		}
	}
}
