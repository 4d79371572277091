package tui

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/session"
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
	// The announcement comes from a look the model starts with; waited for, it is in
	// every frame below, not in some runs' frames and not in others'.
	h.until("the waiting question announced", framed(h, "1 question waits from another run — /questions"))
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

// TestLocalAnswersABudgetQuestion: over a real runner and store, Pending marks the parked
// budget question, Answer's allow without a raise is refused by the runner and leaves it
// open, and AnswerBudget continues the run to its end.
func TestLocalAnswersABudgetQuestion(t *testing.T) {
	dir := t.TempDir()
	glob := scripted.ToolCall{Name: "Glob", Input: json.RawMessage(`{"pattern":"*.txt"}`)}
	prov := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{glob}, Usage: &model.Usage{InputTokens: 100_000}}, {Text: "went on"}}})
	deps := agent.Deps{Provider: prov, Store: session.NewMemory(), History: history.NewMemory(), Shell: &agent.ShellOptions{Sandbox: "off"}}
	res, err := agent.New(deps).Run(context.Background(), agent.TaskSpec{Prompt: "look", Root: dir, OnAsk: agent.OnAskPark, MaxTokensTotal: 100_001})
	if err != nil || res.Status != sema.StatusAwaitingApproval {
		t.Fatalf("the parking leg: %+v, %v", res, err)
	}
	l := NewLocal(agent.New(deps), agent.TaskSpec{Root: dir, OnAsk: agent.OnAskDeny}).WithStores(deps.Store, deps.History)
	qs, err := l.Pending(context.Background())
	if err != nil || len(qs) != 1 || !qs[0].Budget || readBudgetAsk(qs[0].Input).SpentTokens != 100_000 {
		t.Fatalf("Pending: %+v, %v", qs, err)
	}
	if err := l.Answer(context.Background(), qs[0].ID, true, "", func(agent.Event) {}); sema.CodeOf(err) != agent.CodeBudgetRaiseInvalid {
		t.Fatalf("an allow without a raise: %v", err)
	}
	var last *agent.TaskResult
	err = l.AnswerBudget(context.Background(), qs[0].ID, agent.BudgetRaise{MaxTokensTotal: 1_000_000}, func(ev agent.Event) {
		if ev.Result != nil {
			last = ev.Result
		}
	})
	if err != nil || last == nil || last.Status != sema.StatusCompleted || last.Result != "went on" {
		t.Fatalf("after the raise: %v %+v", err, last)
	}
}
