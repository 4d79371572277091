package tui

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/sema-agent/sema/agent"
)

func toolOutput(id, name, out string) step {
	return ev(agent.Event{Type: agent.EventToolResult, ToolResult: &agent.ToolResult{ID: id, Name: name, Text: out}})
}

// TestExpandToolCalls: Ctrl-O shows the output of the tool calls under their lines — a
// command's output folded after foldLines lines, an edit's diff — and Ctrl-O again
// hides it.
func TestExpandToolCalls(t *testing.T) {
	var out []string
	for i := 1; i <= 20; i++ {
		out = append(out, fmt.Sprintf("ok  \tpkg/%d\t0.%02ds", i, i))
	}
	legs := [][]step{{
		toolUse("t1", "Bash", `{"command":"go test ./..."}`),
		toolOutput("t1", "Bash", strings.Join(out, "\n")+"\n"),
		toolUse("t2", "Edit", editInput),
		toolOutput("t2", "Edit", "The file main.go has been updated."),
		text("All green."), assistant("All green.", 10, 5),
		result(0.001),
	}}
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		be := &fakeBackend{legs: legs}
		h := newHarness(t, Options{Backend: be}, size[0], size[1])
		h.typeText("run the tests", true)
		h.until("the leg", func() bool { return be.promptCount() == 1 && h.idle() })
		if f := h.frame(); strings.Contains(f, "pkg/1") || strings.Contains(f, "more lines") {
			t.Fatalf("output shown before Ctrl-O:\n%s", f)
		}
		h.key('o', tea.ModCtrl)
		f := h.frame()
		if !strings.Contains(f, "│ ok") || !strings.Contains(f, "pkg/8") || strings.Contains(f, "pkg/9") || !strings.Contains(f, "… 12 more lines") {
			t.Errorf("Ctrl-O should show 8 lines of the output and fold 12:\n%s", f)
		}
		if !strings.Contains(f, `│ - "Helo, %s!"`) || !strings.Contains(f, `│ + "Hello, %s!"`) {
			t.Errorf("Ctrl-O should show the edit's diff:\n%s", f)
		}
		h.golden("expanded")
		h.key('o', tea.ModCtrl)
		if f := h.frame(); strings.Contains(f, "more lines") {
			t.Errorf("Ctrl-O again should hide the output:\n%s", f)
		}
	}
}

// TestScrollback: PgUp shows earlier lines and says how many are below; new output
// does not move the view while it is scrolled back; PgDn down to the end follows the
// new output again.
func TestScrollback(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		h := newHarness(t, Options{Backend: &fakeBackend{}}, size[0], size[1])
		for i := 1; i <= 100; i++ {
			h.m.add(&entry{kind: entryNotice, text: fmt.Sprintf("line %d", i)})
		}
		if f := h.frame(); !strings.Contains(f, "· line 100\n") {
			t.Fatalf("the end should show:\n%s", f)
		}
		h.key(tea.KeyPgUp, 0)
		before := h.frame()
		if strings.Contains(before, "· line 100\n") || !strings.Contains(before, "more lines below · PgDn") {
			t.Fatalf("PgUp should scroll back and say what is below:\n%s", before)
		}
		h.golden("scrolled")
		h.m.add(&entry{kind: entryNotice, text: "new output"})
		after := h.frame()
		if strings.Split(after, "\n")[0] != strings.Split(before, "\n")[0] || strings.Contains(after, "new output") {
			t.Errorf("new output moved the scrolled view:\n%s", after)
		}
		for range 100 {
			h.key(tea.KeyPgDown, 0)
		}
		if f := h.frame(); !strings.Contains(f, "· new output\n") || strings.Contains(f, "below") {
			t.Errorf("PgDn to the end should follow the output again:\n%s", f)
		}
		h.m.add(&entry{kind: entryNotice, text: "newest"})
		if f := h.frame(); !strings.Contains(f, "· newest\n") {
			t.Errorf("at the end, new output should show:\n%s", f)
		}
		for range 100 {
			h.key(tea.KeyPgUp, 0)
		}
		if f := h.frame(); !strings.Contains(f, "· line 1\n") {
			t.Errorf("PgUp to the top should show the first line:\n%s", f)
		}
	}
}
