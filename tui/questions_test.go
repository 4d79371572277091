package tui

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/session"
)

// parkedBackend is a fake back-end that also offers Parked: a fixed list of pending
// questions, and an answer that plays steps or is refused as already claimed.
type parkedBackend struct {
	*fakeBackend
	pending []PendingQuestion
	steps   []step
	claimed bool // Answer refuses: the question was answered elsewhere

	amu     sync.Mutex
	answers []string // "id allow" / "id deny: reason"
}

func (p *parkedBackend) Pending(context.Context) ([]PendingQuestion, error) { return p.pending, nil }

func (p *parkedBackend) Answer(ctx context.Context, id string, allow bool, reason string, emit func(agent.Event)) error {
	word := "deny: " + reason
	if allow {
		word = "allow"
	}
	p.amu.Lock()
	p.answers = append(p.answers, id+" "+word)
	p.amu.Unlock()
	if p.claimed {
		return sema.Errorf(session.CodeAlreadyClaimed, "checkpoint %q was already answered at 2026-12-06T03:00:00Z; a parked call runs at most once", id)
	}
	for _, s := range p.steps {
		emit(*s.ev)
	}
	return nil
}

func (p *parkedBackend) answered() []string {
	p.amu.Lock()
	defer p.amu.Unlock()
	return append([]string(nil), p.answers...)
}

func twoParked() []PendingQuestion {
	at := time.Date(2026, 12, 6, 3, 14, 0, 0, time.UTC)
	return []PendingQuestion{
		{ID: "cp-1", SessionID: "sess-a", Title: "run the tests", Tool: "Bash", Input: json.RawMessage(`{"command":"go test ./..."}`), ParkedAt: at},
		{ID: "cp-2", SessionID: "sess-b", Title: "write a note", Tool: "Write", Input: json.RawMessage(`{"file_path":"note.txt","content":"hi\n"}`), ParkedAt: at},
	}
}

func framed(h *harness, s string) func() bool {
	return func() bool { return strings.Contains(h.frame(), s) }
}

// TestQuestionsPickAndAllow: the waiting questions are announced at start; /questions
// lists them (the golden frame), Enter opens the dialog of one, 2 (always) is not taken,
// 1 allows it: the back-end is asked once and the resumed leg's events stream in.
func TestQuestionsPickAndAllow(t *testing.T) {
	b := &parkedBackend{fakeBackend: &fakeBackend{}, pending: twoParked(),
		steps: []step{text("written"), result(0.01)}}
	h := newHarness(t, Options{Backend: b}, 80, 24)
	h.until("the waiting questions announced", framed(h, "2 questions wait from other runs — /questions"))
	h.typeText("/questions", true)
	h.until("the picker", framed(h, "$ go test ./..."))
	h.golden("questions")
	h.key(tea.KeyDown, 0)
	h.key(tea.KeyEnter, 0)
	h.until("the dialog", framed(h, "1 allow once · 3 deny"))
	h.golden("questions_dialog")
	if f := h.frame(); !strings.Contains(f, "permission · Write") || !strings.Contains(f, "note.txt") || !strings.Contains(f, "sess-b") {
		t.Fatalf("the dialog does not show the tool, the path and the session:\n%s", f)
	}
	h.typeText("2", false)
	if h.m.questions == nil || len(b.answered()) != 0 {
		t.Fatal("2 (allow always) answered a parked question")
	}
	h.typeText("1", false)
	h.until("the resumed leg's text", func() bool { return h.idle() && strings.Contains(h.frame(), "written") })
	if got := b.answered(); len(got) != 1 || got[0] != "cp-2 allow" {
		t.Errorf("answers %q, want cp-2 allowed once", got)
	}
	if f := h.frame(); !strings.Contains(f, "allowed once: Write note.txt") || !strings.Contains(f, "$0.0100") {
		t.Errorf("the answer or the leg's cost is not shown:\n%s", f)
	}
}

// TestQuestionsDenyAndEsc: Esc in the dialog goes back to the list without answering; 3
// denies.
func TestQuestionsDenyAndEsc(t *testing.T) {
	b := &parkedBackend{fakeBackend: &fakeBackend{}, pending: twoParked(), steps: []step{result(0)}}
	h := newHarness(t, Options{Backend: b}, 80, 24)
	h.typeText("/questions", true)
	h.until("the picker", framed(h, "$ go test ./..."))
	h.key(tea.KeyEnter, 0)
	h.until("the dialog", framed(h, "permission · Bash"))
	h.key(tea.KeyEscape, 0)
	if h.m.questions == nil || h.m.questions.chosen != nil || len(b.answered()) != 0 {
		t.Fatalf("Esc in the dialog should go back to the list unanswered: %+v, %q", h.m.questions, b.answered())
	}
	h.key(tea.KeyEnter, 0)
	h.typeText("3", false)
	h.until("the sentence's prompt", framed(h, "tell the model why"))
	if len(b.answered()) != 0 {
		t.Fatal("3 answered before the sentence was sent")
	}
	h.typeText("flaky on CI", true)
	h.until("the leg's end", func() bool { return h.idle() && len(b.answered()) == 1 })
	if got := b.answered(); got[0] != "cp-1 deny: flaky on CI" {
		t.Errorf("answers %q, want cp-1 denied with the person's sentence", got)
	}
	if !strings.Contains(h.frame(), "denied: Bash $ go test ./...") || !strings.Contains(h.frame(), "flaky on CI") {
		t.Errorf("the denial and its sentence are not shown:\n%s", h.frame())
	}
}

// TestQuestionsDenyWithoutASentence: after 3, Esc denies at once with the screen's own
// reason, as the permission dialog does.
func TestQuestionsDenyWithoutASentence(t *testing.T) {
	b := &parkedBackend{fakeBackend: &fakeBackend{}, pending: twoParked(), steps: []step{result(0)}}
	h := newHarness(t, Options{Backend: b}, 80, 24)
	h.typeText("/questions", true)
	h.until("the picker", framed(h, "$ go test ./..."))
	h.key(tea.KeyEnter, 0)
	h.typeText("3", false)
	h.until("the sentence's prompt", framed(h, "tell the model why"))
	h.key(tea.KeyEscape, 0)
	h.until("the leg's end", func() bool { return h.idle() && len(b.answered()) == 1 })
	if got := b.answered(); got[0] != "cp-1 deny: the person denied it in a terminal session" {
		t.Errorf("answers %q, want cp-1 denied without a sentence", got)
	}
	if strings.Contains(h.frame(), "told the model") {
		t.Errorf("a sentence is shown that was never typed:\n%s", h.frame())
	}
}

// TestQuestionsAlreadyClaimed: a question answered elsewhere meanwhile ends with the
// library's sentence, and the screen goes on.
func TestQuestionsAlreadyClaimed(t *testing.T) {
	b := &parkedBackend{fakeBackend: &fakeBackend{}, pending: twoParked(), claimed: true}
	h := newHarness(t, Options{Backend: b}, 80, 24)
	h.typeText("/questions", true)
	h.until("the picker", framed(h, "$ go test ./..."))
	h.key(tea.KeyEnter, 0)
	h.typeText("1", false)
	h.until("the refusal", framed(h, "a parked call runs at most once"))
	if !h.idle() || h.m.questions != nil {
		t.Error("the screen did not return to the input after the refusal")
	}
	h.typeText("hello", true)
	h.until("the next prompt", func() bool { return b.promptCount() == 1 && h.idle() })
}

// TestQuestionsNeedsParked: a back-end without Parked announces nothing, and /questions
// says what it lacks.
func TestQuestionsNeedsParked(t *testing.T) {
	h := newHarness(t, Options{Backend: &fakeBackend{}}, 80, 24)
	h.typeText("/questions", true)
	if f := h.frame(); !strings.Contains(f, "/questions needs a back-end that reads parked questions") || strings.Contains(f, "wait from") {
		t.Errorf("frame:\n%s", f)
	}
}

// TestQuestionsOverLocal: the whole way over a real runner and a SQLite file another
// runner parked a Write in: announced, picked, allowed with 1 — the file is written, the
// resumed leg's answer shows, and no question waits any more.
func TestQuestionsOverLocal(t *testing.T) {
	l, dir := parkedWrite(t, true)
	h := newHarness(t, Options{Backend: l}, 80, 24)
	h.until("the waiting question announced", framed(h, "1 question waits from another run — /questions"))
	h.typeText("/questions", true)
	h.until("the picker", framed(h, "“write a note” · Write note.txt"))
	h.key(tea.KeyEnter, 0)
	h.until("the dialog", framed(h, "permission · Write"))
	h.typeText("1", false)
	h.until("the resumed leg's answer", func() bool { return h.idle() && strings.Contains(h.frame(), "written") })
	if b, err := os.ReadFile(filepath.Join(dir, "note.txt")); err != nil || string(b) != "hi\n" {
		t.Errorf("note.txt = %q, %v after 1", b, err)
	}
	if qs, err := l.Pending(context.Background()); err != nil || len(qs) != 0 {
		t.Errorf("Pending after the answer: %+v, %v", qs, err)
	}
}
