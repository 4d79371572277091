package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/internal/pgtest"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/server"
	"github.com/sema-agent/sema/settings"
)

// TestHostileTenantIsRefusedByName: a tenant asks for what its policy (the default one,
// then one the operator set) does not allow — bypassPermissions, a model the operator
// did not list (the scripted provider reading a server file among them), more turns or
// dollars than its bound, a mode outside its list. Each is refused by its name before
// it is queued: the tenant owns no session afterwards. What the policy allows runs.
func TestHostileTenantIsRefusedByName(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		f := newFixture(t, st, func(string) []scripted.Turn { return []scripted.Turn{{Text: "done"}} })
		ctx := context.Background()
		c := f.client(t, "mallory", f.base)
		refused := func(name string, spec client.TaskSpec, code string) {
			t.Helper()
			spec.Prompt, spec.Cwd = "p", f.base
			task, err := c.SubmitTask(ctx, spec)
			if codeOf(err) != code {
				t.Errorf("%s: got %+v, %v; want %s", name, task, err, code)
			}
		}
		refused("bypass by default", client.TaskSpec{PermissionMode: "bypassPermissions"}, "tenant.policy_mode")
		refused("scripted provider", client.TaskSpec{Model: "scripted//etc/passwd"}, "tenant.policy_model")
		refused("unlisted model", client.TaskSpec{Model: "anthropic/claude-opus-4-1"}, "tenant.policy_model")

		err := f.srv.SetPolicy(ctx, "mallory", server.Policy{
			PermissionModes: []string{"default", "plan"}, MaxTurns: 3, MaxUSDPerTask: 1,
		})
		if err != nil {
			t.Fatal(err)
		}
		refused("mode outside the list", client.TaskSpec{PermissionMode: "acceptEdits"}, "tenant.policy_mode")
		refused("bypass not listed", client.TaskSpec{PermissionMode: "bypassPermissions"}, "tenant.policy_mode")
		refused("turns", client.TaskSpec{MaxTurns: 4}, "tenant.policy_max_turns")
		refused("dollars", client.TaskSpec{MaxBudgetUSD: 1.5}, "tenant.policy_budget")
		if ss, err := c.Sessions(ctx); err != nil || len(ss) != 0 {
			t.Fatalf("refused tasks left sessions behind: %+v (%v)", ss, err)
		}

		// A dollar bound needs the model's price, which the fixture's scripted model has not.
		if err := f.srv.SetPolicy(ctx, "mallory", server.Policy{PermissionModes: []string{"default", "plan"}, MaxTurns: 3}); err != nil {
			t.Fatal(err)
		}
		task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "p", Cwd: f.base, PermissionMode: "plan", MaxTurns: 3})
		if err != nil {
			t.Fatalf("a task within the policy: %v", err)
		}
		waitStatus(t, c, task.TaskID, "completed")

		// A message in the tenant's own session is held to the same policy.
		for _, m := range []struct {
			msg  client.Message
			code string
		}{
			{client.Message{Prompt: "p", PermissionMode: "bypassPermissions"}, "tenant.policy_mode"},
			{client.Message{Prompt: "p", Model: "scripted//etc/passwd"}, "tenant.policy_model"},
			{client.Message{Prompt: "p", MaxTurns: 9}, "tenant.policy_max_turns"},
		} {
			if next, err := c.Message(ctx, task.SessionID, m.msg); codeOf(err) != m.code {
				t.Errorf("message %+v: %+v, %v; want %s", m.msg, next, err, m.code)
			}
		}
	})
}

// TestPolicyRulesBindEveryLeg: the policy's deny rule holds against a task that allows
// the tool itself and runs in acceptEdits: the write never happens.
func TestPolicyRulesBindEveryLeg(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		f := newFixture(t, st, func(base string) []scripted.Turn {
			return []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{writeCall(filepath.Join(base, "x.txt"), "x")}},
				{Text: "done"},
			}
		})
		ctx := context.Background()
		c := f.client(t, "mallory", f.base)
		if err := f.srv.SetPolicy(ctx, "mallory", server.Policy{Deny: []string{"Write"}}); err != nil {
			t.Fatal(err)
		}
		task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "write", Cwd: f.base, PermissionMode: "acceptEdits", AllowedTools: []string{"Write"}})
		if err != nil {
			t.Fatal(err)
		}
		waitStatus(t, c, task.TaskID, "completed")
		if _, err := os.Stat(filepath.Join(f.base, "x.txt")); !os.IsNotExist(err) {
			t.Fatalf("the policy denied Write, yet x.txt exists (%v)", err)
		}
	})
}

// TestPolicyAskHoldsAgainstTheTasksAllow: the policy's ask rule parks the call though
// the task allows the tool and runs in acceptEdits; nothing is written before a decision.
func TestPolicyAskHoldsAgainstTheTasksAllow(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		f := newFixture(t, st, func(base string) []scripted.Turn {
			return []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{writeCall(filepath.Join(base, "x.txt"), "x")}},
				{Text: "done"},
			}
		})
		ctx := context.Background()
		c := f.client(t, "mallory", f.base)
		if err := f.srv.SetPolicy(ctx, "mallory", server.Policy{Ask: []string{"Write"}}); err != nil {
			t.Fatal(err)
		}
		task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "write", Cwd: f.base, PermissionMode: "acceptEdits", AllowedTools: []string{"Write"}})
		if err != nil {
			t.Fatal(err)
		}
		waitStatus(t, c, task.TaskID, client.StatusAwaitingApproval)
		if _, err := os.Stat(filepath.Join(f.base, "x.txt")); !os.IsNotExist(err) {
			t.Fatalf("the policy asks before Write, yet x.txt exists (%v)", err)
		}
	})
}

// TestPolicyFileForm refuses a policy file that cannot be applied, naming the field.
func TestPolicyFileForm(t *testing.T) {
	for _, tc := range []struct{ in, mention string }{
		{`{"permission_modes":["root"]}`, "permission_modes"},
		{`{"deny":["Bash("]}`, "deny"},
		{`{"sandbox":"maybe"}`, "sandbox"},
		{`{"network":"yes"}`, "network"},
		{`{"max_turns":-1}`, "max_turns"},
		{`{"max_usd_per_task":-2}`, "max_usd_per_task"},
		{`{"max_turn":3}`, "max_turn"},
		{`{} {}`, "more than one"},
	} {
		_, err := server.ParsePolicy([]byte(tc.in))
		if sema.CodeOf(err) != "tenant.policy_invalid" || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("%s: %v, want tenant.policy_invalid naming %s", tc.in, err, tc.mention)
		}
	}
	p, err := server.ParsePolicy([]byte(`{"permission_modes":["default","bypassPermissions"],"models":["openai/gpt-4.1"],"deny":["Bash(curl:*)"],"ask":["Bash"],"sandbox":"required","network":"off","max_turns":5,"max_tokens_per_task":1000,"max_usd_per_task":0.5}`))
	if err != nil || p.Sandbox != "required" || p.MaxTokensPerTask != 1000 || len(p.PermissionModes) != 2 {
		t.Fatalf("a full policy: %+v, %v", p, err)
	}
}

// queueOnly starts n API processes on one store that run no tasks, so that every
// accepted task stays queued, and returns their URLs and the first service.
func queueOnly(t *testing.T, st store, n int) ([]string, *server.Server, string) {
	t.Helper()
	cfg := server.Config{Home: t.TempDir(), NoWorker: true, Poll: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if st == "postgres" {
		cfg.Postgres = pgtest.Schema(t)
	}
	p := scripted.New(scripted.Script{})
	cfg.OpenProvider = func(string) (model.Provider, string, error) { return p, "scripted", nil }
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	var first *server.Server
	for range n {
		srv, err := server.New(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv.Handler())
		t.Cleanup(func() {
			hs.Close()
			srv.Shutdown(context.Background())
			srv.Close()
		})
		urls = append(urls, hs.URL)
		if first == nil {
			first = srv
		}
	}
	return urls, first, base
}

// TestConcurrencyLimitHoldsAcrossNodes: many submissions at the same instant, through
// two processes on Postgres (one on SQLite, whose serve.db is one process's), for a
// tenant that may have 3 tasks queued: exactly 3 are accepted, every other is
// tenant.concurrency_limit. Repeated, since a race shows only sometimes.
func TestConcurrencyLimitHoldsAcrossNodes(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		nodes := 1
		if st == "postgres" {
			nodes = 2
		}
		const limit, n, rounds = 3, 24, 5
		for round := range rounds {
			urls, srv, base := queueOnly(t, st, nodes)
			tok, err := srv.CreateToken(context.Background(), "acme", base, server.TenantConfig{MaxConcurrent: limit})
			if err != nil {
				t.Fatal(err)
			}
			start := make(chan struct{})
			var wg sync.WaitGroup
			var mu sync.Mutex
			accepted, other := 0, []string{}
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c := client.New(urls[i%len(urls)], tok)
					<-start
					_, err := c.SubmitTask(context.Background(), client.TaskSpec{Prompt: "p", Cwd: base})
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						accepted++
					case codeOf(err) != "tenant.concurrency_limit":
						other = append(other, err.Error())
					}
				}()
			}
			close(start)
			wg.Wait()
			if accepted != limit || len(other) > 0 {
				t.Fatalf("round %d: %d of %d submissions accepted with a limit of %d; other answers %q", round, accepted, n, limit, other)
			}
		}
	})
}

// TestDailyTokensHoldDuringTheRun: a tenant with 30,000 tokens a day runs a task whose
// model reports 7,000 tokens a turn for six turns: the leg stops before the day's
// tokens run out (budget_exceeded), not after spending 42,000, and the next task gets
// only what is left (or is refused).
func TestDailyTokensHoldDuringTheRun(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		f := newFixture(t, st, func(base string) []scripted.Turn {
			var turns []scripted.Turn
			for i := range 5 {
				in, _ := json.Marshal(map[string]any{"file_path": filepath.Join(base, "f.txt"), "offset": i + 1})
				turns = append(turns, scripted.Turn{
					ToolCalls: []scripted.ToolCall{{Name: "Read", Input: in}},
					Usage:     &model.Usage{InputTokens: 6000, OutputTokens: 1000},
				})
			}
			return append(turns, scripted.Turn{Text: "done", Usage: &model.Usage{InputTokens: 6000, OutputTokens: 1000}})
		})
		if err := os.WriteFile(filepath.Join(f.base, "f.txt"), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		tok, err := f.srv.CreateToken(ctx, "acme", f.base, server.TenantConfig{TokensPerDay: 30000})
		if err != nil {
			t.Fatal(err)
		}
		c := client.New(f.http.URL, tok)
		task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "read it over and over", Cwd: f.base, PermissionMode: "acceptEdits"})
		if err != nil {
			t.Fatal(err)
		}
		spent := spentBy(t, waitStatus(t, c, task.TaskID, "budget_exceeded"))
		if spent < 7000 || spent > 30000 {
			t.Fatalf("the leg spent %d tokens of a 30,000-token day", spent)
		}
		// The next task gets what is left of the day, and no more.
		next, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "more", Cwd: f.base, PermissionMode: "acceptEdits"})
		if err == nil {
			spent += spentBy(t, waitStatus(t, c, next.TaskID, "budget_exceeded"))
		} else if codeOf(err) != "tenant.token_limit" {
			t.Fatalf("a task after the day's tokens: %v", err)
		}
		if spent > 30000 {
			t.Fatalf("two tasks spent %d tokens of a 30,000-token day", spent)
		}
	})
}

// spentBy is the tokens a finished task's result reports.
func spentBy(t *testing.T, task *client.Task) int64 {
	t.Helper()
	var res struct {
		Usage model.Usage `json:"usage"`
	}
	if err := json.Unmarshal(task.Result, &res); err != nil {
		t.Fatal(err)
	}
	u := res.Usage
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
}

// TestPolicySandboxAndNetwork: a policy that requires the sandbox runs the leg with it
// on (a machine that cannot confine refuses to start it, sandbox.unavailable, rather
// than run it unconfined), and a policy with the network off keeps it off.
func TestPolicySandboxAndNetwork(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		f := newFixture(t, st, func(string) []scripted.Turn { return []scripted.Turn{{Text: "done"}} })
		ctx := context.Background()
		c := f.client(t, "mallory", f.base)
		if err := f.srv.SetPolicy(ctx, "mallory", server.Policy{Sandbox: "required", Network: "off"}); err != nil {
			t.Fatal(err)
		}
		task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "p", Cwd: f.base})
		if err != nil {
			t.Fatal(err)
		}
		var done *client.Task
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if done, err = c.Task(ctx, task.TaskID); err != nil {
				t.Fatal(err)
			}
			if done.Terminal() || time.Now().After(deadline) {
				break
			}
		}
		var res struct {
			Status   string `json:"status"`
			Error    struct{ Code string }
			Manifest struct {
				Shell struct {
					Sandbox struct {
						Mode    string `json:"mode"`
						Network bool   `json:"network"`
					} `json:"sandbox"`
				} `json:"shell"`
			} `json:"manifest"`
		}
		if err := json.Unmarshal(done.Result, &res); err != nil {
			t.Fatal(err)
		}
		switch {
		case res.Status == "error" && res.Error.Code == "sandbox.unavailable":
			t.Logf("this kernel cannot confine commands: the leg was refused, not run unconfined")
		case res.Status != "completed" || res.Manifest.Shell.Sandbox.Mode != "on" || res.Manifest.Shell.Sandbox.Network:
			t.Fatalf("a leg under sandbox required, network off: %s", done.Result)
		}
	})
}

// TestManagedSettingsApplyToEveryTask: the machine's managed policy (Config.
// ManagedSettings) binds every tenant's task: its deny rule holds against a task that
// allows the tool in acceptEdits, whatever the tenant's own policy says.
func TestManagedSettingsApplyToEveryTask(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		ctx := context.Background()
		managed, err := settings.Parse([]byte(`{"permissions":{"deny":["Write"]}}`), "managed-settings.json", settings.Managed)
		if err != nil {
			t.Fatal(err)
		}
		cfg := server.Config{Home: t.TempDir(), Poll: 20 * time.Millisecond, ManagedSettings: &managed,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		if st == "postgres" {
			cfg.Postgres = pgtest.Schema(t)
		}
		base, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		p := scripted.New(scripted.Script{Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{writeCall(filepath.Join(base, "x.txt"), "x")}},
			{Text: "done"},
		}})
		cfg.OpenProvider = func(string) (model.Provider, string, error) { return p, "scripted", nil }
		srv, err := server.New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(ctx); err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv.Handler())
		t.Cleanup(func() {
			hs.Close()
			srv.Shutdown(context.Background())
			srv.Close()
		})
		tok, err := srv.CreateToken(ctx, "mallory", base, server.TenantConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.SetPolicy(ctx, "mallory", server.Policy{PermissionModes: []string{"acceptEdits", "bypassPermissions"}}); err != nil {
			t.Fatal(err)
		}
		c := client.New(hs.URL, tok)
		task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "write", Cwd: base, PermissionMode: "acceptEdits", AllowedTools: []string{"Write"}})
		if err != nil {
			t.Fatal(err)
		}
		waitStatus(t, c, task.TaskID, "completed")
		if _, err := os.Stat(filepath.Join(base, "x.txt")); !os.IsNotExist(err) {
			t.Fatalf("the managed policy denies Write, yet x.txt exists (%v)", err)
		}
	})
}

// TestDailyTokensHoldAcrossConcurrentLegs: three tasks of a tenant with 30,000 tokens a
// day run at once, each wanting six turns of 7,000 tokens. Each leg alone would stay
// under what was left when it started (30,000, as none had spent yet), together 84,000;
// the day holds instead: once the tenant's running legs reach it, each stops after at
// most the response it was waiting for (or, started after the day is spent, at once).
func TestDailyTokensHoldAcrossConcurrentLegs(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		const legs = 3
		ctx := context.Background()
		cfg := server.Config{Home: t.TempDir(), Poll: 20 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		if st == "postgres" {
			cfg.Postgres = pgtest.Schema(t)
		}
		base, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(base, "f.txt"), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		var script scripted.Script
		for l := range legs {
			var turns []scripted.Turn
			for i := range 5 {
				in, _ := json.Marshal(map[string]any{"file_path": filepath.Join(base, "f.txt"), "offset": i + 1})
				turns = append(turns, scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "Read", Input: in}},
					Usage: &model.Usage{InputTokens: 6000, OutputTokens: 1000}})
			}
			turns = append(turns, scripted.Turn{Text: "done", Usage: &model.Usage{InputTokens: 6000, OutputTokens: 1000}})
			script.Threads = append(script.Threads, scripted.Thread{Match: "leg-" + string(rune('a'+l)), Turns: turns})
		}
		p := scripted.New(script)
		cfg.OpenProvider = func(string) (model.Provider, string, error) { return p, "scripted", nil }
		srv, err := server.New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(ctx); err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv.Handler())
		t.Cleanup(func() {
			hs.Close()
			srv.Shutdown(context.Background())
			srv.Close()
		})
		tok, err := srv.CreateToken(ctx, "acme", base, server.TenantConfig{TokensPerDay: 30000})
		if err != nil {
			t.Fatal(err)
		}
		c := client.New(hs.URL, tok)
		var ids []string
		for l := range legs {
			task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "leg-" + string(rune('a'+l)), Cwd: base, PermissionMode: "acceptEdits"})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, task.TaskID)
		}
		var total int64
		for _, id := range ids {
			var done *client.Task
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if done, err = c.Task(ctx, id); err != nil {
					t.Fatal(err)
				}
				if done.Terminal() {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("task %s is still %s", id, done.Status)
				}
			}
			// A leg stops once the day is spent; one that starts only after the others spent
			// it (scripted turns are instant) is refused as it starts.
			if done.Status != "budget_exceeded" && !(done.Status == "error" && strings.Contains(string(done.Result), `"tenant.token_limit"`)) {
				t.Errorf("task %s ended %s, want budget_exceeded: six turns each do not fit a shared 30,000-token day: %s", id, done.Status, done.Result)
			}
			var res struct {
				Usage model.Usage `json:"usage"`
			}
			json.Unmarshal(done.Result, &res)
			total += res.Usage.InputTokens + res.Usage.OutputTokens
			t.Logf("task %s: %s, %d tokens", id, done.Status, res.Usage.InputTokens+res.Usage.OutputTokens)
		}
		if max := int64(30000 + legs*7000); total > max {
			t.Fatalf("%d legs spent %d tokens of a 30,000-token day (at most %d: one response each past it)", legs, total, max)
		}
	})
}

// TestDecisionHoldsTheConcurrencyLimit: a parked task holds no slot, so a tenant with a
// limit of one could park many and approve them together; a decision that would put a
// task back in the queue while another runs is refused (tenant.concurrency_limit, the
// checkpoint left open), and taken once the running one ends.
func TestDecisionHoldsTheConcurrencyLimit(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		f := newFixture(t, st, func(base string) []scripted.Turn { return nil })
		*f.model = *scripted.New(scripted.Script{Threads: []scripted.Thread{
			{Match: "park", Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{writeCall(filepath.Join(f.base, "x.txt"), "x")}}, {Text: "done"}}},
			{Match: "sleep", Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{{Name: "Bash", Input: json.RawMessage(`{"command":"sleep 3"}`)}}}, {Text: "done"}}},
		}})
		ctx := context.Background()
		tok, err := f.srv.CreateToken(ctx, "acme", f.base, server.TenantConfig{MaxConcurrent: 1})
		if err != nil {
			t.Fatal(err)
		}
		c := client.New(f.http.URL, tok)
		parkedTask, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "park", Cwd: f.base})
		if err != nil {
			t.Fatal(err)
		}
		parked := waitStatus(t, c, parkedTask.TaskID, client.StatusAwaitingApproval)
		sleeper, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "sleep", Cwd: f.base, AllowedTools: []string{"Bash"}})
		if err != nil {
			t.Fatal(err)
		}
		waitStatus(t, c, sleeper.TaskID, client.StatusRunning)
		if _, err := c.Decide(ctx, parked.CheckpointID, client.Decision{Decision: "allow"}); codeOf(err) != "tenant.concurrency_limit" {
			t.Fatalf("a decision while the tenant's one slot runs: %v, want tenant.concurrency_limit", err)
		}
		waitStatus(t, c, sleeper.TaskID, "completed")
		if _, err := c.Decide(ctx, parked.CheckpointID, client.Decision{Decision: "allow"}); err != nil {
			t.Fatalf("the decision once the slot is free: %v", err)
		}
		waitStatus(t, c, parkedTask.TaskID, "completed")
	})
}

// TestWorkspaceSettingsCannotBypass: the tenant writes its workspace's settings, so a
// defaultMode of bypassPermissions there must not reach a task that names no mode: the
// write parks for a decision, as in default mode (the runner drops an untrusted
// workspace's defaultMode; this holds the service to it).
func TestWorkspaceSettingsCannotBypass(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		f := newFixture(t, st, func(base string) []scripted.Turn {
			return []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{writeCall(filepath.Join(base, "x.txt"), "x")}},
				{Text: "done"},
			}
		})
		if err := os.MkdirAll(filepath.Join(f.base, ".sema"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(f.base, ".sema", "settings.json"), []byte(`{"permissions":{"defaultMode":"bypassPermissions"}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		c := f.client(t, "mallory", f.base)
		task, err := c.SubmitTask(context.Background(), client.TaskSpec{Prompt: "write", Cwd: f.base})
		if err != nil {
			t.Fatal(err)
		}
		waitStatus(t, c, task.TaskID, client.StatusAwaitingApproval)
		if _, err := os.Stat(filepath.Join(f.base, "x.txt")); !os.IsNotExist(err) {
			t.Fatalf("the workspace's defaultMode bypassed the tenant's policy: x.txt exists (%v)", err)
		}
	})
}

// A task that names no mode is held to the policy's list of modes as one that names its
// mode is. A new session under a list without default runs in the list's mode (here plan,
// where the Write is refused); a session whose recorded mode the list no longer holds is
// not continued in it. Calibrated: with an empty mode passed through, the first task ran
// in default and wrote (the Write allowed by its rule), and the message continued in
// bypassPermissions and wrote.
func TestEmptyModeIsHeldToThePolicy(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		ctx := context.Background()
		f := newFixture(t, st, func(base string) []scripted.Turn {
			return []scripted.Turn{{ToolCalls: []scripted.ToolCall{writeCall(filepath.Join(base, "w1.txt"), "x\n")}}, {Text: "done"}}
		})
		c := f.client(t, "mallory", f.base)
		if err := f.srv.SetPolicy(ctx, "mallory", server.Policy{PermissionModes: []string{"plan"}}); err != nil {
			t.Fatal(err)
		}
		task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "write", Cwd: f.base, AllowedTools: []string{"Write"}})
		if err != nil {
			t.Fatal(err)
		}
		// In plan the Write waits for a person; in default, allowed by the task's rule, it ran.
		done := waitStatus(t, c, task.TaskID, client.StatusAwaitingApproval)
		if _, err := os.Stat(filepath.Join(f.base, "w1.txt")); !os.IsNotExist(err) {
			t.Errorf("a task naming no mode under a plan-only policy wrote: %v", err)
		}
		if !strings.Contains(string(done.Result), `"effective":"plan"`) {
			t.Errorf("the leg's mode: %s, want plan", done.Result)
		}

		g := newFixture(t, st, func(base string) []scripted.Turn {
			return []scripted.Turn{{Text: "first"}, {ToolCalls: []scripted.ToolCall{writeCall(filepath.Join(base, "w2.txt"), "x\n")}}, {Text: "done"}}
		})
		c = g.client(t, "mallory", g.base)
		if err := g.srv.SetPolicy(ctx, "mallory", server.Policy{PermissionModes: []string{"default", "bypassPermissions"}}); err != nil {
			t.Fatal(err)
		}
		task, err = c.SubmitTask(ctx, client.TaskSpec{Prompt: "start", Cwd: g.base, PermissionMode: "bypassPermissions"})
		if err != nil {
			t.Fatal(err)
		}
		first := waitStatus(t, c, task.TaskID, "completed")
		if err := g.srv.SetPolicy(ctx, "mallory", server.Policy{PermissionModes: []string{"default"}}); err != nil {
			t.Fatal(err)
		}
		next, err := c.Message(ctx, first.SessionID, client.Message{Prompt: "write"})
		if err == nil {
			ended := waitStatus(t, c, next.TaskID, "error")
			if !strings.Contains(string(ended.Result), "tenant.policy_mode") {
				t.Errorf("the message continued a bypassPermissions session the policy no longer allows: %s", ended.Result)
			}
		} else if codeOf(err) != "tenant.policy_mode" {
			t.Fatalf("the message: %v", err)
		}
		if _, err := os.Stat(filepath.Join(g.base, "w2.txt")); !os.IsNotExist(err) {
			t.Errorf("the continued session wrote in a mode the policy no longer allows: %v", err)
		}
	})
}
