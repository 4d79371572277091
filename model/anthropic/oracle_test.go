package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
)

// buildParams translates req into the SDK's request parameters: the request as the
// SDK's own types and encoder spell it, kept as the reference the provider's encoder
// (body.go) is held to. It refuses, with code
// model.bad_request, what it cannot express: an unknown role or block kind, tool input
// or a tool schema that is not JSON, a negative MaxTokens.
//
// Two kinds of blocks are left out because the API refuses them and they carry
// nothing it could use: empty text blocks, and thinking blocks without a signature
// (thinking another provider produced, which the API cannot verify).
func buildParams(req *model.Request) (sdk.MessageNewParams, error) {
	maxTokens := req.MaxTokens
	switch {
	case maxTokens == 0:
		maxTokens = DefaultMaxTokens
	case maxTokens < 0:
		return sdk.MessageNewParams{}, sema.Errorf(model.CodeBadRequest, "the request's MaxTokens is %d; use zero for the default or a positive bound", maxTokens)
	}
	params := sdk.MessageNewParams{
		Model:     sdk.Model(req.Model),
		MaxTokens: int64(maxTokens),
	}
	if req.System != "" {
		params.System = []sdk.TextBlockParam{{Text: req.System, CacheControl: sdk.NewCacheControlEphemeralParam()}}
	}
	for i, spec := range req.Tools {
		schema := bytes.TrimSpace(spec.InputSchema)
		if len(schema) == 0 {
			schema = []byte(`{"type":"object","properties":{}}`)
		}
		if !json.Valid(schema) {
			return sdk.MessageNewParams{}, sema.Errorf(model.CodeBadRequest, "the input schema of tool %q is not valid JSON; fix the tool's spec", spec.Name).With("tool", spec.Name)
		}
		tool := &sdk.ToolParam{
			Name: spec.Name,
			// The schema goes out exactly as the tool wrote it, keywords the SDK does
			// not model ($defs, additionalProperties, …) included.
			InputSchema: param.Override[sdk.ToolInputSchemaParam](json.RawMessage(schema)),
		}
		if spec.Description != "" {
			tool.Description = param.NewOpt(spec.Description)
		}
		if i == len(req.Tools)-1 {
			tool.CacheControl = sdk.NewCacheControlEphemeralParam()
		}
		params.Tools = append(params.Tools, sdk.ToolUnionParam{OfTool: tool})
	}
	for i, m := range req.Messages {
		blocks, err := contentParams(i, m.Content)
		if err != nil {
			return sdk.MessageNewParams{}, err
		}
		switch m.Role {
		case model.RoleUser:
			params.Messages = append(params.Messages, sdk.MessageParam{OfUser: &sdk.UserMessageParam{Content: blocks}})
		case model.RoleAssistant:
			params.Messages = append(params.Messages, sdk.MessageParam{OfAssistant: &sdk.AssistantMessageParam{Content: blocks}})
		default:
			return sdk.MessageNewParams{}, sema.Errorf(model.CodeBadRequest, "message %d has role %q; use %q or %q", i, m.Role, model.RoleUser, model.RoleAssistant).With("message", i)
		}
	}
	markConversationEnd(params.Messages)
	return params, nil
}

// markConversationEnd puts a cache breakpoint on the last block of the conversation that
// can carry one, so that the next turn reads the whole conversation so far from the
// cache instead of paying for it again. With the system prompt's and the last tool's,
// that makes three of the four breakpoints the API allows.
func markConversationEnd(msgs []sdk.MessageParam) {
	if len(msgs) == 0 {
		return
	}
	last := msgs[len(msgs)-1]
	var blocks []sdk.ContentBlockParamUnion
	switch {
	case last.OfUser != nil:
		blocks = last.OfUser.Content
	case last.OfAssistant != nil:
		blocks = last.OfAssistant.Content
	}
	for i := len(blocks) - 1; i >= 0; i-- {
		b := blocks[i]
		cc := sdk.NewCacheControlEphemeralParam()
		switch {
		case b.OfText != nil:
			b.OfText.CacheControl = cc
		case b.OfImage != nil:
			b.OfImage.CacheControl = cc
		case b.OfToolUse != nil:
			b.OfToolUse.CacheControl = cc
		case b.OfToolResult != nil:
			b.OfToolResult.CacheControl = cc
		default:
			// Thinking blocks cannot carry a breakpoint; try the block before.
			continue
		}
		return
	}
}

// contentParams translates the blocks of message i.
func contentParams(i int, blocks []model.Block) ([]sdk.ContentBlockParamUnion, error) {
	out := make([]sdk.ContentBlockParamUnion, 0, len(blocks))
	for j, b := range blocks {
		switch b.Kind {
		case model.KindText:
			if b.Text == "" {
				continue
			}
			out = append(out, sdk.ContentBlockParamUnion{OfText: &sdk.TextBlockParam{Text: b.Text}})
		case model.KindImage:
			img, err := imageParam(i, j, b)
			if err != nil {
				return nil, err
			}
			out = append(out, sdk.ContentBlockParamUnion{OfImage: img})
		case model.KindToolUse:
			input := bytes.TrimSpace(b.Input)
			if len(input) == 0 || string(input) == "null" {
				input = []byte(`{}`)
			}
			if input[0] != '{' || !json.Valid(input) {
				return nil, sema.Errorf(model.CodeBadRequest, "the input of tool call %s in message %d is not a JSON object; send the input the model produced", b.ID, i).
					With("message", i).With("tool_use_id", b.ID)
			}
			out = append(out, sdk.ContentBlockParamUnion{OfToolUse: &sdk.ToolUseBlockParam{ID: b.ID, Name: b.Name, Input: json.RawMessage(input)}})
		case model.KindToolResult:
			res := &sdk.ToolResultBlockParam{ToolUseID: b.ID}
			if b.IsError {
				res.IsError = param.NewOpt(true)
			}
			for k, c := range b.Content {
				switch c.Kind {
				case model.KindText:
					if c.Text == "" {
						continue
					}
					res.Content = append(res.Content, sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: c.Text}})
				case model.KindImage:
					img, err := imageParam(i, j, c)
					if err != nil {
						return nil, err
					}
					res.Content = append(res.Content, sdk.ToolResultBlockParamContentUnion{OfImage: img})
				default:
					return nil, sema.Errorf(model.CodeBadRequest, "block %d of the result of tool call %s in message %d has kind %q; a tool result holds only text and image blocks", k, b.ID, i, c.Kind).
						With("message", i).With("tool_use_id", b.ID)
				}
			}
			out = append(out, sdk.ContentBlockParamUnion{OfToolResult: res})
		case model.KindThinking:
			if b.Signature == "" {
				continue
			}
			out = append(out, sdk.ContentBlockParamUnion{OfThinking: &sdk.ThinkingBlockParam{Thinking: b.Text, Signature: b.Signature}})
		default:
			return nil, sema.Errorf(model.CodeBadRequest, "block %d of message %d has kind %q, which the Anthropic provider cannot send; use text, image, tool_use, tool_result or thinking", j, i, b.Kind).
				With("message", i)
		}
	}
	return out, nil
}

func imageParam(i, j int, b model.Block) (*sdk.ImageBlockParam, error) {
	if len(b.Data) == 0 || b.MediaType == "" {
		return nil, sema.Errorf(model.CodeBadRequest, "the image in block %d of message %d has no data or no media type; attach the image bytes and their media type", j, i).
			With("message", i)
	}
	return &sdk.ImageBlockParam{Source: sdk.ImageBlockParamSourceUnion{OfBase64: &sdk.Base64ImageSourceParam{
		Data:      base64.StdEncoding.EncodeToString(b.Data),
		MediaType: sdk.Base64ImageSourceMediaType(b.MediaType),
	}}}, nil
}
