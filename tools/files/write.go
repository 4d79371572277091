package files

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/sema-agent/sema/tools"
)

// writeTool is Write{file_path, content}: create or overwrite a file.
type writeTool struct{ lane *lane }

var writeSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "file_path": {"type": "string", "description": "The path of the file to write, absolute or relative to the working directory."},
    "content": {"type": "string", "description": "The full content to write to the file."}
  },
  "required": ["file_path", "content"],
  "additionalProperties": false
}`)

func (t *writeTool) Spec() tools.Spec {
	return tools.Spec{
		Name: "Write",
		Description: "Writes a file, creating it (and its missing parent directories) or replacing it whole.\n" +
			"- An existing file must have been read in this session first, and must not have changed since.\n" +
			"- Prefer Edit for changing part of an existing file; it sends only the change.\n" +
			"- An existing file keeps its line endings (CRLF stays CRLF) and its UTF-8 byte-order mark.",
		InputSchema: writeSchema,
		Effect:      tools.EffectWrite,
	}
}

type writeInput struct {
	FilePath string  `json:"file_path"`
	Content  *string `json:"content"`
}

func (t *writeTool) Run(ctx context.Context, input json.RawMessage) tools.Result {
	var in writeInput
	if err := tools.Decode(input, &in); err != nil {
		return tools.FromError(err, tools.CodeInputInvalid)
	}
	switch {
	case in.FilePath == "":
		return tools.Fail(tools.CodeInputInvalid, "file_path is required.")
	case in.Content == nil:
		return tools.Fail(tools.CodeInputInvalid, "content is required (it may be the empty string).")
	}
	return t.lane.run(ctx, mutation{
		tool: "Write", hook: HookWrite, spelled: in.FilePath,
		apply: func(now current) (change, *tools.Result) {
			if !now.exists {
				return change{text: *in.Content, summary: "File created successfully at: " + in.FilePath}, nil
			}
			return change{
				text:     keepFileStyle(now.text, *in.Content),
				summary:  "The file " + in.FilePath + " has been updated.",
				showDiff: true,
			}, nil
		},
	})
}

// utf8BOM is the UTF-8 byte-order mark.
const utf8BOM = "\uFEFF"

// keepFileStyle gives the new content of an existing file the old file's conventions:
// its byte-order mark, and CRLF line endings when the old file used them and the new
// content has none of its own (the model writes LF; a file it did not mean to convert
// stays CRLF).
func keepFileStyle(old, new string) string {
	if usesCRLF(old) && !strings.Contains(new, "\r\n") {
		new = toCRLF(new)
	}
	if strings.HasPrefix(old, utf8BOM) && !strings.HasPrefix(new, utf8BOM) {
		new = utf8BOM + new
	}
	return new
}

// usesCRLF reports whether most line breaks of s are CRLF.
func usesCRLF(s string) bool {
	crlf := strings.Count(s, "\r\n")
	return crlf > 0 && crlf > strings.Count(s, "\n")-crlf
}

// toCRLF turns every LF of s into CRLF; s must hold no CRLF already.
func toCRLF(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }
