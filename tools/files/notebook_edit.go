package files

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sema-agent/sema/internal/linediff"

	"github.com/sema-agent/sema/tools"
)

// Codes of NotebookEdit.
const (
	CodeNotebookInvalid      = "fs.notebook_invalid"        // the file is not an nbformat 4 notebook
	CodeNotebookCellNotFound = "fs.notebook_cell_not_found" // no cell has that id or index
)

// notebookEditTool is NotebookEdit{notebook_path, cell_id, new_source, cell_type,
// edit_mode}. It rewrites the notebook's JSON keeping what it does not change: member
// order, the indentation style (Jupyter writes one space), non-ASCII text as it was, the
// final newline.
type notebookEditTool struct{ lane *lane }

var notebookEditSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "notebook_path": {"type": "string", "description": "The path of the .ipynb file, absolute or relative to the working directory."},
    "cell_id": {"type": "string", "description": "The id of the cell to change, or its 0-based index (\"3\" or \"cell-3\"). For insert, the new cell goes after this one; without it, at the start."},
    "new_source": {"type": "string", "description": "The new source of the cell."},
    "cell_type": {"type": "string", "enum": ["code", "markdown"], "description": "The cell's type. Required for insert; for replace, changes the type."},
    "edit_mode": {"type": "string", "enum": ["replace", "insert", "delete"], "default": "replace", "description": "replace (default), insert or delete."}
  },
  "required": ["notebook_path", "new_source"],
  "additionalProperties": false
}`)

func (t *notebookEditTool) Spec() tools.Spec {
	return tools.Spec{
		Name: "NotebookEdit",
		Description: "Replaces, inserts or deletes one cell of a Jupyter notebook (.ipynb).\n" +
			"- Name the cell by its id or its 0-based index.\n" +
			"- replace sets the cell's source; a code cell's outputs and execution count are cleared.\n" +
			"- insert adds a new cell (cell_type required) after the named cell, or at the start.\n" +
			"- The notebook must have been read in this session first, and must not have changed since.",
		InputSchema: notebookEditSchema,
		Effect:      tools.EffectWrite,
	}
}

type notebookEditInput struct {
	NotebookPath string  `json:"notebook_path"`
	CellID       string  `json:"cell_id"`
	NewSource    *string `json:"new_source"`
	CellType     string  `json:"cell_type"`
	EditMode     string  `json:"edit_mode"`
}

func (t *notebookEditTool) Run(ctx context.Context, input json.RawMessage) tools.Result {
	var in notebookEditInput
	if err := tools.Decode(input, &in); err != nil {
		return tools.FromError(err, tools.CodeInputInvalid)
	}
	if in.EditMode == "" {
		in.EditMode = "replace"
	}
	switch {
	case in.NotebookPath == "":
		return tools.Fail(tools.CodeInputInvalid, "notebook_path is required.")
	case !strings.HasSuffix(strings.ToLower(in.NotebookPath), ".ipynb"):
		return tools.Fail(tools.CodeInputInvalid, "%s is not a .ipynb notebook; use Edit or Write for other files.", in.NotebookPath)
	case in.EditMode != "replace" && in.EditMode != "insert" && in.EditMode != "delete":
		return tools.Fail(tools.CodeInputInvalid, "edit_mode %q is not one of replace, insert, delete.", in.EditMode)
	case in.CellType != "" && in.CellType != "code" && in.CellType != "markdown":
		return tools.Fail(tools.CodeInputInvalid, "cell_type %q is not one of code, markdown.", in.CellType)
	case in.EditMode == "insert" && in.CellType == "":
		return tools.Fail(tools.CodeInputInvalid, "cell_type is required to insert a cell.")
	case in.EditMode != "insert" && in.CellID == "":
		return tools.Fail(tools.CodeInputInvalid, "cell_id is required to %s a cell.", in.EditMode)
	case in.EditMode != "delete" && in.NewSource == nil:
		return tools.Fail(tools.CodeInputInvalid, "new_source is required to %s a cell.", in.EditMode)
	}
	return t.lane.run(ctx, mutation{
		tool: "NotebookEdit", hook: HookNotebookEdit, spelled: in.NotebookPath,
		apply: func(now current) (change, *tools.Result) {
			if !now.exists {
				r := tools.Fail(CodeFileNotFound, "%s does not exist. Create a notebook with Write first.", in.NotebookPath)
				return change{}, &r
			}
			text, summary, r := editNotebook(now.text, in)
			if r != nil {
				return change{}, r
			}
			return change{text: text, summary: summary}, nil
		},
	})
}

// editNotebook applies in to the notebook text and says what it did.
func editNotebook(text string, in notebookEditInput) (out, summary string, refusal *tools.Result) {
	invalid := func(format string, args ...any) (string, string, *tools.Result) {
		r := tools.Fail(CodeNotebookInvalid, "%s is not a valid nbformat 4 notebook: %s.", in.NotebookPath, fmt.Sprintf(format, args...))
		return "", "", &r
	}
	style := detectJSONStyle(text)
	top, err := parseNBObject([]byte(style.body))
	if err != nil {
		return invalid("%v", err)
	}
	if v, ok := top.get("nbformat"); !ok || strings.TrimSpace(string(v)) != "4" {
		return invalid("nbformat is not 4")
	}
	rawCells, ok := top.get("cells")
	var cells []json.RawMessage
	if !ok || json.Unmarshal(rawCells, &cells) != nil {
		return invalid("cells is not an array")
	}
	objs := make([]nbObject, len(cells))
	for i, c := range cells {
		if objs[i], err = parseNBObject(c); err != nil {
			return invalid("cell %d: %v", i, err)
		}
	}

	idx := -1 // the named cell
	if in.CellID != "" {
		if idx = findCell(objs, in.CellID); idx < 0 {
			r := tools.Fail(CodeNotebookCellNotFound, "%s has no cell with id or index %q (it has %d cells).", in.NotebookPath, in.CellID, len(objs))
			return "", "", &r
		}
	}
	switch in.EditMode {
	case "delete":
		summary = fmt.Sprintf("Deleted cell %s from %s.", in.CellID, in.NotebookPath)
		objs = append(objs[:idx], objs[idx+1:]...)
	case "insert":
		c := newNotebookCell(in.CellType, *in.NewSource, notebookUsesIDs(top, objs), objs)
		objs = append(objs[:idx+1], append([]nbObject{c}, objs[idx+1:]...)...)
		where := "at the start"
		if idx >= 0 {
			where = "after cell " + in.CellID
		}
		summary = fmt.Sprintf("Inserted a %s cell (index %d) %s of %s.", in.CellType, idx+1, where, in.NotebookPath)
	default:
		replaceCell(&objs[idx], in.CellType, *in.NewSource)
		summary = fmt.Sprintf("Updated cell %s of %s.", in.CellID, in.NotebookPath)
	}

	var cellsOut bytes.Buffer
	cellsOut.WriteByte('[')
	for i, c := range objs {
		if i > 0 {
			cellsOut.WriteByte(',')
		}
		c.encode(&cellsOut)
	}
	cellsOut.WriteByte(']')
	top.set("cells", cellsOut.Bytes())
	var compact bytes.Buffer
	top.encode(&compact)
	return style.render(compact.Bytes()), summary, nil
}

// findCell finds a cell by its id, else by a 0-based index spelled "3" or "cell-3".
func findCell(cells []nbObject, id string) int {
	for i, c := range cells {
		if v, ok := c.get("id"); ok {
			var s string
			if json.Unmarshal(v, &s) == nil && s == id {
				return i
			}
		}
	}
	n, err := strconv.Atoi(strings.TrimPrefix(id, "cell-"))
	if err != nil || n < 0 || n >= len(cells) {
		return -1
	}
	return n
}

// replaceCell sets a cell's source (keeping its string-or-lines form) and, for a code
// cell, clears its outputs and execution count: old outputs would describe code that
// is no longer there. A new cellType converts the cell.
func replaceCell(c *nbObject, cellType, source string) {
	asString := false
	if v, ok := c.get("source"); ok {
		asString = bytes.HasPrefix(bytes.TrimSpace(v), []byte(`"`))
	}
	if cellType == "" {
		if v, ok := c.get("cell_type"); ok {
			_ = json.Unmarshal(v, &cellType)
		}
	} else {
		c.set("cell_type", jsonValue(cellType))
	}
	if asString {
		c.set("source", jsonValue(source))
	} else {
		c.set("source", jsonValue(sourceLines(source)))
	}
	if cellType == "code" {
		c.set("execution_count", json.RawMessage("null"))
		c.set("outputs", json.RawMessage("[]"))
	} else {
		c.del("execution_count")
		c.del("outputs")
	}
}

// newNotebookCell builds a cell with its members in the sorted order Jupyter writes.
func newNotebookCell(cellType, source string, withID bool, existing []nbObject) nbObject {
	c := nbObject{{"cell_type", jsonValue(cellType)}}
	if cellType == "code" {
		c = append(c, nbMember{"execution_count", json.RawMessage("null")})
	}
	if withID {
		c = append(c, nbMember{"id", jsonValue(newCellID(existing))})
	}
	c = append(c, nbMember{"metadata", json.RawMessage("{}")})
	if cellType == "code" {
		c = append(c, nbMember{"outputs", json.RawMessage("[]")})
	}
	return append(c, nbMember{"source", jsonValue(sourceLines(source))})
}

// notebookUsesIDs: nbformat 4.5 made cell ids required; an older notebook whose cells
// carry none gets none.
func notebookUsesIDs(top nbObject, cells []nbObject) bool {
	if v, ok := top.get("nbformat_minor"); ok {
		if n, err := strconv.Atoi(strings.TrimSpace(string(v))); err == nil && n >= 5 {
			return true
		}
	}
	for _, c := range cells {
		if _, ok := c.get("id"); ok {
			return true
		}
	}
	return false
}

// newCellID returns 8 random hex digits no cell uses, as Jupyter mints them.
func newCellID(cells []nbObject) string {
	for {
		var b [4]byte
		_, _ = rand.Read(b[:])
		id := hex.EncodeToString(b[:])
		if findCellByID(cells, id) < 0 {
			return id
		}
	}
}

func findCellByID(cells []nbObject, id string) int {
	for i, c := range cells {
		if v, ok := c.get("id"); ok && string(v) == strconv.Quote(id) {
			return i
		}
	}
	return -1
}

// sourceLines splits source the way nbformat stores it: lines keeping their "\n".
func sourceLines(source string) []string {
	lines := linediff.Lines(source)
	if lines == nil {
		return []string{}
	}
	return lines
}

// jsonValue encodes v without HTML escaping (a notebook's "<" stays "<").
func jsonValue(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// nbObject is a JSON object with its members in their original order.
type nbObject []nbMember

type nbMember struct {
	key string
	val json.RawMessage
}

func parseNBObject(raw []byte) (nbObject, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var o nbObject
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		o = append(o, nbMember{key, v})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, errors.New("unterminated object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the object")
	}
	return o, nil
}

func (o nbObject) get(key string) (json.RawMessage, bool) {
	for _, m := range o {
		if m.key == key {
			return m.val, true
		}
	}
	return nil, false
}

// set replaces key's value in place, or inserts the member before the first key that
// sorts after it (the right place in a Jupyter-written, sorted object).
func (o *nbObject) set(key string, val json.RawMessage) {
	for i := range *o {
		if (*o)[i].key == key {
			(*o)[i].val = val
			return
		}
	}
	at := len(*o)
	for i, m := range *o {
		if m.key > key {
			at = i
			break
		}
	}
	*o = append((*o)[:at], append(nbObject{{key, val}}, (*o)[at:]...)...)
}

func (o *nbObject) del(key string) {
	for i := range *o {
		if (*o)[i].key == key {
			*o = append((*o)[:i], (*o)[i+1:]...)
			return
		}
	}
}

func (o nbObject) encode(b *bytes.Buffer) {
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(jsonValue(m.key))
		b.WriteByte(':')
		b.Write(m.val)
	}
	b.WriteByte('}')
}

// jsonStyle is how a JSON file was laid out, so a rewrite can keep it.
type jsonStyle struct {
	body    string // the text without byte-order mark
	bom     bool
	indent  string // "" for a compact file
	newline bool   // ends with a newline
	crlf    bool
}

func detectJSONStyle(text string) jsonStyle {
	s := jsonStyle{body: strings.TrimPrefix(text, utf8BOM)}
	s.bom = len(s.body) != len(text)
	s.newline = strings.HasSuffix(s.body, "\n")
	s.crlf = usesCRLF(s.body)
	if i := strings.IndexByte(s.body, '\n'); i >= 0 {
		rest := s.body[i+1:]
		s.indent = rest[:len(rest)-len(strings.TrimLeft(rest, " \t"))]
	}
	if s.indent == "" && strings.Contains(strings.TrimSpace(s.body), "\n") {
		s.indent = " " // laid out but unindented: use Jupyter's own style
	}
	return s
}

// render lays compact JSON out in the style.
func (s jsonStyle) render(compact []byte) string {
	var b bytes.Buffer
	if s.indent == "" {
		_ = json.Compact(&b, compact)
	} else {
		_ = json.Indent(&b, compact, "", s.indent)
	}
	out := b.String()
	if s.newline {
		out += "\n"
	}
	if s.crlf {
		out = toCRLF(out)
	}
	if s.bom {
		out = utf8BOM + out
	}
	return out
}
