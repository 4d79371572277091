package tui

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/session"
)

// localWithStores is a Local over a real runner whose stores it was given, as
// cmd/sema wires it.
func localWithStores(t *testing.T, dir string, turns ...scripted.Turn) (*Local, *session.Memory) {
	t.Helper()
	store, hist := session.NewMemory(), history.NewMemory()
	prov := scripted.New(scripted.Script{Turns: turns})
	runner := agent.New(agent.Deps{Provider: prov, Store: store, History: hist, Shell: &agent.ShellOptions{Sandbox: "off"}})
	return NewLocal(runner, agent.TaskSpec{Root: dir, OnAsk: agent.OnAskDeny, PermissionMode: "acceptEdits"}).WithStores(store, hist), store
}

func sessionOf(evs []agent.Event) string {
	if m := first(evs, agent.EventInit).Manifest; m != nil {
		return m.SessionID
	}
	return ""
}

// TestLocalClearListAndSwitch: /clear's Clear makes the next prompt start a new session
// (the old one stays listed); Switch makes the next prompt continue the picked one and
// returns its title, turns and last exchange.
func TestLocalClearListAndSwitch(t *testing.T) {
	dir := t.TempDir()
	l, _ := localWithStores(t, dir, scripted.Turn{Text: "one"}, scripted.Turn{Text: "two"}, scripted.Turn{Text: "three"})
	a := sessionOf(localLegs(t, l, "first")[0])
	l.Clear()
	b := sessionOf(localLegs(t, l, "second")[0])
	if a == "" || b == "" || a == b {
		t.Fatalf("after Clear the prompt should start a new session: %q then %q", a, b)
	}
	list, err := l.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != b || list[1].ID != a || list[1].Title != "first" {
		t.Fatalf("List = %+v, want %s (newest) then %s titled first", list, b, a)
	}
	view, err := l.Switch(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	want := []Said{{"user", "first"}, {"assistant", "one"}}
	if view.ID != a || view.Turns != 1 || !slices.Equal(view.Recent, want) {
		t.Errorf("Switch = %+v, want session %s with 1 turn and %v", view, a, want)
	}
	if got := sessionOf(localLegs(t, l, "third")[0]); got != a {
		t.Errorf("after Switch the prompt ran in %q, want %q", got, a)
	}
	if _, err := l.Switch(context.Background(), "no-such-session"); err == nil {
		t.Error("Switch to an unknown session was not refused")
	}
}

// TestLocalTurnsAndRewind: Turns lists each turn with the files it changed; a dry run
// shows a person's edit as a conflict and changes nothing; the confirmed rewind of
// files and conversation leaves the person's edit, deletes the file the agent created,
// and the next prompt continues from before the rewound turn.
func TestLocalTurnsAndRewind(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) scripted.ToolCall {
		in, _ := json.Marshal(map[string]string{"file_path": name, "content": body})
		return scripted.ToolCall{Name: "Write", Input: in}
	}
	l, _ := localWithStores(t, dir,
		scripted.Turn{ToolCalls: []scripted.ToolCall{write("a.txt", "agent\n")}}, scripted.Turn{Text: "wrote a"},
		scripted.Turn{ToolCalls: []scripted.ToolCall{write("b.txt", "new\n")}}, scripted.Turn{Text: "wrote b"},
		scripted.Turn{Text: "again"})
	if _, err := l.Turns(context.Background()); err == nil {
		t.Error("Turns before any session was not refused")
	}
	localLegs(t, l, "write a", "write b")
	turns, err := l.Turns(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 4 || turns[0].Prompt != "write a" || !slices.Equal(turns[0].Files, []string{"a.txt"}) ||
		turns[2].N != 3 || turns[2].Prompt != "write b" || !slices.Equal(turns[2].Files, []string{"b.txt"}) || turns[3].Said != "wrote b" {
		t.Fatalf("Turns = %+v", turns)
	}
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	if err := os.WriteFile(a, []byte("person\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, err := l.Rewind(context.Background(), agent.RewindSpec{ToTurn: 1, Files: true, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]history.Status{}
	for _, e := range plan.Ledger.Entries {
		status[e.Path] = e.Status
	}
	if status["a.txt"] != history.StatusConflict || status["b.txt"] != history.StatusDeleted {
		t.Fatalf("the plan %+v: want a.txt in conflict, b.txt deleted", status)
	}
	if _, err := os.Stat(b); err != nil {
		t.Fatalf("the dry run changed b.txt: %v", err)
	}
	if _, err := l.Rewind(context.Background(), agent.RewindSpec{ToTurn: 1, Files: true, Conversation: true, AcceptPartialRestore: true}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(a); string(got) != "person\n" {
		t.Errorf("a.txt = %q: the person's edit was overwritten", got)
	}
	if _, err := os.Stat(b); !os.IsNotExist(err) {
		t.Errorf("b.txt after the rewind: %v, want it deleted", err)
	}
	localLegs(t, l, "once more")
	turns, err = l.Turns(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 1 || turns[0].Said != "again" {
		t.Errorf("after the rewind to turn 1 the conversation holds %+v, want only the new turn", turns)
	}
}
