package server_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/internal/pgtest"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/server"
)

// answers is a script of n plain answers: one per task the schedules start.
func answers(n int) func(string) []scripted.Turn {
	return func(string) []scripted.Turn {
		turns := make([]scripted.Turn, n)
		for i := range turns {
			turns[i] = scripted.Turn{Text: "done"}
		}
		return turns
	}
}

// fastSchedules lets a test's schedules fire every second.
func fastSchedules(c *server.Config) { c.ScheduleMinInterval = time.Second }

// scheduledTasks are the tenant's tasks that schedule id started, oldest first.
func scheduledTasks(t *testing.T, c *client.Client, id string) []client.Task {
	t.Helper()
	list, err := c.Tasks(context.Background(), client.TaskFilter{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	var out []client.Task
	for _, task := range list.Tasks {
		if task.ScheduleID == id {
			out = append(out, task)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out
}

// waitFor polls cond every 50 ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestScheduleFiresUntilDeleted(t *testing.T) { eachStore(t, testScheduleFiresUntilDeleted) }

// testScheduleFiresUntilDeleted: an @every 2s schedule starts a task at each tick, each
// carrying the schedule's id, until it is deleted; then it starts none.
func testScheduleFiresUntilDeleted(t *testing.T, st store) {
	f := newFixtureWith(t, st, answers(50), func(c *server.Config) { c.ScheduleMinInterval = 2 * time.Second })
	ctx := context.Background()
	c := f.client(t, "acme", f.base)
	sc, err := c.AddSchedule(ctx, "@every 2s", client.TaskSpec{Prompt: "check the build"})
	if err != nil {
		t.Fatal(err)
	}
	if sc.ID == "" || sc.Cron != "@every 2s" || sc.Task.Prompt != "check the build" || sc.CreatedAt.IsZero() {
		t.Fatalf("created: %+v", sc)
	}
	if d := sc.NextAt.Sub(sc.CreatedAt); d < 1900*time.Millisecond || d > 2100*time.Millisecond {
		t.Fatalf("next_at is %s after created_at, want 2s", d)
	}
	var tasks []client.Task
	waitFor(t, 15*time.Second, "fewer than 2 scheduled tasks", func() bool {
		tasks = scheduledTasks(t, c, sc.ID)
		return len(tasks) >= 2
	})
	for _, task := range tasks {
		got, err := c.Task(ctx, task.TaskID)
		if err != nil || got.ScheduleID != sc.ID || got.Prompt != "check the build" {
			t.Fatalf("GET /v1/tasks/%s: %+v, %v", task.TaskID, got, err)
		}
	}
	if gap := tasks[1].CreatedAt.Sub(tasks[0].CreatedAt); gap < 1500*time.Millisecond {
		t.Fatalf("two firings %s apart, want about 2s", gap)
	}
	list, err := c.Schedules(ctx)
	if err != nil || len(list) != 1 || list[0].ID != sc.ID || list[0].Fired < 2 || list[0].LastTaskID == "" || list[0].LastFiredAt.IsZero() || !list[0].NextAt.After(list[0].LastFiredAt) {
		t.Fatalf("schedules: %+v, %v", list, err)
	}
	if err := c.RemoveSchedule(ctx, sc.ID); err != nil {
		t.Fatal(err)
	}
	before := len(scheduledTasks(t, c, sc.ID))
	time.Sleep(4500 * time.Millisecond)
	if after := len(scheduledTasks(t, c, sc.ID)); after != before {
		t.Fatalf("the deleted schedule started %d more tasks", after-before)
	}
	if list, err := c.Schedules(ctx); err != nil || len(list) != 0 {
		t.Fatalf("schedules after the delete: %+v, %v", list, err)
	}
	// A task submitted otherwise carries no schedule id.
	plain, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "once"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Task(ctx, plain.TaskID); err != nil || got.ScheduleID != "" {
		t.Fatalf("a plain task: %+v, %v", got, err)
	}
}

// TestScheduleTwoProcessesFireEachTickOnce: two working processes on one Postgres
// database both look for due schedules; each tick starts one task.
func TestScheduleTwoProcessesFireEachTickOnce(t *testing.T) {
	if !pgtest.Available(t) {
		t.Skip(pgtest.How)
	}
	ctx := context.Background()
	dsn := pgtest.Schema(t)
	base, _ := filepath.EvalSymlinks(t.TempDir())
	p := scripted.New(scripted.Script{Turns: answers(100)("")})
	var srvs []*server.Server
	for range 2 {
		srv, err := server.New(ctx, server.Config{
			Postgres: dsn, Poll: 20 * time.Millisecond, ScheduleMinInterval: time.Second,
			OpenProvider: func(string) (model.Provider, string, error) { return p, "scripted", nil },
			Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			srv.Shutdown(sctx)
			srv.Close()
		})
		srvs = append(srvs, srv)
	}
	tok, err := srvs[0].CreateToken(ctx, "acme", base, server.TenantConfig{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srvs[1].Handler())
	t.Cleanup(hs.Close)
	c := client.New(hs.URL, tok)
	var ids []string
	for _, expr := range []string{"@every 1s", "@every 1s", "@every 2s"} {
		sc, err := srvs[0].AddSchedule(ctx, "acme", expr, client.TaskSpec{Prompt: "tick"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sc.ID)
	}
	time.Sleep(6500 * time.Millisecond)
	for _, id := range ids {
		if err := srvs[1].RemoveSchedule(ctx, "acme", id); err != nil {
			t.Fatal(err)
		}
	}
	// A tick fired twice shows as two tasks of one schedule started within
	// milliseconds of each other, where the ticks are a second or two apart.
	for i, id := range ids {
		tasks := scheduledTasks(t, c, id)
		least := 5
		if i == 2 {
			least = 2
		}
		if len(tasks) < least {
			t.Fatalf("schedule %d started %d tasks in 6.5 s, want at least %d", i, len(tasks), least)
		}
		for j := 1; j < len(tasks); j++ {
			if gap := tasks[j].CreatedAt.Sub(tasks[j-1].CreatedAt); gap < 500*time.Millisecond {
				t.Fatalf("schedule %d: tasks %d and %d started %s apart: a tick fired twice", i, j-1, j, gap)
			}
		}
		t.Logf("schedule %d (%s apart): %d tasks", i, []string{"1s", "1s", "2s"}[i], len(tasks))
	}
}

func TestScheduleRefusals(t *testing.T) { eachStore(t, testScheduleRefusals) }

// testScheduleRefusals: a schedule refused by name stores nothing; the tenant's limit
// on schedules holds.
func testScheduleRefusals(t *testing.T, st store) {
	f := newFixture(t, st, answers(1))
	ctx := context.Background()
	c := f.client(t, "acme", f.base)
	tok := tokenOfClient(t, f, c)
	post := func(body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, f.http.URL+"/v1/schedules", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e client.Error
		decodeJSON(t, resp, &e)
		return resp.StatusCode, e.Code + ": " + e.Message
	}
	for _, tc := range []struct {
		body       string
		status     int
		code, says string
	}{
		{`{"cron": "61 * * * *", "task": {"prompt": "x"}}`, 400, "schedule.cron_invalid", "minute field"},
		{`{"cron": "* * *", "task": {"prompt": "x"}}`, 400, "schedule.cron_invalid", "has 3 fields"},
		{`{"cron": "@every 5s", "task": {"prompt": "x"}}`, 400, "schedule.cron_invalid", "fires every 5s; a schedule may fire at most every 10s"},
		{`{"cron": "0 0 30 2 *", "task": {"prompt": "x"}}`, 400, "schedule.cron_invalid", "names no time"},
		{`{"cron": "", "task": {"prompt": "x"}}`, 400, "schedule.cron_invalid", "has 0 fields"},
		{`{"cron": "@daily", "task": {}}`, 400, "prompt", "no prompt"},
		{`{"cron": "@daily", "task": {"prompt": "x", "permission_mode": "bypassPermissions"}}`, 400, "tenant.policy_mode", "bypassPermissions"},
		{`{"cron": "@daily", "task": {"prompt": "x", "cwd": "/"}}`, 400, "tenant.root_outside_base", "cwd"},
		{`{"cron": "@daily", "task": {"prompt": "x", "on_ask": "maybe"}}`, 400, "on_ask", "maybe"},
		{`{"cron": "@daily", "task": {"prompt": "x"}, "every": "day"}`, 400, "request.unknown_field", "every"},
		{`{"cron": "@daily", "task": {"prompt": "x", "colour": "red"}}`, 400, "request.unknown_field", "colour"},
		{`{"cron": 5, "task": {"prompt": "x"}}`, 400, "request.invalid", "cron"},
	} {
		status, got := post(tc.body)
		if status != tc.status || !strings.Contains(got, tc.code) || !strings.Contains(got, tc.says) {
			t.Fatalf("%s: %d %s; want %d %s saying %q", tc.body, status, got, tc.status, tc.code, tc.says)
		}
	}
	if list, err := c.Schedules(ctx); err != nil || len(list) != 0 {
		t.Fatalf("refused schedules were stored: %+v, %v", list, err)
	}
	// The operator's path refuses the same, and names an unknown tenant.
	if _, err := f.srv.AddSchedule(ctx, "acme", "@every 1s", client.TaskSpec{Prompt: "x"}); !strings.Contains(err.Error(), "at most every 10s") {
		t.Fatalf("operator, too often: %v", err)
	}
	if _, err := f.srv.AddSchedule(ctx, "nobody", "@daily", client.TaskSpec{Prompt: "x"}); err == nil || !strings.Contains(err.Error(), "no tenant") {
		t.Fatalf("operator, unknown tenant: %v", err)
	}
	for i := range 50 {
		if _, err := c.AddSchedule(ctx, "@daily", client.TaskSpec{Prompt: "x"}); err != nil {
			t.Fatalf("schedule %d: %v", i+1, err)
		}
	}
	if _, err := c.AddSchedule(ctx, "@daily", client.TaskSpec{Prompt: "x"}); codeOf(err) != server.CodeScheduleLimit {
		t.Fatalf("the 51st schedule: %v", err)
	}
}

func TestScheduleOtherTenant(t *testing.T) { eachStore(t, testScheduleOtherTenant) }

// testScheduleOtherTenant: a tenant neither sees nor deletes another's schedule, and the
// answer for one is the answer for an id that does not exist.
func testScheduleOtherTenant(t *testing.T, st store) {
	f := newFixture(t, st, answers(1))
	ctx := context.Background()
	acme := f.client(t, "acme", f.base)
	other := f.client(t, "other", f.base)
	sc, err := acme.AddSchedule(ctx, "@daily", client.TaskSpec{Prompt: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if list, err := other.Schedules(ctx); err != nil || len(list) != 0 {
		t.Fatalf("another tenant's list: %+v, %v", list, err)
	}
	var e *client.Error
	for _, id := range []string{sc.ID, "no-such-schedule"} {
		err := other.RemoveSchedule(ctx, id)
		if codeOf(err) != server.CodeScheduleNotFound || !errors.As(err, &e) || e.Status != http.StatusNotFound {
			t.Fatalf("another tenant deleting %s: %v", id, err)
		}
	}
	if err := f.srv.RemoveSchedule(ctx, "other", sc.ID); !sema.IsCode(err, server.CodeScheduleNotFound) {
		t.Fatalf("the operator deleting acme's schedule as other's: %v", err)
	}
	if list, err := acme.Schedules(ctx); err != nil || len(list) != 1 || list[0].ID != sc.ID {
		t.Fatalf("the owner's list after the attempts: %+v, %v", list, err)
	}
}

func TestScheduleFiringRefusedByPolicy(t *testing.T) { eachStore(t, testScheduleFiringRefusedByPolicy) }

// testScheduleFiringRefusedByPolicy: a firing the tenant's policy no longer allows is
// refused and recorded on the schedule, which goes on: once the policy allows it again,
// its firings start tasks.
func testScheduleFiringRefusedByPolicy(t *testing.T, st store) {
	f := newFixtureWith(t, st, answers(50), fastSchedules)
	ctx := context.Background()
	c := f.client(t, "acme", f.base)
	sc, err := c.AddSchedule(ctx, "@every 1s", client.TaskSpec{Prompt: "edit", PermissionMode: "acceptEdits"})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.srv.SetPolicy(ctx, "acme", server.Policy{PermissionModes: []string{"default", "plan"}}); err != nil {
		t.Fatal(err)
	}
	var list []client.Schedule
	waitFor(t, 10*time.Second, "no refused firing recorded", func() bool {
		list, err = c.Schedules(ctx)
		return err == nil && len(list) == 1 && list[0].Refused >= 2
	})
	r := list[0].LastRefusal
	if r == nil || r.Code != server.CodePolicyMode || !strings.Contains(r.Message, "acceptEdits") || r.At.IsZero() {
		t.Fatalf("the recorded refusal: %+v", r)
	}
	// Only the firings that were let through (a tick before the policy changed, at
	// most) started tasks.
	if n := len(scheduledTasks(t, c, sc.ID)); int64(n) != list[0].Fired || n > 1 {
		t.Fatalf("%d tasks started, %d firings let through", n, list[0].Fired)
	}
	fired := list[0].Fired
	if err := f.srv.SetPolicy(ctx, "acme", server.Policy{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the schedule did not go on once the policy allowed it", func() bool {
		return int64(len(scheduledTasks(t, c, sc.ID))) > fired
	})
}

// TestOpenAPISchedulesMatchTheClient holds the schedule schemas to the client's types,
// as TestOpenAPISchemasMatchTheClient does the others: the same properties, and every
// field the service always writes required.
func TestOpenAPISchedulesMatchTheClient(t *testing.T) {
	_, doc := openAPIDoc(t)
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	for name, v := range map[string]any{"Schedule": client.Schedule{}, "ScheduleRefusal": client.ScheduleRefusal{}} {
		schema := schemas[name].(map[string]any)
		var props, required []string
		for p := range schema["properties"].(map[string]any) {
			props = append(props, p)
		}
		for _, r := range asList(schema["required"]) {
			required = append(required, r.(string))
		}
		sort.Strings(props)
		sort.Strings(required)
		fields, always := jsonFields(reflect.TypeOf(v))
		if !slices.Equal(props, fields) || !slices.Equal(required, always) {
			t.Errorf("%s: properties %v required %v; the Go type has %v, always %v", name, props, required, fields, always)
		}
	}
	req := schemas["ScheduleRequest"].(map[string]any)
	if req["additionalProperties"] != false || len(req["properties"].(map[string]any)) != 2 {
		t.Errorf("ScheduleRequest: %v", req)
	}
}
