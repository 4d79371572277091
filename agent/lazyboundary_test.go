package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
)

func readOf(path string) scripted.ToolCall {
	return scripted.ToolCall{Name: "Read", Input: json.RawMessage(`{"file_path":"` + path + `"}`)}
}

// A turn that only reads mints no file-history boundary, and a rewind to any turn — one
// with a boundary or without — restores exactly the files changed from that turn's start
// on: a read-only turn in the middle starts where the next changing turn starts, and one
// at the end restores nothing.
func TestReadOnlyTurnsMintNoBoundaryAndRewindStaysExact(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		turn  int
		wantA string // a.txt after the rewind ("" = absent)
		wantB string
	}{
		{turn: 1, wantA: "", wantB: ""},
		{turn: 2, wantA: "a\n", wantB: ""},
		{turn: 3, wantA: "a\n", wantB: ""},
		{turn: 4, wantA: "a\n", wantB: "b\n"},
		{turn: 5, wantA: "a\n", wantB: "b\n"},
	} {
		t.Run(fmt.Sprint("turn ", tc.turn), func(t *testing.T) {
			t.Parallel()
			st := newStores(t)
			root := t.TempDir()
			p := scripted.New(scripted.Script{Turns: []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{write("a.txt", "a\n")}}, // 1: writes
				{ToolCalls: []scripted.ToolCall{readOf("a.txt")}},       // 2: reads
				{ToolCalls: []scripted.ToolCall{write("b.txt", "b\n")}}, // 3: writes
				{ToolCalls: []scripted.ToolCall{readOf("b.txt")}},       // 4: reads
				{Text: "done"}, // 5: answers
			}})
			r := st.runner(p)
			res, err := r.Run(t.Context(), agent.TaskSpec{Prompt: "go", Root: root, PermissionMode: permission.ModeAcceptEdits})
			if err != nil || res.Status != sema.StatusCompleted {
				t.Fatalf("%v %+v", err, res)
			}
			bs, err := st.history.Boundaries(t.Context(), res.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			var turns []int
			for _, b := range bs {
				turns = append(turns, b.Turn)
			}
			if len(turns) != 2 || turns[0] != 1 || turns[1] != 3 {
				t.Fatalf("boundaries of turns %v, want [1 3]: only the turns that wrote mint one", turns)
			}
			out, err := r.Rewind(t.Context(), agent.RewindSpec{SessionID: res.SessionID, ToTurn: tc.turn, Files: true})
			if err != nil {
				t.Fatalf("rewind to %d: %v", tc.turn, err)
			}
			for name, want := range map[string]string{"a.txt": tc.wantA, "b.txt": tc.wantB} {
				got, err := os.ReadFile(filepath.Join(root, name))
				if want == "" && err == nil || want != "" && string(got) != want {
					t.Errorf("after a rewind to turn %d %s holds %q (%v), want %q", tc.turn, name, got, err, want)
				}
			}
			if out.Ledger == nil || !out.Ledger.Complete() || out.Ledger.Turn != tc.turn {
				t.Fatalf("ledger %+v", out.Ledger)
			}
		})
	}
}

// A conversation rewound to a turn and continued without writing starts a branch whose
// turns have no boundaries: a rewind to one of them finds the branch's turn, not the
// turn of the same number on the old branch.
func TestRewindFindsTheBranchsReadOnlyTurn(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	root := t.TempDir()
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{write("a.txt", "a\n")}}, // 1
		{ToolCalls: []scripted.ToolCall{write("b.txt", "b\n")}}, // 2 (old branch)
		{Text: "first done"},                                    // 3 (old branch)
		{ToolCalls: []scripted.ToolCall{readOf("a.txt")}},       // 2' reads
		{ToolCalls: []scripted.ToolCall{write("c.txt", "c\n")}}, // 3' writes
		{Text: "second done"},                                   // 4'
	}})
	r := st.runner(p)
	first, err := r.Run(t.Context(), agent.TaskSpec{Prompt: "go", Root: root, PermissionMode: permission.ModeAcceptEdits})
	if err != nil || first.Status != sema.StatusCompleted {
		t.Fatalf("%v %+v", err, first)
	}
	if _, err := r.Rewind(t.Context(), agent.RewindSpec{SessionID: first.SessionID, ToTurn: 2, Conversation: true}); err != nil {
		t.Fatal(err)
	}
	second, err := r.Run(t.Context(), agent.TaskSpec{Prompt: "again", Root: root, PermissionMode: permission.ModeAcceptEdits,
		Resume: &agent.Resume{SessionID: first.SessionID}})
	if err != nil || second.Status != sema.StatusCompleted || second.FirstTurn != 2 {
		t.Fatalf("%v %+v", err, second)
	}
	// Turn 2 of the branch read only: rewinding to it undoes the branch's c.txt, and
	// leaves b.txt, which the old branch's turn 2 wrote before the branch began.
	out, err := r.Rewind(t.Context(), agent.RewindSpec{SessionID: first.SessionID, ToTurn: 2, Files: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "c.txt")); err == nil {
		t.Error("c.txt, written at the branch's turn 3, survived a rewind to turn 2")
	}
	if b, err := os.ReadFile(filepath.Join(root, "b.txt")); err != nil || string(b) != "b\n" {
		t.Errorf("b.txt = %q (%v): the old branch's turn 2 was rewound", b, err)
	}
	if n := len(out.Ledger.Entries); n != 1 {
		t.Errorf("ledger %+v, want c.txt alone", out.Ledger.Entries)
	}
}

// A delegated child's edits belong to the parent's turn that delegated: the child's
// first change mints the parent's turn boundary, so a rewind to that turn undoes it.
func TestChildEditMintsTheParentsTurnBoundary(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	root := t.TempDir()
	task, _ := json.Marshal(map[string]string{"description": "write", "prompt": "write c", "subagent_type": "general-purpose"})
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{readOf("x.txt")}},             // parent 1: reads
		{ToolCalls: []scripted.ToolCall{{Name: "Task", Input: task}}}, // parent 2: delegates
		{ToolCalls: []scripted.ToolCall{write("c.txt", "c\n")}},       // child 1
		{Text: "child done"},  // child 2
		{Text: "parent done"}, // parent 3
	}})
	if err := os.WriteFile(filepath.Join(root, "x.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := st.runner(p)
	res, err := r.Run(t.Context(), agent.TaskSpec{Prompt: "go", Root: root, PermissionMode: permission.ModeAcceptEdits})
	if err != nil || res.Status != sema.StatusCompleted {
		t.Fatalf("%v %+v", err, res)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "c.txt")); string(b) != "c\n" {
		t.Fatalf("the child did not write c.txt: %q", b)
	}
	bs, _ := st.history.Boundaries(t.Context(), res.SessionID)
	if len(bs) != 1 || bs[0].Turn != 2 || bs[0].Kind != history.KindTurn {
		t.Fatalf("boundaries %+v, want the parent's turn 2 alone", bs)
	}
	if _, err := r.Rewind(context.Background(), agent.RewindSpec{SessionID: res.SessionID, ToTurn: 2, Files: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "c.txt")); err == nil {
		t.Error("the child's c.txt survived a rewind to the parent's turn that delegated")
	}
}
