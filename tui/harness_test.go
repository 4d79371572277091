package tui

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/permission"
)

var update = flag.Bool("update", false, "rewrite the golden frames in testdata/")

// step is one thing a fake leg does: emit an event, put a question to the approver, or
// hold until the test releases it.
type step struct {
	ev   *agent.Event
	ask  *permission.ApprovalRequest
	hold bool
}

// fakeBackend plays one script of steps per prompt and records what it was asked.
type fakeBackend struct {
	approver *Approver
	legs     [][]step
	release  chan struct{}

	mu        sync.Mutex
	prompts   []string
	modes     []permission.Mode
	decisions []permission.ApprovalDecision
}

func (f *fakeBackend) Prompt(ctx context.Context, prompt string, emit func(agent.Event)) error {
	f.mu.Lock()
	n := len(f.prompts)
	f.prompts = append(f.prompts, prompt)
	f.mu.Unlock()
	if n >= len(f.legs) {
		emit(agent.Event{Type: agent.EventResult, Result: &agent.TaskResult{Status: "completed"}})
		return nil
	}
	for _, s := range f.legs[n] {
		switch {
		case s.hold:
			select {
			case <-f.release:
			case <-ctx.Done():
				emit(agent.Event{Type: agent.EventResult, Result: &agent.TaskResult{Status: sema.StatusCancelled,
					Error: &sema.Error{Code: agent.CodeCancelled, Message: "the run was cancelled"}}})
				return nil
			}
		case s.ask != nil:
			d, _ := f.approver.Approve(ctx, *s.ask)
			f.mu.Lock()
			f.decisions = append(f.decisions, d)
			f.mu.Unlock()
		default:
			emit(*s.ev)
		}
	}
	return nil
}

// promptCount is how many prompts the back-end was given.
func (f *fakeBackend) promptCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.prompts)
}

func (f *fakeBackend) SetMode(_ context.Context, mode permission.Mode) (permission.Mode, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.modes = append(f.modes, mode)
	return mode, nil
}

// harness runs the model as the Bubble Tea runtime would: each command in a goroutine,
// its message back through Update, one at a time, on the test's goroutine.
type harness struct {
	t      *testing.T
	m      *Model
	msgs   chan tea.Msg
	quit   bool
	cancel context.CancelFunc
}

func newHarness(t *testing.T, opts Options, w, h int) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	hs := &harness{t: t, m: New(ctx, opts), msgs: make(chan tea.Msg, 64), cancel: cancel}
	t.Cleanup(func() { cancel(); hs.m.Wait() })
	hs.send(tea.WindowSizeMsg{Width: w, Height: h})
	hs.do(hs.m.Init())
	return hs
}

func (h *harness) do(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	go func() { h.msgs <- cmd() }()
}

func (h *harness) send(msg tea.Msg) {
	if _, ok := msg.(tea.QuitMsg); ok {
		h.quit = true
	}
	_, cmd := h.m.Update(msg)
	h.do(cmd)
}

// until delivers messages until cond holds.
func (h *harness) until(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.After(10 * time.Second)
	// cond may turn true without a message (a back-end's goroutine counting a prompt
	// and then holding it): it is checked again on a tick too.
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case msg := <-h.msgs:
			switch msg := msg.(type) {
			case nil:
			case tea.BatchMsg:
				for _, c := range msg {
					h.do(c)
				}
			default:
				h.send(msg)
			}
		case <-deadline:
			h.t.Fatalf("waited 10s for %s; the frame:\n%s", what, h.frame())
		}
	}
}

// typeText types s and, with enter, sends it.
func (h *harness) typeText(s string, enter bool) {
	for _, r := range s {
		h.send(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	if enter {
		h.key(tea.KeyEnter, 0)
	}
}

func (h *harness) key(code rune, mod tea.KeyMod) { h.send(tea.KeyPressMsg{Code: code, Mod: mod}) }

func (h *harness) idle() bool { return !h.m.running && len(h.m.queue) == 0 }

// frame is the screen as a person reads it: no escape sequences, no trailing blanks.
func (h *harness) frame() string {
	lines := strings.Split(ansi.Strip(h.m.View().Content), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n") + "\n"
}

// golden compares the frame with testdata/NAME_WxH.golden (-update rewrites it).
func (h *harness) golden(name string) {
	h.t.Helper()
	got := h.frame()
	if n := strings.Count(got, "\n"); n != h.m.height {
		h.t.Errorf("%s: the frame has %d lines, the screen %d", name, n, h.m.height)
	}
	path := filepath.Join("testdata", name+"_"+itoa(h.m.width)+"x"+itoa(h.m.height)+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			h.t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			h.t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		h.t.Fatalf("%v (run go test ./tui -update to write it)", err)
	}
	if got != string(want) {
		h.t.Errorf("frame %s differs from %s:\n--- got\n%s--- want\n%s", name, path, got, want)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func ev(e agent.Event) step { return step{ev: &e} }

func text(s string) step { return ev(agent.Event{Type: agent.EventText, Text: s}) }

func assistant(s string, in, out int64) step {
	return ev(agent.Event{Type: agent.EventAssistant,
		Message:  &model.Message{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.KindText, Text: s}}},
		Response: &model.Response{Usage: model.Usage{InputTokens: in, OutputTokens: out}}})
}

func toolUse(id, name string, input string) step {
	return ev(agent.Event{Type: agent.EventToolUse, ToolUse: &agent.ToolUse{ID: id, Name: name, Input: json.RawMessage(input)}})
}

func toolResult(id, name string, isErr bool, code string) step {
	return ev(agent.Event{Type: agent.EventToolResult, ToolResult: &agent.ToolResult{ID: id, Name: name, IsError: isErr, Code: code}})
}

func result(cost float64) step {
	return ev(agent.Event{Type: agent.EventResult, Result: &agent.TaskResult{Status: "completed", TotalCostUSD: &cost}})
}

func ask(tool, input string, personOnly bool) step {
	return step{ask: &permission.ApprovalRequest{Tool: tool, Input: json.RawMessage(input),
		Ask: permission.Decision{Behavior: permission.Ask, Reason: tool + " needs your approval in default mode", PersonOnly: personOnly}}}
}
