package agent_test

import (
	"context"
	"testing"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/session"
)

// The session records the mode its leg asked for (a resume asks for it again) and the mode
// the leg ran in after the deployment's folds (listings show it).
func TestSessionRecordsTheEffectiveMode(t *testing.T) {
	t.Parallel()
	store := session.NewMemory()
	model := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "ok"}}})
	r := agent.New(agent.Deps{Provider: model, Store: store, Policy: &agent.Policy{DenyBypassPermissions: true}})
	res, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "hi", Root: t.TempDir(), PermissionMode: "bypassPermissions"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.Get(context.Background(), res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if s.Mode != "bypassPermissions" || s.EffectiveMode != "default" {
		t.Fatalf("mode %q, effective %q; want bypassPermissions folded to default", s.Mode, s.EffectiveMode)
	}
}
