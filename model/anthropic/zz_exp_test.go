package anthropic

import (
	"encoding/json"
	"fmt"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
)

func TestExp(t *testing.T) {
	var schema sdk.ToolInputSchemaParam
	raw := json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false,"$defs":{"x":{}}}`)
	err := schema.UnmarshalJSON(raw)
	fmt.Println(err)
	tool := sdk.ToolParam{Name: "t", InputSchema: schema, CacheControl: sdk.NewCacheControlEphemeralParam()}
	b, _ := json.Marshal(sdk.ToolUnionParam{OfTool: &tool})
	fmt.Println(string(b))
	ov := param.Override[sdk.ToolInputSchemaParam](raw)
	tool2 := sdk.ToolParam{Name: "t", InputSchema: ov, Description: param.NewOpt("d")}
	b, _ = json.Marshal(sdk.ToolUnionParam{OfTool: &tool2})
	fmt.Println(string(b))
	tu := sdk.ToolUseBlockParam{ID: "x", Name: "n", Input: json.RawMessage(`{"a": 1}`)}
	b, _ = json.Marshal(sdk.ContentBlockParamUnion{OfToolUse: &tu})
	fmt.Println(string(b))
	tu2 := sdk.ToolUseBlockParam{ID: "x", Name: "n", Input: json.RawMessage(`{}`)}
	b, _ = json.Marshal(sdk.ContentBlockParamUnion{OfToolUse: &tu2})
	fmt.Println(string(b))
	tr := sdk.ToolResultBlockParam{ToolUseID: "x", IsError: param.NewOpt(false)}
	b, _ = json.Marshal(sdk.ContentBlockParamUnion{OfToolResult: &tr})
	fmt.Println(string(b))
	um := 1
	_ = um
}
