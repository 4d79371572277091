package tui

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/session"
)

var _ ShellRunner = (*Local)(nil)

// shellBackend is a fake back-end with a shell: a line plays the next leg of the script
// as a prompt would, recorded as "!line".
type shellBackend struct{ *fakeBackend }

func (s shellBackend) Shell(ctx context.Context, line string, emit func(agent.Event)) error {
	return s.Prompt(ctx, "!"+line, emit)
}

func lsLeg() []step {
	return []step{
		toolUse("s1", "Bash", `{"command":"ls","timeout":600000}`),
		ev(agent.Event{Type: agent.EventToolResult, ToolResult: &agent.ToolResult{ID: "s1", Name: "Bash", Text: "go.mod\nmain.go\nREADME.md"}}),
		result(0),
	}
}

// "!" on the empty input turns the marker into "!"; Backspace on the empty line turns it
// back; Enter sends the line to the back-end's shell, and its result is a tool line
// whose output Ctrl-O shows. The golden frame is a line being typed under one that ran.
func TestShellMode(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		t.Run(itoa(size[0])+"x"+itoa(size[1]), func(t *testing.T) {
			be := shellBackend{&fakeBackend{legs: [][]step{lsLeg()}}}
			h := newHarness(t, Options{Backend: be, Model: "claude-sonnet-4-5", Sandbox: "on"}, size[0], size[1])
			h.typeText("!", false)
			if !h.m.shell || h.m.input.Value() != "" || !strings.Contains(h.frame(), "! "+shellPlaceholder) {
				t.Fatalf("! on the empty input: shell %v, input %q; frame:\n%s", h.m.shell, h.m.input.Value(), h.frame())
			}
			h.typeText("x", false)
			h.key(tea.KeyBackspace, 0)
			if !h.m.shell {
				t.Fatal("Backspace on a line with text left the shell mode")
			}
			h.key(tea.KeyBackspace, 0)
			if h.m.shell || !strings.Contains(h.frame(), "› "+promptPlaceholder) {
				t.Fatalf("Backspace on the empty shell line: shell %v; frame:\n%s", h.m.shell, h.frame())
			}
			h.typeText("a!b", false)
			if h.m.shell || h.m.input.Value() != "a!b" {
				t.Fatalf("a ! inside a prompt: shell %v, input %q", h.m.shell, h.m.input.Value())
			}
			h.m.input.Reset()

			h.typeText("!ls", true)
			h.until("the line's leg", func() bool { return h.idle() && be.promptCount() == 1 })
			if got := be.prompts[0]; got != "!ls" {
				t.Fatalf("the back-end ran %q, want the shell line ls", got)
			}
			if h.m.shell {
				t.Error("the shell mode outlived the line it sent")
			}
			h.key('o', tea.ModCtrl)
			f := h.frame()
			if !strings.Contains(f, "Bash $ ls") || !strings.Contains(f, "│ main.go") {
				t.Fatalf("the line's tool call and its output:\n%s", f)
			}
			h.typeText("!git status", false)
			h.golden("shell")
		})
	}
}

// A "!" line sent while a turn runs waits in the queue like a prompt, and runs on the
// back-end's shell after the turn.
func TestShellLineQueued(t *testing.T) {
	be := shellBackend{&fakeBackend{legs: [][]step{{text("thinking"), {hold: true}, assistant("thinking", 1, 1)}, lsLeg()}, release: make(chan struct{})}}
	h := newHarness(t, Options{Backend: be}, 80, 24)
	h.typeText("look around", true)
	h.until("the prompt's turn", func() bool { return h.m.streaming != nil })
	h.typeText("!ls", true)
	if len(h.m.queue) != 1 || h.m.queue[0] != "!ls" || !strings.Contains(h.frame(), "queued › !ls") {
		t.Fatalf("queue %q; frame:\n%s", h.m.queue, h.frame())
	}
	be.release <- struct{}{}
	h.until("both legs", func() bool { return h.idle() && be.promptCount() == 2 })
	if got := be.prompts; got[0] != "look around" || got[1] != "!ls" {
		t.Fatalf("legs %q, want the prompt then the shell line", got)
	}
}

// A back-end without a shell (a remote service) does not run a "!" line: the screen
// says a local session is needed, and the queue goes on.
func TestShellLineNeedsALocalSession(t *testing.T) {
	r := NewRemote(nil, client.TaskSpec{}, nil)
	if _, ok := any(r).(ShellRunner); ok {
		t.Fatal("Remote runs shell lines; the screen's refusal would never show")
	}
	h := newHarness(t, Options{Backend: r}, 80, 24)
	h.typeText("!ls", true)
	if f := h.frame(); !strings.Contains(f, "shell lines (!) need a local session") || h.m.running {
		t.Fatalf("running %v; frame:\n%s", h.m.running, f)
	}
	be := &fakeBackend{}
	h = newHarness(t, Options{Backend: be}, 80, 24)
	h.m.running = true // a turn runs: the line and a prompt queue behind it
	h.typeText("!ls", true)
	h.typeText("then this", true)
	h.m.running = false
	h.send(legDoneMsg{leg: h.m.leg})
	h.until("the queued prompt", func() bool { return h.idle() && be.promptCount() == 1 })
	if f := h.frame(); !strings.Contains(f, "need a local session") || be.prompts[0] != "then this" {
		t.Fatalf("prompts %q; frame:\n%s", be.prompts, f)
	}
}

// Over a real runner, a shell line continues the session, writes its file, and the next
// prompt's model reads the command and what it printed.
func TestLocalShellLine(t *testing.T) {
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	prov := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "one"}, {Text: "two"}}})
	runner := agent.New(agent.Deps{Provider: prov, Store: session.NewMemory(), History: history.NewMemory(), Shell: &agent.ShellOptions{Sandbox: "off"}})
	l := NewLocal(runner, agent.TaskSpec{Root: dir, OnAsk: agent.OnAskDeny})
	legs := localLegs(t, l, "first")
	var evs []agent.Event
	if err := l.Shell(context.Background(), "echo hi > f.txt && echo wrote", func(ev agent.Event) { evs = append(evs, ev) }); err != nil {
		t.Fatal(err)
	}
	if r := first(evs, agent.EventResult).Result; r == nil || r.Status != "completed" {
		t.Fatalf("the line's leg: %+v", r)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "f.txt")); err != nil || string(b) != "hi\n" {
		t.Fatalf("f.txt: %q, %v", b, err)
	}
	legs = append(legs, evs)
	legs = append(legs, localLegs(t, l, "second")...)
	ids := map[string]bool{}
	for _, leg := range legs {
		ids[first(leg, agent.EventInit).Manifest.SessionID] = true
	}
	if len(ids) != 1 {
		t.Fatalf("the legs ran in sessions %v, want one", ids)
	}
	reqs := prov.Requests()
	last := reqs[len(reqs)-1]
	var said []string
	for _, m := range last.Messages {
		if m.Role == model.RoleUser {
			for _, b := range m.Content {
				said = append(said, b.Text)
			}
		}
	}
	if all := strings.Join(said, "\n"); !strings.Contains(all, "$ echo hi > f.txt && echo wrote\nwrote") {
		t.Fatalf("the second prompt's model did not read the line: %q", said)
	}
}

// A line the gate refuses shows as its tool line, failed with the gate's sentence, and
// the denial; the leg's error repeats neither. Calibrated: the next line runs.
func TestShellLineRefusedOnScreen(t *testing.T) {
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	runner := agent.New(agent.Deps{Provider: scripted.New(scripted.Script{}), Store: session.NewMemory(), Shell: &agent.ShellOptions{Sandbox: "off"}})
	l := NewLocal(runner, agent.TaskSpec{Root: dir, DisallowedTools: []string{"Bash(rm:*)"}})
	h := newHarness(t, Options{Backend: l}, 100, 24)
	h.typeText("!rm x", true)
	h.until("the refused line", func() bool { return h.idle() && strings.Contains(h.frame(), "✗ permission.denied") })
	h.typeText("!touch y", true)
	h.until("the next line", func() bool { return h.idle() && strings.Contains(h.frame(), "touch y ✓") })
	f := h.frame()
	if n := strings.Count(f, "denied by the rule Bash(rm:*)"); n != 2 {
		t.Errorf("the refusal shows %d times, want the tool line's and the denial's:\n%s", n, f)
	}
	for _, e := range h.m.entries {
		if e.kind == entryError {
			t.Errorf("an error line: %q", e.text)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "y")); err != nil {
		t.Errorf("calibration: the allowed line did not run: %v", err)
	}
}
