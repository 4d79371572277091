package server_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/server"
)

// gated holds the model's first answer until open is closed, so a test can act while a
// leg runs.
type gated struct {
	model.Provider
	open     chan struct{}
	once     sync.Once
	inFlight chan struct{} // closed when the first request waits at the gate
}

func (g *gated) Stream(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	first := false
	g.once.Do(func() { first = true; close(g.inFlight) })
	if first {
		select {
		case <-g.open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.Provider.Stream(ctx, req, onDelta)
}

// TestModeOfARunningTask: a task started in default mode is switched to acceptEdits while
// its leg waits for the model; the leg in this process takes it at once (200, applied),
// its stream says so, and the write the model then asks for runs without a question.
// Calibrated: the same task left in default mode parks at that write.
func TestModeOfARunningTask(t *testing.T) {
	for _, change := range []bool{true, false} {
		t.Run(map[bool]string{true: "changed", false: "unchanged"}[change], func(t *testing.T) {
			var g *gated
			f := newFixtureWith(t, "sqlite", noTurns, func(c *server.Config) {
				g = &gated{open: make(chan struct{}), inFlight: make(chan struct{})}
				c.OpenProvider = func(string) (model.Provider, string, error) { return g, "scripted", nil }
			})
			g.Provider = scripted.New(scripted.Script{Turns: []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{writeCall(filepath.Join(f.base, "out.txt"), "hi\n")}}, {Text: "wrote it"}}})
			c := f.client(t, "acme", f.base)
			ctx := context.Background()
			task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "write", Cwd: f.base})
			if err != nil {
				t.Fatal(err)
			}
			<-g.inFlight
			if change {
				got, err := c.SetMode(ctx, task.TaskID, "acceptEdits")
				if err != nil || !got.Applied || got.PermissionMode != "acceptEdits" {
					t.Fatalf("SetMode: %+v, %v; want acceptEdits applied by the running leg", got, err)
				}
			}
			close(g.open)
			if !change {
				waitStatus(t, c, task.TaskID, client.StatusAwaitingApproval)
				if _, err := os.Stat(filepath.Join(f.base, "out.txt")); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("default mode wrote before a decision: %v", err)
				}
				return
			}
			waitStatus(t, c, task.TaskID, "completed")
			if b, err := os.ReadFile(filepath.Join(f.base, "out.txt")); err != nil || string(b) != "hi\n" {
				t.Fatalf("out.txt %q, %v", b, err)
			}
			notices := 0
			for _, ev := range follow(t, c, task.TaskID, 0) {
				if ev.Type == client.EventNotice && strings.Contains(string(ev.Data), server.CodeModeChanged) {
					notices++
				}
			}
			if notices != 1 {
				t.Errorf("%d %s notices on the stream, want 1", notices, server.CodeModeChanged)
			}
		})
	}
}

// TestModeOfAParkedTask: changed while the task waits at a question, the word is stored
// (202) and the leg that resumes after the decision takes it: the next write runs
// without a second question.
// parkedAtTheFirstOfTwoWrites is tenant acme's task that writes a.txt, then b.txt, in
// the default mode, waiting at the question of its first Write.
func parkedAtTheFirstOfTwoWrites(t *testing.T, st store) (*fixture, *client.Client, *client.Task, *client.Task) {
	t.Helper()
	f := newFixture(t, st, func(base string) []scripted.Turn {
		return []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{writeCall(filepath.Join(base, "a.txt"), "a\n")}},
			{ToolCalls: []scripted.ToolCall{writeCall(filepath.Join(base, "b.txt"), "b\n")}},
			{Text: "both written"},
		}
	})
	c := f.client(t, "acme", f.base)
	task, err := c.SubmitTask(context.Background(), client.TaskSpec{Prompt: "write two", Cwd: f.base})
	if err != nil {
		t.Fatal(err)
	}
	return f, c, task, waitStatus(t, c, task.TaskID, client.StatusAwaitingApproval)
}

func TestModeOfAParkedTask(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		f, c, task, parked := parkedAtTheFirstOfTwoWrites(t, st)
		ctx := context.Background()
		got, err := c.SetMode(ctx, task.TaskID, "acceptEdits")
		if err != nil || got.Applied || got.PermissionMode != "acceptEdits" {
			t.Fatalf("SetMode on a parked task: %+v, %v; want the word stored, not applied", got, err)
		}
		if _, err := c.Decide(ctx, parked.CheckpointID, client.Decision{Decision: "allow"}); err != nil {
			t.Fatal(err)
		}
		done := waitStatus(t, c, task.TaskID, "completed")
		for _, name := range []string{"a.txt", "b.txt"} {
			if _, err := os.Stat(filepath.Join(f.base, name)); err != nil {
				t.Errorf("%s: %v (status %s)", name, err, done.Status)
			}
		}
	})
}

// The refusals: a word that is no mode, a mode the tenant's policy does not allow
// (bypassPermissions by default), an ended task, another tenant's task, no word.
func TestModeRefusals(t *testing.T) {
	f := newFixture(t, "sqlite", func(string) []scripted.Turn { return []scripted.Turn{{Text: "hi"}} })
	c := f.client(t, "acme", f.base)
	other := f.client(t, "other", f.base)
	ctx := context.Background()
	task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "hi", Cwd: f.base})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, task.TaskID, "completed")
	for _, tc := range []struct {
		c    *client.Client
		mode string
		code string
	}{
		{c, "fast", "config.permission_mode_invalid"},
		{c, "bypassPermissions", "tenant.policy_mode"},
		{c, "", "request.invalid"},
		{c, "plan", "task.conflict"},
		{other, "plan", "request.not_found"},
	} {
		if _, err := tc.c.SetMode(ctx, task.TaskID, tc.mode); codeOf(err) != tc.code {
			t.Errorf("mode %q: %v; want %s", tc.mode, err, tc.code)
		}
	}
}

// A mode asked for while a task waited is judged by the tenant's policy when the next
// leg starts, not only when it was asked: an operator who took the mode out of the
// policy meanwhile is obeyed. Calibrated: applied unjudged, acceptEdits let the second
// Write run without a question.
func TestModeAskedWhileParkedIsJudgedWhenTheLegStarts(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		f, c, task, parked := parkedAtTheFirstOfTwoWrites(t, st)
		ctx := context.Background()
		if _, err := c.SetMode(ctx, task.TaskID, "acceptEdits"); err != nil {
			t.Fatal(err)
		}
		if err := f.srv.SetPolicy(ctx, "acme", server.Policy{PermissionModes: []string{"default"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Decide(ctx, parked.CheckpointID, client.Decision{Decision: "allow"}); err != nil {
			t.Fatal(err)
		}
		again := waitStatus(t, c, task.TaskID, client.StatusAwaitingApproval)
		if again.CheckpointID == parked.CheckpointID {
			t.Fatal("the task still waits at the answered question")
		}
		if _, err := os.Stat(filepath.Join(f.base, "b.txt")); !os.IsNotExist(err) {
			t.Errorf("the second Write ran in a mode the policy no longer allows: %v", err)
		}
	})
}
