package server_test

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/model/scripted"
)

// The operator's view of a park → decide → complete task on /metrics: every timing
// histogram saw it (queue wait for both legs, the model's turns, the legs by how they
// ended, the person's wait), and the tasks' states are read from the store per tenant —
// a queue depth of 0 once it is done, and one completed task of this tenant.
func TestMetricsOfATask(t *testing.T) { eachStore(t, testMetricsOfATask) }

func testMetricsOfATask(t *testing.T, st store) {
	f := newFixture(t, st, func(base string) []scripted.Turn {
		return []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{writeCall(filepath.Join(base, "out.txt"), "approved\n")}},
			{Text: "wrote it"},
		}
	})
	ctx := context.Background()
	c := f.client(t, "observed", f.base)
	task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "write the file", Cwd: f.base})
	if err != nil {
		t.Fatal(err)
	}
	parked := waitStatus(t, c, task.TaskID, client.StatusAwaitingApproval)
	text := scrape(t, f)
	if got := sample(t, text, `sema_tasks{status="awaiting_approval",tenant="observed"}`); got != 1 {
		t.Fatalf("tasks awaiting approval: %v\n%s", got, text)
	}
	if _, err := c.Decide(ctx, parked.CheckpointID, client.Decision{Decision: "allow"}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, task.TaskID, "completed")
	text = scrape(t, f)
	for metric, atLeast := range map[string]float64{
		`sema_task_queue_wait_seconds_count`:                      2, // the first leg and the resumed one
		`sema_model_turn_seconds_count`:                           2,
		`sema_task_leg_seconds_count{status="awaiting_approval"}`: 1,
		`sema_task_leg_seconds_count{status="completed"}`:         1,
		`sema_approval_wait_seconds_count`:                        1,
		`sema_tasks{status="completed",tenant="observed"}`:        1,
	} {
		if got := sample(t, text, metric); got < atLeast {
			t.Errorf("%s = %v, want at least %v", metric, got, atLeast)
		}
	}
	if regexp.MustCompile(`sema_tasks\{status="(queued|awaiting_approval)",tenant="observed"\} [1-9]`).MatchString(text) {
		t.Errorf("a finished tenant still has queued or waiting tasks:\n%s", text)
	}
}

func scrape(t *testing.T, f *fixture) string {
	t.Helper()
	resp, err := http.Get(f.http.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d, %v", resp.StatusCode, err)
	}
	return string(b)
}

// sample returns the value of the sample named exactly name (with its labels), or -1.
func sample(t *testing.T, text, name string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(text)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
