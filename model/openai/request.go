package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
)

// imageOmitted stands for an image in a tool result: tool messages carry text only.
const imageOmitted = "[image omitted]"

// params translates req into the SDK's request parameters (without "stream", which
// Stream sets).
func (p *Provider) params(req *model.Request) (oai.ChatCompletionNewParams, error) {
	out := oai.ChatCompletionNewParams{
		Model:         shared.ChatModel(req.Model),
		StreamOptions: oai.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)},
	}
	maxTokens := int64(req.MaxTokens)
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	if p.official {
		out.MaxCompletionTokens = param.NewOpt(maxTokens)
	} else {
		out.MaxTokens = param.NewOpt(maxTokens)
	}

	if req.System != "" {
		out.Messages = append(out.Messages, oai.SystemMessage(req.System))
	}
	for i, m := range req.Messages {
		msgs, err := messages(m)
		if err != nil {
			return out, err.With("message", i)
		}
		out.Messages = append(out.Messages, msgs...)
	}
	for _, t := range req.Tools {
		tool, err := functionTool(t)
		if err != nil {
			return out, err
		}
		out.Tools = append(out.Tools, tool)
	}
	return out, nil
}

// messages translates one conversation message; a user message may become several
// (its tool results first, then the rest).
func messages(m model.Message) ([]oai.ChatCompletionMessageParamUnion, *sema.Error) {
	switch m.Role {
	case model.RoleAssistant:
		return []oai.ChatCompletionMessageParamUnion{assistantMessage(m.Content)}, nil
	case model.RoleUser:
		return userMessages(m.Content), nil
	default:
		return nil, sema.Errorf(model.CodeBadRequest, "a message has the role %q; only user and assistant messages can be sent", m.Role)
	}
}

func assistantMessage(blocks []model.Block) oai.ChatCompletionMessageParamUnion {
	var a oai.ChatCompletionAssistantMessageParam
	var text []string
	for _, b := range blocks {
		switch b.Kind {
		case model.KindText:
			text = append(text, b.Text)
		case model.KindToolUse:
			a.ToolCalls = append(a.ToolCalls, oai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{
					ID: b.ID,
					Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name:      b.Name,
						Arguments: arguments(b.Input),
					},
				},
			})
		}
		// Thinking blocks stay out: Chat Completions has no field for them.
	}
	// Content may be absent only when the message makes tool calls.
	if len(text) > 0 || len(a.ToolCalls) == 0 {
		a.Content.OfString = param.NewOpt(strings.Join(text, "\n\n"))
	}
	return oai.ChatCompletionMessageParamUnion{OfAssistant: &a}
}

// arguments renders a tool input as the arguments string: verbatim, {} when empty.
func arguments(input json.RawMessage) string {
	s := strings.TrimSpace(string(input))
	if s == "" {
		return "{}"
	}
	return s
}

func userMessages(blocks []model.Block) []oai.ChatCompletionMessageParamUnion {
	var out []oai.ChatCompletionMessageParamUnion
	var parts []oai.ChatCompletionContentPartUnionParam
	var text []string
	images := false
	for _, b := range blocks {
		switch b.Kind {
		case model.KindToolResult:
			out = append(out, oai.ToolMessage(toolResultText(b), b.ID))
		case model.KindText:
			text = append(text, b.Text)
			parts = append(parts, oai.TextContentPart(b.Text))
		case model.KindImage:
			images = true
			parts = append(parts, oai.ImageContentPart(oai.ChatCompletionContentPartImageImageURLParam{URL: dataURL(b)}))
		}
	}
	switch {
	case images:
		out = append(out, oai.UserMessage(parts))
	case len(text) > 0:
		// Text alone goes as a plain string, the form every compatible server accepts.
		out = append(out, oai.UserMessage(strings.Join(text, "\n\n")))
	case len(out) == 0:
		// An empty user message still holds its place in the conversation.
		out = append(out, oai.UserMessage(""))
	}
	return out
}

// toolResultText is the text of a tool message for a tool_result block.
func toolResultText(b model.Block) string {
	var parts []string
	for _, c := range b.Content {
		switch c.Kind {
		case model.KindText:
			parts = append(parts, c.Text)
		case model.KindImage:
			parts = append(parts, imageOmitted)
		}
	}
	s := strings.Join(parts, "\n")
	if b.IsError {
		s = "Error: " + s
	}
	return s
}

func dataURL(b model.Block) string {
	mt := b.MediaType
	if mt == "" {
		mt = "image/png"
	}
	return "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(b.Data)
}

// functionTool translates a tool spec. The schema's members are passed through as raw
// JSON, so the schema reaches the server byte for byte (numbers and all).
func functionTool(t model.ToolSpec) (oai.ChatCompletionToolUnionParam, *sema.Error) {
	params := shared.FunctionParameters{"type": "object", "properties": map[string]any{}}
	if s := bytes.TrimSpace(t.InputSchema); len(s) > 0 {
		var members map[string]json.RawMessage
		if err := json.Unmarshal(s, &members); err != nil {
			return oai.ChatCompletionToolUnionParam{}, sema.Errorf(model.CodeBadRequest,
				"the input schema of tool %q is not a JSON object: fix the tool's schema", t.Name).With("tool", t.Name)
		}
		params = make(shared.FunctionParameters, len(members))
		for k, v := range members {
			params[k] = v
		}
	}
	def := shared.FunctionDefinitionParam{Name: t.Name, Parameters: params}
	if t.Description != "" {
		def.Description = param.NewOpt(t.Description)
	}
	return oai.ChatCompletionFunctionTool(def), nil
}
