package server_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/server"
	"github.com/sema-agent/sema/session"
)

// TestReplayOfAServiceSession: a session the service recorded replays from its store
// (on SQLite and Postgres alike), identical, with no model; a deny rule the tenant's
// policy gained since refuses the recorded Read, and the replay names it; a session the
// service does not hold is refused by name.
func TestReplayOfAServiceSession(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		f := newFixture(t, st, func(base string) []scripted.Turn {
			return []scripted.Turn{{ToolCalls: []scripted.ToolCall{{Name: "Read", Input: []byte(`{"file_path":"notes.txt"}`)}}}, {Text: "it says one"}}
		})
		os.WriteFile(filepath.Join(f.base, "notes.txt"), []byte("one\n"), 0o644)
		c := f.client(t, "acme", f.base)
		ctx := context.Background()
		task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "read the notes", Cwd: f.base})
		if err != nil {
			t.Fatal(err)
		}
		done := waitStatus(t, c, task.TaskID, "completed")
		rep, err := f.srv.ReplaySession(ctx, done.SessionID, server.ReplayOptions{})
		if err != nil || rep.Status != "identical" || rep.Calls != 1 {
			t.Fatalf("the replay: %+v, %v; want one call, identical", rep, err)
		}
		if err := f.srv.SetPolicy(ctx, "acme", server.Policy{Deny: []string{"Read(notes.txt)"}}); err != nil {
			t.Fatal(err)
		}
		rep, err = f.srv.ReplaySession(ctx, done.SessionID, server.ReplayOptions{})
		if err != nil || rep.Status != "diverged" || len(rep.Divergences) != 1 || rep.Divergences[0].Tool != "Read" {
			t.Fatalf("the replay under the tenant's new deny rule: %+v, %v", rep, err)
		}
		if !strings.Contains(strings.ToLower(rep.Divergences[0].Reason), "deny") && !strings.Contains(rep.Divergences[0].Reason, "Read(notes.txt)") {
			t.Errorf("the divergence does not say the rule refused it: %+v", rep.Divergences[0])
		}
		if b, _ := os.ReadFile(filepath.Join(f.base, "notes.txt")); string(b) != "one\n" {
			t.Errorf("the workspace changed: %q", b)
		}
		if _, err := f.srv.ReplaySession(ctx, "no-such-session", server.ReplayOptions{}); !sema.IsCode(err, session.CodeNotFound) {
			t.Errorf("an unknown session: %v", err)
		}
	})
}
