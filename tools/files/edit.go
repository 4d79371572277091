package files

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/tools"
)

// editTool is Edit{file_path, old_string, new_string, replace_all}.
type editTool struct{ lane *lane }

var editSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "file_path": {"type": "string", "description": "The path of the file to edit, absolute or relative to the working directory."},
    "old_string": {"type": "string", "description": "The exact text to replace."},
    "new_string": {"type": "string", "description": "The text to replace it with (must differ from old_string)."},
    "replace_all": {"type": "boolean", "default": false, "description": "Replace every occurrence of old_string (default false: it must occur exactly once)."}
  },
  "required": ["file_path", "old_string", "new_string"],
  "additionalProperties": false
}`)

func (t *editTool) Spec() tools.Spec {
	return tools.Spec{
		Name: "Edit",
		Description: "Replaces exact text in a file.\n" +
			"- The file must have been read in this session first, and must not have changed since.\n" +
			"- old_string must match the file exactly (whitespace and indentation included) and occur exactly once, unless replace_all is true. Add surrounding lines to make it unique.\n" +
			"- Line endings need no care: in a CRLF file, old_string and new_string written with LF match and are written with CRLF.\n" +
			"- An empty old_string creates a file that does not exist yet, or fills an empty one.\n" +
			"- The answer shows a diff of the change.",
		InputSchema: editSchema,
		Effect:      tools.EffectWrite,
	}
}

type editInput struct {
	FilePath   string  `json:"file_path"`
	OldString  *string `json:"old_string"`
	NewString  *string `json:"new_string"`
	ReplaceAll bool    `json:"replace_all"`
}

func (t *editTool) Run(ctx context.Context, input json.RawMessage) tools.Result {
	var in editInput
	if err := tools.Decode(input, &in); err != nil {
		return tools.FromError(err, tools.CodeInputInvalid)
	}
	if r := checkEditPath(in.FilePath); r != nil {
		return *r
	}
	if in.OldString == nil || in.NewString == nil {
		return tools.Fail(tools.CodeInputInvalid, "old_string and new_string are required.")
	}
	e := textEdit{Old: *in.OldString, New: *in.NewString, ReplaceAll: in.ReplaceAll}
	if e.Old == e.New {
		return tools.Fail(CodeEditNoop, "old_string and new_string are the same; the edit would change nothing.")
	}
	return t.lane.run(ctx, mutation{
		tool: "Edit", hook: HookEdit, spelled: in.FilePath,
		apply: func(now current) (change, *tools.Result) {
			return applyEdits(now, in.FilePath, []textEdit{e}, false)
		},
	})
}

// checkEditPath is the part of station 1 Edit and MultiEdit share.
func checkEditPath(p string) *tools.Result {
	var r tools.Result
	switch {
	case p == "":
		r = tools.Fail(tools.CodeInputInvalid, "file_path is required.")
	case strings.HasSuffix(strings.ToLower(p), ".ipynb"):
		r = tools.Fail(tools.CodeInputInvalid, "%s is a Jupyter notebook; change its cells with NotebookEdit.", p)
	default:
		return nil
	}
	return &r
}

// textEdit is one exact-string replacement.
type textEdit struct {
	Old, New   string
	ReplaceAll bool
}

// applyEdits applies edits in order to the file's text, all or nothing. An empty Old in
// the first edit creates a missing file, or fills an empty one, with its New. indexed
// names the failing edit by its index (MultiEdit) in a refusal.
func applyEdits(now current, spelled string, edits []textEdit, indexed bool) (change, *tools.Result) {
	fail := func(i int, err error) (change, *tools.Result) {
		se := err.(*sema.Error)
		msg := se.Message
		if indexed {
			msg = "edits[" + strconv.Itoa(i) + "]: " + msg
		}
		r := tools.Fail(se.Code, "%s: %s", spelled, msg)
		return change{}, &r
	}
	text := now.text
	created := false
	for i, e := range edits {
		if e.Old == "" {
			body := strings.TrimPrefix(text, utf8BOM)
			switch {
			case i == 0 && !now.exists:
				text, created = e.New, true
				continue
			case i == 0 && body == "":
				text = text[:len(text)-len(body)] + e.New
				continue
			}
			return fail(i, sema.Errorf(tools.CodeInputInvalid, "old_string is empty, but the file already has content; give the exact text to replace (or use Write to replace the whole file)"))
		}
		if !now.exists && !created {
			r := tools.Fail(CodeFileNotFound, "%s does not exist. Create it with Write, or with an empty old_string.", spelled)
			return change{}, &r
		}
		out, _, err := applyEdit(text, e.Old, e.New, e.ReplaceAll, usesCRLF(text))
		if err != nil {
			return fail(i, err)
		}
		text = out
	}
	if now.exists && text == now.text {
		r := tools.Fail(CodeEditNoop, "%s: the edits leave the file exactly as it was.", spelled)
		return change{}, &r
	}
	if created {
		return change{text: text, summary: "File created successfully at: " + spelled}, nil
	}
	n := len(edits)
	summary := "The file " + spelled + " has been updated."
	if n > 1 {
		summary = "The file " + spelled + " has been updated (" + strconv.Itoa(n) + " edits applied)."
	}
	return change{text: text, summary: summary, showDiff: true}, nil
}

// applyEdit replaces old with new in text: the one occurrence, or every occurrence when
// replaceAll is set. It returns the new text and how many occurrences were replaced.
//
// In a CRLF file (crlf set) an old and new written with plain LF are matched and
// written as CRLF: the model sends LF, the file keeps its endings. If that spelling does
// not occur, the text as given is tried too (a mixed file may hold LF lines). Errors are
// *sema.Error with CodeEditNoop, CodeEditNotFound, CodeEditNotUnique (saying how many
// times old occurs) or tools.CodeInputInvalid (empty old).
func applyEdit(text, old, new string, replaceAll, crlf bool) (string, int, error) {
	switch {
	case old == "":
		return "", 0, sema.Errorf(tools.CodeInputInvalid, "old_string is empty")
	case old == new:
		return "", 0, sema.Errorf(CodeEditNoop, "old_string and new_string are the same; the edit would change nothing")
	}
	for _, c := range editSpellings(old, new, crlf) {
		n := strings.Count(text, c[0])
		switch {
		case n == 0:
			continue
		case replaceAll:
			return strings.ReplaceAll(text, c[0], c[1]), n, nil
		case n > 1:
			return "", 0, sema.Errorf(CodeEditNotUnique, "old_string occurs %d times; add surrounding lines to make it unique, or set replace_all to replace all %d", n, n)
		}
		return strings.Replace(text, c[0], c[1], 1), 1, nil
	}
	return "", 0, sema.Errorf(CodeEditNotFound, "old_string was not found in the file; it must match exactly, including whitespace and indentation (read the file again if unsure)")
}

// editSpellings lists the (old, new) pairs applyEdit tries, in order.
func editSpellings(old, new string, crlf bool) [][2]string {
	if !crlf || strings.Contains(old, "\r") || strings.Contains(new, "\r") {
		return [][2]string{{old, new}}
	}
	out := [][2]string{{toCRLF(old), toCRLF(new)}}
	if strings.Contains(old, "\n") {
		out = append(out, [2]string{old, new})
	}
	return out
}
