package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/session"
)

// An out-of-range first-touch failure policy is refused at the door by name, never read
// as refuse or proceed: the run writes nothing and the model is never asked.
func TestFileHistoryPolicyOutOfRangeIsRefused(t *testing.T) {
	t.Parallel()
	for _, p := range []agent.FileHistoryPolicy{-1, 2, 7} {
		st := newStores(t)
		root := t.TempDir()
		prov := writeOnce()
		deps := agent.Deps{Provider: prov, Store: st.sessions, History: st.history, Policy: &agent.Policy{FileHistoryPolicy: p}}
		_, err := agent.New(deps).Run(context.Background(), agent.TaskSpec{Prompt: "write", Root: root, PermissionMode: permission.ModeAcceptEdits})
		if sema.CodeOf(err) != agent.CodeFileHistoryPolicyInvalid {
			t.Fatalf("policy %d: got %v, want %s", p, err, agent.CodeFileHistoryPolicyInvalid)
		}
		if len(prov.Requests()) != 0 {
			t.Fatalf("policy %d: the model was asked before the door refused", p)
		}
		if _, statErr := os.Stat(filepath.Join(root, "a.txt")); !os.IsNotExist(statErr) {
			t.Fatalf("policy %d: a refused run wrote", p)
		}
	}
}

// The deployment-seat clamp of a read-only mount (row 1 of the face order) is the one
// silent branch of the resolution, so its notice is the only trace of it: with no
// Deps.OnNotice wired it still reaches the result and the event stream, once per face.
func TestDeploymentFaceClampNoticeWithoutASink(t *testing.T) {
	t.Parallel()
	deps := func() agent.Deps {
		return agent.Deps{Provider: scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "done"}}}),
			Policy: &agent.Policy{ReadFace: fence.FaceOpen, WriteFace: fence.FaceOpen}}
	}
	spec := agent.TaskSpec{Prompt: "look", Root: t.TempDir(), ReadOnly: true}
	res, err := agent.New(deps()).Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Manifest.ReadFace != "roots" || res.Manifest.WriteFace != "roots" {
		t.Fatalf("faces %s/%s, want roots/roots on a read-only mount", res.Manifest.ReadFace, res.Manifest.WriteFace)
	}
	for _, code := range []string{fence.CodeReadFaceClamped, fence.CodeWriteFaceClamped} {
		n := 0
		for _, x := range res.Notices {
			if x.Code == code {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d %s notices in the result, want 1: %+v", n, code, res.Notices)
		}
	}
	seen := map[string]int{}
	for ev, err := range agent.New(deps()).Events(context.Background(), spec) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == agent.EventNotice {
			seen[ev.Notice.Code]++
		}
	}
	if seen[fence.CodeReadFaceClamped] != 1 || seen[fence.CodeWriteFaceClamped] != 1 {
		t.Fatalf("clamp notice events %v, want one per face", seen)
	}
}

// recordingClassifier allows every call and keeps what it was asked.
type recordingClassifier struct {
	mu   sync.Mutex
	seen []permission.ClassifyRequest
}

func (c *recordingClassifier) Classify(_ context.Context, req permission.ClassifyRequest) (permission.Behavior, string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = append(c.seen, req)
	return permission.Allow, "part of the task", nil
}

// A delegated child of an auto leg inherits auto and arms its classifier from its
// ancestor's face (core-mode-policy autoModeFaceOf): the child's write question is
// answered by that classifier, on the child's own transcript, and the child's mode is
// auto, not folded to default for want of a face. With nobody else to ask, a child that
// did not inherit the face would have its write refused.
func TestChildInAutoInheritsTheAncestorsClassifier(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	p := scripted.New(scripted.Script{
		Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{taskCall("t1", "general-purpose", "write it", "CHILD write x")}}, {Text: "done"}},
		Threads: []scripted.Thread{{Match: "CHILD", Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{write("x.txt", "from the child")}}, {Text: "written"}}}},
	})
	cl := &recordingClassifier{}
	evs, res := collect(t, agent.New(agent.Deps{Provider: p, Classifier: cl}).Events(context.Background(),
		agent.TaskSpec{Prompt: "PARENT delegate", Root: root, PermissionMode: permission.ModeAuto}))
	if res.Status != sema.StatusCompleted {
		t.Fatalf("%s %v", res.Status, res.Error)
	}
	if b, err := os.ReadFile(filepath.Join(root, "x.txt")); err != nil || string(b) != "from the child" {
		t.Fatalf("the child's write did not land: %q %v (denials %+v)", b, err, res.PermissionDenials)
	}
	for _, ev := range evs {
		if ev.Type == agent.EventNotice && ev.Notice.Code == permission.CodeModeFolded {
			t.Fatalf("a leg folded its mode: %+v", ev.Notice)
		}
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	var child *permission.ClassifyRequest
	for i, req := range cl.seen {
		if req.Tool == "Write" {
			child = &cl.seen[i]
		}
	}
	if child == nil {
		t.Fatalf("the classifier never judged the child's write: %+v", cl.seen)
	}
	var text strings.Builder
	for _, m := range child.Transcript {
		for _, b := range m.Content {
			text.WriteString(b.Text)
		}
	}
	if !strings.Contains(text.String(), "CHILD write x") || strings.Contains(text.String(), "PARENT delegate") {
		t.Fatalf("the child's question was classified on another transcript: %q", text.String())
	}
}

// A checkpoint records the leg's declared word — its request after the ceiling clamp —
// not the request itself (core-mode-policy PermissionModeController.declared): a child
// whose agent asks for bypassPermissions under a default parent parks its question in a
// row that says default, so the resumed child requests no more than it ran with.
func TestCheckpointRecordsTheDeclaredMode(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, ".sema", "agents")
	must(t, os.MkdirAll(dir, 0o755))
	def := "---\nname: yolo\ndescription: does anything\npermissionMode: bypassPermissions\n---\nYou may do anything.\n"
	must(t, os.WriteFile(filepath.Join(dir, "yolo.md"), []byte(def), 0o644))
	p := scripted.New(scripted.Script{
		Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{taskCall("t1", "yolo", "try", "CHILD write")}}, {Text: "done"}},
		Threads: []scripted.Thread{{Match: "CHILD", Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{write("x.txt", "x")}}, {Text: "tried"}}}},
	})
	store := session.NewMemory()
	t.Cleanup(func() { store.Close() })
	res, err := agent.New(agent.Deps{Provider: p, Store: store}).Run(context.Background(),
		agent.TaskSpec{Prompt: "go", Root: root, OnAsk: agent.OnAskPark})
	must(t, err)
	if res.Status != sema.StatusAwaitingApproval || res.Checkpoint == nil || res.Checkpoint.Subagent == nil {
		t.Fatalf("status %s, checkpoint %+v: the child's write should park", res.Status, res.Checkpoint)
	}
	cp, err := store.Checkpoint(context.Background(), res.Checkpoint.ID)
	must(t, err)
	if cp.Mode != string(permission.ModeDefault) {
		t.Fatalf("the child's checkpoint records mode %q, want the declared default", cp.Mode)
	}
}

// A read-only child (Explore) under a deployment whose write face is open narrows it
// to roots: a clamp whose notice is its only trace. A run read through its result alone,
// with no Deps.OnNotice, still has it — once, though two children clamped.
func TestChildFaceClampNoticeReachesTheResult(t *testing.T) {
	t.Parallel()
	p := scripted.New(scripted.Script{
		Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{
			taskCall("t1", "Explore", "look", "CHILD look"), taskCall("t2", "Explore", "look again", "CHILD look")}}, {Text: "done"}},
		Threads: []scripted.Thread{{Match: "CHILD", Turns: []scripted.Turn{{Text: "looked"}}}},
	})
	res, err := agent.New(agent.Deps{Provider: p, Policy: &agent.Policy{WriteFace: fence.FaceOpen}}).
		Run(context.Background(), agent.TaskSpec{Prompt: "go", Root: t.TempDir()})
	must(t, err)
	if res.Status != sema.StatusCompleted || len(res.Subagents) != 2 {
		t.Fatalf("%s, %d children", res.Status, len(res.Subagents))
	}
	if res.Manifest.WriteFace != "open" {
		t.Fatalf("the parent's write face %q, want the deployment's open", res.Manifest.WriteFace)
	}
	n := 0
	for _, x := range res.Notices {
		if x.Code == fence.CodeWriteFaceClamped {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d %s notices in the result, want 1: %+v", n, fence.CodeWriteFaceClamped, res.Notices)
	}
}
