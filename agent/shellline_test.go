package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/hooks"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/session"
)

// lineRoot is a task root for a shell line's test, by its canonical spelling.
func lineRoot(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("no bash")
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	return root
}

// runLine runs spec on runner and returns its result and events.
func runLine(t *testing.T, runner *agent.Runner, spec agent.TaskSpec) (*agent.TaskResult, []agent.Event) {
	t.Helper()
	var evs []agent.Event
	var res *agent.TaskResult
	for ev, err := range runner.Events(context.Background(), spec) {
		must(t, err)
		evs = append(evs, ev)
		if ev.Type == agent.EventResult {
			res = ev.Result
		}
	}
	if res == nil {
		t.Fatal("no result event")
	}
	return res, evs
}

// userTexts are the texts of the user entries of a session's transcript.
func userTexts(t *testing.T, store session.Store, id string) []string {
	t.Helper()
	chain, err := store.Transcript(context.Background(), id, "")
	must(t, err)
	var out []string
	for _, e := range chain {
		if e.Kind != "user" {
			continue
		}
		var m model.Message
		must(t, json.Unmarshal(e.Payload, &m))
		for _, b := range m.Content {
			out = append(out, b.Text)
		}
	}
	return out
}

// A shell line runs as a Bash call without a model request: its file is written, its
// events are a tool call and its result, the question the fold asked is answered by the
// person, the next leg's model reads the command and its output, and a rewind to the
// start of the session undoes the write while one to the next turn keeps it.
func TestShellLineRunsAndTheNextModelReadsIt(t *testing.T) {
	root := lineRoot(t)
	store, hist := session.NewMemory(), history.NewMemory()
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "I see you wrote hand.txt."}}})
	runner := agent.New(agent.Deps{Provider: p, Store: store, History: hist, Shell: &agent.ShellOptions{Sandbox: sandbox.ModeOff}})
	line := `printf 'made by hand\n' > hand.txt && echo wrote it`
	res, evs := runLine(t, runner, agent.TaskSpec{ShellLine: line, Root: root})
	if res.Status != sema.StatusCompleted || res.Error != nil {
		t.Fatalf("status %s, error %+v", res.Status, res.Error)
	}
	if b, err := os.ReadFile(filepath.Join(root, "hand.txt")); err != nil || string(b) != "made by hand\n" {
		t.Fatalf("hand.txt: %q, %v", b, err)
	}
	if n := len(p.Requests()); n != 0 {
		t.Fatalf("a shell line sent %d model requests", n)
	}
	if s, err := store.Get(context.Background(), res.SessionID); err != nil || s.Title != "! "+line {
		t.Errorf("the new session's title %q (%v), want the line after its !", s.Title, err)
	}
	if !strings.Contains(res.Result, "wrote it") {
		t.Errorf("result %q lacks the command's output", res.Result)
	}
	var use, result, person bool
	for _, ev := range evs {
		switch {
		case ev.Type == agent.EventToolUse && ev.ToolUse.Name == "Bash" && strings.Contains(string(ev.ToolUse.Input), "hand.txt"):
			use = true
		case ev.Type == agent.EventToolResult && ev.ToolResult.Name == "Bash" && !ev.ToolResult.IsError && strings.Contains(ev.ToolResult.Text, "wrote it"):
			result = true
		case ev.Type == agent.EventPermission && ev.Question != nil:
			person = ev.Question.AnsweredBy == agent.AnsweredByPerson && ev.Question.Behavior == permission.Allow
		}
	}
	if !use || !result || !person {
		t.Errorf("events: tool_use %v, tool_result %v, answered by the person %v", use, result, person)
	}

	res2, _ := runLine(t, runner, agent.TaskSpec{Prompt: "what did I do?", Root: root, Resume: &agent.Resume{SessionID: res.SessionID}})
	if res2.Status != sema.StatusCompleted {
		t.Fatalf("the next leg: %s %+v", res2.Status, res2.Error)
	}
	reqs := p.Requests()
	if len(reqs) != 1 {
		t.Fatalf("the next leg sent %d requests, want 1", len(reqs))
	}
	var sent []string
	for _, m := range reqs[0].Messages {
		if m.Role == model.RoleUser {
			for _, b := range m.Content {
				sent = append(sent, b.Text)
			}
		}
	}
	all := strings.Join(sent, "\n")
	if !strings.Contains(all, "The person ran this in the shell:\n$ "+line+"\nwrote it") || !strings.Contains(all, "what did I do?") {
		t.Fatalf("the next model did not read the line and its output; user texts sent: %q", sent)
	}

	keep, err := runner.Rewind(context.Background(), agent.RewindSpec{SessionID: res.SessionID, ToTurn: res2.FirstTurn, Files: true, DryRun: true})
	must(t, err)
	for _, e := range keep.Ledger.Entries {
		if strings.HasSuffix(e.Path, "hand.txt") {
			t.Errorf("a rewind to the turn after the line would touch hand.txt: %+v", e)
		}
	}
	if _, err := runner.Rewind(context.Background(), agent.RewindSpec{SessionID: res.SessionID, ToTurn: 0, Files: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "hand.txt")); !os.IsNotExist(err) {
		t.Errorf("hand.txt after a rewind to the session's start: %v, want it gone", err)
	}
}

// A deny rule refuses the line by name: nothing runs, the denial is in the result, the
// leg ends with permission.denied and the conversation gets no entry. Calibrated: without
// the rule the same line runs.
func TestShellLineDenyRuleRefuses(t *testing.T) {
	for _, withRule := range []bool{true, false} {
		t.Run(map[bool]string{true: "rule", false: "calibration"}[withRule], func(t *testing.T) {
			root := lineRoot(t)
			victim := filepath.Join(root, "victim.txt")
			must(t, os.WriteFile(victim, []byte("keep me\n"), 0o644))
			store := session.NewMemory()
			p := scripted.New(scripted.Script{})
			runner := agent.New(agent.Deps{Provider: p, Store: store, Shell: &agent.ShellOptions{Sandbox: sandbox.ModeOff}})
			spec := agent.TaskSpec{ShellLine: "rm victim.txt", Root: root}
			if withRule {
				spec.DisallowedTools = []string{"Bash(rm:*)"}
			}
			res, _ := runLine(t, runner, spec)
			_, err := os.Stat(victim)
			if !withRule {
				if res.Status != sema.StatusCompleted || !os.IsNotExist(err) {
					t.Fatalf("calibration: the line did not run: %s %+v, stat %v", res.Status, res.Error, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("a denied line removed the file: %v", err)
			}
			if res.Status != sema.StatusError || res.Error == nil || res.Error.Code != permission.CodeDenied {
				t.Fatalf("status %s, error %+v; want error permission.denied", res.Status, res.Error)
			}
			if len(res.PermissionDenials) != 1 || !strings.Contains(res.PermissionDenials[0].Reason, "Bash(rm:*)") {
				t.Errorf("denials %+v, want the rule's", res.PermissionDenials)
			}
			if texts := userTexts(t, store, res.SessionID); len(texts) != 0 {
				t.Errorf("a refused line left entries: %q", texts)
			}
		})
	}
}

// Plan mode and a read-only task refuse a line that may change something, saying why;
// a read-only line runs in both, and the writing line runs in default mode.
func TestShellLineRefusedWhileReadOnly(t *testing.T) {
	cases := []struct {
		name      string
		mode      permission.Mode
		readOnly  bool
		line      string
		runs      bool
		code, why string
	}{
		{"plan refuses a write", permission.ModePlan, false, "touch made.txt", false, permission.CodeDenied, "Plan mode is on"},
		{"plan runs a read", permission.ModePlan, false, "ls", true, "", ""},
		{"read-only refuses a write", "", true, "touch made.txt", false, "shell.not_read_only", "did not run the command"},
		{"read-only runs a read", "", true, "ls", true, "", ""},
		{"default runs the write (calibration)", permission.ModeDefault, false, "touch made.txt", true, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := lineRoot(t)
			must(t, os.WriteFile(filepath.Join(root, "seen.txt"), nil, 0o644))
			runner := agent.New(agent.Deps{Provider: scripted.New(scripted.Script{}), Shell: &agent.ShellOptions{Sandbox: sandbox.ModeOff}})
			res, _ := runLine(t, runner, agent.TaskSpec{ShellLine: c.line, Root: root, PermissionMode: c.mode, ReadOnly: c.readOnly})
			_, err := os.Stat(filepath.Join(root, "made.txt"))
			made := err == nil
			if c.runs {
				if res.Status != sema.StatusCompleted {
					t.Fatalf("status %s %+v, want completed", res.Status, res.Error)
				}
				if c.line == "ls" && !strings.Contains(res.Result, "seen.txt") {
					t.Errorf("ls printed %q", res.Result)
				}
				if c.line != "ls" && !made {
					t.Error("the writing line did not write")
				}
				return
			}
			if made {
				t.Fatal("a refused line wrote made.txt")
			}
			if res.Status != sema.StatusError || res.Error == nil || res.Error.Code != c.code || !strings.Contains(res.Error.Message, c.why) {
				t.Fatalf("status %s, error %+v; want %s saying %q", res.Status, res.Error, c.code, c.why)
			}
		})
	}
}

// A PreToolUse hook that blocks the line refuses it; one that lets it through sees it,
// and so does the PostToolUse hook after it ran.
func TestShellLineGoesThroughTheHooks(t *testing.T) {
	root := lineRoot(t)
	var mu sync.Mutex
	var pre, post []string
	block := func(_ context.Context, c permission.Call) (permission.HookDecision, error) {
		mu.Lock()
		pre = append(pre, c.Command)
		mu.Unlock()
		if strings.Contains(c.Command, "blocked") {
			return permission.HookDecision{Behavior: permission.Deny, Reason: "not that file"}, nil
		}
		return permission.HookDecision{}, nil
	}
	after := hooks.Hook{Event: hooks.PostToolUse, Matcher: "Bash", Func: func(_ context.Context, in hooks.Input) (hooks.Output, error) {
		mu.Lock()
		post = append(post, string(in.ToolInput))
		mu.Unlock()
		return hooks.Output{}, nil
	}}
	runner := agent.New(agent.Deps{Provider: scripted.New(scripted.Script{}), Shell: &agent.ShellOptions{Sandbox: sandbox.ModeOff},
		Hooks: &agent.Hooks{PreToolUse: []permission.Hook{block}, Events: []hooks.Hook{after}}})
	res, _ := runLine(t, runner, agent.TaskSpec{ShellLine: "touch blocked.txt", Root: root})
	if _, err := os.Stat(filepath.Join(root, "blocked.txt")); err == nil {
		t.Fatal("a blocked line ran")
	}
	if res.Status != sema.StatusError || res.Error == nil || res.Error.Code != permission.CodeDenied || !strings.Contains(res.Error.Message, "not that file") {
		t.Fatalf("status %s, error %+v; want the hook's denial", res.Status, res.Error)
	}
	res, _ = runLine(t, runner, agent.TaskSpec{ShellLine: "touch fine.txt", Root: root})
	if _, err := os.Stat(filepath.Join(root, "fine.txt")); err != nil || res.Status != sema.StatusCompleted {
		t.Fatalf("calibration: the line the hook lets through did not run: %v %s %+v", err, res.Status, res.Error)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(pre) != 2 || pre[0] != "touch blocked.txt" || pre[1] != "touch fine.txt" {
		t.Errorf("PreToolUse saw %q", pre)
	}
	if len(post) != 1 || !strings.Contains(post[0], "fine.txt") {
		t.Errorf("PostToolUse saw %q, want the line that ran only", post)
	}
}

// A line that writes outside the roots is contained as a Bash call a person approved
// is: the kernel sandbox keeps the write from landing. Calibrated: with the sandbox off,
// the same approved line writes there.
func TestShellLineOutsideTheRootsIsContained(t *testing.T) {
	if k := sandbox.Probe(); !k.Available() || !k.MountNamespace {
		t.Skipf("the kernel sandbox is not available here (%s): nothing confines the line but the fold", k.Reason)
	}
	for _, mode := range []sandbox.Mode{sandbox.ModeOff, sandbox.ModeOn} {
		t.Run(string(mode), func(t *testing.T) {
			base := lineRoot(t)
			root, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
			must(t, os.MkdirAll(root, 0o755))
			must(t, os.MkdirAll(outside, 0o755))
			target := filepath.Join(outside, "escaped.txt")
			runner := agent.New(agent.Deps{Provider: scripted.New(scripted.Script{}), Shell: &agent.ShellOptions{Sandbox: mode}})
			res, _ := runLine(t, runner, agent.TaskSpec{ShellLine: "echo out > " + target, Root: root})
			t.Logf("sandbox %s: %s", mode, res.Result)
			_, err := os.Stat(target)
			if escaped := err == nil; escaped != (mode == sandbox.ModeOff) {
				t.Fatalf("sandbox %s: the file outside the roots written: %v; status %s %+v, result %q", mode, escaped, res.Status, res.Error, res.Result)
			}
		})
	}
}

// noExec is an env that cannot run programs.
type noExec struct{ env.ExecutionEnv }

// The door refuses a shell line it could not run as typed, by name, before anything
// runs.
func TestShellLineRefusals(t *testing.T) {
	root := t.TempDir()
	store := session.NewMemory()
	p := scripted.New(scripted.Script{})
	runner := agent.New(agent.Deps{Provider: p, Store: store})
	cases := []struct {
		name   string
		spec   agent.TaskSpec
		deps   *agent.Deps
		answer *agent.Answer
		want   string
	}{
		{"blank", agent.TaskSpec{ShellLine: " \t\n", Root: root}, nil, nil, "blank"},
		{"with a prompt", agent.TaskSpec{ShellLine: "ls", Prompt: "and this", Root: root}, nil, nil, "not both"},
		{"a NUL byte", agent.TaskSpec{ShellLine: "ls\x00-la", Root: root}, nil, nil, "NUL"},
		{"with Continue", agent.TaskSpec{ShellLine: "ls", Root: root, Resume: &agent.Resume{SessionID: "s", Continue: true}}, nil, nil, "Continue"},
		{"with an answer", agent.TaskSpec{ShellLine: "ls", Root: root, Resume: &agent.Resume{SessionID: "s"}}, nil, &agent.Answer{CheckpointID: "c", Allow: true}, "answer"},
		{"no programs", agent.TaskSpec{ShellLine: "ls", Root: root}, &agent.Deps{Provider: p, Env: noExec{env.NewHost()}}, nil, "cannot run programs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runner
			if c.deps != nil {
				r = agent.New(*c.deps)
			}
			var err error
			if c.answer != nil {
				_, err = r.Resume(context.Background(), c.spec, *c.answer)
				err = unwrapRefused(err)
			} else {
				_, err = r.Run(context.Background(), c.spec)
			}
			if !sema.IsCode(err, agent.CodeShellLineInvalid) || !strings.Contains(sema.MessageOf(err), c.want) {
				t.Fatalf("got %v, want %s saying %q", err, agent.CodeShellLineInvalid, c.want)
			}
		})
	}
	if n := len(p.Requests()); n != 0 {
		t.Errorf("refused lines sent %d model requests", n)
	}
}

// unwrapRefused is the original refusal a resume wraps in checkpoint.config_refused.
func unwrapRefused(err error) error {
	var se *sema.Error
	if !sema.IsCode(err, agent.CodeConfigRefused) {
		return err
	}
	se, _ = err.(*sema.Error)
	if code, ok := se.Detail["code"].(string); ok {
		return sema.Errorf(code, "%s", se.Message)
	}
	return err
}

// FuzzShellLine: whatever the line, nothing panics, and a line refused — by the door, or
// by a rule denying every Bash call — runs nothing: the root stays empty, no model is
// asked and the conversation gets no entry.
func FuzzShellLine(f *testing.F) {
	if _, err := os.Stat("/bin/bash"); err != nil {
		f.Skip("no bash")
	}
	for _, s := range []string{"", " ", "ls", "touch pwned", "echo $(touch pwned)", "`touch pwned`", "rm -rf .", "echo x > pwned\n",
		"a\x00b", "cat <<EOF > pwned\nx\nEOF", "(touch pwned)&", "eval 'touch pwned'", "; touch pwned", "é\u202etouch", "\t\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		root := t.TempDir()
		store := session.NewMemory()
		p := scripted.New(scripted.Script{})
		runner := agent.New(agent.Deps{Provider: p, Store: store, Shell: &agent.ShellOptions{Sandbox: sandbox.ModeOff}})
		res, err := runner.Run(context.Background(), agent.TaskSpec{ShellLine: line, Root: root, DisallowedTools: []string{"Bash"}})
		if err != nil {
			if line != "" && !sema.IsCode(err, agent.CodeShellLineInvalid) {
				t.Fatalf("line %q refused with %v", line, err)
			}
		} else {
			if res.Status != sema.StatusError || res.Error == nil || res.Error.Code != permission.CodeDenied {
				t.Fatalf("line %q under a deny of every Bash call: status %s, error %+v", line, res.Status, res.Error)
			}
			if texts := userTexts(t, store, res.SessionID); len(texts) != 0 {
				t.Fatalf("line %q: a refused line left entries %q", line, texts)
			}
		}
		if left, _ := os.ReadDir(root); len(left) != 0 {
			t.Fatalf("line %q: a refused line left %v in the root", line, left)
		}
		if n := len(p.Requests()); n != 0 {
			t.Fatalf("line %q: %d model requests", line, n)
		}
	})
}
