package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/tools"
)

func todoCall(id, todos string) scripted.ToolCall {
	return scripted.ToolCall{ID: id, Name: "TodoWrite", Input: json.RawMessage(`{"todos":` + todos + `}`)}
}

// resultsByID maps each tool call's id to its result event.
func resultsByID(evs []agent.Event) map[string]*agent.ToolResult {
	out := map[string]*agent.ToolResult{}
	for _, ev := range evs {
		if ev.ToolResult != nil {
			out[ev.ToolResult.ID] = ev.ToolResult
		}
	}
	return out
}

// Every malformed list is refused with a code that names what is wrong and a sentence
// that names the item; a refused call leaves the list as it was.
func TestTodoWriteValidatesStrictly(t *testing.T) {
	t.Parallel()
	good := `[{"content":"Read","status":"completed","activeForm":"Reading"},{"content":"Fix","status":"in_progress","activeForm":"Fixing"}]`
	cases := []struct {
		name  string
		input string // the whole input object
		code  string // "" for accepted
		names string // a piece of the refusal's text
	}{
		{"accepted", `{"todos":` + good + `}`, "", ""},
		{"empty list", `{"todos":[]}`, "", ""},
		{"ids, unique", `{"todos":[{"id":"1","content":"a","status":"pending","activeForm":"A"},{"id":"2","content":"b","status":"pending","activeForm":"B"}]}`, "", ""},
		{"two in progress", `{"todos":[{"content":"a","status":"in_progress","activeForm":"A"},{"content":"b","status":"in_progress","activeForm":"B"}]}`, "", ""},
		{"empty content", `{"todos":[{"content":"a","status":"pending","activeForm":"A"},{"content":"  ","status":"pending","activeForm":"B"}]}`, agent.CodeTodoContentEmpty, "todos[1]"},
		{"unknown status", `{"todos":[{"content":"a","status":"done","activeForm":"A"}]}`, agent.CodeTodoStatusInvalid, `todos[0] ("a") has the status "done"`},
		{"no status", `{"todos":[{"content":"a","activeForm":"A"}]}`, agent.CodeTodoStatusInvalid, "todos[0]"},
		{"no activeForm", `{"todos":[{"content":"a","status":"pending"}]}`, agent.CodeTodoActiveFormEmpty, "todos[0]"},
		{"duplicate id", `{"todos":[{"id":"x","content":"a","status":"pending","activeForm":"A"},{"id":"x","content":"b","status":"pending","activeForm":"B"}]}`, agent.CodeTodoIDDuplicate, "todos[1]"},
		{"no todos", `{}`, tools.CodeInputInvalid, "needs todos"},
		{"null todos", `{"todos":null}`, tools.CodeInputInvalid, "needs todos"},
		{"unknown field", `{"todos":[{"content":"a","status":"pending","activeForm":"A","priority":"high"}]}`, tools.CodeInputInvalid, "priority"},
		{"not a list", `{"todos":"a"}`, tools.CodeInputInvalid, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			turns := []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{todoCall("first", good)}},
				{ToolCalls: []scripted.ToolCall{{ID: "probe", Name: "TodoWrite", Input: json.RawMessage(c.input)}}},
				{Text: "done"},
			}
			r, _ := newRunner(t, turns)
			evs, res := collect(t, r.Events(context.Background(), spec(t)))
			got := resultsByID(evs)["probe"]
			if got == nil {
				t.Fatalf("no result for the call; status %s", res.Status)
			}
			if c.code == "" {
				if got.IsError {
					t.Fatalf("refused: %s (%s)", got.Text, got.Code)
				}
				var in struct{ Todos []agent.Todo }
				json.Unmarshal([]byte(c.input), &in)
				if len(in.Todos) == 0 {
					in.Todos = nil
				}
				if !reflect.DeepEqual(res.Todos, in.Todos) {
					t.Fatalf("the list is %+v, want %+v", res.Todos, in.Todos)
				}
				return
			}
			if !got.IsError || got.Code != c.code || !strings.Contains(got.Text, c.names) {
				t.Fatalf("result %+v; want code %s naming %q", got, c.code, c.names)
			}
			if len(res.Todos) != 2 || res.Todos[1].Content != "Fix" {
				t.Fatalf("a refused call changed the list: %+v", res.Todos)
			}
		})
	}
}

// Each change is an event carrying the whole list, streamed before the call's result;
// the result holds the last list.
func TestTodoWriteEventsAndResult(t *testing.T) {
	t.Parallel()
	r, _ := newRunner(t, []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{todoCall("a", `[{"content":"Read","status":"in_progress","activeForm":"Reading"}]`)}},
		{ToolCalls: []scripted.ToolCall{todoCall("b", `[{"content":"Read","status":"completed","activeForm":"Reading"},{"content":"Fix","status":"pending","activeForm":"Fixing"}]`)}},
		{Text: "done"},
	})
	evs, res := collect(t, r.Events(context.Background(), spec(t)))
	var order []string
	for _, ev := range evs {
		switch ev.Type {
		case agent.EventTodos:
			order = append(order, fmt.Sprintf("todos/%d/%d", ev.Turn, len(ev.Todos)))
		case agent.EventToolResult:
			order = append(order, "result/"+ev.ToolResult.ID)
		}
	}
	if want := []string{"todos/1/1", "result/a", "todos/2/2", "result/b"}; !reflect.DeepEqual(order, want) {
		t.Fatalf("events %v, want %v", order, want)
	}
	want := []agent.Todo{{Content: "Read", Status: agent.TodoCompleted, ActiveForm: "Reading"}, {Content: "Fix", Status: agent.TodoPending, ActiveForm: "Fixing"}}
	if res.Status != sema.StatusCompleted || !reflect.DeepEqual(res.Todos, want) {
		t.Fatalf("status %s, todos %+v", res.Status, res.Todos)
	}
}

// The list lives in the session: a resumed leg starts from the last list of the chain,
// a branch before the TodoWrite has none, and a new TodoWrite replaces it.
func TestTodoListSurvivesResume(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	root := t.TempDir()
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{todoCall("a", `[{"content":"Read","status":"in_progress","activeForm":"Reading"}]`)}},
		{Text: "first leg done"},
		{Text: "second leg, no change"},
		{ToolCalls: []scripted.ToolCall{todoCall("b", `[{"content":"Read","status":"completed","activeForm":"Reading"}]`)}},
		{Text: "third leg done"},
		{Text: "branch"},
	}})
	r := st.runner(p)
	first, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "one", Root: root})
	if err != nil {
		t.Fatal(err)
	}
	reading := []agent.Todo{{Content: "Read", Status: agent.TodoInProgress, ActiveForm: "Reading"}}
	if !reflect.DeepEqual(first.Todos, reading) {
		t.Fatalf("first leg's list %+v", first.Todos)
	}
	resume := agent.TaskSpec{Prompt: "two", Root: root, Resume: &agent.Resume{SessionID: first.SessionID}}
	second, err := r.Run(context.Background(), resume)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(second.Todos, reading) {
		t.Fatalf("a resumed leg that wrote no list reports %+v, want the session's %+v", second.Todos, reading)
	}
	resume.Prompt = "three"
	third, err := r.Run(context.Background(), resume)
	if err != nil {
		t.Fatal(err)
	}
	if len(third.Todos) != 1 || third.Todos[0].Status != agent.TodoCompleted {
		t.Fatalf("third leg's list %+v", third.Todos)
	}
	// A branch from the first entry (the first prompt) continues a conversation in
	// which no list was written yet.
	entries, err := st.sessions.Transcript(context.Background(), first.SessionID, "")
	if err != nil {
		t.Fatal(err)
	}
	branch := agent.TaskSpec{Prompt: "branch", Root: root, Resume: &agent.Resume{SessionID: first.SessionID, At: entries[0].ID, Fork: true}}
	b, err := r.Run(context.Background(), branch)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Todos) != 0 {
		t.Fatalf("a branch from before the first TodoWrite has the list %+v", b.Todos)
	}
}

// TodoWrite asks no question in any mode — plan included, where a non-engine tool that
// is not read-only would — yet a deny rule still refuses it, and an ask rule still asks.
func TestTodoWriteAndThePermissionFold(t *testing.T) {
	t.Parallel()
	list := `[{"content":"Plan","status":"in_progress","activeForm":"Planning"}]`
	cases := []struct {
		name     string
		mode     permission.Mode
		deny     []string
		ask      []string
		wantCode string // the call's result code; "" for success
		parked   bool
	}{
		{"default", permission.ModeDefault, nil, nil, "", false},
		{"plan", permission.ModePlan, nil, nil, "", false},
		{"dontAsk", permission.ModeDontAsk, nil, nil, "", false},
		{"acceptEdits", permission.ModeAcceptEdits, nil, nil, "", false},
		{"deny rule", permission.ModeDefault, []string{"TodoWrite"}, nil, permission.CodeDenied, false},
		{"deny rule in bypassPermissions", permission.ModeBypassPermissions, []string{"TodoWrite"}, nil, permission.CodeDenied, false},
		{"ask rule", permission.ModeDefault, nil, []string{"TodoWrite"}, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			st := newStores(t)
			p := scripted.New(scripted.Script{Turns: []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{todoCall("t", list)}},
				{Text: "done"},
			}})
			// Parking makes any question visible: the leg would stop awaiting approval.
			sp := agent.TaskSpec{Prompt: "go", Root: t.TempDir(), PermissionMode: c.mode, DisallowedTools: c.deny, AskTools: c.ask, OnAsk: agent.OnAskPark}
			evs, res := collect(t, st.runner(p).Events(context.Background(), sp))
			if c.parked {
				cp, ok := res.Parked()
				if !ok || cp.Tool != "TodoWrite" || len(res.Todos) != 0 {
					t.Fatalf("status %s, todos %+v; want parked at TodoWrite with no list", res.Status, res.Todos)
				}
				done, err := st.runner(p).Resume(context.Background(), agent.TaskSpec{Root: sp.Root, OnAsk: agent.OnAskPark, Resume: &agent.Resume{SessionID: res.SessionID}},
					agent.Answer{CheckpointID: cp.ID, Allow: true})
				if err != nil || done.Status != sema.StatusCompleted || len(done.Todos) != 1 {
					t.Fatalf("after approval: %v, %+v", err, done)
				}
				return
			}
			for _, ev := range evs {
				if ev.Question != nil {
					t.Fatalf("a question was asked: %+v", ev.Question)
				}
			}
			got := resultsByID(evs)["t"]
			if res.Status != sema.StatusCompleted || got == nil || got.Code != c.wantCode {
				t.Fatalf("status %s, result %+v; want code %q", res.Status, got, c.wantCode)
			}
			if (c.wantCode == "") != (len(res.Todos) == 1) {
				t.Fatalf("todos %+v after a call with code %q", res.Todos, got.Code)
			}
		})
	}
}

// A child leg keeps its own list: its events reach the parent's stream marked with the
// Task call, and the parent's result holds only the parent's list.
func TestChildTodoListIsItsOwn(t *testing.T) {
	t.Parallel()
	p := scripted.New(scripted.Script{
		Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{taskCall("task", "general-purpose", "child", "CHILD: plan")}},
			{Text: "done"},
		},
		Threads: []scripted.Thread{{Match: "CHILD", Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{todoCall("c", `[{"content":"Child work","status":"in_progress","activeForm":"Working"}]`)}},
			{Text: "child done"},
		}}},
	})
	evs, res := collect(t, agent.New(agent.Deps{Provider: p}).Events(context.Background(), spec(t)))
	seen := false
	for _, ev := range evs {
		if ev.Type == agent.EventTodos {
			seen = ev.ParentToolUseID == "task" && len(ev.Todos) == 1
		}
	}
	if !seen || len(res.Todos) != 0 {
		t.Fatalf("child's todos event seen %v; parent's list %+v", seen, res.Todos)
	}
}
