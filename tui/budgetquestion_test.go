package tui

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/sema-agent/sema/agent"
)

// budgetBackend is a parked back-end that also raises budgets.
type budgetBackend struct {
	*parkedBackend
	mu     sync.Mutex
	raises []agent.BudgetRaise
}

func (b *budgetBackend) AnswerBudget(ctx context.Context, id string, raise agent.BudgetRaise, emit func(agent.Event)) error {
	b.mu.Lock()
	b.raises = append(b.raises, raise)
	b.mu.Unlock()
	for _, s := range b.steps {
		emit(*s.ev)
	}
	return nil
}

func (b *budgetBackend) raised() []agent.BudgetRaise {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]agent.BudgetRaise(nil), b.raises...)
}

func budgetParked() []PendingQuestion {
	return []PendingQuestion{{ID: "cp-b", SessionID: "sess-c", Title: "refactor the parser", Tool: "Budget", Budget: true,
		Input:    json.RawMessage(`{"budget":"tokens","estimate_tokens":5750,"max_tokens_total":100001,"spent_tokens":100000,"spent_usd":0}`),
		ParkedAt: time.Date(2026, 12, 6, 3, 14, 0, 0, time.UTC)}}
}

// TestQuestionsBudgetTakesANewLimit: a budget question's dialog shows the limit and the
// spending; 1 asks for a new limit, a number not above the spending is refused in place
// (the question stays open), and a higher one resumes the run under it.
func TestQuestionsBudgetTakesANewLimit(t *testing.T) {
	b := &budgetBackend{parkedBackend: &parkedBackend{fakeBackend: &fakeBackend{}, pending: budgetParked(), steps: []step{text("went on"), result(0)}}}
	h := newHarness(t, Options{Backend: b}, 80, 24)
	h.typeText("/questions", true)
	h.until("the picker", framed(h, "spent 100000 of 100001 tokens"))
	h.key(tea.KeyEnter, 0)
	h.until("the dialog", framed(h, "1 raise the budget"))
	h.golden("budget_dialog")
	h.typeText("1", false)
	h.until("the input", framed(h, "new token budget:"))
	h.typeText("90000", true)
	h.until("the refusal", framed(h, "give a token budget above 100000"))
	if len(b.raised()) != 0 || h.m.questions == nil {
		t.Fatal("a limit below the spending was sent")
	}
	for range 5 {
		h.key(tea.KeyBackspace, 0)
	}
	h.typeText("250000", false)
	h.golden("budget_raise")
	h.key(tea.KeyEnter, 0)
	h.until("the resumed leg's text", func() bool { return h.idle() && strings.Contains(h.frame(), "went on") })
	if got := b.raised(); len(got) != 1 || got[0].MaxTokensTotal != 250000 || got[0].MaxBudgetUSD != 0 {
		t.Fatalf("raises %+v, want one of 250000 tokens", got)
	}
	if len(b.answered()) != 0 {
		t.Fatalf("the budget question was answered without a raise: %q", b.answered())
	}
	if !strings.Contains(h.frame(), "budget raised to 250000 tokens") {
		t.Errorf("the raise is not shown:\n%s", h.frame())
	}
}

// TestQuestionsBudgetWithoutARaiser: a back-end that cannot raise a budget refuses 1
// with the command that can, and allows nothing.
func TestQuestionsBudgetWithoutARaiser(t *testing.T) {
	b := &parkedBackend{fakeBackend: &fakeBackend{}, pending: budgetParked(), steps: []step{result(0)}}
	h := newHarness(t, Options{Backend: b}, 80, 24)
	h.typeText("/questions", true)
	h.until("the picker", framed(h, "spent 100000 of 100001 tokens"))
	h.key(tea.KeyEnter, 0)
	h.until("the dialog", framed(h, "1 raise the budget"))
	h.typeText("1", false)
	h.until("the refusal", framed(h, "cannot raise a budget"))
	if len(b.answered()) != 0 {
		t.Fatalf("answers %q: 1 allowed a budget question without a raise", b.answered())
	}
}
