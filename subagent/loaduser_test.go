package subagent

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sema-agent/sema/env"
)

// LoadUser reads ~/.claude/agents, and a catalog with the project's files above it lets
// the project's definition of a name win, as Claude Code does.
func TestLoadUserBelowTheProject(t *testing.T) {
	t.Parallel()
	home, root := tempRoot(t), tempRoot(t)
	writeFile(t, filepath.Join(home, ".claude", "agents", "reviewer.md"), agent("reviewer", "My own reviewer."))
	writeFile(t, filepath.Join(home, ".claude", "agents", "helper.md"), agent("helper", "My helper."))
	writeFile(t, filepath.Join(root, ".claude", "agents", "reviewer.md"), agent("reviewer", "The project's reviewer."))
	e := env.NewHost()
	user, problems := LoadUser(context.Background(), e, home)
	if len(problems) != 0 || len(user) != 2 {
		t.Fatalf("user: %v %v", user, problems)
	}
	project, _ := Load(context.Background(), e, root)
	c := NewCatalog(BuiltIns(), user, project)
	if d, _ := c.Lookup("reviewer"); d.Description != "The project's reviewer." {
		t.Errorf("reviewer: %q, want the project's", d.Description)
	}
	if _, ok := c.Lookup("helper"); !ok {
		t.Error("the user's own agent is not in the catalog")
	}
	if defs, problems := LoadUser(context.Background(), e, ""); defs != nil || problems != nil {
		t.Errorf("no home: %v %v", defs, problems)
	}
}
