package files

import (
	"context"
	"encoding/json"

	"github.com/sema-agent/sema/tools"
)

// multiEditTool is MultiEdit{file_path, edits[{old_string, new_string, replace_all}]}:
// several Edits of one file, applied in order to the text in memory and written once,
// all or none. It reports to the band's hooks as HookEdit.
type multiEditTool struct{ lane *lane }

var multiEditSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "file_path": {"type": "string", "description": "The path of the file to edit, absolute or relative to the working directory."},
    "edits": {
      "type": "array",
      "minItems": 1,
      "description": "Edits applied in order, each to the result of the previous one.",
      "items": {
        "type": "object",
        "properties": {
          "old_string": {"type": "string", "description": "The exact text to replace."},
          "new_string": {"type": "string", "description": "The text to replace it with."},
          "replace_all": {"type": "boolean", "default": false, "description": "Replace every occurrence of old_string."}
        },
        "required": ["old_string", "new_string"],
        "additionalProperties": false
      }
    }
  },
  "required": ["file_path", "edits"],
  "additionalProperties": false
}`)

func (t *multiEditTool) Spec() tools.Spec {
	return tools.Spec{
		Name: "MultiEdit",
		Description: "Makes several exact-text replacements in one file at once.\n" +
			"- Each edit works like Edit and applies to the text left by the edits before it.\n" +
			"- All edits succeed or none is written; a failure names the edit by its index.\n" +
			"- The file must have been read in this session first, and must not have changed since.\n" +
			"- To create a file, give an empty old_string in the first edit.",
		InputSchema: multiEditSchema,
		Effect:      tools.EffectWrite,
	}
}

type multiEditInput struct {
	FilePath string `json:"file_path"`
	Edits    []struct {
		OldString  *string `json:"old_string"`
		NewString  *string `json:"new_string"`
		ReplaceAll bool    `json:"replace_all"`
	} `json:"edits"`
}

func (t *multiEditTool) Run(ctx context.Context, input json.RawMessage) tools.Result {
	var in multiEditInput
	if err := tools.Decode(input, &in); err != nil {
		return tools.FromError(err, tools.CodeInputInvalid)
	}
	if r := checkEditPath(in.FilePath); r != nil {
		return *r
	}
	if len(in.Edits) == 0 {
		return tools.Fail(tools.CodeInputInvalid, "edits must hold at least one edit.")
	}
	edits := make([]textEdit, len(in.Edits))
	for i, e := range in.Edits {
		if e.OldString == nil || e.NewString == nil {
			return tools.Fail(tools.CodeInputInvalid, "edits[%d]: old_string and new_string are required.", i)
		}
		if *e.OldString == *e.NewString {
			return tools.Fail(CodeEditNoop, "edits[%d]: old_string and new_string are the same; the edit would change nothing.", i)
		}
		edits[i] = textEdit{Old: *e.OldString, New: *e.NewString, ReplaceAll: e.ReplaceAll}
	}
	return t.lane.run(ctx, mutation{
		tool: "MultiEdit", hook: HookEdit, spelled: in.FilePath,
		apply: func(now current) (change, *tools.Result) {
			return applyEdits(now, in.FilePath, edits, true)
		},
	})
}
