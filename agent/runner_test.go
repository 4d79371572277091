package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/tools"
)

// fakeTool is a caller tool whose behaviour the test sets.
type fakeTool struct {
	name   string
	effect tools.Effect
	run    func(ctx context.Context, input json.RawMessage) tools.Result
}

func (f *fakeTool) Spec() tools.Spec {
	return tools.Spec{Name: f.name, Description: "test tool", InputSchema: json.RawMessage(`{"type":"object"}`), Effect: f.effect}
}

func (f *fakeTool) Run(ctx context.Context, input json.RawMessage) tools.Result {
	return f.run(ctx, input)
}

func call(name, input string) scripted.ToolCall {
	return scripted.ToolCall{Name: name, Input: json.RawMessage(input)}
}

func newRunner(t *testing.T, turns []scripted.Turn, extra ...tools.Tool) (*agent.Runner, *scripted.Provider) {
	t.Helper()
	p := scripted.New(scripted.Script{Turns: turns})
	return agent.New(agent.Deps{Provider: p, Tools: extra}), p
}

func spec(t *testing.T) agent.TaskSpec {
	return agent.TaskSpec{Prompt: "do it", Root: t.TempDir()}
}

// toolResults returns the tool_result blocks of the message that answered turn n.
func toolResults(t *testing.T, res *agent.TaskResult, n int) []model.Block {
	t.Helper()
	// messages: user prompt, then (assistant, user results) per turn
	idx := 2 * n
	if idx >= len(res.Messages) {
		t.Fatalf("no results for turn %d in %d messages", n, len(res.Messages))
	}
	return res.Messages[idx].Content
}

func TestRunCompletesWithFinalText(t *testing.T) {
	t.Parallel()
	echo := &fakeTool{name: "Echo", effect: tools.EffectRead, run: func(_ context.Context, in json.RawMessage) tools.Result {
		return tools.Text("got " + string(in))
	}}
	r, p := newRunner(t, []scripted.Turn{
		{Text: "calling", ToolCalls: []scripted.ToolCall{call("Echo", `{"x":1}`)}, Usage: &model.Usage{InputTokens: 10, OutputTokens: 2, CacheReadTokens: 3}},
		{Text: "all done", Usage: &model.Usage{InputTokens: 20, OutputTokens: 4, CacheWriteTokens: 5}},
	}, echo)
	res, err := r.Run(context.Background(), spec(t))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sema.StatusCompleted || res.Result != "all done" || res.NumTurns != 2 {
		t.Fatalf("got status=%s result=%q turns=%d", res.Status, res.Result, res.NumTurns)
	}
	want := model.Usage{InputTokens: 30, OutputTokens: 6, CacheReadTokens: 3, CacheWriteTokens: 5}
	if res.Usage != want {
		t.Fatalf("usage %+v, want %+v", res.Usage, want)
	}
	got := toolResults(t, res, 1)
	if len(got) != 1 || got[0].ID != "toolu_scripted_1_1" || got[0].Content[0].Text != `got {"x":1}` {
		t.Fatalf("tool results %+v", got)
	}
	// The second request carries the transcript: prompt, assistant turn, tool results.
	reqs := p.Requests()
	if len(reqs) != 2 || len(reqs[1].Messages) != 3 || reqs[1].Messages[2].Content[0].Kind != model.KindToolResult {
		t.Fatalf("second request messages: %+v", reqs[1].Messages)
	}
	var names []string
	for _, ts := range reqs[0].Tools {
		names = append(names, ts.Name)
	}
	// The engine's file tools come first, the deployment's own tools after them.
	if !strings.Contains(reqs[0].System, res.Manifest.Root) || names[len(names)-1] != "Echo" || !slices.Contains(names, "Read") {
		t.Fatalf("system prompt or tools missing: %q %v", reqs[0].System, names)
	}
	if !slices.Equal(names, res.Manifest.Tools) {
		t.Fatalf("manifest tools %v, request tools %v", res.Manifest.Tools, names)
	}
	if res.SessionID == "" || res.Manifest.SessionID != res.SessionID {
		t.Fatalf("session id %q manifest %q", res.SessionID, res.Manifest.SessionID)
	}
}

func TestReadCallsRunConcurrentlyAndAnswerInOrder(t *testing.T) {
	t.Parallel()
	// Each call waits until all three have started: this deadlocks (and the test times
	// out) unless the calls really run at the same time.
	var started sync.WaitGroup
	started.Add(3)
	slow := &fakeTool{name: "Slow", effect: tools.EffectRead, run: func(ctx context.Context, in json.RawMessage) tools.Result {
		started.Done()
		done := make(chan struct{})
		go func() { started.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			return tools.Fail("test.timeout", "calls did not overlap")
		}
		return tools.Text(string(in))
	}}
	r, _ := newRunner(t, []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("Slow", `{"n":1}`), call("Slow", `{"n":2}`), call("Slow", `{"n":3}`)}},
		{Text: "ok"},
	}, slow)
	res, err := r.Run(context.Background(), spec(t))
	if err != nil {
		t.Fatal(err)
	}
	got := toolResults(t, res, 1)
	for i, b := range got {
		if b.IsError || b.Content[0].Text != `{"n":`+string(rune('1'+i))+`}` {
			t.Fatalf("result %d = %+v", i, b)
		}
	}
}

func TestWriteCallsRunSerially(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	active, maxActive := 0, 0
	var order []string
	w := &fakeTool{name: "W", effect: tools.EffectWrite, run: func(_ context.Context, in json.RawMessage) tools.Result {
		mu.Lock()
		active++
		maxActive = max(maxActive, active)
		order = append(order, string(in))
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		active--
		mu.Unlock()
		return tools.Text("ok")
	}}
	rd := &fakeTool{name: "R", effect: tools.EffectRead, run: func(context.Context, json.RawMessage) tools.Result { return tools.Text("r") }}
	r, _ := newRunner(t, []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("W", `{"i":1}`), call("R", `{}`), call("W", `{"i":2}`)}},
		{Text: "ok"},
	}, w, rd)
	if _, err := r.Run(context.Background(), spec(t)); err != nil {
		t.Fatal(err)
	}
	if maxActive != 1 || !slices.Equal(order, []string{`{"i":1}`, `{"i":2}`}) {
		t.Fatalf("maxActive=%d order=%v", maxActive, order)
	}
}

func TestEveryCallGetsAResult(t *testing.T) {
	t.Parallel()
	boom := &fakeTool{name: "Boom", effect: tools.EffectRead, run: func(context.Context, json.RawMessage) tools.Result { panic("kaboom") }}
	ok := &fakeTool{name: "Ok", effect: tools.EffectRead, run: func(context.Context, json.RawMessage) tools.Result { return tools.Text("fine") }}
	r, _ := newRunner(t, []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{
			call("Boom", `{}`),
			call("Nope", `{}`),
			{Name: "Ok", Input: json.RawMessage(`[1,2]`)},
			call("Ok", `{}`),
		}},
		{Text: "done"},
	}, boom, ok)
	res, err := r.Run(context.Background(), spec(t))
	if err != nil {
		t.Fatal(err)
	}
	got := toolResults(t, res, 1)
	wantErr := []bool{true, true, true, false}
	wantText := []string{"kaboom", `no tool named "Nope"`, "not a JSON object", "fine"}
	if len(got) != 4 {
		t.Fatalf("%d results", len(got))
	}
	for i, b := range got {
		if b.IsError != wantErr[i] || !strings.Contains(b.Content[0].Text, wantText[i]) {
			t.Errorf("result %d: %+v", i, b)
		}
	}
	if !slices.ContainsFunc(res.Notices, func(n sema.Notice) bool { return n.Code == "tool.panic" }) {
		t.Errorf("no tool.panic notice in %+v", res.Notices)
	}
}

func TestMaxTurns(t *testing.T) {
	t.Parallel()
	loopTool := &fakeTool{name: "Again", effect: tools.EffectRead, run: func(context.Context, json.RawMessage) tools.Result { return tools.Text("again") }}
	turn := scripted.Turn{ToolCalls: []scripted.ToolCall{call("Again", `{}`)}}
	r, p := newRunner(t, []scripted.Turn{turn, turn, turn, turn}, loopTool)
	s := spec(t)
	s.MaxTurns = 2
	res, err := r.Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sema.StatusMaxTurns || res.NumTurns != 2 || len(p.Requests()) != 2 {
		t.Fatalf("status=%s turns=%d requests=%d", res.Status, res.NumTurns, len(p.Requests()))
	}
}

func TestModelErrorEndsWithStatusError(t *testing.T) {
	t.Parallel()
	r, _ := newRunner(t, []scripted.Turn{{Error: &sema.Error{Code: model.CodeAuth, Message: "the API key was rejected"}}})
	res, err := r.Run(context.Background(), spec(t))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sema.StatusError || res.Error == nil || res.Error.Code != model.CodeAuth {
		t.Fatalf("status=%s error=%v", res.Status, res.Error)
	}
}

func TestCancellationDuringTool(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	block := &fakeTool{name: "Block", effect: tools.EffectWrite, run: func(ctx context.Context, _ json.RawMessage) tools.Result {
		cancel()
		<-ctx.Done()
		return tools.Fail(tools.CodeCancelled, "interrupted")
	}}
	never := &fakeTool{name: "Never", effect: tools.EffectWrite, run: func(context.Context, json.RawMessage) tools.Result {
		t.Error("a call after cancellation ran")
		return tools.Text("")
	}}
	r, p := newRunner(t, []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("Block", `{}`), call("Never", `{}`)}},
		{Text: "unreachable"},
	}, block, never)
	res, err := r.Run(ctx, spec(t))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sema.StatusCancelled || len(p.Requests()) != 1 {
		t.Fatalf("status=%s requests=%d", res.Status, len(p.Requests()))
	}
	got := toolResults(t, res, 1)
	if len(got) != 2 || !got[1].IsError || !strings.Contains(got[1].Content[0].Text, "cancelled") {
		t.Fatalf("results %+v", got)
	}
}

func TestDoorsRefuseByName(t *testing.T) {
	t.Parallel()
	p := scripted.New(scripted.Script{})
	root := t.TempDir()
	cases := []struct {
		name string
		deps agent.Deps
		spec agent.TaskSpec
		code string
	}{
		{"no provider", agent.Deps{}, agent.TaskSpec{Prompt: "x", Root: root}, "config.provider_missing"},
		{"no prompt", agent.Deps{Provider: p}, agent.TaskSpec{Prompt: "  ", Root: root}, "config.prompt_missing"},
		{"relative root", agent.Deps{Provider: p}, agent.TaskSpec{Prompt: "x", Root: "rel"}, "config.root_invalid"},
		{"missing root", agent.Deps{Provider: p}, agent.TaskSpec{Prompt: "x", Root: root + "/nope"}, "config.root_invalid"},
		{"bad mode", agent.Deps{Provider: p}, agent.TaskSpec{Prompt: "x", Root: root, PermissionMode: "yolo"}, "config.permission_mode_invalid"},
		{"mode case", agent.Deps{Provider: p}, agent.TaskSpec{Prompt: "x", Root: root, PermissionMode: "Default"}, "config.permission_mode_invalid"},
		{"negative turns", agent.Deps{Provider: p}, agent.TaskSpec{Prompt: "x", Root: root, MaxTurns: -1}, "config.max_turns_invalid"},
		{"unknown on-ask", agent.Deps{Provider: p}, agent.TaskSpec{Prompt: "x", Root: root, OnAsk: "prompt"}, agent.CodeOnAskInvalid},
		{"on-ask case", agent.Deps{Provider: p}, agent.TaskSpec{Prompt: "x", Root: root, OnAsk: "Park"}, agent.CodeOnAskInvalid},
		{"approver missing", agent.Deps{Provider: p}, agent.TaskSpec{Prompt: "x", Root: root, OnAsk: agent.OnAskApprover}, agent.CodeApproverMissing},
		{"park without store", agent.Deps{Provider: p}, agent.TaskSpec{Prompt: "x", Root: root, OnAsk: agent.OnAskPark}, agent.CodeStoreMissing},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := agent.New(c.deps).Run(context.Background(), c.spec)
			if res != nil || sema.CodeOf(err) != c.code {
				t.Fatalf("got res=%v err=%v, want code %s", res, err, c.code)
			}
		})
	}
	if n := len(p.Requests()); n != 0 {
		t.Fatalf("a refused spec reached the model %d times", n)
	}
}

func TestEventsStreamInOrderAndBreakCancels(t *testing.T) {
	t.Parallel()
	echo := &fakeTool{name: "Echo", effect: tools.EffectRead, run: func(context.Context, json.RawMessage) tools.Result { return tools.Text("e") }}
	r, _ := newRunner(t, []scripted.Turn{
		{Text: "hi", ToolCalls: []scripted.ToolCall{call("Echo", `{}`)}},
		{Text: "bye"},
	}, echo)
	var types []agent.EventType
	for ev, err := range r.Events(context.Background(), spec(t)) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type != agent.EventText {
			types = append(types, ev.Type)
		}
	}
	want := []agent.EventType{agent.EventInit, agent.EventAssistant, agent.EventToolUse, agent.EventToolResult, agent.EventAssistant, agent.EventResult}
	if !slices.Equal(types, want) {
		t.Fatalf("events %v, want %v", types, want)
	}

	// Breaking out after the first assistant message stops the run: no second request.
	r2, p2 := newRunner(t, []scripted.Turn{
		{Text: "hi", ToolCalls: []scripted.ToolCall{call("Echo", `{}`)}},
		{Text: "bye"},
	}, echo)
	for ev := range r2.Events(context.Background(), spec(t)) {
		if ev.Type == agent.EventAssistant {
			break
		}
	}
	if n := len(p2.Requests()); n != 1 {
		t.Fatalf("after break the model was asked %d times, want 1", n)
	}
}

func TestRunnerKeepsNoStateBetweenRuns(t *testing.T) {
	t.Parallel()
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "one"}, {Text: "two"}}})
	r := agent.New(agent.Deps{Provider: p})
	a, err := r.Run(context.Background(), spec(t))
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Run(context.Background(), spec(t))
	if err != nil {
		t.Fatal(err)
	}
	if a.SessionID == b.SessionID {
		t.Fatal("two runs share a session id")
	}
	if reqs := p.Requests(); len(reqs[1].Messages) != 1 {
		t.Fatalf("the second run saw %d messages of the first", len(reqs[1].Messages)-1)
	}
}

// The groups of Deps are shared by every run of a Runner (and often by several Runners):
// running tasks at once reads them and never writes to them.
func TestDepsGroupsAreSharedReadOnly(t *testing.T) {
	t.Parallel()
	rules, err := permission.ParseRules([]string{"Read"}, []string{"Bash(rm:*)"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	policy := &agent.Policy{Rules: rules, DenyGlobs: []string{"/nowhere/**"}, DenyAutoMode: true}
	sh := &agent.ShellOptions{ReadonlyAllow: []string{"ls"}, Sandbox: "off"}
	hooks := &agent.Hooks{}
	want := fmt.Sprintf("%+v %+v %+v", *policy, *sh, *hooks)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			p := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "done"}}})
			r := agent.New(agent.Deps{Provider: p, Policy: policy, Shell: sh, Hooks: hooks})
			if res, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "x", Root: t.TempDir(), PermissionMode: permission.ModeAuto}); err != nil || res.Status != sema.StatusCompleted {
				t.Errorf("%v %+v", err, res)
			}
		})
	}
	wg.Wait()
	if got := fmt.Sprintf("%+v %+v %+v", *policy, *sh, *hooks); got != want {
		t.Fatalf("a run wrote into the shared groups:\n got %s\nwant %s", got, want)
	}
}
