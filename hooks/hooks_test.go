package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
)

func codeOf(err error) string {
	var e *sema.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func TestParseConfig(t *testing.T) {
	raw := `{
	  "Stop": [{"hooks": [{"type": "command", "command": "./stop.sh"}]}],
	  "PreToolUse": [
	    {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 5}]},
	    {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "./a.sh"}, {"type": "command", "command": "./b.sh", "timeout": 0.5}]}
	  ]
	}`
	got, err := ParseConfig(json.RawMessage(raw), "/ws/.sema/settings.json")
	if err != nil {
		t.Fatal(err)
	}
	want := []Hook{
		{Event: PreToolUse, Matcher: "Bash", Command: "./guard.sh", Timeout: 5 * time.Second},
		{Event: PreToolUse, Matcher: "Edit|Write", Command: "./a.sh"},
		{Event: PreToolUse, Matcher: "Edit|Write", Command: "./b.sh", Timeout: 500 * time.Millisecond},
		{Event: Stop, Command: "./stop.sh"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d hooks: %+v", len(got), got)
	}
	for i := range want {
		want[i].Source = "/ws/.sema/settings.json"
		g := got[i]
		if g.Event != want[i].Event || g.Matcher != want[i].Matcher || g.Command != want[i].Command || g.Timeout != want[i].Timeout || g.Source != want[i].Source {
			t.Errorf("hook %d = %+v, want %+v", i, g, want[i])
		}
	}
	if _, err := NewSet(got); err != nil {
		t.Fatal(err)
	}
}

func TestParseConfigRefuses(t *testing.T) {
	cases := map[string]struct{ raw, path string }{
		"not an object":    {`[]`, "hooks"},
		"unknown event":    {`{"BeforeTool": []}`, "hooks.BeforeTool"},
		"event not array":  {`{"Stop": {}}`, "hooks.Stop"},
		"group not object": {`{"Stop": ["x"]}`, "hooks.Stop[0]"},
		"group key":        {`{"Stop": [{"hooks": [], "match": "x"}]}`, "hooks.Stop[0].match"},
		"no hooks":         {`{"Stop": [{"matcher": "x"}]}`, "hooks.Stop[0]"},
		"bad regex":        {`{"PreToolUse": [{"matcher": "Bash(", "hooks": []}]}`, "hooks.PreToolUse[0].matcher"},
		"matcher number":   {`{"PreToolUse": [{"matcher": 3, "hooks": []}]}`, "hooks.PreToolUse[0].matcher"},
		"prompt type":      {`{"Stop": [{"hooks": [{"type": "prompt", "prompt": "judge"}]}]}`, "hooks.Stop[0].hooks[0].type"},
		"prompt type only": {`{"Stop": [{"hooks": [{"type": "prompt"}]}]}`, "hooks.Stop[0].hooks[0].type"},
		"no type":          {`{"Stop": [{"hooks": [{"command": "x"}]}]}`, "hooks.Stop[0].hooks[0]"},
		"empty command":    {`{"Stop": [{"hooks": [{"type": "command", "command": "  "}]}]}`, "hooks.Stop[0].hooks[0].command"},
		"zero timeout":     {`{"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": 0}]}]}`, "hooks.Stop[0].hooks[0].timeout"},
		"negative timeout": {`{"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": -1}]}]}`, "hooks.Stop[0].hooks[0].timeout"},
		"string timeout":   {`{"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": "5"}]}]}`, "hooks.Stop[0].hooks[0].timeout"},
		"huge timeout":     {`{"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": 1e300}]}]}`, "hooks.Stop[0].hooks[0].timeout"},
		"hook key":         {`{"Stop": [{"hooks": [{"type": "command", "command": "x", "async": true}]}]}`, "hooks.Stop[0].hooks[0].async"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseConfig(json.RawMessage(c.raw), "s.json")
			if codeOf(err) != CodeConfigInvalid {
				t.Fatalf("err = %v, want %s", err, CodeConfigInvalid)
			}
			if !strings.Contains(err.Error(), "s.json: "+c.path+" ") {
				t.Fatalf("err %q does not name %q", err, c.path)
			}
		})
	}
}

func TestNewSetRefuses(t *testing.T) {
	fn := func(context.Context, Input) (Output, error) { return Output{}, nil }
	for name, h := range map[string]Hook{
		"both":          {Event: Stop, Command: "x", Func: fn},
		"neither":       {Event: Stop},
		"unknown event": {Event: "Later", Func: fn},
		"bad matcher":   {Event: PreToolUse, Matcher: "(", Func: fn},
		"negative":      {Event: Stop, Func: fn, Timeout: -time.Second},
	} {
		if _, err := NewSet([]Hook{h}); codeOf(err) != CodeConfigInvalid {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestMatching(t *testing.T) {
	s, err := NewSet([]Hook{
		{Event: PreToolUse, Matcher: "Bash", Command: "bash-only"},
		{Event: PreToolUse, Matcher: "Edit|Write", Command: "edits"},
		{Event: PreToolUse, Matcher: "mcp__github__.*", Command: "github"},
		{Event: PreToolUse, Matcher: "*", Command: "all"},
		{Event: PreToolUse, Matcher: "", Command: "all"},
		{Event: PreToolUse, Matcher: "Write", Command: "edits"},
		{Event: Stop, Matcher: "ignored", Command: "stop"},
		{Event: SessionStart, Matcher: "resume", Command: "resume"},
	})
	if err != nil {
		t.Fatal(err)
	}
	cmds := func(event Event, target string) string {
		var out []string
		for _, h := range s.Matching(event, target) {
			out = append(out, h.Command)
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		event        Event
		target, want string
	}{
		{PreToolUse, "Bash", "bash-only,all"},
		{PreToolUse, "BashOutput", "all"}, // a plain name is exact
		{PreToolUse, "Write", "edits,all"},
		{PreToolUse, "MultiEdit", "all"},
		{PreToolUse, "mcp__github__create_issue", "github,all"},
		{PreToolUse, "mcp__gitlab__x", "all"},
		{Stop, "", "stop"},
		{SessionStart, "startup", ""},
		{SessionStart, "resume", "resume"},
		{PostToolUse, "Bash", ""},
	} {
		if got := cmds(c.event, c.target); got != c.want {
			t.Errorf("%s %q: %q, want %q", c.event, c.target, got, c.want)
		}
	}
	if !s.Has(Stop) || s.Has(PostToolUse) || (*Set)(nil).Has(Stop) {
		t.Fatal("Has")
	}
}

func runner(t *testing.T) *Runner {
	return &Runner{Exec: env.NewHost(), ProjectDir: t.TempDir()}
}

func commandSet(t *testing.T, event Event, cmds ...string) *Set {
	t.Helper()
	var list []Hook
	for _, c := range cmds {
		list = append(list, Hook{Event: event, Command: c, Timeout: 20 * time.Second})
	}
	s, err := NewSet(list)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A command reads the event's JSON on stdin, runs in the project directory and finds it
// in $CLAUDE_PROJECT_DIR and $SEMA_PROJECT_DIR.
func TestCommandInputAndEnvironment(t *testing.T) {
	r := runner(t)
	r.Env = []string{"TEAM_SETTING=on"}
	out := filepath.Join(t.TempDir(), "seen")
	s := commandSet(t, PreToolUse, `{ cat; echo; pwd; echo "$CLAUDE_PROJECT_DIR|$SEMA_PROJECT_DIR|$TEAM_SETTING"; } > `+out)
	in := Input{SessionID: "s1", Cwd: r.ProjectDir, ToolName: "Bash", ToolInput: json.RawMessage(`{"command":"ls"}`), ToolUseID: "t1"}
	res := s.Run(context.Background(), r, PreToolUse, "Bash", in)
	if res.Ran != 1 || len(res.Failures) != 0 {
		t.Fatalf("result %+v", res)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var got map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
		t.Fatalf("stdin %q: %v", lines[0], err)
	}
	if got["hook_event_name"] != "PreToolUse" || got["tool_name"] != "Bash" || got["session_id"] != "s1" || got["tool_use_id"] != "t1" ||
		got["tool_input"].(map[string]any)["command"] != "ls" {
		t.Fatalf("stdin %v", got)
	}
	if _, ok := got["stop_hook_active"]; ok {
		t.Fatal("a PreToolUse input carries stop_hook_active")
	}
	if lines[1] != r.ProjectDir || lines[2] != r.ProjectDir+"|"+r.ProjectDir+"|on" {
		t.Fatalf("dir and environment %q", lines[1:])
	}
}

func TestCommandAnswers(t *testing.T) {
	cases := []struct {
		name  string
		event Event
		cmd   string
		check func(t *testing.T, res Result)
	}{
		{"exit 2 blocks with stderr", PreToolUse, `echo "no rm -rf here" >&2; exit 2`, func(t *testing.T, res Result) {
			if !res.Block || res.BlockReason != "no rm -rf here" || res.Permission != "deny" || res.PermissionReason != "no rm -rf here" {
				t.Fatalf("%+v", res)
			}
		}},
		{"exit 1 fails", PreToolUse, `echo "jq: not found" >&2; exit 1`, func(t *testing.T, res Result) {
			if len(res.Failures) != 1 || !strings.Contains(res.Failures[0].Why, "status 1: jq: not found") || res.Block || res.Permission != "" {
				t.Fatalf("%+v", res)
			}
		}},
		{"signal fails", PreToolUse, `kill -KILL $$`, func(t *testing.T, res Result) {
			if len(res.Failures) != 1 || !strings.Contains(res.Failures[0].Why, "signal") {
				t.Fatalf("%+v", res)
			}
		}},
		{"invalid JSON fails", PreToolUse, `echo '{"decision": '`, func(t *testing.T, res Result) {
			if len(res.Failures) != 1 || !strings.Contains(res.Failures[0].Why, "not the hooks protocol") {
				t.Fatalf("%+v", res)
			}
		}},
		{"unknown decision fails", PreToolUse, `echo '{"hookSpecificOutput": {"permissionDecision": "maybe"}}'`, func(t *testing.T, res Result) {
			if len(res.Failures) != 1 || !strings.Contains(res.Failures[0].Why, "maybe") {
				t.Fatalf("%+v", res)
			}
		}},
		{"another event's answer fails", PreToolUse, `echo '{"hookSpecificOutput": {"hookEventName": "PostToolUse"}}'`, func(t *testing.T, res Result) {
			if len(res.Failures) != 1 {
				t.Fatalf("%+v", res)
			}
		}},
		{"updatedInput not an object fails", PreToolUse, `echo '{"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": "rm -rf /"}}'`, func(t *testing.T, res Result) {
			if len(res.Failures) != 1 || res.Permission != "" {
				t.Fatalf("%+v", res)
			}
		}},
		{"JSON allow with rewrite", PreToolUse, `echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": "ok", "updatedInput": {"command": "ls -la"}}}'`, func(t *testing.T, res Result) {
			if res.Permission != "allow" || res.PermissionReason != "ok" || string(res.UpdatedInput) != `{"command": "ls -la"}` || len(res.Failures) != 0 {
				t.Fatalf("%+v", res)
			}
		}},
		{"legacy approve", PreToolUse, `echo '{"decision": "approve", "reason": "fine"}'`, func(t *testing.T, res Result) {
			if res.Permission != "allow" || res.PermissionReason != "fine" || res.Block {
				t.Fatalf("%+v", res)
			}
		}},
		{"legacy block is a deny", PreToolUse, `echo '{"decision": "block", "reason": "nope"}'`, func(t *testing.T, res Result) {
			if res.Permission != "deny" || res.PermissionReason != "nope" {
				t.Fatalf("%+v", res)
			}
		}},
		{"plain stdout is a message", PostToolUse, `echo formatted main.go`, func(t *testing.T, res Result) {
			if len(res.Messages) != 1 || res.Messages[0] != "formatted main.go" || len(res.Context) != 0 {
				t.Fatalf("%+v", res)
			}
		}},
		{"plain stdout is prompt context", UserPromptSubmit, `echo "today is Tuesday"`, func(t *testing.T, res Result) {
			if len(res.Context) != 1 || res.Context[0] != "today is Tuesday" {
				t.Fatalf("%+v", res)
			}
		}},
		{"block a stop", Stop, `echo '{"decision": "block", "reason": "run the tests"}'`, func(t *testing.T, res Result) {
			if !res.Block || res.BlockReason != "run the tests" || res.Permission != "" {
				t.Fatalf("%+v", res)
			}
		}},
		{"continue false", PostToolUse, `echo '{"continue": false, "stopReason": "build broke", "systemMessage": "heads up", "hookSpecificOutput": {"additionalContext": "see log"}}'`, func(t *testing.T, res Result) {
			if !res.Stop || res.StopReason != "build broke" || len(res.Messages) != 1 || res.Messages[0] != "heads up" || len(res.Context) != 1 || res.Context[0] != "see log" {
				t.Fatalf("%+v", res)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := runner(t)
			c.check(t, commandSet(t, c.event, c.cmd).Run(context.Background(), r, c.event, "Bash", Input{}))
		})
	}
}

// Calibration for the fail-closed cases: the same runner reads a well-formed answer.
func TestCommandStdoutCap(t *testing.T) {
	r := runner(t)
	r.OutputCap = 64
	big := commandSet(t, PreToolUse, `printf '{"decision": "approve", "reason": "%0200d"}' 0`)
	if res := big.Run(context.Background(), r, PreToolUse, "Bash", Input{}); len(res.Failures) != 1 || !strings.Contains(res.Failures[0].Why, "more than 64 bytes") {
		t.Fatalf("%+v", res)
	}
	small := commandSet(t, PreToolUse, `printf '{"decision": "approve"}'`)
	if res := small.Run(context.Background(), r, PreToolUse, "Bash", Input{}); res.Permission != "allow" || len(res.Failures) != 0 {
		t.Fatalf("%+v", res)
	}
}

// A command that outlives its timeout is a timed-out failure, and what it started in its
// group is killed with it.
func TestCommandTimeoutKillsGroup(t *testing.T) {
	r := runner(t)
	pids := filepath.Join(t.TempDir(), "pids")
	s, err := NewSet([]Hook{{Event: PreToolUse, Command: `sleep 300 & echo $! > ` + pids + `; sleep 300`, Timeout: 300 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	res := s.Run(context.Background(), r, PreToolUse, "Bash", Input{})
	if len(res.Failures) != 1 || !res.Failures[0].TimedOut || res.Permission != "" {
		t.Fatalf("%+v", res)
	}
	assertGone(t, pids)
}

// What a command leaves in the background when it exits normally is killed too.
func TestCommandLeftoversKilled(t *testing.T) {
	r := runner(t)
	pids := filepath.Join(t.TempDir(), "pids")
	s := commandSet(t, PostToolUse, `sleep 300 & echo $! > `+pids+`; exit 0`)
	if res := s.Run(context.Background(), r, PostToolUse, "Bash", Input{}); len(res.Failures) != 0 {
		t.Fatalf("%+v", res)
	}
	assertGone(t, pids)
}

func assertGone(t *testing.T, pidFile string) {
	t.Helper()
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(data))), &pid); err != nil || pid <= 0 {
		t.Fatalf("pid file %q", data)
	}
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("process %d is still alive: %v", pid, err)
	}
}

// The hooks of one event run at the same time: each waits for the other's mark, which
// would never come if they ran one after the other.
func TestHooksRunInParallel(t *testing.T) {
	r := runner(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	s := commandSet(t, PostToolUse,
		`touch `+a+`; while [ ! -e `+b+` ]; do sleep 0.01; done; echo one`,
		`touch `+b+`; while [ ! -e `+a+` ]; do sleep 0.01; done; echo two`)
	res := s.Run(context.Background(), r, PostToolUse, "Bash", Input{})
	if len(res.Failures) != 0 || strings.Join(res.Messages, ",") != "one,two" {
		t.Fatalf("%+v", res)
	}
}

// Identical commands run once.
func TestIdenticalCommandsRunOnce(t *testing.T) {
	r := runner(t)
	log := filepath.Join(t.TempDir(), "log")
	cmd := `echo x >> ` + log
	s, err := NewSet([]Hook{
		{Event: PostToolUse, Matcher: "Bash", Command: cmd, Source: "user"},
		{Event: PostToolUse, Matcher: "*", Command: cmd, Source: "project"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res := s.Run(context.Background(), r, PostToolUse, "Bash", Input{}); res.Ran != 1 {
		t.Fatalf("%+v", res)
	}
	if data, _ := os.ReadFile(log); string(data) != "x\n" {
		t.Fatalf("log %q", data)
	}
}

func TestCommandWithoutExecutorOrWithFailingWrap(t *testing.T) {
	s := commandSet(t, PreToolUse, "true")
	res := s.Run(context.Background(), &Runner{ProjectDir: t.TempDir()}, PreToolUse, "Bash", Input{})
	if len(res.Failures) != 1 {
		t.Fatalf("no executor: %+v", res)
	}
	r := runner(t)
	r.Wrap = func(env.ExecRequest) (env.ExecRequest, error) { return env.ExecRequest{}, errors.New("no landlock") }
	if res := s.Run(context.Background(), r, PreToolUse, "Bash", Input{}); len(res.Failures) != 1 || !strings.Contains(res.Failures[0].Why, "no landlock") {
		t.Fatalf("failing wrap: %+v", res)
	}
	// The wrap's request is the one that runs.
	out := filepath.Join(t.TempDir(), "wrapped")
	r.Wrap = func(req env.ExecRequest) (env.ExecRequest, error) {
		req.Env = append(req.Env, "WRAPPED=yes")
		return req, nil
	}
	if res := commandSet(t, PreToolUse, `echo $WRAPPED > `+out).Run(context.Background(), r, PreToolUse, "Bash", Input{}); len(res.Failures) != 0 {
		t.Fatalf("%+v", res)
	}
	if data, _ := os.ReadFile(out); string(data) != "yes\n" {
		t.Fatalf("wrapped run saw %q", data)
	}
}

func funcSet(t *testing.T, event Event, timeout time.Duration, fns ...Func) *Set {
	t.Helper()
	var list []Hook
	for _, f := range fns {
		list = append(list, Hook{Event: event, Func: f, Timeout: timeout})
	}
	s, err := NewSet(list)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func answerWith(o Output) Func {
	return func(context.Context, Input) (Output, error) { return o, nil }
}

func TestMergeStrictestPermissionWins(t *testing.T) {
	perm := func(d, reason string) Func {
		return answerWith(Output{HookSpecificOutput: &SpecificOutput{PermissionDecision: d, PermissionDecisionReason: reason}})
	}
	for _, c := range []struct {
		fns        []Func
		want, why  string
		wantUpdate string
	}{
		{[]Func{perm("allow", "a"), perm("deny", "d"), perm("ask", "q")}, "deny", "d", ""},
		{[]Func{perm("allow", "a"), perm("ask", "q1"), perm("ask", "q2")}, "ask", "q1\nq2", ""},
		{[]Func{perm("allow", "a1"), perm("allow", "a2")}, "allow", "a1\na2", ""},
		{[]Func{answerWith(Output{}), perm("", "")}, "", "", ""},
	} {
		res := funcSet(t, PreToolUse, 0, c.fns...).Run(context.Background(), nil, PreToolUse, "Bash", Input{})
		if res.Permission != c.want || res.PermissionReason != c.why {
			t.Errorf("%+v, want %s %q", res, c.want, c.why)
		}
	}
}

func TestMergeUpdatedInput(t *testing.T) {
	rewrite := func(in string) Func {
		return answerWith(Output{HookSpecificOutput: &SpecificOutput{UpdatedInput: json.RawMessage(in)}})
	}
	same := funcSet(t, PreToolUse, 0, rewrite(`{"a":1,"b":2}`), rewrite(`{"b":2, "a":1}`)).Run(context.Background(), nil, PreToolUse, "X", Input{})
	if same.Conflict || string(same.UpdatedInput) != `{"a":1,"b":2}` {
		t.Fatalf("%+v", same)
	}
	differ := funcSet(t, PreToolUse, 0, rewrite(`{"a":1}`), rewrite(`{"a":2}`)).Run(context.Background(), nil, PreToolUse, "X", Input{})
	if !differ.Conflict {
		t.Fatalf("%+v", differ)
	}
	// A rewrite counts only for PreToolUse.
	post := funcSet(t, PostToolUse, 0, rewrite(`{"a":1}`)).Run(context.Background(), nil, PostToolUse, "X", Input{})
	if post.UpdatedInput != nil {
		t.Fatalf("%+v", post)
	}
}

func TestFuncFailures(t *testing.T) {
	var calls atomic.Int32
	panics := func(context.Context, Input) (Output, error) { calls.Add(1); panic("hook bug") }
	errs := func(context.Context, Input) (Output, error) { return Output{}, errors.New("policy server down") }
	hangs := func(ctx context.Context, _ Input) (Output, error) { <-ctx.Done(); return Output{}, ctx.Err() }
	ignores := func(context.Context, Input) (Output, error) { time.Sleep(2 * time.Second); return Output{}, nil }
	bad := answerWith(Output{Decision: "maybe"})
	res := funcSet(t, PreToolUse, 100*time.Millisecond, panics, errs, hangs, ignores, bad).Run(context.Background(), nil, PreToolUse, "X", Input{})
	if len(res.Failures) != 5 || calls.Load() != 1 {
		t.Fatalf("%+v", res)
	}
	why := []string{"panicked: hook bug", "policy server down", "timed out", "timed out", "maybe"}
	for i, f := range res.Failures {
		if !strings.Contains(f.Why, why[i]) {
			t.Errorf("failure %d: %q, want %q", i, f.Why, why[i])
		}
		if f.TimedOut != (i == 2 || i == 3) {
			t.Errorf("failure %d: TimedOut %v", i, f.TimedOut)
		}
	}
}

// A Func receives the input with its event set.
func TestFuncInput(t *testing.T) {
	var seen Input
	s := funcSet(t, UserPromptSubmit, 0, func(_ context.Context, in Input) (Output, error) {
		seen = in
		return Output{HookSpecificOutput: &SpecificOutput{AdditionalContext: "ctx"}}, nil
	})
	res := s.Run(context.Background(), nil, UserPromptSubmit, "", Input{Prompt: "hello"})
	if seen.HookEventName != UserPromptSubmit || seen.Prompt != "hello" || len(res.Context) != 1 {
		t.Fatalf("seen %+v res %+v", seen, res)
	}
}

func TestInputJSONPerEvent(t *testing.T) {
	for _, c := range []struct {
		in        Input
		has, lack []string
	}{
		{Input{HookEventName: Stop}, []string{`"stop_hook_active":false`}, []string{"custom_instructions", "prompt", "tool_name"}},
		{Input{HookEventName: SubagentStop, StopHookActive: true, AgentID: "c1"}, []string{`"stop_hook_active":true`, `"agent_id":"c1"`}, nil},
		{Input{HookEventName: PreCompact, Trigger: "auto"}, []string{`"custom_instructions":""`, `"trigger":"auto"`}, []string{"stop_hook_active"}},
		{Input{HookEventName: UserPromptSubmit, Prompt: "hi"}, []string{`"prompt":"hi"`}, []string{"stop_hook_active"}},
		{Input{HookEventName: PreToolUse, ToolName: "Bash", ToolInput: json.RawMessage(`{"command":"ls"}`)}, []string{`"tool_input":{"command":"ls"}`, `"cwd":""`, `"session_id":""`}, []string{"stop_hook_active", "transcript_path", "prompt"}},
	} {
		data, err := json.Marshal(c.in)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range c.has {
			if !strings.Contains(string(data), h) {
				t.Errorf("%s lacks %s", data, h)
			}
		}
		for _, l := range c.lack {
			if strings.Contains(string(data), `"`+l+`"`) {
				t.Errorf("%s has %s", data, l)
			}
		}
	}
}

// A cancelled run stops a hook, and it is not reported as a timeout.
func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	res := commandSet(t, PreToolUse, "sleep 300").Run(ctx, runner(t), PreToolUse, "Bash", Input{})
	if len(res.Failures) != 1 || res.Failures[0].TimedOut || !strings.Contains(res.Failures[0].Why, "stopped") {
		t.Fatalf("%+v", res)
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add(`{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"x","timeout":3}]}]}`)
	f.Add(`{"Stop":[{"hooks":[{"type":"prompt"}]}]}`)
	f.Add(`{"PreToolUse":[{"matcher":"a(","hooks":[]}]}`)
	f.Add(`{"Notification":[{"matcher":"","hooks":[{"type":"command","command":"x","timeout":1e-9}]}]}`)
	f.Fuzz(func(t *testing.T, raw string) {
		list, err := ParseConfig(json.RawMessage(raw), "fuzz.json")
		if err != nil {
			if codeOf(err) != CodeConfigInvalid {
				t.Fatalf("error without the code: %v", err)
			}
			return
		}
		// What parses compiles, and every hook is a command with a sane timeout.
		if _, err := NewSet(list); err != nil {
			t.Fatalf("parsed but does not compile: %v", err)
		}
		for _, h := range list {
			if strings.TrimSpace(h.Command) == "" || h.Timeout < 0 || h.Timeout > maxTimeout || h.Source != "fuzz.json" {
				t.Fatalf("hook %+v", h)
			}
		}
	})
}

// FuzzOutput: whatever a hook prints, reading it never panics, and an answer that is
// read (not a failure) yields only the protocol's permission words.
func FuzzOutput(f *testing.F) {
	f.Add(`{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"a":1}}}`)
	f.Add(`{"decision":"approve"}`)
	f.Add(`{"continue":false}`)
	f.Add(`plain text`)
	f.Add(`{"hookSpecificOutput":{"updatedInput":[1]}}`)
	f.Fuzz(func(t *testing.T, stdout string) {
		h := Hook{Event: PreToolUse, Command: "x"}
		a := stdoutAnswer(h, PreToolUse, stdout)
		res := merge(PreToolUse, []Hook{h}, []answer{a})
		switch res.Permission {
		case "", "allow", "deny", "ask":
		default:
			t.Fatalf("permission %q", res.Permission)
		}
		if a.failure == nil && strings.HasPrefix(strings.TrimSpace(stdout), "{") && !a.hasOut {
			t.Fatal("JSON stdout neither read nor refused")
		}
		if u := res.UpdatedInput; u != nil {
			var m map[string]any
			if json.Unmarshal(u, &m) != nil {
				t.Fatalf("updatedInput %s is not an object", u)
			}
		}
	})
}

func BenchmarkMatchNone10(b *testing.B) {
	var list []Hook
	for _, m := range []string{"Bash", "Edit|Write", "MultiEdit", "mcp__github__.*", "NotebookEdit", "WebFetch", "Glob|Grep", "Task", "mcp__memory__.*", "TodoWrite"} {
		list = append(list, Hook{Event: PreToolUse, Matcher: m, Command: "x"})
	}
	s, err := NewSet(list)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if len(s.Matching(PreToolUse, "Read")) != 0 {
			b.Fatal("matched")
		}
	}
}

func BenchmarkRunOneCommand(b *testing.B) {
	r := &Runner{Exec: env.NewHost(), ProjectDir: b.TempDir()}
	s, err := NewSet([]Hook{{Event: PreToolUse, Matcher: "Bash", Command: "exit 0"}})
	if err != nil {
		b.Fatal(err)
	}
	in := Input{SessionID: "s", Cwd: r.ProjectDir, ToolName: "Bash", ToolInput: json.RawMessage(`{"command":"go test ./..."}`)}
	for b.Loop() {
		if res := s.Run(context.Background(), r, PreToolUse, "Bash", in); res.Ran != 1 || len(res.Failures) != 0 {
			b.Fatalf("%+v", res)
		}
	}
}

func BenchmarkRunOneFunc(b *testing.B) {
	s, err := NewSet([]Hook{{Event: PreToolUse, Matcher: "Bash", Func: answerWith(Output{HookSpecificOutput: &SpecificOutput{PermissionDecision: "allow"}})}})
	if err != nil {
		b.Fatal(err)
	}
	in := Input{SessionID: "s", Cwd: "/ws", ToolName: "Bash", ToolInput: json.RawMessage(`{"command":"go test ./..."}`)}
	b.ReportAllocs()
	for b.Loop() {
		if res := s.Run(context.Background(), nil, PreToolUse, "Bash", in); res.Permission != "allow" {
			b.Fatalf("%+v", res)
		}
	}
}
