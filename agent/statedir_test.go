package agent_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/statedir"
)

func TestWithStateDirFillsTheThreeSeats(t *testing.T) {
	t.Parallel()
	d, err := statedir.Open(context.Background(), filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	in := agent.Deps{Policy: &agent.Policy{DenyGlobs: []string{"/secret/**"}}, MemoryDir: "/notes", StateDir: "/elsewhere", Store: session.NewMemory()}
	got := in.WithStateDir(d)
	if got.Store != d.Sessions() || got.History != d.History() || got.StateDir != d.Path() {
		t.Fatalf("WithStateDir seats: Store=%v History=%v StateDir=%q", got.Store, got.History, got.StateDir)
	}
	if got.MemoryDir != "/notes" || got.Policy != in.Policy || len(got.Policy.DenyGlobs) != 1 || got.Policy.DenyGlobs[0] != "/secret/**" {
		t.Fatalf("WithStateDir changed other fields: %+v", got)
	}
}
