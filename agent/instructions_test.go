package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/env/envtest"
	"github.com/sema-agent/sema/instructions"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/sandbox"
)

const (
	instrRoot = "/w/proj"
	instrHome = "/home/u"
)

// instrTree is a whole machine in memory, so that nothing of the host (its /tmp, its
// home) can add a file: the user's file, files at three levels above and at the root,
// an import, the root's .sema/AGENTS.md, files in two subdirectories, and a memory
// directory with its index.
func instrTree(t *testing.T, extra map[string]string) *envtest.Mem {
	t.Helper()
	files := map[string]string{
		instrHome + "/.sema/AGENTS.md":   "USER: answer in English.",
		"/AGENTS.md":                     "MACHINE: this is a build host.",
		"/w/CLAUDE.md":                   "WORKSPACE: all projects here use Go.",
		instrRoot + "/AGENTS.md":         "PROJECT: run go test. Style: @docs/style.md",
		instrRoot + "/docs/style.md":     "STYLE: tabs, not spaces.",
		instrRoot + "/CLAUDE.local.md":   "LOCAL: my machine has no network.",
		instrRoot + "/.sema/AGENTS.md":   "SEMA: commit nothing.",
		instrRoot + "/sub/AGENTS.md":     "SUB: this package is generated.",
		instrRoot + "/sub/x.go":          "package sub\n",
		instrRoot + "/sub/y.go":          "package sub\n",
		instrRoot + "/other/CLAUDE.md":   "OTHER: keep the API stable.",
		instrRoot + "/other/z.go":        "package other\n",
		instrRoot + "/plain/p.go":        "package plain\n",
		"/mem/MEMORY.md":                 "- db.md: the schema's quirks",
		"/mem/db.md":                     "NOTE BODY: not loaded at the start",
		instrRoot + "/deep/er/AGENTS.md": "DEEPER: a file two levels down.",
		instrRoot + "/deep/er/d.go":      "package er\n",
	}
	for p, b := range extra {
		files[p] = b
	}
	m := envtest.NewMem()
	for p, body := range files {
		if err := m.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := m.WriteFile(context.Background(), p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func instrDeps(t *testing.T, e *envtest.Mem, turns []scripted.Turn) (agent.Deps, *scripted.Provider) {
	p := scripted.New(scripted.Script{Turns: turns})
	return agent.Deps{Provider: p, Env: e, Home: instrHome, MemoryDir: "/mem",
		Now: func() time.Time { return time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC) }}, p
}

func instrSpec() agent.TaskSpec {
	return agent.TaskSpec{Prompt: "do it", Root: instrRoot, Sandbox: sandbox.ModeOff}
}

func noticeCodes(ns []sema.Notice) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Code)
	}
	return out
}

// The start files are in the system prompt, in order, and in the manifest; a file below
// the root and a memory note are not.
func TestInstructionsInSystemPromptAndManifest(t *testing.T) {
	t.Parallel()
	deps, p := instrDeps(t, instrTree(t, nil), []scripted.Turn{{Text: "ok"}})
	res, err := agent.New(deps).Run(context.Background(), instrSpec())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		instrHome + "/.sema/AGENTS.md", "/AGENTS.md", "/w/CLAUDE.md", instrRoot + "/AGENTS.md", instrRoot + "/docs/style.md",
		instrRoot + "/CLAUDE.local.md", instrRoot + "/.sema/AGENTS.md", "/mem/MEMORY.md",
	}
	if !slices.Equal(res.Manifest.Instructions, want) {
		t.Errorf("manifest instructions %v, want %v", res.Manifest.Instructions, want)
	}
	system := p.Requests()[0].System
	last := -1
	for _, s := range []string{"# Environment", "# Instructions from files", "USER:", "MACHINE:", "WORKSPACE:", "PROJECT:", "STYLE:", "LOCAL:", "SEMA:", "# Memory", "- db.md: the schema's quirks"} {
		i := strings.Index(system, s)
		if i < 0 || i < last {
			t.Errorf("%q is missing or out of order (at %d, after %d) in:\n%s", s, i, last, system)
		}
		last = i
	}
	for _, s := range []string{"SUB:", "OTHER:", "NOTE BODY"} {
		if strings.Contains(system, s) {
			t.Errorf("the system prompt shows %q at the start", s)
		}
	}
	if res.Manifest.SystemPromptChars != len(system) {
		t.Errorf("the manifest says %d bytes, the prompt is %d", res.Manifest.SystemPromptChars, len(system))
	}
}

// reminders returns the text blocks of a request's last message: what the runner added
// after the tool results.
func reminders(req *model.Request) []string {
	var out []string
	m := req.Messages[len(req.Messages)-1]
	for _, b := range m.Content {
		if b.Kind == model.KindText {
			out = append(out, b.Text)
		}
	}
	return out
}

// A subdirectory's files are loaded when a read tool first reads inside it, and reach
// the NEXT request as a reminder after the tool results, once; the system prompt does
// not change. Read, LS, Glob and Grep all count, and so does a directory two levels
// down (with the files on the way).
func TestInstructionsOfASubdirectoryReachTheNextRequest(t *testing.T) {
	t.Parallel()
	deps, p := instrDeps(t, instrTree(t, nil), []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("Read", `{"file_path":"sub/x.go"}`)}},
		{ToolCalls: []scripted.ToolCall{call("Read", `{"file_path":"`+instrRoot+`/sub/y.go"}`), call("LS", `{"path":"plain"}`)}},
		{ToolCalls: []scripted.ToolCall{call("Glob", `{"pattern":"other/*.go"}`), call("Grep", `{"pattern":"package","path":"deep/er/d.go"}`)}},
		{ToolCalls: []scripted.ToolCall{call("Read", `{"file_path":"missing/x.go"}`)}},
		{Text: "done"},
	})
	res, err := agent.New(deps).Run(context.Background(), instrSpec())
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sema.StatusCompleted {
		t.Fatalf("status %s: %+v", res.Status, res.Error)
	}
	reqs := p.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i, r := range reqs[1:] {
		if r.System != reqs[0].System {
			t.Errorf("request %d has another system prompt", i+2)
		}
	}
	if got := reminders(reqs[0]); len(got) != 1 || got[0] != "do it" {
		t.Errorf("the first request's message: %q", got)
	}
	got := reminders(reqs[1])
	if len(got) != 1 || !strings.HasPrefix(got[0], "<system-reminder>\n") || !strings.HasSuffix(got[0], "</system-reminder>") ||
		!strings.Contains(got[0], "Contents of "+instrRoot+"/sub/AGENTS.md (project instructions):\n\nSUB: this package is generated.\n") {
		t.Errorf("the second request's reminder: %q", got)
	}
	if got := reminders(reqs[2]); len(got) != 0 {
		t.Errorf("a second read in sub, and a read in a directory without files, added %q", got)
	}
	got = reminders(reqs[3])
	if len(got) != 1 || !strings.Contains(got[0], "OTHER: keep the API stable.") || !strings.Contains(got[0], "DEEPER: a file two levels down.") {
		t.Errorf("the fourth request's reminder: %q", got)
	}
	if got := reminders(reqs[4]); len(got) != 0 {
		t.Errorf("a failed read added %q", got)
	}
	if m := reqs[1].Messages[len(reqs[1].Messages)-1]; m.Content[0].Kind != model.KindToolResult {
		t.Errorf("the reminder is not after the tool results: %+v", m.Content)
	}
	var loaded []string
	for _, n := range res.Notices {
		if n.Code == agent.CodeInstructionsLoaded {
			loaded = append(loaded, n.Detail["path"].(string))
		}
	}
	if want := []string{instrRoot + "/sub/AGENTS.md", instrRoot + "/other/CLAUDE.md", instrRoot + "/deep/er/AGENTS.md"}; !slices.Equal(slices.Sorted(slices.Values(loaded)), slices.Sorted(slices.Values(want))) {
		t.Errorf("loaded notices %v, want %v", loaded, want)
	}
	// The transcript keeps the reminder where the model saw it.
	if got := reminders(&model.Request{Messages: res.Messages[:3]}); len(got) != 1 || !strings.Contains(got[0], "SUB:") {
		t.Errorf("the result's messages lack the reminder: %q", got)
	}
}

// Either layer turns the files off: nothing in the prompt, the manifest or later requests.
func TestInstructionsOff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts *agent.InstructionOptions
		spec bool
	}{
		{"the deployment", &agent.InstructionOptions{Off: true}, false},
		{"the task", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			deps, p := instrDeps(t, instrTree(t, nil), []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{call("Read", `{"file_path":"sub/x.go"}`)}},
				{Text: "done"},
			})
			deps.Instructions = tt.opts
			spec := instrSpec()
			spec.NoInstructions = tt.spec
			res, err := agent.New(deps).Run(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Manifest.Instructions) != 0 {
				t.Errorf("manifest instructions %v", res.Manifest.Instructions)
			}
			for _, s := range []string{"# Instructions from files", "# Memory", "USER:", "PROJECT:"} {
				if strings.Contains(p.Requests()[0].System, s) {
					t.Errorf("the system prompt has %q", s)
				}
			}
			if got := reminders(p.Requests()[1]); len(got) != 0 {
				t.Errorf("a read added %q", got)
			}
		})
	}
}

// The cap, a skipped import and a Read deny rule reach the run's notices; an import the
// deny rule covers is not shown.
func TestInstructionsNotices(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		extra  map[string]string
		opts   *agent.InstructionOptions
		deny   []string
		want   string
		absent string
	}{
		{"the cap", nil, &agent.InstructionOptions{MaxChars: 40}, nil, instructions.CodeTruncated, "WORKSPACE"},
		{"an import out of the roots", map[string]string{instrRoot + "/AGENTS.md": "@../../etc/passwd", "/etc/passwd": "root:x:0:0"}, nil, nil, instructions.CodeImportOutside, "root:x"},
		{"an import a Read rule denies", map[string]string{instrRoot + "/AGENTS.md": "@secret.md", instrRoot + "/secret.md": "TOKEN"}, nil, []string{"Read(./secret.md)"}, instructions.CodeImportDenied, "TOKEN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			deps, p := instrDeps(t, instrTree(t, tt.extra), []scripted.Turn{{Text: "ok"}})
			deps.Instructions = tt.opts
			spec := instrSpec()
			spec.DisallowedTools = tt.deny
			var delivered []string
			deps.OnNotice = func(n sema.Notice) { delivered = append(delivered, n.Code) }
			res, err := agent.New(deps).Run(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(noticeCodes(res.Notices), tt.want) || !slices.Contains(delivered, tt.want) {
				t.Errorf("notices %v, delivered %v: no %s", noticeCodes(res.Notices), delivered, tt.want)
			}
			if strings.Contains(p.Requests()[0].System, tt.absent) {
				t.Errorf("the system prompt shows %q", tt.absent)
			}
		})
	}
}

func TestInstructionsMaxCharsRefused(t *testing.T) {
	t.Parallel()
	deps, _ := instrDeps(t, instrTree(t, nil), []scripted.Turn{{Text: "ok"}})
	deps.Instructions = &agent.InstructionOptions{MaxChars: -1}
	_, err := agent.New(deps).Run(context.Background(), instrSpec())
	if !sema.IsCode(err, agent.CodeInstructionsInvalid) {
		t.Errorf("err %v, want %s", err, agent.CodeInstructionsInvalid)
	}
}

// What a task saves in the memory directory's index is in the next task's prompt.
func TestMemoryIndexIsReadBackByTheNextTask(t *testing.T) {
	t.Parallel()
	e := instrTree(t, nil)
	if err := e.Remove(context.Background(), "/mem/MEMORY.md"); err != nil {
		t.Fatal(err)
	}
	deps, p := instrDeps(t, e, []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("Write", `{"file_path":"/mem/MEMORY.md","content":"- build.md: how to build without network\n"}`)}},
		{Text: "saved"},
	})
	spec := instrSpec()
	spec.PermissionMode = "acceptEdits"
	res, err := agent.New(deps).Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sema.StatusCompleted || len(res.EditedFiles) != 1 {
		t.Fatalf("the first task: %s, edited %v, denials %+v", res.Status, res.EditedFiles, res.PermissionDenials)
	}
	first := p.Requests()[0].System
	if !strings.Contains(first, "# Memory\n") || strings.Contains(first, "build.md") || slices.Contains(res.Manifest.Instructions, "/mem/MEMORY.md") {
		t.Errorf("the first task's prompt:\n%s", first)
	}
	deps2, p2 := instrDeps(t, e, []scripted.Turn{{Text: "ok"}})
	res2, err := agent.New(deps2).Run(context.Background(), instrSpec())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p2.Requests()[0].System, "- build.md: how to build without network") || !slices.Contains(res2.Manifest.Instructions, "/mem/MEMORY.md") {
		t.Errorf("the second task does not see the index:\n%s", p2.Requests()[0].System)
	}
}

// A child agent begins with its parent's instruction files.
func TestInstructionsReachAChildAgent(t *testing.T) {
	t.Parallel()
	e := instrTree(t, nil)
	p := scripted.New(scripted.Script{
		Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{taskCall("task_a", "Explore", "look", "CHILD: look at sub")}},
			{Text: "done"},
		},
		Threads: []scripted.Thread{{Match: "CHILD", Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{call("Read", `{"file_path":"sub/x.go"}`)}},
			{Text: "seen"},
		}}},
	})
	deps := agent.Deps{Provider: p, Env: e, Home: instrHome}
	res, err := agent.New(deps).Run(context.Background(), instrSpec())
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sema.StatusCompleted {
		t.Fatalf("status %s %+v", res.Status, res.Error)
	}
	var child []*model.Request
	for _, r := range p.Requests() {
		if strings.Contains(r.Messages[0].Content[0].Text, "CHILD") {
			child = append(child, r)
		}
	}
	if len(child) != 2 {
		t.Fatalf("%d child requests", len(child))
	}
	if !strings.Contains(child[0].System, "PROJECT: run go test.") {
		t.Errorf("the child's prompt lacks the project's file:\n%s", child[0].System)
	}
	if got := reminders(child[1]); len(got) != 1 || !strings.Contains(got[0], "SUB:") {
		t.Errorf("the child's second request: %q", got)
	}
}

// TestGoldenInstructionsPrompt pins the system prompt's part for the instruction files
// and the memory index (go test ./agent -run Golden -update rewrites it).
func TestGoldenInstructionsPrompt(t *testing.T) {
	deps, p := instrDeps(t, instrTree(t, nil), []scripted.Turn{{Text: "ok"}})
	if _, err := agent.New(deps).Run(context.Background(), instrSpec()); err != nil {
		t.Fatal(err)
	}
	system := p.Requests()[0].System
	i := strings.Index(system, "\n# Instructions from files\n")
	if i < 0 {
		t.Fatalf("no instructions section:\n%s", system)
	}
	got := system[i:]
	path := filepath.Join("testdata", "golden", "prompt_instructions.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("the instructions section changed; if intended, run go test ./agent -run Golden -update and review the diff.\ngot:\n%s", got)
	}
}
