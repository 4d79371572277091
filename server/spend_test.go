package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/internal/pgtest"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/server"
)

// TestKilledLegsTokensCounted: a leg whose process dies mid-tool, after a model turn of
// 7,000 tokens, never writes its end; the next process goes on from the transcript and
// spends 7,000 more. The tenant's day holds both: with 14,000 tokens a day the next
// task is refused, naming 14,000 spent. Calibrated: when a leg's spend was written
// only with its end, the day held 7,000 and the next task ran.
func TestKilledLegsTokensCounted(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		c, task := restartMidTool(t, st, 14000, nil)
		done := waitStatus(t, c, task, "completed")
		if got := spentBy(t, done); got != 7000 {
			t.Fatalf("the second leg reports %d tokens, want 7000 (its one turn): the test proves nothing", got)
		}
		_, err := c.SubmitTask(context.Background(), client.TaskSpec{Prompt: "more", Cwd: "."})
		if codeOf(err) != server.CodeTokenLimit || !strings.Contains(err.Error(), "spent 14000 of its 14000") {
			t.Fatalf("a task after both legs' 14,000 tokens: %v; want tenant.token_limit naming 14000 spent", err)
		}
	})
}

// restartMidTool submits a task whose first turn (7,000 tokens) runs a 30-second
// command, stops the process mid-command without the leg's end — a shutdown with no
// grace cancels the leg, which hands its job back and writes no result, as a kill
// leaves it — and starts another process on the same store, which goes on with the
// task (a second turn of 7,000 tokens). It returns the second process's client and the
// task's id. tune changes both processes' config.
func restartMidTool(t *testing.T, st store, tokensPerDay int64, tune func(*server.Config)) (*client.Client, string) {
	t.Helper()
	ctx := context.Background()
	cfg := server.Config{Home: t.TempDir(), Poll: 20 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if st == "postgres" {
		cfg.Postgres = pgtest.Schema(t)
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	turn := &model.Usage{InputTokens: 6000, OutputTokens: 1000}
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "Bash", Input: []byte(`{"command":"sleep 30"}`)}}, Usage: turn},
		{Text: "done", Usage: turn},
	}})
	cfg.OpenProvider = func(string) (model.Provider, string, error) { return p, "scripted", nil }
	if tune != nil {
		tune(&cfg)
	}
	start := func() (*server.Server, *httptest.Server) {
		srv, err := server.New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return srv, httptest.NewServer(srv.Handler())
	}

	first, firstHTTP := start()
	tok, err := first.CreateToken(ctx, "acme", base, server.TenantConfig{TokensPerDay: tokensPerDay})
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(firstHTTP.URL, tok)
	task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "wait", Cwd: base, AllowedTools: []string{"Bash(sleep:*)"}})
	if err != nil {
		t.Fatal(err)
	}
	waitEventType(t, c, task.TaskID, "tool_use")
	gone, cancel := context.WithCancel(ctx)
	cancel()
	first.Shutdown(gone)
	firstHTTP.Close()
	first.Close()

	second, secondHTTP := start()
	t.Cleanup(func() {
		secondHTTP.Close()
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		second.Shutdown(sctx)
		second.Close()
	})
	return client.New(secondHTTP.URL, tok), task.TaskID
}

// waitEventType follows a task's stream until an event of type typ arrives.
func waitEventType(t *testing.T, c *client.Client, id, typ string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ev, err := range c.Events(ctx, id, 0) {
		if err != nil {
			t.Fatalf("waiting for a %s event: %v", typ, err)
		}
		if ev.Type == typ {
			return
		}
	}
	t.Fatalf("the stream ended without a %s event", typ)
}

// TestParkedTurnsCountOnce: a task parks after a turn of 7,000 tokens, is approved and
// resumes for a turn of 7,000 more; the day holds 14,000, the resumed leg's replay of
// the parked turn adding nothing.
func TestParkedTurnsCountOnce(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		turn := &model.Usage{InputTokens: 6000, OutputTokens: 1000}
		f := newFixture(t, st, func(base string) []scripted.Turn {
			call := writeCall(filepath.Join(base, "out.txt"), "x\n")
			return []scripted.Turn{{ToolCalls: []scripted.ToolCall{call}, Usage: turn}, {Text: "done", Usage: turn}}
		})
		ctx := context.Background()
		tok, err := f.srv.CreateToken(ctx, "acme", f.base, server.TenantConfig{TokensPerDay: 14000})
		if err != nil {
			t.Fatal(err)
		}
		c := client.New(f.http.URL, tok)
		task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "write", Cwd: f.base})
		if err != nil {
			t.Fatal(err)
		}
		parked := waitStatus(t, c, task.TaskID, client.StatusAwaitingApproval)
		if _, err := c.Decide(ctx, parked.CheckpointID, client.Decision{Decision: "allow"}); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, c, task.TaskID, "completed")
		_, err = c.SubmitTask(ctx, client.TaskSpec{Prompt: "more", Cwd: f.base})
		if codeOf(err) != server.CodeTokenLimit || !strings.Contains(err.Error(), "spent 14000 of its 14000") {
			t.Fatalf("a task after two turns of 7,000: %v; want tenant.token_limit naming 14000 spent", err)
		}
	})
}
