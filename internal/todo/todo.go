// Package todo is the TodoWrite tool's reading of the model's todo list: the tool's
// spec, the strict check of every item, and the answer that tells the model where the
// list stands. The list itself, and the session it is recorded in, are the runner's.
package todo

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sema-agent/sema/tools"
)

// Status is where an item stands.
type Status string

// The statuses an item may have.
const (
	Pending    Status = "pending"
	InProgress Status = "in_progress"
	Completed  Status = "completed"
)

// Item is one item of the list as the model writes it (Claude Code's shape).
type Item struct {
	Content    string `json:"content"`
	Status     Status `json:"status"`
	ActiveForm string `json:"activeForm"`
	ID         string `json:"id,omitempty"`
}

// The codes of a refused item, each naming it. Package agent declares the same codes
// for embedders (agent.CodeTodoContentEmpty, …); a test there holds the two equal.
const (
	CodeContentEmpty    = "todo.content_empty"
	CodeStatusInvalid   = "todo.status_invalid"
	CodeActiveFormEmpty = "todo.active_form_empty"
	CodeIDDuplicate     = "todo.id_duplicate"
)

var schema = json.RawMessage(`{"type":"object","properties":{"todos":{"type":"array","description":"The whole updated todo list",` +
	`"items":{"type":"object","properties":{` +
	`"content":{"type":"string","minLength":1,"description":"What to do, in the imperative: \"Run the tests\""},` +
	`"status":{"type":"string","enum":["pending","in_progress","completed"]},` +
	`"activeForm":{"type":"string","minLength":1,"description":"The same, as it happens: \"Running the tests\""},` +
	`"id":{"type":"string"}},` +
	`"required":["content","status","activeForm"],"additionalProperties":false}}},` +
	`"required":["todos"],"additionalProperties":false}`)

// Spec is TodoWrite's spec. The tool changes no file and runs nothing; it is an engine
// tool the gate lets through unless a rule says otherwise.
func Spec() tools.Spec {
	return tools.Spec{Name: "TodoWrite", InputSchema: schema, Effect: tools.EffectExec, Description: "Keep the todo list of this task, which the user sees. " +
		"Use it for work of three steps or more, or when the user asks for several things: write the list when you start, " +
		"mark an item in_progress when you begin it (one at a time), and mark it completed as soon as it is done, not in batches. " +
		"Add items you discover; remove those that no longer apply. Each call replaces the whole list: send every item with its status. " +
		"content says what to do (\"Run the tests\"); activeForm says it as it happens (\"Running the tests\"). " +
		"Skip the list for a single, simple step."}
}

// Parse reads TodoWrite's input strictly: every item has content, a known status and an
// activeForm, and ids, where given, are unique. A refusal names the item. More than one
// item in progress is accepted, as Claude Code accepts it: one at a time is advice to
// the model (the description says so), and work delegated to agents that run at once
// is legitimately in progress together. An empty list is [], never nil.
func Parse(input json.RawMessage) ([]Item, *tools.Result) {
	var in struct {
		Todos *[]Item `json:"todos"`
	}
	if err := tools.Decode(input, &in); err != nil {
		r := tools.FromError(err, tools.CodeInputInvalid)
		return nil, &r
	}
	if in.Todos == nil {
		r := tools.Fail(tools.CodeInputInvalid, "TodoWrite needs todos: the whole list, every item with its content, status and activeForm ([] empties the list).")
		return nil, &r
	}
	list := *in.Todos
	ids := map[string]int{}
	for i, td := range list {
		if r := check(i, td, ids); r != nil {
			return nil, r
		}
	}
	if list == nil {
		list = []Item{}
	}
	return list, nil
}

// check refuses item i of a list, naming it; ids holds the ids of the items before it,
// and gains its own.
func check(i int, td Item, ids map[string]int) *tools.Result {
	var r tools.Result
	switch {
	case strings.TrimSpace(td.Content) == "":
		r = tools.Fail(CodeContentEmpty, "todos[%d] has no content; say what is to be done, such as \"Run the tests\".", i)
	case td.Status != Pending && td.Status != InProgress && td.Status != Completed:
		r = tools.Fail(CodeStatusInvalid, "todos[%d] (%q) has the status %q; use pending, in_progress or completed.", i, td.Content, td.Status)
	case strings.TrimSpace(td.ActiveForm) == "":
		r = tools.Fail(CodeActiveFormEmpty, "todos[%d] (%q) has no activeForm; say it as it happens, such as \"Running the tests\".", i, td.Content)
	case td.ID == "":
		return nil
	default:
		j, seen := ids[td.ID]
		if !seen {
			ids[td.ID] = i
			return nil
		}
		r = tools.Fail(CodeIDDuplicate, "todos[%d] (%q) has the id %q of todos[%d]; give each item its own id, or none.", i, td.Content, td.ID, j)
	}
	return &r
}

// Answer is what the model is told after a change: where the list stands, and to keep
// it current.
func Answer(list []Item) string {
	if len(list) == 0 {
		return "The todo list is now empty."
	}
	n := map[Status]int{}
	for _, td := range list {
		n[td.Status]++
	}
	s := fmt.Sprintf("The todo list is updated: %d items, %d completed, %d in progress, %d pending. ", len(list), n[Completed], n[InProgress], n[Pending])
	if n[Completed] == len(list) {
		return s + "Every item is done."
	}
	return s + "Keep it current as you work: mark each item completed as soon as it is done, then go on with the next one."
}
