package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sema-agent/sema/tools"
)

// TodoStatus is where an item of the todo list stands.
type TodoStatus string

const (
	// TodoPending: not started.
	TodoPending TodoStatus = "pending"
	// TodoInProgress: being worked on now.
	TodoInProgress TodoStatus = "in_progress"
	// TodoCompleted: done.
	TodoCompleted TodoStatus = "completed"
)

// Todo is one item of a session's todo list, as the model writes it with the TodoWrite
// tool (Claude Code's shape, so that models trained on it and programs that read it
// work unchanged).
type Todo struct {
	// Content says what is to be done, in the imperative ("Run the tests").
	Content string `json:"content"`
	// Status is pending, in_progress or completed.
	Status TodoStatus `json:"status"`
	// ActiveForm says the same as it happens ("Running the tests"), for showing the
	// item in progress.
	ActiveForm string `json:"activeForm"`
	// ID is the model's own name for the item, when it gives one; unique in the list.
	ID string `json:"id,omitempty"`
}

// entryTodos records a TodoWrite call's list in the transcript; replay keeps the latest,
// which is the session's todo list at the chain's head. payload: todosEntry.
const entryTodos = "todos"

type todosEntry struct {
	Todos []Todo `json:"todos"`
}

// todos is the session's current todo list: the latest TodoWrite of this leg, else the
// one the resumed transcript ended with, else none. Whatever needs the list — the result,
// a compaction that must keep it — reads it here.
func (l *leg) todos() []Todo {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Todo(nil), l.todoList...)
}

// setTodos makes list the session's todo list and queues its event. The transcript entry
// was stored first, so a resumed leg finds the list the model was told it wrote.
func (l *leg) setTodos(list []Todo) {
	l.mu.Lock()
	l.todoList = list
	l.mu.Unlock()
	l.enqueue(Event{Type: EventTodos, Todos: append([]Todo(nil), list...)})
}

// todoTool is TodoWrite: it replaces the session's todo list with the one the model
// sends. It changes no file and runs nothing, so it asks no permission question of its
// own (an engine tool the gate lets through unless a rule says otherwise), in every
// mode, plan included.
type todoTool struct{ l *leg }

var todoSchema = json.RawMessage(`{"type":"object","properties":{"todos":{"type":"array","description":"The whole updated todo list",` +
	`"items":{"type":"object","properties":{` +
	`"content":{"type":"string","minLength":1,"description":"What to do, in the imperative: \"Run the tests\""},` +
	`"status":{"type":"string","enum":["pending","in_progress","completed"]},` +
	`"activeForm":{"type":"string","minLength":1,"description":"The same, as it happens: \"Running the tests\""},` +
	`"id":{"type":"string"}},` +
	`"required":["content","status","activeForm"],"additionalProperties":false}}},` +
	`"required":["todos"],"additionalProperties":false}`)

func (t *todoTool) Spec() tools.Spec {
	return tools.Spec{Name: "TodoWrite", InputSchema: todoSchema, Effect: tools.EffectExec, Description: "Keep the todo list of this task, which the user sees. " +
		"Use it for work of three steps or more, or when the user asks for several things: write the list when you start, " +
		"mark an item in_progress when you begin it (one at a time), and mark it completed as soon as it is done, not in batches. " +
		"Add items you discover; remove those that no longer apply. Each call replaces the whole list: send every item with its status. " +
		"content says what to do (\"Run the tests\"); activeForm says it as it happens (\"Running the tests\"). " +
		"Skip the list for a single, simple step."}
}

func (t *todoTool) Run(ctx context.Context, input json.RawMessage) tools.Result {
	list, bad := parseTodos(input)
	if bad != nil {
		return *bad
	}
	if _, ok := t.l.record(ctx, entryTodos, todosEntry{Todos: list}); !ok {
		return tools.Fail(CodeSessionRecordFailed, "The todo list was not changed: the session could not record it.")
	}
	t.l.setTodos(list)
	return tools.Text(todoAnswer(list))
}

// parseTodos reads TodoWrite's input strictly: every item has content, a known status
// and an activeForm, and ids, where given, are unique. A refusal names the item. More
// than one item in progress is accepted, as Claude Code accepts it: one at a time is
// advice to the model (the description says so), and work delegated to agents that run
// at once is legitimately in progress together.
func parseTodos(input json.RawMessage) ([]Todo, *tools.Result) {
	var in struct {
		Todos *[]Todo `json:"todos"`
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
		if r := checkTodo(i, td, ids); r != nil {
			return nil, r
		}
	}
	if list == nil {
		list = []Todo{}
	}
	return list, nil
}

// checkTodo refuses item i of a list, naming it; ids holds the ids of the items before
// it, and gains its own.
func checkTodo(i int, td Todo, ids map[string]int) *tools.Result {
	var r tools.Result
	switch {
	case strings.TrimSpace(td.Content) == "":
		r = tools.Fail(CodeTodoContentEmpty, "todos[%d] has no content; say what is to be done, such as \"Run the tests\".", i)
	case td.Status != TodoPending && td.Status != TodoInProgress && td.Status != TodoCompleted:
		r = tools.Fail(CodeTodoStatusInvalid, "todos[%d] (%q) has the status %q; use pending, in_progress or completed.", i, td.Content, td.Status)
	case strings.TrimSpace(td.ActiveForm) == "":
		r = tools.Fail(CodeTodoActiveFormEmpty, "todos[%d] (%q) has no activeForm; say it as it happens, such as \"Running the tests\".", i, td.Content)
	case td.ID == "":
		return nil
	default:
		j, seen := ids[td.ID]
		if !seen {
			ids[td.ID] = i
			return nil
		}
		r = tools.Fail(CodeTodoIDDuplicate, "todos[%d] (%q) has the id %q of todos[%d]; give each item its own id, or none.", i, td.Content, td.ID, j)
	}
	return &r
}

// todoAnswer is what the model is told after a change: where the list stands, and to
// keep it current.
func todoAnswer(list []Todo) string {
	if len(list) == 0 {
		return "The todo list is now empty."
	}
	n := map[TodoStatus]int{}
	for _, td := range list {
		n[td.Status]++
	}
	s := fmt.Sprintf("The todo list is updated: %d items, %d completed, %d in progress, %d pending. ", len(list), n[TodoCompleted], n[TodoInProgress], n[TodoPending])
	if n[TodoCompleted] == len(list) {
		return s + "Every item is done."
	}
	return s + "Keep it current as you work: mark each item completed as soon as it is done, then go on with the next one."
}
