package tui

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/history"
)

// fakeSessions is a fakeBackend that keeps sessions: it answers from fixed lists and
// records what it was asked.
type fakeSessions struct {
	*fakeBackend
	list  []SessionSummary
	view  SessionView
	turns []TurnSummary
	plan  history.Ledger

	smu      sync.Mutex
	switched []string
	cleared  int
	rewinds  []agent.RewindSpec
}

func (f *fakeSessions) List(context.Context) ([]SessionSummary, error) { return f.list, nil }

func (f *fakeSessions) Switch(_ context.Context, id string) (SessionView, error) {
	f.smu.Lock()
	defer f.smu.Unlock()
	f.switched = append(f.switched, id)
	return f.view, nil
}

func (f *fakeSessions) Clear() {
	f.smu.Lock()
	defer f.smu.Unlock()
	f.cleared++
}

func (f *fakeSessions) Turns(context.Context) ([]TurnSummary, error) { return f.turns, nil }

func (f *fakeSessions) Rewind(_ context.Context, spec agent.RewindSpec) (*agent.RewindResult, error) {
	f.smu.Lock()
	defer f.smu.Unlock()
	f.rewinds = append(f.rewinds, spec)
	l := f.plan
	l.Applied = !spec.DryRun
	return &agent.RewindResult{Ledger: &l}, nil
}

func (f *fakeSessions) asked() ([]string, []agent.RewindSpec) {
	f.smu.Lock()
	defer f.smu.Unlock()
	return slicesClone(f.switched), slicesClone(f.rewinds)
}

func slicesClone[T any](s []T) []T { return append([]T(nil), s...) }

func newFakeSessions() *fakeSessions {
	at := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	return &fakeSessions{
		fakeBackend: &fakeBackend{release: make(chan struct{})},
		list: []SessionSummary{
			{ID: "s-new", Title: "add a --json flag", Mode: "acceptEdits", UpdatedAt: at.Add(time.Hour)},
			{ID: "s-old", Title: "fix the greeting", Mode: "default", UpdatedAt: at},
		},
		view: SessionView{SessionSummary: SessionSummary{ID: "s-old", Title: "fix the greeting"}, Turns: 3,
			Recent: []Said{{"user", "fix the greeting"}, {"assistant", "Fixed: it prints **Hello, world!**"}}},
		turns: []TurnSummary{
			{N: 1, Prompt: "fix the greeting", Said: "Read main.go"},
			{N: 2, Said: "Edit main.go", Files: []string{"main.go"}},
			{N: 3, Prompt: "add a test", Said: "Write main_test.go", Files: []string{"main_test.go", "go.mod"}},
		},
		plan: history.Ledger{Entries: []history.LedgerEntry{
			{Path: "go.mod", Status: history.StatusConflict, Reason: "changed outside the agent since its last write at turn 3"},
			{Path: "main_test.go", Status: history.StatusDeleted, Removed: 12},
		}},
	}
}

// TestResumePicker: started as sema --resume with no id, the screen opens the picker of
// the directory's sessions; Enter on the second continues it and shows its last
// exchange.
func TestResumePicker(t *testing.T) {
	be := newFakeSessions()
	h := newHarness(t, Options{Backend: be, Model: "claude-sonnet-4-5", Sandbox: "on", Resume: true}, 80, 24)
	h.until("the sessions", func() bool { return h.m.picker != nil && !h.m.picker.loading })
	h.golden("resume")
	h.key(tea.KeyDown, 0)
	h.key(tea.KeyEnter, 0)
	h.until("the switch", func() bool { return len(h.m.entries) == 3 })
	h.golden("resumed")
	if ids, _ := be.asked(); len(ids) != 1 || ids[0] != "s-old" {
		t.Errorf("switched to %q, want s-old", ids)
	}
	if h.m.picker != nil {
		t.Error("the picker stayed open after the pick")
	}
}

// TestRewindPicker: /rewind lists the turns newest first with their files; picking the
// newest and "both" plans a dry run whose conflict shows before anything is written;
// y rewinds files and conversation, leaving the conflict alone.
func TestRewindPicker(t *testing.T) {
	be := newFakeSessions()
	h := newHarness(t, Options{Backend: be, Model: "claude-sonnet-4-5", Sandbox: "on"}, 80, 24)
	h.typeText("/rewind", true)
	h.until("the turns", func() bool { return h.m.picker != nil && !h.m.picker.loading })
	h.golden("rewind_turns")
	h.key(tea.KeyEnter, 0)
	h.typeText("b", false)
	h.until("the plan", func() bool { return h.m.picker != nil && !h.m.picker.loading })
	h.golden("rewind_confirm")
	if _, specs := be.asked(); len(specs) != 1 || !specs[0].DryRun || specs[0].ToTurn != 3 {
		t.Fatalf("before y the back-end was asked %+v, want one dry run to turn 3", specs)
	}
	h.typeText("y", false)
	h.until("the rewind", func() bool { _, s := be.asked(); return len(s) == 2 && h.m.picker == nil && len(h.m.entries) > 0 })
	h.until("its notice", func() bool { return strings.Contains(h.frame(), "rewound to the start of turn 3") })
	_, specs := be.asked()
	if s := specs[1]; s.DryRun || !s.Files || !s.Conversation || !s.AcceptPartialRestore || s.Force || s.ToTurn != 3 {
		t.Errorf("the rewind %+v: want files and conversation to turn 3, partial, never forced", s)
	}
	if f := h.frame(); !strings.Contains(f, "1 deleted, 1 conflict") {
		t.Errorf("the rewind's notice does not count the files:\n%s", f)
	}
}

// TestRewindEscapes: Esc at any step closes the picker and nothing is rewound; "c"
// (the conversation alone) needs no plan and rewinds on y.
func TestRewindEscapes(t *testing.T) {
	be := newFakeSessions()
	h := newHarness(t, Options{Backend: be}, 80, 24)
	h.typeText("/rewind", true)
	h.until("the turns", func() bool { return h.m.picker != nil && !h.m.picker.loading })
	h.key(tea.KeyDown, 0)
	h.key(tea.KeyEnter, 0)
	h.key(tea.KeyEscape, 0)
	if h.m.picker != nil {
		t.Fatal("Esc left the picker open")
	}
	if _, specs := be.asked(); len(specs) != 0 {
		t.Fatalf("Esc rewound: %+v", specs)
	}
	h.typeText("/rewind", true)
	h.until("the turns", func() bool { return h.m.picker != nil && !h.m.picker.loading })
	h.key(tea.KeyDown, 0)
	h.key(tea.KeyEnter, 0)
	h.typeText("cy", false)
	h.until("the rewind", func() bool { _, s := be.asked(); return len(s) == 1 })
	if _, specs := be.asked(); specs[0].Files || !specs[0].Conversation || specs[0].ToTurn != 2 || specs[0].DryRun {
		t.Errorf("the conversation rewind %+v, want the conversation alone to turn 2", specs[0])
	}
}

// TestClearStartsANewSession: /clear tells the back-end and empties the conversation;
// while a turn runs the session commands wait, and a back-end without sessions says so.
func TestClearStartsANewSession(t *testing.T) {
	be := newFakeSessions()
	be.legs = [][]step{{text("hi"), assistant("hi", 1, 1), result(0)}, {{hold: true}, result(0)}}
	h := newHarness(t, Options{Backend: be}, 80, 24)
	h.typeText("hello", true)
	h.until("the turn", func() bool { return h.idle() && be.promptCount() == 1 })
	h.typeText("/clear", true)
	if be.cleared != 1 || len(h.m.entries) != 1 || !strings.Contains(h.m.entries[0].text, "new session") {
		t.Errorf("after /clear: %d clears, entries %d", be.cleared, len(h.m.entries))
	}
	h.typeText("wait", true)
	h.until("the second turn", func() bool { return be.promptCount() == 2 })
	h.typeText("/resume", true)
	if h.m.picker != nil || !strings.Contains(h.frame(), "/resume waits for the turn to end") {
		t.Errorf("/resume during a turn:\n%s", h.frame())
	}
	be.release <- struct{}{}
	h.until("the end", h.idle)

	plain := newHarness(t, Options{Backend: &fakeBackend{}}, 80, 24)
	plain.typeText("/clear", true)
	if !strings.Contains(plain.frame(), "needs a back-end that keeps sessions") {
		t.Errorf("/clear on a back-end without sessions:\n%s", plain.frame())
	}
}

// TestRewindForceAndUndo: with a conflict in the plan, F rewinds forcing over it (no
// partial restore); "/rewind undo" asks for the undo of the last rewind, and a stray
// argument is refused. F does nothing where the plan has no conflict.
func TestRewindForceAndUndo(t *testing.T) {
	be := newFakeSessions()
	h := newHarness(t, Options{Backend: be}, 80, 24)
	h.typeText("/rewind", true)
	h.until("the turns", func() bool { return h.m.picker != nil && !h.m.picker.loading })
	h.key(tea.KeyEnter, 0)
	h.typeText("f", false)
	h.until("the plan", func() bool { return h.m.picker != nil && !h.m.picker.loading })
	h.typeText("F", false)
	h.until("the forced rewind", func() bool { _, s := be.asked(); return len(s) == 2 })
	if _, specs := be.asked(); !specs[1].Force || specs[1].AcceptPartialRestore || !specs[1].Files || specs[1].ToTurn != 3 {
		t.Fatalf("F rewound %+v; want the files to turn 3, forced", specs[1])
	}
	h.until("the picker closed", func() bool { return h.m.picker == nil })
	h.typeText("/rewind undo", true)
	h.until("the undo", func() bool { _, s := be.asked(); return len(s) == 3 })
	if _, specs := be.asked(); !specs[2].Undo || !specs[2].Files || specs[2].Conversation {
		t.Fatalf("/rewind undo asked %+v; want an undo of the files", specs[2])
	}
	h.until("its notice", func() bool { return strings.Contains(h.frame(), "the last rewind is undone") })
	h.typeText("/rewind now", true)
	if f := h.frame(); !strings.Contains(f, "/rewind takes no argument but undo") {
		t.Errorf("a stray argument was not refused:\n%s", f)
	}
	if _, specs := be.asked(); len(specs) != 3 {
		t.Errorf("a refused /rewind asked the back-end: %+v", specs)
	}
}
