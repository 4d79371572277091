package agent

import (
	"context"
	"encoding/json"

	"github.com/sema-agent/sema/internal/todo"
	"github.com/sema-agent/sema/internal/transcript"
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

// todosEntry is the payload of a transcript.KindTodos entry: a TodoWrite call's list.
// Replay keeps the latest, which is the session's todo list at the chain's head.
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

// todoTool is TodoWrite (package todo): it replaces the session's todo list with the one
// the model sends. It changes no file and runs nothing, so it asks no permission question
// of its own (an engine tool the gate lets through unless a rule says otherwise), in every
// mode, plan included.
type todoTool struct{ l *leg }

func (t *todoTool) Spec() tools.Spec { return todo.Spec() }

func (t *todoTool) Run(ctx context.Context, input json.RawMessage) tools.Result {
	items, bad := todo.Parse(input)
	if bad != nil {
		return *bad
	}
	list := make([]Todo, len(items))
	for i, it := range items {
		list[i] = Todo{Content: it.Content, Status: TodoStatus(it.Status), ActiveForm: it.ActiveForm, ID: it.ID}
	}
	if _, ok := t.l.record(ctx, transcript.KindTodos, todosEntry{Todos: list}); !ok {
		return tools.Fail(CodeSessionRecordFailed, "The todo list was not changed: the session could not record it.")
	}
	t.l.setTodos(list)
	return tools.Text(todo.Answer(items))
}
