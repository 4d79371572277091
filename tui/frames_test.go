package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/sandbox"
)

const editInput = `{"file_path":"main.go","old_string":"\"Helo, %s!\"","new_string":"\"Hello, %s!\""}`

func sessionScript() [][]step {
	init := ev(agent.Event{Type: agent.EventInit, Manifest: &agent.Manifest{SessionID: "s1",
		Mode:  agent.ModeReceipt{Effective: "default"},
		Shell: agent.ShellFacts{FullShell: true, Sandbox: sandbox.Status{Enforced: true}}}})
	fix := "The greeting says \"Helo\". I'll fix it:\n\n```go\nreturn fmt.Sprintf(\"Hello, %s!\", name)\n```"
	return [][]step{{
		init,
		text("Let me look at "), text("`main.go`."),
		assistant("Let me look at `main.go`.", 1200, 40),
		toolUse("t1", "Read", `{"file_path":"main.go"}`),
		toolResult("t1", "Read", false, ""),
		{hold: true},
		text(fix), assistant(fix, 1500, 80),
		toolUse("t2", "Edit", editInput),
		ask("Edit", editInput, false),
		toolResult("t2", "Edit", false, ""),
		toolUse("t3", "Bash", `{"command":"go run ."}`),
		ev(agent.Event{Type: agent.EventToolResult, ToolResult: &agent.ToolResult{ID: "t3", Name: "Bash", IsError: true,
			Code: "permission.denied", Text: "Bash needs approval; the person denied it.\nmore"}}),
		text("Fixed: `go run .` now prints **Hello, world!**"),
		assistant("Fixed: `go run .` now prints **Hello, world!**", 1700, 30),
		result(0.0123),
	}, {
		init,
		text("No other typos."), assistant("No other typos.", 1800, 10),
		result(0.002),
	}}
}

// TestFrames drives a whole session — a streamed answer, a tool call, a prompt queued
// mid-turn, an edit question answered 1, the queued prompt's turn — and compares the
// frames with the golden files at 80x24 and 120x40.
func TestFrames(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		t.Run(itoa(size[0])+"x"+itoa(size[1]), func(t *testing.T) {
			approver := NewApprover()
			be := &fakeBackend{approver: approver, legs: sessionScript(), release: make(chan struct{})}
			h := newHarness(t, Options{Backend: be, Approver: approver, Model: "claude-sonnet-4-5", Sandbox: "auto"}, size[0], size[1])
			h.golden("empty")

			h.typeText("fix the greeting", true)
			h.until("the Read result", func() bool { return h.m.tools["t1"] != nil && h.m.tools["t1"].done })
			h.typeText("any other typos?", true)
			if len(h.m.queue) != 1 {
				t.Fatalf("a prompt sent mid-turn: queue %q, want it queued", h.m.queue)
			}
			h.golden("queued")

			be.release <- struct{}{}
			h.until("the edit question", func() bool { return h.m.question != nil })
			h.golden("question")

			h.typeText("1", false)
			h.until("both turns", func() bool { return h.idle() && be.promptCount() == 2 })
			h.golden("done")
			if got := be.prompts; got[0] != "fix the greeting" || got[1] != "any other typos?" {
				t.Errorf("prompts %q", got)
			}
			if len(be.decisions) != 1 || be.decisions[0].Behavior != permission.Allow {
				t.Errorf("decisions %+v, want one allow", be.decisions)
			}
		})
	}
}

// TestHelpListsEveryKey: /help shows every key the session reads.
func TestHelpListsEveryKey(t *testing.T) {
	h := newHarness(t, Options{Backend: &fakeBackend{}}, 120, 40)
	h.typeText("/help", true)
	f := h.frame()
	for _, k := range keyHelp {
		if !strings.Contains(f, k[0]) || !strings.Contains(f, k[1]) {
			t.Errorf("/help does not show %s (%s):\n%s", k[0], k[1], f)
		}
	}
	h.golden("help")
}

// TestDemoLabel: the scripted demo model is named a demo on the status line.
func TestDemoLabel(t *testing.T) {
	h := newHarness(t, Options{Backend: &fakeBackend{}, Demo: true, Model: "scripted"}, 80, 24)
	if f := h.frame(); !strings.Contains(f, "DEMO (scripted, no API)") || !strings.Contains(f, "no cost") {
		t.Errorf("the demo is not labelled:\n%s", f)
	}
}

// TestNoColor: with NO_COLOR the frames carry no colour, only weight.
func TestNoColor(t *testing.T) {
	approver := NewApprover()
	be := &fakeBackend{approver: approver, legs: sessionScript(), release: make(chan struct{})}
	for _, noColor := range []bool{false, true} {
		h := newHarness(t, Options{Backend: be, Approver: approver, NoColor: noColor}, 80, 24)
		h.typeText("/nope", true)
		raw := h.m.View().Content
		coloured := strings.Contains(raw, "38;2;") || strings.Contains(raw, "38;5;")
		if coloured == noColor {
			t.Errorf("NoColor=%v: colour sequences present=%v in %q", noColor, coloured, raw)
		}
	}
}

func TestInterrupt(t *testing.T) {
	be := &fakeBackend{legs: [][]step{{text("working on it"), {hold: true}, text("never shown")}}, release: make(chan struct{})}
	h := newHarness(t, Options{Backend: be}, 80, 24)
	h.typeText("go", true)
	h.until("the leg's text", func() bool { return h.m.streaming != nil })
	h.key(tea.KeyEscape, 0)
	h.until("the leg's end", func() bool { return !h.m.running })
	if f := h.frame(); strings.Contains(f, "never shown") || !strings.Contains(f, "interrupted") {
		t.Errorf("after Esc the leg should stop and say so:\n%s", f)
	}
}

// TestStreamingRedraws: each piece of streamed text shows on the next frame, and the
// complete response replaces what streamed.
func TestStreamingRedraws(t *testing.T) {
	be := &fakeBackend{legs: [][]step{{text("Hello"), {hold: true}, text(", wor"), {hold: true}, assistant("Hello, world.", 1, 1)}}, release: make(chan struct{})}
	h := newHarness(t, Options{Backend: be}, 80, 24)
	h.typeText("hi", true)
	h.until("the first piece", func() bool { return strings.Contains(h.frame(), "Hello") })
	be.release <- struct{}{}
	h.until("the second piece", func() bool { return strings.Contains(h.frame(), "Hello, wor") })
	be.release <- struct{}{}
	h.until("the whole response", func() bool { return strings.Contains(h.frame(), "Hello, world.") })
	h.until("the leg's end", func() bool { return !h.m.running })
}

// TestThinkingShownBeforeItsText: the model's thinking, which arrives with the complete
// response, is shown dimmed above the text that streamed before it.
func TestThinkingShownBeforeItsText(t *testing.T) {
	msg := &model.Message{Role: model.RoleAssistant, Content: []model.Block{
		{Kind: model.KindThinking, Text: "The user wants a greeting."}, {Kind: model.KindText, Text: "Hello there."}}}
	be := &fakeBackend{legs: [][]step{{text("Hello there."), ev(agent.Event{Type: agent.EventAssistant, Message: msg})}}}
	h := newHarness(t, Options{Backend: be}, 80, 24)
	h.typeText("hi", true)
	h.until("the leg's end", func() bool { return be.promptCount() == 1 && !h.m.running })
	f := h.frame()
	think, say := strings.Index(f, "∴ The user wants a greeting."), strings.Index(f, "Hello there.")
	if think < 0 || say < 0 || think > say || strings.Count(f, "Hello there.") != 1 {
		t.Errorf("the thinking should stand once above the text:\n%s", f)
	}
}
