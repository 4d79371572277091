package replay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/hooks"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/replay"
	"github.com/sema-agent/sema/session"
)

// recorded runs script in a new workspace holding files and returns the stores that
// recorded it, the session and the workspace.
func recorded(t testing.TB, files map[string]string, script scripted.Script) (session.Store, history.Store, string, string) {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st, h := session.NewMemory(), history.NewMemory()
	res, err := agent.New(agent.Deps{Provider: scripted.New(script), Store: st, History: h, Home: t.TempDir()}).
		Run(context.Background(), agent.TaskSpec{Root: root, Prompt: "do the work", PermissionMode: permission.ModeAcceptEdits, OnAsk: agent.OnAskDeny})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sema.StatusCompleted {
		t.Fatalf("the recorded run ended %s: %v", res.Status, res.Error)
	}
	return st, h, res.SessionID, root
}

func call(id, name string, input any) scripted.ToolCall {
	b, _ := json.Marshal(input)
	return scripted.ToolCall{ID: id, Name: name, Input: b}
}

func editScript() scripted.Script {
	return scripted.Script{Turns: []scripted.Turn{
		{Text: "Reading.", ToolCalls: []scripted.ToolCall{call("t1", "Read", map[string]any{"file_path": "a.txt"})}},
		{ToolCalls: []scripted.ToolCall{call("t2", "Edit", map[string]any{"file_path": "a.txt", "old_string": "one", "new_string": "ONE"})}},
		{ToolCalls: []scripted.ToolCall{call("t3", "Write", map[string]any{"file_path": "new/b.txt", "content": "made\n"})}},
		{ToolCalls: []scripted.ToolCall{call("t4", "Bash", map[string]any{"command": "cat a.txt new/b.txt"})}},
		{Text: "Done."},
	}}
}

func replayOpts(st session.Store, h history.Store, id string) replay.Options {
	return replay.Options{Sessions: st, History: h, SessionID: id, Deps: agent.Deps{Home: os.TempDir()}}
}

func TestReplayOfAnUnchangedSessionIsIdentical(t *testing.T) {
	st, h, id, root := recorded(t, map[string]string{"a.txt": "one\ntwo\n"}, editScript())
	rep, err := replay.Run(context.Background(), replayOpts(st, h, id))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != "identical" || rep.Turns != 5 || rep.Calls != 4 {
		t.Fatalf("report %+v", rep)
	}
	if err := rep.Err(); err != nil {
		t.Fatalf("Err of an identical replay: %v", err)
	}
	// The workspace keeps what the recorded run left; the replay wrote only its copy.
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "ONE\ntwo\n" {
		t.Fatalf("a.txt in the workspace = %q", b)
	}
	if _, err := os.Stat(rep.Scratch); !os.IsNotExist(err) {
		t.Fatalf("the temporary scratch copy %s was kept: %v", rep.Scratch, err)
	}
}

func TestReplayNamesTheReadOfAChangedFile(t *testing.T) {
	st, h, id, root := recorded(t, map[string]string{"a.txt": "one\ntwo\n", "c.txt": "see\n"}, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("t1", "Read", map[string]any{"file_path": "c.txt"})}},
		{Text: "Done."},
	}})
	if err := os.WriteFile(filepath.Join(root, "c.txt"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := replay.Run(context.Background(), replayOpts(st, h, id))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != "diverged" || len(rep.Divergences) != 1 {
		t.Fatalf("report %+v", rep)
	}
	d := rep.Divergences[0]
	if d.Turn != 1 || d.Tool != "Read" || d.Kind != replay.KindResult {
		t.Fatalf("divergence %+v", d)
	}
	if !sema.IsCode(rep.Err(), replay.CodeDiverged) {
		t.Fatalf("Err = %v", rep.Err())
	}
}

func TestReplayNamesACallNowRefused(t *testing.T) {
	st, h, id, root := recorded(t, map[string]string{"a.txt": "one\ntwo\n"}, editScript())
	opts := replayOpts(st, h, id)
	opts.Spec.DisallowedTools = []string{"Bash(cat *)"}
	rep, err := replay.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Divergences) != 1 || rep.Divergences[0].Tool != "Bash" || rep.Divergences[0].Kind != replay.KindRefused || rep.Divergences[0].Turn != 4 {
		t.Fatalf("report %+v", rep)
	}
	_ = root
}

func TestReplayUpToATurn(t *testing.T) {
	st, h, id, _ := recorded(t, map[string]string{"a.txt": "one\ntwo\n"}, editScript())
	opts := replayOpts(st, h, id)
	opts.At = 2
	rep, err := replay.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != "identical" || rep.Turns != 2 || rep.Calls != 2 {
		t.Fatalf("report %+v", rep)
	}
}

func TestReplayRefusals(t *testing.T) {
	st, h, id, root := recorded(t, map[string]string{"a.txt": "one\ntwo\n"}, editScript())
	busy := t.TempDir()
	if err := os.WriteFile(filepath.Join(busy, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	empty, err := st.Create(context.Background(), session.Session{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(*replay.Options)
		code string
	}{
		{"unknown session", func(o *replay.Options) { o.SessionID = "no-such-session" }, session.CodeNotFound},
		{"no turns", func(o *replay.Options) { o.SessionID = empty.ID }, replay.CodeNoTurns},
		{"at past the end", func(o *replay.Options) { o.At = 6 }, replay.CodeAtInvalid},
		{"at negative", func(o *replay.Options) { o.At = -1 }, replay.CodeAtInvalid},
		{"scratch not empty", func(o *replay.Options) { o.Scratch = busy }, replay.CodeScratchInvalid},
		{"scratch inside the workspace", func(o *replay.Options) { o.Scratch = filepath.Join(root, "scratch") }, replay.CodeScratchInvalid},
		{"workspace too large", func(o *replay.Options) { o.MaxBytes = 4 }, replay.CodeWorkspaceTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := replayOpts(st, h, id)
			tc.edit(&opts)
			_, err := replay.Run(context.Background(), opts)
			if !sema.IsCode(err, tc.code) {
				t.Fatalf("err = %v, want %s", err, tc.code)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(root, "scratch")); !os.IsNotExist(err) {
		t.Fatalf("a refused scratch dir inside the workspace was made: %v", err)
	}
}

// twentyTurns is a session of 20 turns: 19 of one call each (reads, writes, edits,
// commands) and the answer.
func twentyTurns() (map[string]string, scripted.Script) {
	files := map[string]string{}
	var s scripted.Script
	for i := 1; i <= 19; i++ {
		name := fmt.Sprintf("f%02d.txt", i)
		files[name] = fmt.Sprintf("line %d\n", i)
		var c scripted.ToolCall
		switch i % 4 {
		case 0:
			c = call(fmt.Sprintf("t%d", i), "Read", map[string]any{"file_path": name})
		case 1:
			c = call(fmt.Sprintf("t%d", i), "Write", map[string]any{"file_path": "out/" + name, "content": "x\n"})
		case 2:
			c = call(fmt.Sprintf("t%d", i), "Glob", map[string]any{"pattern": "*.txt"})
		default:
			c = call(fmt.Sprintf("t%d", i), "Grep", map[string]any{"pattern": "line", "output_mode": "count"})
		}
		s.Turns = append(s.Turns, scripted.Turn{ToolCalls: []scripted.ToolCall{c}})
	}
	s.Turns = append(s.Turns, scripted.Turn{Text: "done"})
	return files, s
}

func TestReplayOfTwentyTurns(t *testing.T) {
	files, script := twentyTurns()
	st, h, id, _ := recorded(t, files, script)
	rep, err := replay.Run(context.Background(), replayOpts(st, h, id))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != "identical" || rep.Turns != 20 {
		t.Fatalf("report %+v", rep)
	}
}

// BenchmarkReplay20Turns replays a 20-turn session whole: the copy, the restore, the run
// and the comparison.
func BenchmarkReplay20Turns(b *testing.B) {
	files, script := twentyTurns()
	st, h, id, _ := recorded(b, files, script)
	b.ResetTimer()
	for b.Loop() {
		rep, err := replay.Run(context.Background(), replayOpts(st, h, id))
		if err != nil || rep.Status != "identical" {
			b.Fatalf("%v %+v", err, rep)
		}
	}
	b.ReportMetric(20*float64(b.N)/b.Elapsed().Seconds(), "turns/s")
}

// BenchmarkRun20Turns is the same session run directly on its script in a fresh copy of
// its workspace, without the replay: the difference per turn is the harness's overhead.
func BenchmarkRun20Turns(b *testing.B) {
	files, script := twentyTurns()
	for b.Loop() {
		b.StopTimer()
		root := b.TempDir()
		for name, body := range files {
			os.WriteFile(filepath.Join(root, name), []byte(body), 0o644)
		}
		b.StartTimer()
		res, err := agent.New(agent.Deps{Provider: scripted.New(script), Store: session.NewMemory(), History: history.NewMemory(), Home: os.TempDir()}).
			Run(context.Background(), agent.TaskSpec{Root: root, Prompt: "do the work", PermissionMode: permission.ModeAcceptEdits, OnAsk: agent.OnAskDeny})
		if err != nil || res.Status != sema.StatusCompleted {
			b.Fatalf("%v %+v", err, res)
		}
	}
	b.ReportMetric(20*float64(b.N)/b.Elapsed().Seconds(), "turns/s")
}

// A PreToolUse hook that now blocks a recorded call refuses it: a divergence naming the
// call and the hook's reason.
func TestReplayNamesAHookThatNowBlocks(t *testing.T) {
	st, h, id, _ := recorded(t, map[string]string{"a.txt": "one\ntwo\n"}, editScript())
	opts := replayOpts(st, h, id)
	opts.Deps.Hooks = &agent.Hooks{PreToolUse: []permission.Hook{func(_ context.Context, c permission.Call) (permission.HookDecision, error) {
		if c.Tool == "Write" {
			return permission.HookDecision{Behavior: permission.Deny, Reason: "no new files on Fridays"}, nil
		}
		return permission.HookDecision{}, nil
	}}}
	rep, err := replay.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Divergences) < 1 {
		t.Fatalf("report %+v", rep)
	}
	d := rep.Divergences[0]
	if d.Turn != 3 || d.Tool != "Write" || d.Kind != replay.KindRefused || !strings.Contains(d.Reason, "no new files on Fridays") {
		t.Fatalf("divergence %+v", d)
	}
}

// A UserPromptSubmit hook that now blocks the prompt ends the leg before any turn: the
// calls were not run, and the run itself diverged.
func TestReplayNamesAPromptHookThatNowBlocks(t *testing.T) {
	st, h, id, _ := recorded(t, map[string]string{"a.txt": "one\ntwo\n"}, editScript())
	opts := replayOpts(st, h, id)
	opts.Deps.Hooks = &agent.Hooks{Events: []hooks.Hook{{Event: hooks.UserPromptSubmit, Func: func(context.Context, hooks.Input) (hooks.Output, error) {
		return hooks.Output{Decision: "block", Reason: "prompts are closed"}, nil
	}}}}
	rep, err := replay.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, d := range rep.Divergences {
		kinds = append(kinds, d.Kind)
	}
	if got := strings.Join(kinds, ","); got != "not_run,not_run,not_run,not_run,run" {
		t.Fatalf("kinds %s, report %+v", got, rep)
	}
	if last := rep.Divergences[4]; last.Turn != 1 || !strings.Contains(last.Reason, "prompts are closed") {
		t.Fatalf("the run's divergence %+v", last)
	}
}

// A Stop hook that now sends the model back asks for a turn the session did not record.
func TestReplayNamesAStopHookThatNowSendsTheModelBack(t *testing.T) {
	st, h, id, _ := recorded(t, map[string]string{"a.txt": "one\ntwo\n"}, editScript())
	opts := replayOpts(st, h, id)
	opts.Deps.Hooks = &agent.Hooks{Events: []hooks.Hook{{Event: hooks.Stop, Func: func(_ context.Context, in hooks.Input) (hooks.Output, error) {
		return hooks.Output{Decision: "block", Reason: "run the tests first"}, nil
	}}}}
	rep, err := replay.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Divergences) != 1 || rep.Divergences[0].Kind != replay.KindRun || rep.Divergences[0].Turn != 6 {
		t.Fatalf("report %+v", rep)
	}
}

// A session that delegated replays its subagents from their own sessions' transcripts,
// as threads of the script: their calls run again and are compared too, named by the
// Task call that made them.
func TestReplayOfSubagents(t *testing.T) {
	task := func(id, prompt string) scripted.ToolCall {
		return call(id, "Task", map[string]any{"description": "look", "prompt": prompt, "subagent_type": "general-purpose"})
	}
	script := scripted.Script{
		Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{task("task_a", "CHILD-A: read a.txt"), task("task_b", "CHILD-B: read b.txt")}},
			{Text: "Both read."},
		},
		Threads: []scripted.Thread{
			{Match: "CHILD-A", Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{call("ca1", "Read", map[string]any{"file_path": "a.txt"})}}, {Text: "a says one"}}},
			{Match: "CHILD-B", Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{call("cb1", "Read", map[string]any{"file_path": "b.txt"})}}, {Text: "b says two"}}},
		},
	}
	st, h, id, root := recorded(t, map[string]string{"a.txt": "one\n", "b.txt": "two\n"}, script)
	rep, err := replay.Run(context.Background(), replayOpts(st, h, id))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != "identical" || rep.Calls != 4 {
		t.Fatalf("report %+v", rep)
	}
	// The file a subagent read changed: its Read diverges, named by its Task call.
	if err := os.WriteFile(filepath.Join(root, "b.txt"), []byte("three\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err = replay.Run(context.Background(), replayOpts(st, h, id))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Divergences) != 1 {
		t.Fatalf("report %+v", rep)
	}
	if d := rep.Divergences[0]; d.Turn != 1 || d.Tool != "Read" || d.Subagent != "task_b" || d.ToolUseID != "cb1" {
		t.Fatalf("divergence %+v", d)
	}
}

// A session of two legs (a resume with a second prompt) replays as two legs: the second
// resumes the replay's own session, and the turns keep the session's numbering.
func TestReplayOfTwoLegs(t *testing.T) {
	st, h, id, root := recorded(t, map[string]string{"a.txt": "one\ntwo\n"}, editScript())
	second := scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("u1", "Read", map[string]any{"file_path": "a.txt"})}},
		{Text: "Still ONE."},
	}}
	res, err := agent.New(agent.Deps{Provider: scripted.New(second), Store: st, History: h, Home: t.TempDir()}).
		Run(context.Background(), agent.TaskSpec{Root: root, Prompt: "check again", OnAsk: agent.OnAskDeny, Resume: &agent.Resume{SessionID: id}})
	if err != nil || res.Status != sema.StatusCompleted {
		t.Fatalf("the second leg: %v %+v", err, res)
	}
	rec, err := replay.Load(context.Background(), st, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Legs) != 2 || rec.Legs[1].Prompt != "check again" || rec.Legs[1].Numbers[0] != 6 {
		t.Fatalf("legs %+v", rec.Legs)
	}
	rep, err := rec.Replay(context.Background(), replayOpts(st, h, id))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != "identical" || rep.Turns != 7 || rep.Calls != 5 {
		t.Fatalf("report %+v", rep)
	}
	// The second leg's Read saw what the first leg's Edit left: change the edit's
	// pre-image in the workspace and nothing diverges, since history puts it back.
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if rep, err = rec.Replay(context.Background(), replayOpts(st, h, id)); err != nil || rep.Status != "identical" {
		t.Fatalf("%v %+v", err, rep)
	}
}
