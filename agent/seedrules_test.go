package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
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
