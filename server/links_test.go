package server_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/server"
)

func TestTaskListPagesAndFilters(t *testing.T) { eachStore(t, testTaskList) }

func testTaskList(t *testing.T, st store) {
	f := newFixture(t, st, func(base string) []scripted.Turn {
		return []scripted.Turn{{Text: "a"}, {Text: "b"}, {Text: "c"}}
	})
	ctx := context.Background()
	a := f.client(t, "acme", f.base)
	b := f.client(t, "other", f.base)
	var ids []string
	for i := range 3 {
		task, err := a.SubmitTask(ctx, client.TaskSpec{Prompt: fmt.Sprintf("task %d\nmore words", i), Cwd: f.base})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.TaskID)
		waitStatus(t, a, task.TaskID, "completed")
		time.Sleep(5 * time.Millisecond) // distinct creation times are not needed, but order reads better
	}
	page, err := a.Tasks(ctx, client.TaskFilter{Limit: 2})
	if err != nil || len(page.Tasks) != 2 || page.Next == "" {
		t.Fatalf("first page: %+v, %v", page, err)
	}
	if page.Tasks[0].TaskID != ids[2] || page.Tasks[1].TaskID != ids[1] || page.Tasks[0].Prompt != "task 2\nmore words" {
		t.Fatalf("first page is not newest first with prompts: %+v", page.Tasks)
	}
	rest, err := a.Tasks(ctx, client.TaskFilter{Limit: 2, Before: page.Next})
	if err != nil || len(rest.Tasks) != 1 || rest.Tasks[0].TaskID != ids[0] || rest.Next != "" {
		t.Fatalf("second page: %+v, %v", rest, err)
	}
	if got, err := a.Tasks(ctx, client.TaskFilter{Statuses: []string{"running", "queued"}}); err != nil || len(got.Tasks) != 0 {
		t.Fatalf("no task runs, yet: %+v, %v", got, err)
	}
	if got, err := a.Tasks(ctx, client.TaskFilter{Statuses: []string{"completed"}}); err != nil || len(got.Tasks) != 3 {
		t.Fatalf("completed: %+v, %v", got, err)
	}
	if got, err := b.Tasks(ctx, client.TaskFilter{}); err != nil || len(got.Tasks) != 0 {
		t.Fatalf("another tenant lists %+v, %v", got, err)
	}
	one, err := a.Task(ctx, ids[0])
	if err != nil || one.Prompt != "task 0\nmore words" {
		t.Fatalf("get: %+v, %v", one, err)
	}
	for _, bad := range []client.TaskFilter{
		{Statuses: []string{"done"}}, {Statuses: []string{"completed", ""}}, {Limit: -1}, {Limit: 501}, {Before: "!!"}, {Before: "bm9jb2xvbg"},
	} {
		_, err := a.Tasks(ctx, bad)
		var e *client.Error
		if !asError(err, &e) || e.Status != http.StatusBadRequest || e.Code != "request.invalid" {
			t.Errorf("%+v: %v, want 400 request.invalid", bad, err)
		}
	}
}

func asError(err error, e **client.Error) bool {
	x, ok := err.(*client.Error)
	*e = x
	return ok
}

// parkedFixture is a service whose first task parks at a Write of out.txt.
func parkedFixture(t *testing.T, st store) (*fixture, *client.Client, *client.Task, string) {
	f := newFixture(t, st, func(base string) []scripted.Turn {
		return []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{writeCall(filepath.Join(base, "out.txt"), "approved\n")}},
			{Text: "wrote it"},
		}
	})
	c := f.client(t, "acme", f.base)
	task, err := c.SubmitTask(context.Background(), client.TaskSpec{Prompt: "write the file", Cwd: f.base})
	if err != nil {
		t.Fatal(err)
	}
	parked := waitStatus(t, c, task.TaskID, client.StatusAwaitingApproval)
	return f, c, parked, filepath.Join(f.base, "out.txt")
}

func linkToken(t *testing.T, url string) string {
	t.Helper()
	_, tok, ok := strings.Cut(url, "/approve/")
	if !ok || len(tok) != 43 {
		t.Fatalf("link url %q", url)
	}
	return tok
}

func TestLinkDecidesOnce(t *testing.T) { eachStore(t, testLinkDecidesOnce) }

func testLinkDecidesOnce(t *testing.T, st store) {
	f, c, parked, target := parkedFixture(t, st)
	ctx := context.Background()
	link, err := c.CreateLink(ctx, parked.CheckpointID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(link.URL, f.http.URL+"/approve/") || time.Until(link.ExpiresAt) < 590*time.Second || time.Until(link.ExpiresAt) > 601*time.Second {
		t.Fatalf("link %+v", link)
	}
	tok := linkToken(t, link.URL)
	anon := client.New(f.http.URL, "")
	info, err := anon.OpenLink(ctx, tok)
	if err != nil || info.State != client.LinkOpen || info.Tool != "Write" || info.TaskID != parked.TaskID || !strings.Contains(string(info.Input), "out.txt") || info.Message == "" {
		t.Fatalf("open link: %+v, %v", info, err)
	}
	// Opening twice decides nothing.
	if again, err := anon.OpenLink(ctx, tok); err != nil || again.State != client.LinkOpen {
		t.Fatalf("opened again: %+v, %v", again, err)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("opening a link wrote the file")
	}
	if _, err := anon.DecideLink(ctx, tok, client.LinkDecision{Decision: "maybe"}); codeOf(err) != "request.invalid" {
		t.Fatalf("a bad word: %v", err)
	}
	if got, err := anon.DecideLink(ctx, tok, client.LinkDecision{Decision: "allow"}); err != nil || got.State != client.LinkUsed {
		t.Fatalf("decide: %+v, %v", got, err)
	}
	for _, d := range []string{"allow", "deny"} {
		_, err := anon.DecideLink(ctx, tok, client.LinkDecision{Decision: d})
		var e *client.Error
		if !asError(err, &e) || e.Status != http.StatusConflict || e.Code != "link.used" {
			t.Fatalf("second use (%s): %v", d, err)
		}
	}
	if info, err := anon.OpenLink(ctx, tok); err != nil || info.State != client.LinkUsed || info.Input != nil {
		t.Fatalf("a used link: %+v, %v", info, err)
	}
	waitStatus(t, c, parked.TaskID, "completed")
	if b, err := os.ReadFile(target); err != nil || string(b) != "approved\n" {
		t.Fatalf("the approved write: %q, %v", b, err)
	}
	// The question is decided: no new link for it.
	if _, err := c.CreateLink(ctx, parked.CheckpointID, 0); codeOf(err) != "checkpoint.already_claimed" {
		t.Fatalf("a link for a decided question: %v", err)
	}
	if _, err := anon.OpenLink(ctx, strings.Repeat("A", 43)); codeOf(err) != "request.not_found" {
		t.Fatalf("an unknown token: %v", err)
	}
}

func TestLinkExpiredRevokedAndRefused(t *testing.T) { eachStore(t, testLinkStates) }

func testLinkStates(t *testing.T, st store) {
	f, c, parked, target := parkedFixture(t, st)
	ctx := context.Background()
	anon := client.New(f.http.URL, "")
	short, err := c.CreateLink(ctx, parked.CheckpointID, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	long, err := c.CreateLink(ctx, parked.CheckpointID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	if info, err := anon.OpenLink(ctx, linkToken(t, short.URL)); err != nil || info.State != client.LinkExpired {
		t.Fatalf("expired: %+v, %v", info, err)
	}
	_, err = anon.DecideLink(ctx, linkToken(t, short.URL), client.LinkDecision{Decision: "allow"})
	var e *client.Error
	if !asError(err, &e) || e.Status != http.StatusGone || e.Code != "link.expired" {
		t.Fatalf("an expired link decides: %v", err)
	}
	// Another tenant cannot make a link for the question; unknown ids are 404 too.
	other := f.client(t, "other", f.base)
	for _, id := range []string{parked.CheckpointID, "nope"} {
		if _, err := other.CreateLink(ctx, id, 0); codeOf(err) != "request.not_found" {
			t.Fatalf("link for %s by another tenant: %v", id, err)
		}
	}
	for _, body := range []string{`{"expires_in":0}`, `{"expires_in":-5}`, `{"expires_in":"x"}`, `{"expiresIn":5}`} {
		req, _ := http.NewRequest(http.MethodPost, f.http.URL+"/v1/checkpoints/"+parked.CheckpointID+"/link", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tokenOfClient(t, f, c))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("link with %s: %d", body, resp.StatusCode)
		}
	}
	// Decided over the API: the open link is revoked.
	if _, err := c.Decide(ctx, parked.CheckpointID, client.Decision{Decision: "deny", Message: "no"}); err != nil {
		t.Fatal(err)
	}
	if info, err := anon.OpenLink(ctx, linkToken(t, long.URL)); err != nil || info.State != client.LinkRevoked {
		t.Fatalf("revoked: %+v, %v", info, err)
	}
	if _, err := anon.DecideLink(ctx, linkToken(t, long.URL), client.LinkDecision{Decision: "allow"}); codeOf(err) != "link.revoked" {
		t.Fatalf("a revoked link decides: %v", err)
	}
	waitStatus(t, c, parked.TaskID, "completed")
	if _, err := os.Stat(target); err == nil {
		t.Fatal("a denied write was written")
	}
}

// tokenOfClient makes a second token of the client's tenant for raw requests.
func tokenOfClient(t *testing.T, f *fixture, _ *client.Client) string {
	tok, err := f.srv.CreateToken(context.Background(), "acme", f.base, server.TenantConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestLinkRacesTheAPI: a link and API decisions sent at once decide once, and the file
// is written once.
func TestLinkRacesTheAPI(t *testing.T) { eachStore(t, testLinkRace) }

func testLinkRace(t *testing.T, st store) {
	f, c, parked, target := parkedFixture(t, st)
	ctx := context.Background()
	anon := client.New(f.http.URL, "")
	var toks []string
	for range 4 {
		l, err := c.CreateLink(ctx, parked.CheckpointID, 0)
		if err != nil {
			t.Fatal(err)
		}
		toks = append(toks, linkToken(t, l.URL), linkToken(t, l.URL))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	codes := map[string]int{}
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if i%3 == 2 {
				_, err = c.Decide(ctx, parked.CheckpointID, client.Decision{Decision: "allow"})
			} else {
				_, err = anon.DecideLink(ctx, toks[i%len(toks)], client.LinkDecision{Decision: "allow"})
			}
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				wins++
			} else {
				codes[codeOf(err)]++
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d decisions won (losers %v), want 1", wins, codes)
	}
	for code := range codes {
		if code != "link.used" && code != "link.revoked" && code != "checkpoint.already_claimed" {
			t.Fatalf("a loser answered %s", code)
		}
	}
	waitStatus(t, c, parked.TaskID, "completed")
	if b, err := os.ReadFile(target); err != nil || string(b) != "approved\n" {
		t.Fatalf("the write: %q, %v", b, err)
	}
	if n := len(f.model.Requests()); n != 2 {
		t.Fatalf("the model was called %d times, want 2 (one park, one resume)", n)
	}
}

// TestOpenAPILinkSchemasMatchTheClient holds the schemas of the task list and the links
// to the client's types, as TestOpenAPISchemasMatchTheClient does the others.
func TestOpenAPILinkSchemasMatchTheClient(t *testing.T) {
	_, doc := openAPIDoc(t)
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	for name, ty := range map[string]struct {
		v        any
		response bool
	}{
		"TaskList": {client.TaskList{}, true}, "Link": {client.Link{}, true}, "LinkInfo": {client.LinkInfo{}, true},
		"LinkRequest": {client.LinkRequest{}, false}, "LinkDecision": {client.LinkDecision{}, false},
	} {
		schema, ok := schemas[name].(map[string]any)
		if !ok {
			t.Errorf("no schema %s", name)
			continue
		}
		var props, required []string
		for p := range schema["properties"].(map[string]any) {
			props = append(props, p)
		}
		for _, r := range asList(schema["required"]) {
			required = append(required, r.(string))
		}
		slices.Sort(props)
		slices.Sort(required)
		fields, always := jsonFields(reflect.TypeOf(ty.v))
		if !slices.Equal(props, fields) {
			t.Errorf("%s: schema properties %v, Go fields %v", name, props, fields)
		}
		if ty.response && !slices.Equal(required, always) {
			t.Errorf("%s: schema requires %v, the service always writes %v", name, required, always)
		}
		if !ty.response && schema["additionalProperties"] != false {
			t.Errorf("%s: a request body refuses unknown fields; say additionalProperties: false", name)
		}
	}
}
