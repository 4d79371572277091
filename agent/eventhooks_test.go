package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/hooks"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
)

// runWithHooks runs turns with the Go hooks of Deps.Hooks.Events in a fresh root, in
// acceptEdits mode, and returns the result, the provider and the root.
func runWithHooks(t *testing.T, turns []scripted.Turn, list []hooks.Hook, mod func(*agent.TaskSpec)) (*agent.TaskResult, *scripted.Provider, string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := scripted.New(scripted.Script{Turns: turns})
	r := agent.New(agent.Deps{Provider: p, Hooks: &agent.Hooks{Events: list}})
	spec := agent.TaskSpec{Prompt: "go", Root: root, PermissionMode: permission.ModeAcceptEdits}
	if mod != nil {
		mod(&spec)
	}
	res, err := r.Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return res, p, root
}

func preToolUse(f hooks.Func) hooks.Hook {
	return hooks.Hook{Event: hooks.PreToolUse, Matcher: "Write", Func: f}
}

func permissionAnswer(decision, input string) hooks.Func {
	return func(context.Context, hooks.Input) (hooks.Output, error) {
		o := hooks.Output{HookSpecificOutput: &hooks.SpecificOutput{PermissionDecision: decision, PermissionDecisionReason: "hook says " + decision}}
		if input != "" {
			o.HookSpecificOutput.UpdatedInput = json.RawMessage(input)
		}
		return o, nil
	}
}

// A PreToolUse hook that errs, panics or answers what the protocol does not have
// refuses the call; one that says nothing lets it through (the calibration).
func TestPreToolUseHookFailsClosed(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		f     hooks.Func
		lands bool
	}{
		"silent hook: the write lands": {func(context.Context, hooks.Input) (hooks.Output, error) { return hooks.Output{}, nil }, true},
		"error": {func(context.Context, hooks.Input) (hooks.Output, error) {
			return hooks.Output{}, errors.New("policy server down")
		}, false},
		"panic":                     {func(context.Context, hooks.Input) (hooks.Output, error) { panic("hook bug") }, false},
		"unknown decision":          {permissionAnswer("perhaps", ""), false},
		"rewrite that is no object": {permissionAnswer("allow", `"x"`), false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res, _, root := runWithHooks(t, []scripted.Turn{{ToolCalls: []scripted.ToolCall{write("a.txt", "x")}}, {Text: "done"}}, []hooks.Hook{preToolUse(c.f)}, nil)
			_, err := os.Stat(filepath.Join(root, "a.txt"))
			if landed := err == nil; landed != c.lands {
				t.Fatalf("landed %v, want %v; denials %+v", landed, c.lands, res.PermissionDenials)
			}
			if !c.lands {
				if len(res.PermissionDenials) != 1 || !hasNotice(res, hooks.CodeFailed) {
					t.Fatalf("denials %+v notices %+v", res.PermissionDenials, res.Notices)
				}
			}
		})
	}
}

func hasNotice(res *agent.TaskResult, code string) bool {
	for _, n := range res.Notices {
		if n.Code == code {
			return true
		}
	}
	return false
}

// A hook's allow never overrides a deny rule, a protected path or the fence; where
// nothing forbids the call it applies even in default mode, which would have asked.
func TestPreToolUseHookAllowNeverOverrides(t *testing.T) {
	t.Parallel()
	allow := []hooks.Hook{preToolUse(permissionAnswer("allow", ""))}
	outside := filepath.Join(t.TempDir(), "escape.txt")
	for name, c := range map[string]struct {
		call  scripted.ToolCall
		path  string
		lands bool
	}{
		"allowed":        {write("ok.txt", "x"), "ok.txt", true},
		"deny rule":      {write("secret.txt", "x"), "secret.txt", false},
		"protected path": {write(".git/config", "x"), ".git/config", false},
		"outside roots":  {write(outside, "x"), outside, false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res, _, root := runWithHooks(t, []scripted.Turn{{ToolCalls: []scripted.ToolCall{c.call}}, {Text: "done"}}, allow, func(s *agent.TaskSpec) {
				s.PermissionMode = permission.ModeDefault
				s.OnAsk = agent.OnAskDeny
				s.DisallowedTools = []string{"Write(secret.txt)"}
			})
			path := c.path
			if !filepath.IsAbs(path) {
				path = filepath.Join(root, path)
			}
			_, err := os.Stat(path)
			if landed := err == nil; landed != c.lands {
				t.Fatalf("landed %v, want %v; denials %+v", landed, c.lands, res.PermissionDenials)
			}
		})
	}
}

// updatedInput is a new call: the whole fold judges the rewrite, and the rewrite is
// what runs.
func TestPreToolUseHookRewriteIsJudgedAgain(t *testing.T) {
	t.Parallel()
	toSecret := []hooks.Hook{preToolUse(permissionAnswer("allow", `{"file_path":"secret.txt","content":"x"}`))}
	res, _, root := runWithHooks(t, []scripted.Turn{{ToolCalls: []scripted.ToolCall{write("ok.txt", "x")}}, {Text: "done"}}, toSecret, func(s *agent.TaskSpec) {
		s.DisallowedTools = []string{"Write(secret.txt)"}
	})
	if _, err := os.Stat(filepath.Join(root, "secret.txt")); err == nil {
		t.Fatal("a hook's rewrite escaped the deny rule")
	}
	if _, err := os.Stat(filepath.Join(root, "ok.txt")); err == nil {
		t.Fatal("the original call ran although the hook rewrote it")
	}
	if len(res.PermissionDenials) != 1 {
		t.Fatalf("denials %+v", res.PermissionDenials)
	}

	// A rewrite of a shell command runs as rewritten.
	toTwo := []hooks.Hook{{Event: hooks.PreToolUse, Matcher: "Bash", Func: permissionAnswer("", `{"command":"echo two"}`)}}
	res, p, _ := runWithHooks(t, []scripted.Turn{{ToolCalls: []scripted.ToolCall{call("Bash", `{"command":"echo one"}`)}}, {Text: "done"}}, toTwo, nil)
	if got := requestText(p, 1); !strings.Contains(got, `"text":"two"`) || strings.Contains(got, `"text":"one"`) {
		t.Fatalf("the model read %s; denials %+v", got, res.PermissionDenials)
	}

	// A write's rewrite is refused: the write lane has computed the bytes it judged, and
	// applies no other; the hook denies with a reason instead.
	toOther := []hooks.Hook{preToolUse(permissionAnswer("", `{"file_path":"other.txt","content":"rewritten"}`))}
	_, p, root = runWithHooks(t, []scripted.Turn{{ToolCalls: []scripted.ToolCall{write("ok.txt", "x")}}, {Text: "done"}}, toOther, nil)
	if _, err := os.Stat(filepath.Join(root, "other.txt")); err == nil {
		t.Fatal("a write's rewrite ran")
	}
	if _, err := os.Stat(filepath.Join(root, "ok.txt")); err == nil {
		t.Fatal("the original write ran although the hook rewrote it")
	}
	if got := requestText(p, 1); !strings.Contains(got, "cannot be applied to a write in progress") {
		t.Fatalf("the model read %s", got)
	}
}

// lastUserText is the text of the last user message of the provider's request n.
func requestText(p *scripted.Provider, n int) string {
	reqs := p.Requests()
	if n >= len(reqs) {
		return ""
	}
	var b strings.Builder
	for _, m := range reqs[n].Messages {
		if m.Role != model.RoleUser {
			continue
		}
		data, _ := json.Marshal(m.Content)
		b.Write(data)
	}
	return b.String()
}

// PostToolUse sees the call and its response, and what it adds reaches the model with
// the result; SessionStart and UserPromptSubmit add context to the prompt.
func TestHookContextReachesTheModel(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var post hooks.Input
	list := []hooks.Hook{
		{Event: hooks.SessionStart, Matcher: "startup", Func: contextOf("the build uses make")},
		{Event: hooks.UserPromptSubmit, Func: contextOf("ticket ABC-1 is the task")},
		{Event: hooks.PostToolUse, Matcher: "Write", Func: func(_ context.Context, in hooks.Input) (hooks.Output, error) {
			mu.Lock()
			post = in
			mu.Unlock()
			return hooks.Output{HookSpecificOutput: &hooks.SpecificOutput{AdditionalContext: "lint: 0 problems"}}, nil
		}},
	}
	res, p, root := runWithHooks(t, []scripted.Turn{{ToolCalls: []scripted.ToolCall{write("a.txt", "x")}}, {Text: "done"}}, list, nil)
	if res.Status != sema.StatusCompleted {
		t.Fatalf("status %s %v", res.Status, res.Error)
	}
	first := requestText(p, 0)
	if !strings.Contains(first, "the build uses make") || !strings.Contains(first, "ticket ABC-1 is the task") {
		t.Fatalf("first request lacks the hooks' context: %s", first)
	}
	if second := requestText(p, 1); !strings.Contains(second, "lint: 0 problems") {
		t.Fatalf("the tool result lacks the PostToolUse context: %s", second)
	}
	mu.Lock()
	defer mu.Unlock()
	var resp map[string]any
	if err := json.Unmarshal(post.ToolResponse, &resp); err != nil || resp["filePath"] != filepath.Join(root, "a.txt") || resp["success"] != true {
		t.Fatalf("PostToolUse input %+v (%s)", post, post.ToolResponse)
	}
	if post.ToolName != "Write" || post.ToolUseID == "" || post.Cwd != root || post.SessionID == "" {
		t.Fatalf("PostToolUse input %+v", post)
	}
}

func contextOf(text string) hooks.Func {
	return func(context.Context, hooks.Input) (hooks.Output, error) {
		return hooks.Output{HookSpecificOutput: &hooks.SpecificOutput{AdditionalContext: text}}, nil
	}
}

// A UserPromptSubmit hook that blocks ends the run before any model request.
func TestUserPromptSubmitBlocks(t *testing.T) {
	t.Parallel()
	block := func(context.Context, hooks.Input) (hooks.Output, error) {
		return hooks.Output{Decision: "block", Reason: "prompts mentioning prod are not run here"}, nil
	}
	res, p, _ := runWithHooks(t, []scripted.Turn{{Text: "never"}}, []hooks.Hook{{Event: hooks.UserPromptSubmit, Func: block}}, nil)
	if res.Error == nil || res.Error.Code != agent.CodePromptBlocked || !strings.Contains(res.Error.Message, "prod") {
		t.Fatalf("status %s error %+v", res.Status, res.Error)
	}
	if n := len(p.Requests()); n != 0 {
		t.Fatalf("%d model requests after a blocked prompt", n)
	}
}

// A Stop hook that always blocks sends the leg back a bounded number of times, then
// the leg ends with a notice; stop_hook_active tells the hook it is looping.
func TestStopHookLoopIsBounded(t *testing.T) {
	t.Parallel()
	var calls, active atomic.Int32
	block := func(_ context.Context, in hooks.Input) (hooks.Output, error) {
		calls.Add(1)
		if in.StopHookActive {
			active.Add(1)
		}
		return hooks.Output{Decision: "block", Reason: "not yet"}, nil
	}
	var turns []scripted.Turn
	for range 20 {
		turns = append(turns, scripted.Turn{Text: "done"})
	}
	res, p, _ := runWithHooks(t, turns, []hooks.Hook{{Event: hooks.Stop, Func: block}}, nil)
	if res.Status != sema.StatusCompleted || !hasNotice(res, agent.CodeStopHookLoop) {
		t.Fatalf("status %s notices %+v", res.Status, res.Notices)
	}
	if n := len(p.Requests()); n < 2 || n > 12 {
		t.Fatalf("%d model requests: the loop must be bounded", n)
	}
	if calls.Load() < 2 || active.Load() != calls.Load()-1 {
		t.Fatalf("%d calls, %d with stop_hook_active", calls.Load(), active.Load())
	}
	if !strings.Contains(requestText(p, 1), "not yet") {
		t.Fatalf("the model did not read the Stop hook's reason: %s", requestText(p, 1))
	}
}

// continue: false from a PostToolUse hook ends the run after that call.
func TestHookContinueFalseStopsTheRun(t *testing.T) {
	t.Parallel()
	stop := func(context.Context, hooks.Input) (hooks.Output, error) {
		f := false
		return hooks.Output{Continue: &f, StopReason: "the build is red"}, nil
	}
	res, p, _ := runWithHooks(t, []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{write("a.txt", "x")}},
		{ToolCalls: []scripted.ToolCall{write("b.txt", "y")}},
		{Text: "done"},
	}, []hooks.Hook{{Event: hooks.PostToolUse, Func: stop}}, nil)
	if res.Error == nil || res.Error.Code != agent.CodeHookStopped || !strings.Contains(res.Error.Message, "the build is red") {
		t.Fatalf("status %s error %+v", res.Status, res.Error)
	}
	if n := len(p.Requests()); n != 1 {
		t.Fatalf("%d model requests after the hook stopped the run", n)
	}
}

// A hook configuration NewSet refuses refuses the run by code.
func TestInvalidHookRefusesTheRun(t *testing.T) {
	t.Parallel()
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "never"}}})
	r := agent.New(agent.Deps{Provider: p, Hooks: &agent.Hooks{Events: []hooks.Hook{{Event: "AfterEverything", Command: "true"}}}})
	_, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "go", Root: t.TempDir()})
	var e *sema.Error
	if !errors.As(err, &e) || e.Code != hooks.CodeConfigInvalid {
		t.Fatalf("err = %v", err)
	}
}

// recorder is a Go hook that records the inputs it saw.
type recorder struct {
	mu  sync.Mutex
	ins []hooks.Input
}

func (r *recorder) hook(event hooks.Event, matcher string) hooks.Hook {
	return hooks.Hook{Event: event, Matcher: matcher, Func: func(_ context.Context, in hooks.Input) (hooks.Output, error) {
		r.mu.Lock()
		r.ins = append(r.ins, in)
		r.mu.Unlock()
		return hooks.Output{}, nil
	}}
}

func (r *recorder) seen() []hooks.Input {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hooks.Input(nil), r.ins...)
}

// PostToolUseFailure sees a failed call's error, a question waiting for a person
// notifies, and SessionEnd closes the run.
func TestFailureNotificationAndEndHooks(t *testing.T) {
	t.Parallel()
	var rec recorder
	list := []hooks.Hook{
		rec.hook(hooks.PostToolUse, "Read"),
		rec.hook(hooks.PostToolUseFailure, "Read"),
		rec.hook(hooks.Notification, "permission_prompt"),
		rec.hook(hooks.SessionEnd, ""),
	}
	approver := permission.ApproverFunc(func(context.Context, permission.ApprovalRequest) (permission.ApprovalDecision, error) {
		return permission.ApprovalDecision{Behavior: permission.Deny, Reason: "not now"}, nil
	})
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("Read", `{"file_path":"missing.txt"}`)}},
		{ToolCalls: []scripted.ToolCall{write("a.txt", "x")}},
		{Text: "done"},
	}})
	r := agent.New(agent.Deps{Provider: p, Approver: approver, Hooks: &agent.Hooks{Events: list}})
	res, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "go", Root: root, OnAsk: agent.OnAskApprover})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sema.StatusCompleted {
		t.Fatalf("status %s %+v", res.Status, res.Error)
	}
	var events []string
	for _, in := range rec.seen() {
		events = append(events, string(in.HookEventName))
		switch in.HookEventName {
		case hooks.PostToolUseFailure:
			if in.ToolName != "Read" || in.Error == "" || in.ToolResponse != nil {
				t.Errorf("PostToolUseFailure input %+v", in)
			}
		case hooks.Notification:
			if in.NotificationType != "permission_prompt" || !strings.Contains(in.Message, "Write") {
				t.Errorf("Notification input %+v", in)
			}
		case hooks.SessionEnd:
			if in.Reason == "" {
				t.Errorf("SessionEnd input %+v", in)
			}
		}
	}
	if got := strings.Join(events, ","); got != "PostToolUseFailure,Notification,SessionEnd" {
		t.Fatalf("events %s", got)
	}
}
