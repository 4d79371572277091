package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
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
