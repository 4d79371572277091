package tui

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/sema-agent/sema/permission"
)

// TestDialogChoices: each key of the dialog gives the approver its decision; 2 adds the
// rule, which then answers the same call without a question; a person-only question
// ignores 2.
func TestDialogChoices(t *testing.T) {
	bash := permission.ApprovalRequest{Tool: "Bash", Input: json.RawMessage(`{"command":"go test ./..."}`)}
	for _, tc := range []struct {
		name  string
		key   tea.KeyPressMsg
		allow bool
	}{
		{"1 allows once", tea.KeyPressMsg{Code: '1', Text: "1"}, true},
		{"2 allows always", tea.KeyPressMsg{Code: '2', Text: "2"}, true},
		{"3 denies", tea.KeyPressMsg{Code: '3', Text: "3"}, false},
		{"Esc denies", tea.KeyPressMsg{Code: tea.KeyEscape}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			approver := NewApprover()
			h := newHarness(t, Options{Backend: &fakeBackend{}, Approver: approver}, 80, 24)
			got := make(chan permission.ApprovalDecision, 1)
			go func() { d, _ := approver.Approve(context.Background(), bash); got <- d }()
			h.until("the dialog", func() bool { return h.m.question != nil })
			h.typeText("x", false) // a stray key answers nothing
			if h.m.question == nil {
				t.Fatal("a key that is no choice closed the dialog")
			}
			h.send(tc.key)
			if tc.key.Code == '3' {
				h.key(tea.KeyEnter, 0) // no sentence for the model
			}
			d := <-got
			if (d.Behavior == permission.Allow) != tc.allow {
				t.Fatalf("decision %+v, want allow=%v", d, tc.allow)
			}
			if h.m.question != nil {
				t.Error("the dialog stayed open after its answer")
			}
			_, remembered := approver.always["Bash(go test ./...)"]
			if remembered != (tc.key.Code == '2') {
				t.Errorf("rule remembered=%v after %s", remembered, tc.name)
			}
			if remembered {
				d, _ := approver.Approve(context.Background(), bash) // no dialog: it would block
				if d.Behavior != permission.Allow {
					t.Errorf("the remembered rule did not allow the same call: %+v", d)
				}
			}
		})
	}
	t.Run("person-only ignores 2", func(t *testing.T) {
		approver := NewApprover()
		h := newHarness(t, Options{Backend: &fakeBackend{}, Approver: approver}, 80, 24)
		req := bash
		req.Ask.PersonOnly = true
		got := make(chan permission.ApprovalDecision, 1)
		go func() { d, _ := approver.Approve(context.Background(), req); got <- d }()
		h.until("the dialog", func() bool { return h.m.question != nil })
		h.typeText("2", false)
		if h.m.question == nil {
			t.Fatal("2 answered a person-only question")
		}
		h.typeText("1", false)
		if d := <-got; d.Behavior != permission.Allow || len(approver.always) != 0 {
			t.Errorf("decision %+v, rules %v", d, approver.always)
		}
	})
}

// TestModeCycle: Shift+Tab walks default → acceptEdits → plan → default, telling the
// back-end each time; bypassPermissions joins the cycle only when the session started in it.
func TestModeCycle(t *testing.T) {
	shiftTab := tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
	if shiftTab.String() != "shift+tab" {
		t.Fatalf("the key reads %q", shiftTab.String())
	}
	for _, tc := range []struct {
		start permission.Mode
		want  []permission.Mode
	}{
		{"", []permission.Mode{"acceptEdits", "plan", "default", "acceptEdits"}},
		{"bypassPermissions", []permission.Mode{"default", "acceptEdits", "plan", "bypassPermissions"}},
		{"dontAsk", []permission.Mode{"default", "acceptEdits", "plan", "default"}},
	} {
		be := &fakeBackend{}
		h := newHarness(t, Options{Backend: be, Mode: tc.start}, 80, 24)
		for i, want := range tc.want {
			h.send(shiftTab)
			if h.m.mode != want {
				t.Errorf("start %q, press %d: mode %q, want %q", tc.start, i+1, h.m.mode, want)
			}
			h.until("the back-end's answer", func() bool { be.mu.Lock(); defer be.mu.Unlock(); return len(be.modes) == i+1 })
		}
		if len(be.modes) != len(tc.want) || be.modes[len(be.modes)-1] != tc.want[len(tc.want)-1] {
			t.Errorf("start %q: the back-end was told %v", tc.start, be.modes)
		}
	}
}

// TestExitKeys: Ctrl-C clears a typed line; twice on an empty line it exits, as does
// Ctrl-D and /exit; one Ctrl-C followed by another key does not.
func TestExitKeys(t *testing.T) {
	ctrlC := tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	ctrlD := tea.KeyPressMsg{Code: 'd', Mod: tea.ModCtrl}
	h := newHarness(t, Options{Backend: &fakeBackend{}}, 80, 24)
	h.typeText("half a thought", false)
	h.send(ctrlC)
	if h.m.input.Value() != "" || h.m.ctrlC {
		t.Fatalf("Ctrl-C on a typed line: input %q, armed %v", h.m.input.Value(), h.m.ctrlC)
	}
	h.send(ctrlC)
	h.typeText("a", false)
	h.send(ctrlC)
	h.until("commands", func() bool { return len(h.msgs) == 0 })
	if h.m.quitting {
		t.Fatal("Ctrl-C, a key, Ctrl-C exited")
	}
	h.send(tea.KeyPressMsg{Code: tea.KeyBackspace})
	h.send(ctrlC)
	h.send(ctrlC)
	h.until("the quit", func() bool { return h.quit })

	for _, exit := range []func(*harness){
		func(h *harness) { h.send(ctrlD) },
		func(h *harness) { h.typeText("/exit", true) },
	} {
		h := newHarness(t, Options{Backend: &fakeBackend{}}, 80, 24)
		exit(h)
		h.until("the quit", func() bool { return h.quit })
	}
}

// TestSlashModeAndCost: /mode NAME sets any mode the gate knows and refuses other words;
// /cost says the tokens and dollars.
func TestSlashModeAndCost(t *testing.T) {
	be := &fakeBackend{}
	h := newHarness(t, Options{Backend: be}, 120, 40)
	h.typeText("/mode dontAsk", true)
	h.until("the back-end's answer", func() bool { be.mu.Lock(); defer be.mu.Unlock(); return len(be.modes) == 1 })
	h.typeText("/mode sideways", true)
	if h.m.mode != permission.ModeDontAsk || be.modes[0] != permission.ModeDontAsk {
		t.Errorf("mode %q, back-end told %v", h.m.mode, be.modes)
	}
	h.m.usage.InputTokens, h.m.usage.OutputTokens, h.m.cost = 1200, 34, 0.5
	h.typeText("/cost", true)
	f := h.frame()
	for _, want := range []string{"sideways", "1200 input tokens", "34 output tokens; $0.5000"} {
		if !strings.Contains(f, want) {
			t.Errorf("the frame lacks %q:\n%s", want, f)
		}
	}
}
