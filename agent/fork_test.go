package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
)

// A fork carries its parent's file history: after the original edited a file and the fork
// edited it again, rewinding the fork to its first turn restores the bytes from before the
// ORIGINAL's edit. The original's history is left as it was.
func TestForkThenRewindReachesTheOriginalsTurns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStores(t)
	root := t.TempDir()
	f := filepath.Join(root, "f.txt")
	os.WriteFile(f, []byte("v0\n"), 0o644)
	read := scripted.ToolCall{Name: "Read", Input: json.RawMessage(`{"file_path":"f.txt"}`)}
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{read}},                   // original, turn 1
		{ToolCalls: []scripted.ToolCall{write("f.txt", "v1\n")}}, // original, turn 2
		{Text: "original done"},                                  // original, turn 3
		{ToolCalls: []scripted.ToolCall{write("f.txt", "v2\n")}}, // fork, turn 4
		{Text: "fork done"},                                      // fork, turn 5
	}})
	r := agent.New(agent.Deps{Provider: p, Store: st.sessions, History: st.history})
	orig, err := r.Run(ctx, agent.TaskSpec{Prompt: "edit", Root: root, PermissionMode: permission.ModeAcceptEdits})
	if err != nil || orig.Status != sema.StatusCompleted {
		t.Fatalf("%v %+v", err, orig)
	}
	snapshot := func(scope string) ([]history.Record, []history.Boundary) {
		recs, err := st.history.Records(ctx, scope, 0)
		if err != nil {
			t.Fatal(err)
		}
		bs, err := st.history.Boundaries(ctx, scope)
		if err != nil {
			t.Fatal(err)
		}
		return recs, bs
	}
	origRecs, origBounds := snapshot(orig.SessionID)
	if len(origRecs) == 0 {
		t.Fatal("the original recorded nothing")
	}

	fork, err := r.Run(ctx, agent.TaskSpec{Prompt: "again", Root: root, PermissionMode: permission.ModeAcceptEdits,
		Resume: &agent.Resume{SessionID: orig.SessionID, Fork: true}})
	if err != nil || fork.Status != sema.StatusCompleted || fork.SessionID == orig.SessionID || fork.FirstTurn != 4 {
		t.Fatalf("fork: %v %+v", err, fork)
	}
	if b, _ := os.ReadFile(f); string(b) != "v2\n" {
		t.Fatalf("after the fork's edit f.txt holds %q", b)
	}

	out, err := r.Rewind(ctx, agent.RewindSpec{SessionID: fork.SessionID, ToTurn: 1, Files: true})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(f); string(b) != "v0\n" || !out.Ledger.Complete() {
		t.Fatalf("the fork's rewind to turn 1 left %q (ledger %+v)", b, out.Ledger)
	}
	// The original's records and boundaries are as they were before the fork.
	recs, bounds := snapshot(orig.SessionID)
	if d := cmp.Diff(origRecs, recs); d != "" {
		t.Fatalf("the original's records changed (-before +after):\n%s", d)
	}
	if d := cmp.Diff(origBounds, bounds); d != "" {
		t.Fatalf("the original's boundaries changed (-before +after):\n%s", d)
	}
	// And the fork's own turn is a boundary of its own: back to the start of turn 4 is
	// what the original left.
	if _, err := r.Rewind(ctx, agent.RewindSpec{SessionID: fork.SessionID, ToTurn: 4, Files: true}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(f); string(b) != "v1\n" {
		t.Fatalf("the fork's rewind to turn 4 left %q", b)
	}
}
