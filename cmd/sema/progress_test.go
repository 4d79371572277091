package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model"
)

// frames records each write to a fake terminal separately, so a test can assert the
// exact sequence of frames.
type frames struct {
	mu     sync.Mutex
	writes []string
}

func (f *frames) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes = append(f.writes, string(p))
	return len(p), nil
}

func (f *frames) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := f.writes
	f.writes = nil
	return w
}

// fakeClock is a clock a test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newTestProgress(live, verbose bool, width int) (*progress, *frames, *fakeClock) {
	clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	w := &frames{}
	return newProgressWith(w, live, verbose, width, clock.now), w, clock
}

func toolUse(id, name, input string) agent.Event {
	return agent.Event{Type: agent.EventToolUse, Turn: 1, ToolUse: &agent.ToolUse{ID: id, Name: name, Input: []byte(input)}}
}

func toolResult(id, name string, isErr bool, text string) agent.Event {
	return agent.Event{Type: agent.EventToolResult, Turn: 1, ToolResult: &agent.ToolResult{ID: id, Name: name, IsError: isErr, Text: text}}
}

func assistant(turn int, in, out int64) agent.Event {
	return agent.Event{Type: agent.EventAssistant, Turn: turn, Message: &model.Message{Role: model.RoleAssistant},
		Response: &model.Response{Usage: model.Usage{InputTokens: in, OutputTokens: out}}}
}

var initEv = agent.Event{Type: agent.EventInit, Manifest: &agent.Manifest{Root: "/w"}}

// The status line is drawn in place, at most once per interval, with the turn, the tool
// and its argument, the tokens and the time; it is erased for good at the result.
func TestStatusLineFrames(t *testing.T) {
	t.Parallel()
	p, w, clock := newTestProgress(true, false, 80)
	steps := []struct {
		do   func()
		want []string
	}{
		{func() { p.event(initEv) }, []string{"\r\x1b[2Ksema: waiting for the model · 0 tokens · 0s"}},
		// Less than an interval later: nothing is drawn, whatever changed.
		{func() { clock.advance(50 * time.Millisecond); p.event(assistant(1, 1200, 300)) }, nil},
		// The ticker's redraw draws what was held back.
		{func() { clock.advance(50 * time.Millisecond); p.redraw() }, []string{"\r\x1b[2Ksema: turn 1 · waiting for the model · 1.5k tokens · 0s"}},
		// Nothing changed: nothing is drawn.
		{func() { clock.advance(200 * time.Millisecond); p.redraw() }, nil},
		{func() { p.event(toolUse("t1", "Bash", `{"command":"go test ./..."}`)) }, []string{"\r\x1b[2Ksema: turn 1 · Bash: go test ./... · 1.5k tokens · 0s"}},
		{func() {
			clock.advance(time.Second)
			p.event(toolUse("t2", "Edit", `{"file_path":"/w/src/a.go","old_string":"a","new_string":"b"}`))
		},
			[]string{"\r\x1b[2Ksema: turn 1 · Edit: src/a.go (+1 more) · 1.5k tokens · 1s"}},
		{func() { clock.advance(time.Second); p.event(toolResult("t2", "Edit", false, "ok")) }, []string{"\r\x1b[2Ksema: turn 1 · Bash: go test ./... · 1.5k tokens · 2s"}},
		// The elapsed time moves on while a tool runs.
		{func() { clock.advance(59 * time.Second); p.redraw() }, []string{"\r\x1b[2Ksema: turn 1 · Bash: go test ./... · 1.5k tokens · 1m01s"}},
		// Anything else written to stderr gets a line of its own, and the line comes back.
		{func() { clock.advance(time.Second); p.Write([]byte("sema: notice: x (a.b)\n")) },
			[]string{"\r\x1b[2K", "sema: notice: x (a.b)\n", "\r\x1b[2Ksema: turn 1 · Bash: go test ./... · 1.5k tokens · 1m02s"}},
		// The result erases the line before the answer is printed; nothing is drawn after.
		{func() {
			clock.advance(time.Second)
			p.event(agent.Event{Type: agent.EventResult, Result: &agent.TaskResult{}})
		}, []string{"\r\x1b[2K"}},
		{func() { clock.advance(time.Second); p.redraw(); p.event(toolUse("t3", "Read", `{}`)) }, nil},
		{func() { p.stop() }, nil},
	}
	for i, s := range steps {
		s.do()
		if diff := cmp.Diff(s.want, w.take()); diff != "" {
			t.Fatalf("step %d: writes (-want +got):\n%s", i, diff)
		}
	}
}

// A write that leaves the cursor mid-line (the approval prompt's question) holds the
// status line back until the run's next event: the question stays as it was asked.
func TestStatusLineWaitsForAQuestion(t *testing.T) {
	t.Parallel()
	p, w, clock := newTestProgress(true, false, 80)
	p.event(initEv)
	p.event(toolUse("t1", "Write", `{"file_path":"/w/a.txt"}`))
	w.take()
	clock.advance(time.Second)
	p.Write([]byte("── permission ── Write a.txt\nAllow? [y]es once / [n]o: "))
	clock.advance(time.Second)
	p.redraw()
	if diff := cmp.Diff([]string{"\r\x1b[2K", "── permission ── Write a.txt\nAllow? [y]es once / [n]o: "}, w.take()); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	p.event(toolResult("t1", "Write", false, "ok"))
	if diff := cmp.Diff([]string{"\r\x1b[2Ksema: turn 1 · waiting for the model · 0 tokens · 2s"}, w.take()); diff != "" {
		t.Fatalf("after the answer (-want +got):\n%s", diff)
	}
}

// Control characters of a tool's input are spelled out, and a long line is cut to the
// terminal's width (the argument first) so it never wraps.
func TestStatusLineEscapesAndFits(t *testing.T) {
	t.Parallel()
	p, w, _ := newTestProgress(true, false, 60)
	p.event(toolUse("t1", "Bash", `{"command":"printf '\u001b[2J\u001b]0;owned\u0007' && rm -rf /tmp/x/y/z/very/long/path/that/goes/on\nsecond line"}`))
	got := w.take()
	if len(got) != 1 {
		t.Fatalf("writes %q", got)
	}
	frame := strings.TrimPrefix(got[0], eraseLine)
	if strings.ContainsAny(frame, "\x1b\x07\r\n") {
		t.Fatalf("raw control characters in %q", frame)
	}
	if want := `sema: turn 1 · Bash: printf '\x1b[2J\x1b]0… · 0 tokens · 0s`; frame != want {
		t.Fatalf("frame %q\nwant  %q", frame, want)
	}
	if n := len([]rune(frame)); n != 59 {
		t.Fatalf("frame of %d characters on a terminal of 60", n)
	}
}

// --verbose prints one permanent line per call and one per outcome: the outcome right
// under its call, or naming the call when other lines came between.
func TestVerboseLines(t *testing.T) {
	t.Parallel()
	p, w, _ := newTestProgress(false, true, 0)
	p.event(initEv)
	p.event(toolUse("t1", "Bash", `{"command":"go test ./..."}`))
	p.event(toolResult("t1", "Bash", false, "ok  pkg 0.1s"))
	p.event(toolUse("t2", "Read", `{"file_path":"/w/a.go"}`))
	p.event(toolUse("t3", "Grep", `{"pattern":"TODO\u001b[31m"}`))
	p.event(toolResult("t2", "Read", true, "the file /w/a.go does not exist\nmore"))
	p.event(agent.Event{Type: agent.EventSubagentStart, Subagent: &agent.SubagentRun{ToolUseID: "task1", Type: "explore"}})
	child := toolUse("c1", "Glob", `{"pattern":"**/*.go"}`)
	child.ParentToolUseID = "task1"
	p.event(child)
	res := toolResult("c1", "Glob", false, "a.go")
	res.ParentToolUseID = "task1"
	p.event(res)
	p.event(toolUse("t4", "TodoWrite", `{"todos":[]}`))
	p.event(toolResult("t4", "TodoWrite", true, ""))
	p.event(toolUse("t5", "Bash", `{"command":"false"}`))
	p.event(toolResult("t5", "Bash", false, "(no output)\n\nThe command exited with code 1."))
	p.event(toolUse("t6", "Bash", `{"command":"sleep 9"}`))
	p.event(toolResult("t6", "Bash", false, "partial\n\nThe command ended by signal 9 (killed).\nmore"))
	p.event(agent.Event{Type: agent.EventResult, Result: &agent.TaskResult{}})
	want := []string{
		"● Bash(go test ./...)\n",
		"  ⎿ ok\n",
		"● Read(a.go)\n",
		"● Grep(TODO\\x1b[31m)\n",
		"  ⎿ Read(a.go): error: the file /w/a.go does not exist\n",
		"● [explore] Glob(**/*.go)\n",
		"  ⎿ ok\n",
		"● TodoWrite\n",
		"  ⎿ error\n",
		"● Bash(false)\n",
		"  ⎿ exited with code 1\n",
		"● Bash(sleep 9)\n",
		"  ⎿ ended by signal 9 (killed)\n",
	}
	if diff := cmp.Diff(want, w.take()); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// Nothing is shown when stderr is not a terminal (CI, a pipe) and --verbose is not
// given, nor in the JSON formats.
func TestNoProgressOffTheTerminal(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if p := newProgress("text", false, &buf); p != nil {
		t.Fatal("a progress display on a buffer")
	}
	tty := &fakeTTY{width: 80}
	for _, format := range []string{"json", "stream-json"} {
		if p := newProgress(format, true, tty); p != nil {
			t.Fatalf("a progress display with %s output", format)
		}
	}
	p := newProgress("text", true, &buf)
	p.event(initEv)
	p.event(toolUse("t1", "Bash", `{"command":"ls"}`))
	p.stop()
	if buf.String() != "● Bash(ls)\n" {
		t.Fatalf("stderr %q", buf.String())
	}
	var nilp *progress
	nilp.event(initEv)
	nilp.stop()
	if nilp.writer(&buf) != &buf {
		t.Fatal("a nil display does not pass writes through")
	}
}

// The printer erases the status line before it prints the answer on stdout.
func TestStatusLineErasedBeforeTheAnswer(t *testing.T) {
	t.Parallel()
	w := &frames{}
	p := newProgressWith(w, true, false, 80, (&fakeClock{}).now)
	out := newPrinter("text", w, p)
	out.progress = p
	out.event(initEv)
	out.event(agent.Event{Type: agent.EventResult, Result: &agent.TaskResult{Status: sema.StatusCompleted, Result: "the answer"}})
	want := []string{"\r\x1b[2Ksema: waiting for the model · 0 tokens · 0s", "\r\x1b[2K", "the answer\n"}
	if diff := cmp.Diff(want, w.take()); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// A whole run at a (fake) terminal: the status line is drawn on stderr and erased before
// the answer; stdout holds only the answer.
func TestRunAtATerminalShowsProgress(t *testing.T) {
	w := newPromptWorld(t)
	script := writeFile(t, filepath.Join(t.TempDir(), "s.json"), `{"turns":[{"text":"reading","tool_calls":[{"name":"Read","input":{"file_path":"a.txt"}}]},{"text":"the answer"}]}`)
	writeFile(t, filepath.Join(w.root, "a.txt"), "a\n")
	tty := &fakeTTY{width: 100}
	var out bytes.Buffer
	code := run(context.Background(), []string{"-p", "go", "--cwd", w.root, "--home", w.state, "--sandbox", "off", "--model", "scripted/" + script, "--verbose"},
		strings.NewReader(""), &out, tty)
	errs := tty.Buffer.String()
	if code != exitOK || out.String() != "the answer\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errs)
	}
	// After the last erasure only whole lines were written: no status line is left.
	last := errs[strings.LastIndex(errs, eraseLine)+len(eraseLine):]
	if !strings.Contains(errs, eraseLine+"sema: ") || last != "" && !strings.HasSuffix(last, "\n") {
		t.Fatalf("no status line, or not erased at the end: %q", errs)
	}
	if !strings.Contains(errs, "● Read(a.txt)\n  ⎿ ok\n") {
		t.Fatalf("no verbose lines: %q", errs)
	}
}

// --verbose is accepted with the JSON formats and changes nothing there.
func TestVerboseWithJSONOutput(t *testing.T) {
	w := newPromptWorld(t)
	for _, format := range []string{"json", "stream-json"} {
		code, out, errs := w.run(t, strings.NewReader(""), "-p", "go", "--output-format", format, "--verbose")
		if code != exitOK || errs != "" {
			t.Fatalf("%s: exit %d, stderr %q", format, code, errs)
		}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if !json.Valid([]byte(line)) {
				t.Fatalf("%s: a line that is not JSON: %q", format, line)
			}
		}
	}
}

func TestShortForms(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "0 tokens", 1: "1 token", 999: "999 tokens", 1000: "1.0k tokens", 12345: "12.3k tokens", 2_500_000: "2.5M tokens"} {
		if got := tokenCount(n); got != want {
			t.Errorf("tokenCount(%d) = %q, want %q", n, got, want)
		}
	}
	for d, want := range map[time.Duration]string{0: "0s", 59 * time.Second: "59s", 65 * time.Second: "1m05s", 3720 * time.Second: "1h02m"} {
		if got := elapsed(d); got != want {
			t.Errorf("elapsed(%s) = %q, want %q", d, got, want)
		}
	}
	if got := callArgument("Read", []byte(`{"file_path":"/elsewhere/x"}`), "/w"); got != "/elsewhere/x" {
		t.Errorf("a path outside the root: %q", got)
	}
	if got := callArgument("Read", []byte(`{"file_path":"/w/../x"}`), "/w"); got != "/w/../x" {
		t.Errorf("a path that leaves the root: %q", got)
	}
	if got := callArgument("mcp__x__y", []byte(`{"a":"b"}`), "/w"); got != "" {
		t.Errorf("a tool without a known argument: %q", got)
	}
}
