package toolcall

import (
	"strings"
	"testing"

	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/tools"
)

func call(id, name string) model.Block {
	return model.Block{Kind: model.KindToolUse, ID: id, Name: name, Input: []byte(`{}`)}
}

func TestLastAndOpen(t *testing.T) {
	t.Parallel()
	asked := model.Message{Role: model.RoleAssistant, Content: []model.Block{model.TextBlock("looking"), call("a", "Read"), call("b", "Grep")}}
	answered := model.Message{Role: model.RoleUser, Content: []model.Block{{Kind: model.KindToolResult, ID: "a"}, {Kind: model.KindToolResult, ID: "b"}}}
	prompt := model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock("hi")}}

	open := []model.Message{prompt, asked}
	if got := Last(open); len(got) != 2 || got[0].ID != "a" || got[1].ID != "b" {
		t.Fatalf("Last = %+v, want the calls a and b", got)
	}
	if got := Open(open); len(got) != 2 {
		t.Errorf("Open of a conversation ending at the calls = %+v, want both", got)
	}
	whole := append(open, answered)
	if got := Last(whole); len(got) != 2 {
		t.Errorf("Last skips the user message after the calls: got %+v", got)
	}
	if got := Open(whole); got != nil {
		t.Errorf("Open of an answered conversation = %+v, want nil", got)
	}
	if Last([]model.Message{prompt}) != nil || Open(nil) != nil {
		t.Error("a conversation without an assistant message has no calls")
	}
}

func TestInput(t *testing.T) {
	t.Parallel()
	in, refused := Input("Read", nil)
	if refused != nil || string(in) != "{}" {
		t.Errorf("Input of no input = %s, %v; want {} and no refusal", in, refused)
	}
	in, refused = Input("Read", []byte(`{"path":"a"}`))
	if refused != nil || string(in) != `{"path":"a"}` {
		t.Errorf("Input of an object = %s, %v; want it unchanged", in, refused)
	}
	for _, bad := range []string{`[1]`, `"x"`, `{"path":`} {
		_, refused = Input("Read", []byte(bad))
		if refused == nil || !refused.IsError || refused.Code != tools.CodeInputInvalid || !strings.Contains(refused.TextOf(), "The input of Read is not a JSON object") {
			t.Errorf("Input(%s) = %+v, want a %s refusal naming Read", bad, refused, tools.CodeInputInvalid)
		}
	}
}

func TestUnknown(t *testing.T) {
	t.Parallel()
	r := Unknown("Raed", []string{"Read", "Write"})
	if !r.IsError || r.Code != tools.CodeUnknown || r.TextOf() != `There is no tool named "Raed". Available tools: [Read Write].` {
		t.Errorf("Unknown = %+v %q", r, r.TextOf())
	}
}

func TestBlock(t *testing.T) {
	t.Parallel()
	b := Block("a", tools.Result{Content: []model.Block{model.TextBlock("done")}})
	if b.Kind != model.KindToolResult || b.ID != "a" || b.IsError || len(b.Content) != 1 || b.Content[0].Text != "done" {
		t.Errorf("Block = %+v", b)
	}
	b = Block("b", tools.Fail("x.y", "it broke"))
	if !b.IsError || b.ID != "b" {
		t.Errorf("Block of an error = %+v, want IsError", b)
	}
	b = Block("c", tools.Result{})
	if len(b.Content) != 1 || b.Content[0].Text != "(no output)" {
		t.Errorf("Block of an empty result = %+v, want (no output)", b)
	}
}
