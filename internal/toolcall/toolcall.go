// Package toolcall is the edge between a model's tool calls and the tools they name: the
// calls a conversation holds, a call checked before any tool sees it (a tool that exists,
// an input that is a JSON object), and what a tool returned shaped as the tool_result
// block the next request carries. A call that fails a check is answered with an error
// result the model reads, so that it can correct the call on its next turn.
package toolcall

import (
	"encoding/json"

	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/tools"
)

// Last returns the tool calls of the conversation's last assistant message.
func Last(msgs []model.Message) []model.Block {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == model.RoleAssistant {
			r := model.Response{Content: msgs[i].Content}
			return r.ToolCalls()
		}
	}
	return nil
}

// Open returns the tool calls of a conversation that ends at an assistant message
// (calls nobody answered), else nil.
func Open(msgs []model.Message) []model.Block {
	if len(msgs) == 0 || msgs[len(msgs)-1].Role != model.RoleAssistant {
		return nil
	}
	return Last(msgs)
}

// Unknown is the answer to a call to a tool the roster does not hold: it names the
// tools there are, for the model's next try.
func Unknown(tool string, names []string) tools.Result {
	return tools.Fail(tools.CodeUnknown, "There is no tool named %q. Available tools: %v.", tool, names)
}

// Input returns the input a call to tool passes on: the model's input, or "{}" when it
// sent none. An input that is not a JSON object is refused with the result that
// answers the call instead (nil when the input passes).
func Input(tool string, raw json.RawMessage) (json.RawMessage, *tools.Result) {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		r := tools.Fail(tools.CodeInputInvalid, "The input of %s is not a JSON object: %v.", tool, err)
		return raw, &r
	}
	return raw, nil
}

// Block is the tool_result block that answers call id with r. A result without
// content says so ("(no output)"): providers refuse an empty tool result.
func Block(id string, r tools.Result) model.Block {
	content := r.Content
	if len(content) == 0 {
		content = []model.Block{model.TextBlock("(no output)")}
	}
	return model.Block{Kind: model.KindToolResult, ID: id, Content: content, IsError: r.IsError}
}
