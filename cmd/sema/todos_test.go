package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sema-agent/sema/agent"
)

func TestTodosInEachFormat(t *testing.T) {
	list := []agent.Todo{
		{Content: "Read", Status: agent.TodoCompleted, ActiveForm: "Reading"},
		{Content: "Fix \x1b[2J it", Status: agent.TodoInProgress, ActiveForm: "Fixing \x1b]0;x\x07 it"},
		{Content: "Test", Status: agent.TodoPending, ActiveForm: "Testing"},
	}
	ev := agent.Event{Type: agent.EventTodos, Turn: 2, Todos: list}

	var out, errw bytes.Buffer
	newPrinter("text", &out, &errw).event(ev)
	text := errw.String()
	if out.Len() != 0 || strings.ContainsAny(text, "\x1b\x07") {
		t.Fatalf("stdout %q, stderr %q: the list goes to stderr, without raw escapes", out.String(), text)
	}
	for _, want := range []string{"todos (1/3 done)", "☑ Read", "◐ Fixing", "☐ Test"} {
		if !strings.Contains(text, want) {
			t.Errorf("text output lacks %q:\n%s", want, text)
		}
	}

	out.Reset()
	newPrinter("stream-json", &out, &errw).event(ev)
	var line struct {
		Type  string       `json:"type"`
		Turn  int          `json:"turn"`
		Todos []agent.Todo `json:"todos"`
	}
	if err := json.Unmarshal(out.Bytes(), &line); err != nil || line.Type != "todos" || line.Turn != 2 || len(line.Todos) != 3 || line.Todos[1].ActiveForm != list[1].ActiveForm {
		t.Fatalf("stream-json line %s (%v)", out.String(), err)
	}
	out.Reset()
	newPrinter("stream-json", &out, &errw).event(agent.Event{Type: agent.EventTodos})
	if !strings.Contains(out.String(), `"todos":[]`) {
		t.Fatalf("an emptied list is %s, want an empty array", out.String())
	}
}
