package files

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// laneNotebook is laid out the way Jupyter writes: one-space indent, sorted keys,
// non-ASCII text unescaped, a final newline.
const laneNotebook = `{
 "cells": [
  {
   "cell_type": "markdown",
   "id": "a1b2c3d4",
   "metadata": {},
   "source": [
    "# Title <é>\n",
    "Some text"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": 3,
   "id": "code0001",
   "metadata": {
    "tags": []
   },
   "outputs": [
    {
     "name": "stdout",
     "output_type": "stream",
     "text": [
      "hi\n"
     ]
    }
   ],
   "source": [
    "print('hi')"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "code0002",
   "metadata": {},
   "outputs": [],
   "source": "x = 1\ny = 2"
  }
 ],
 "metadata": {
  "kernelspec": {
   "display_name": "Python 3",
   "language": "python",
   "name": "python3"
  },
  "language_info": {
   "name": "python"
  }
 },
 "nbformat": 4,
 "nbformat_minor": 5
}
`

// nbCell is the part of a cell the tests compare.
type nbCell struct {
	CellType       string            `json:"cell_type"`
	ID             string            `json:"id"`
	ExecutionCount *int              `json:"execution_count"`
	Outputs        []json.RawMessage `json:"outputs"`
	Source         any               `json:"source"`
}

type nbDoc struct {
	Cells         []nbCell       `json:"cells"`
	Metadata      map[string]any `json:"metadata"`
	NBFormat      int            `json:"nbformat"`
	NBFormatMinor int            `json:"nbformat_minor"`
}

func decodeNotebook(t *testing.T, text string) nbDoc {
	t.Helper()
	var d nbDoc
	if err := json.Unmarshal([]byte(text), &d); err != nil {
		t.Fatalf("output is not valid JSON: %v\n%s", err, text)
	}
	if d.NBFormat != 4 || d.Metadata["kernelspec"] == nil {
		t.Fatalf("notebook lost its format or metadata: %+v", d)
	}
	return d
}

func TestNotebookRoundTripKeepsLayout(t *testing.T) {
	t.Parallel()
	style := detectJSONStyle(laneNotebook)
	top, err := parseNBObject([]byte(style.body))
	if err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	top.encode(&compact)
	if got := style.render(compact.Bytes()); got != laneNotebook {
		t.Fatalf("round trip changed the notebook:\n%s", cmp.Diff(laneNotebook, got))
	}
}

func TestNotebookEdit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		input map[string]any
		check func(t *testing.T, before, after nbDoc, text string)
	}{
		{"replace code cell by id clears outputs", map[string]any{"cell_id": "code0001", "new_source": "print('bye')\nprint(2)"},
			func(t *testing.T, before, after nbDoc, text string) {
				c := after.Cells[1]
				if c.ExecutionCount != nil || len(c.Outputs) != 0 || c.Outputs == nil {
					t.Errorf("outputs %v, execution_count %v: want [] and null", c.Outputs, c.ExecutionCount)
				}
				if diff := cmp.Diff([]any{"print('bye')\n", "print(2)"}, c.Source); diff != "" {
					t.Errorf("source (-want +got):\n%s", diff)
				}
				if !strings.Contains(text, "\"outputs\": [],\n   \"source\"") {
					t.Errorf("layout not kept:\n%s", text)
				}
				if diff := cmp.Diff(before.Cells[0], after.Cells[0]); diff != "" {
					t.Errorf("another cell changed:\n%s", diff)
				}
			}},
		{"replace by index keeps string source", map[string]any{"cell_id": "2", "new_source": "z = 3"},
			func(t *testing.T, before, after nbDoc, text string) {
				if after.Cells[2].Source != "z = 3" {
					t.Errorf("source = %#v", after.Cells[2].Source)
				}
			}},
		{"replace by cell-N", map[string]any{"cell_id": "cell-0", "new_source": "# New <b>é</b>"},
			func(t *testing.T, before, after nbDoc, text string) {
				if diff := cmp.Diff([]any{"# New <b>é</b>"}, after.Cells[0].Source); diff != "" || after.Cells[0].Outputs != nil {
					t.Errorf("markdown cell: %s outputs %v", diff, after.Cells[0].Outputs)
				}
			}},
		{"replace converts type", map[string]any{"cell_id": "a1b2c3d4", "new_source": "1+1", "cell_type": "code"},
			func(t *testing.T, before, after nbDoc, text string) {
				c := after.Cells[0]
				if c.CellType != "code" || c.Outputs == nil || c.ID != "a1b2c3d4" {
					t.Errorf("converted cell = %+v", c)
				}
			}},
		{"insert after a cell", map[string]any{"cell_id": "code0001", "new_source": "## Notes\nmore", "cell_type": "markdown", "edit_mode": "insert"},
			func(t *testing.T, before, after nbDoc, text string) {
				if len(after.Cells) != 4 || after.Cells[2].CellType != "markdown" || after.Cells[3].ID != "code0002" {
					t.Fatalf("cells = %+v", after.Cells)
				}
				c := after.Cells[2]
				if len(c.ID) != 8 || c.ID == "code0001" {
					t.Errorf("new cell id = %q", c.ID)
				}
				if diff := cmp.Diff([]any{"## Notes\n", "more"}, c.Source); diff != "" {
					t.Errorf("source:\n%s", diff)
				}
			}},
		{"insert at the start", map[string]any{"new_source": "import os", "cell_type": "code", "edit_mode": "insert"},
			func(t *testing.T, before, after nbDoc, text string) {
				c := after.Cells[0]
				if len(after.Cells) != 4 || c.CellType != "code" || c.ExecutionCount != nil || c.Outputs == nil {
					t.Fatalf("cells = %+v", after.Cells)
				}
				if !strings.Contains(text, "{\n   \"cell_type\": \"code\",\n   \"execution_count\": null,\n   \"id\": ") {
					t.Errorf("new cell not in Jupyter's key order:\n%s", text[:300])
				}
			}},
		{"delete", map[string]any{"cell_id": "code0001", "new_source": "", "edit_mode": "delete"},
			func(t *testing.T, before, after nbDoc, text string) {
				if len(after.Cells) != 2 || after.Cells[0].ID != "a1b2c3d4" || after.Cells[1].ID != "code0002" {
					t.Fatalf("cells = %+v", after.Cells)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newLaneFix(t)
			f.put("n.ipynb", laneNotebook)
			f.markRead("n.ipynb")
			in := map[string]any{"notebook_path": "n.ipynb"}
			for k, v := range c.input {
				in[k] = v
			}
			r := f.call("NotebookEdit", in)
			wantCode(t, r, "")
			if r.EditedFile != f.path("n.ipynb") {
				t.Errorf("EditedFile = %q", r.EditedFile)
			}
			text := f.bytes("n.ipynb")
			if !strings.HasSuffix(text, "}\n") || strings.Contains(text, `\u003c`) || strings.Contains(text, `\u00e9`) {
				t.Errorf("final newline lost, or text escaped that Jupyter writes raw")
			}
			c.check(t, decodeNotebook(t, laneNotebook), decodeNotebook(t, text), text)
			f.rec.mu.Lock()
			defer f.rec.mu.Unlock()
			if b := f.rec.before; len(b) != 1 || b[0].Tool != HookNotebookEdit || b[0].Content != text {
				t.Errorf("BeforeWrite did not see the final notebook text")
			}
		})
	}
}

func TestNotebookEditRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, file string
		input      map[string]any
		code       string
	}{
		{"unknown cell", laneNotebook, map[string]any{"cell_id": "nope", "new_source": "x"}, CodeNotebookCellNotFound},
		{"index out of range", laneNotebook, map[string]any{"cell_id": "3", "new_source": "x"}, CodeNotebookCellNotFound},
		{"nbformat 3", `{"nbformat": 3, "worksheets": []}`, map[string]any{"cell_id": "0", "new_source": "x"}, CodeNotebookInvalid},
		{"not JSON", "not json", map[string]any{"cell_id": "0", "new_source": "x"}, CodeNotebookInvalid},
		{"insert without type", laneNotebook, map[string]any{"new_source": "x", "edit_mode": "insert"}, "tool.input_invalid"},
		{"bad mode", laneNotebook, map[string]any{"cell_id": "0", "new_source": "x", "edit_mode": "append"}, "tool.input_invalid"},
		{"bad type", laneNotebook, map[string]any{"cell_id": "0", "new_source": "x", "cell_type": "raw"}, "tool.input_invalid"},
		{"replace without cell", laneNotebook, map[string]any{"new_source": "x"}, "tool.input_invalid"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newLaneFix(t)
			f.put("n.ipynb", c.file)
			f.markRead("n.ipynb")
			in := map[string]any{"notebook_path": "n.ipynb"}
			for k, v := range c.input {
				in[k] = v
			}
			wantCode(t, f.call("NotebookEdit", in), c.code)
			if f.bytes("n.ipynb") != c.file {
				t.Fatal("a refused NotebookEdit changed the file")
			}
		})
	}
	t.Run("not a notebook path", func(t *testing.T) {
		t.Parallel()
		f := newLaneFix(t)
		wantCode(t, f.call("NotebookEdit", map[string]any{"notebook_path": "x.py", "cell_id": "0", "new_source": "x"}), "tool.input_invalid")
	})
	t.Run("missing notebook", func(t *testing.T) {
		t.Parallel()
		f := newLaneFix(t)
		wantCode(t, f.call("NotebookEdit", map[string]any{"notebook_path": "x.ipynb", "cell_id": "0", "new_source": "x"}), CodeFileNotFound)
	})
}

func TestNotebookStyles(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in string }{
		{"compact", `{"cells":[{"cell_type":"code","execution_count":1,"metadata":{},"outputs":[{"a":1}],"source":"x"}],"metadata":{"kernelspec":{}},"nbformat":4,"nbformat_minor":4}`},
		{"two-space CRLF with BOM", "\uFEFF{\r\n  \"cells\": [\r\n    {\r\n      \"cell_type\": \"code\",\r\n      \"execution_count\": 1,\r\n      \"metadata\": {},\r\n      \"outputs\": [\r\n        {\r\n          \"a\": 1\r\n        }\r\n      ],\r\n      \"source\": \"x\"\r\n    }\r\n  ],\r\n  \"metadata\": {\r\n    \"kernelspec\": {}\r\n  },\r\n  \"nbformat\": 4,\r\n  \"nbformat_minor\": 4\r\n}"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			in := notebookEditInput{NotebookPath: "n.ipynb", CellID: "0", NewSource: new(string), EditMode: "replace"}
			*in.NewSource = "y"
			out, _, r := editNotebook(c.in, in)
			if r != nil {
				t.Fatal(r.TextOf())
			}
			// The same edit, spelled by hand in the input's own layout.
			want := strings.Replace(strings.Replace(c.in, `"x"`, `"y"`, 1), `"execution_count":1`, `"execution_count":null`, 1)
			want = strings.Replace(want, `"execution_count": 1`, `"execution_count": null`, 1)
			want = strings.Replace(want, `[{"a":1}]`, `[]`, 1)
			want = strings.Replace(want, "[\r\n        {\r\n          \"a\": 1\r\n        }\r\n      ]", "[]", 1)
			if out != want {
				t.Fatalf("layout not kept:\n%s", cmp.Diff(want, out))
			}
			// nbformat 4.4 without ids: an inserted cell gets none.
			in = notebookEditInput{NotebookPath: "n.ipynb", NewSource: new(string), CellType: "markdown", EditMode: "insert"}
			out, _, r = editNotebook(c.in, in)
			if r != nil || strings.Contains(out, `"id"`) {
				t.Fatalf("insert into a 4.4 notebook: %v\n%s", r, out)
			}
		})
	}
}
