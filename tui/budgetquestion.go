package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"charm.land/lipgloss/v2"

	"github.com/sema-agent/sema/agent"
)

// BudgetParked is what a back-end offers, beyond Parked, to answer a budget question (a
// run under --on-ask park that paused before passing its budget) with a new limit. The
// screen asks for it with a type assertion; without it a budget question can only be
// denied here.
type BudgetParked interface {
	// AnswerBudget allows question id with the new limits raise and resumes its leg, as
	// Parked.Answer does; a raise the runner refuses (budget.raise_invalid) leaves the
	// question open.
	AnswerBudget(ctx context.Context, id string, raise agent.BudgetRaise, emit func(agent.Event)) error
}

// budgetAsk is what a budget question's input says: which limit the next request would
// pass, the limits and what the run spent.
type budgetAsk struct {
	Budget         string  `json:"budget"`
	MaxTokensTotal int64   `json:"max_tokens_total"`
	MaxBudgetUSD   float64 `json:"max_budget_usd"`
	SpentTokens    int64   `json:"spent_tokens"`
	SpentUSD       float64 `json:"spent_usd"`
	Estimate       int64   `json:"estimate_tokens"`
}

func readBudgetAsk(in json.RawMessage) budgetAsk {
	var b budgetAsk
	json.Unmarshal(in, &b) // a question that does not read shows zeros; the runner judges the raise
	return b
}

// usd reports whether the question is about the dollar budget.
func (b budgetAsk) usd() bool { return b.Budget == "usd" }

// lines are the dialog's sentences: the limit, the spending, and what a raise must pass.
func (b budgetAsk) lines() []string {
	if b.usd() {
		return []string{fmt.Sprintf("the next model request would pass the budget of $%.4f", b.MaxBudgetUSD),
			fmt.Sprintf("spent $%.4f of $%.4f; the request's input is about %d tokens", b.SpentUSD, b.MaxBudgetUSD, b.Estimate)}
	}
	return []string{fmt.Sprintf("the next model request would pass the budget of %d tokens", b.MaxTokensTotal),
		fmt.Sprintf("spent %d of %d tokens; the request is about %d tokens", b.SpentTokens, b.MaxTokensTotal, b.Estimate)}
}

// raiseInput is the new limit being typed after 1 in a budget question's dialog, and why
// the last one sent was not taken.
type raiseInput struct {
	text    string
	refused string
}

// raiseLimit bounds what is typed: a number, not a sentence.
const raiseLimit = 20

// key applies one key to the number: digits (and one point for dollars), Backspace.
func (r *raiseInput) key(k string, usd bool) {
	switch {
	case k == "backspace":
		if r.text != "" {
			r.text = r.text[:len(r.text)-1]
		}
	case len(r.text) >= raiseLimit:
	case len(k) == 1 && k[0] >= '0' && k[0] <= '9':
		r.text += k
	case k == "." && usd && !strings.Contains(r.text, "."):
		r.text += k
	}
	r.refused = ""
}

// raise reads the typed number as the question's new limit; a number not above the
// spending is refused here with what to type, as the runner would refuse it.
func (r *raiseInput) raise(b budgetAsk) (agent.BudgetRaise, bool) {
	if b.usd() {
		v, err := strconv.ParseFloat(r.text, 64)
		if err != nil || v <= b.SpentUSD {
			r.refused = fmt.Sprintf("give a dollar budget above %.4f (budget.raise_invalid)", b.SpentUSD)
			return agent.BudgetRaise{}, false
		}
		return agent.BudgetRaise{MaxBudgetUSD: v}, true
	}
	v, err := strconv.ParseInt(r.text, 10, 64)
	if err != nil || v <= b.SpentTokens {
		r.refused = fmt.Sprintf("give a token budget above %d (budget.raise_invalid)", b.SpentTokens)
		return agent.BudgetRaise{}, false
	}
	return agent.BudgetRaise{MaxTokensTotal: v}, true
}

// budgetKey handles a key in a budget question's dialog: 1 opens the new limit's input,
// where Enter sends it and Esc goes back; 3 denies (the run ends budget_exceeded).
// Allowing without a raise is not offered: the run would only pause again.
func (m *Model) budgetKey(k string) bool {
	q := m.questions
	if q == nil || q.chosen == nil || !q.chosen.Budget || q.note != nil {
		return false
	}
	b := readBudgetAsk(q.chosen.Input)
	if r := q.raise; r != nil {
		switch k {
		case "esc":
			q.raise = nil
		case "ctrl+c":
			m.questions = nil
		case "enter":
			if raise, ok := r.raise(b); ok {
				m.answerBudget(*q.chosen, raise)
			}
		default:
			r.key(k, b.usd())
		}
		return true
	}
	if k != "1" {
		return false
	}
	if _, ok := m.opts.Backend.(BudgetParked); !ok {
		m.questions = nil
		m.add(&entry{kind: entryError, text: "this back-end cannot raise a budget: answer it with sema approve " + q.chosen.SessionID +
			" --checkpoint " + q.chosen.ID + " --allow --max-tokens-total N (or --max-budget-usd USD)"})
		return true
	}
	q.raise = &raiseInput{}
	return true
}

// answerBudget closes the picker and resumes the question's leg with the raise.
func (m *Model) answerBudget(q PendingQuestion, raise agent.BudgetRaise) {
	m.questions = nil
	m.waiting = max(0, m.waiting-1)
	limit := fmt.Sprintf("%d tokens", raise.MaxTokensTotal)
	if raise.MaxBudgetUSD > 0 {
		limit = fmt.Sprintf("$%.4f", raise.MaxBudgetUSD)
	}
	m.notice(fmt.Sprintf("budget raised to %s, parked in %s (%s)", limit, sessionTitle(SessionSummary{Title: q.Title}), q.SessionID))
	p := m.opts.Backend.(BudgetParked)
	m.runLeg(func(ctx context.Context, emit func(agent.Event)) error {
		return p.AnswerBudget(ctx, q.ID, raise, emit)
	})
}

// budgetDialog is the dialog of a parked budget question: the limit, the spending, and
// the answers it takes — or, after 1, the new limit being typed.
func (m *Model) budgetDialog(q PendingQuestion, inner int) []string {
	s := m.styles
	b := readBudgetAsk(q.Input)
	body := []string{s.title.Render("budget · the run paused"),
		s.dim.Width(inner).Render("parked in " + sessionTitle(SessionSummary{Title: q.Title}) + " (" + q.SessionID + ")" + askedBy(q))}
	for _, l := range b.lines() {
		body = append(body, lipgloss.NewStyle().Width(inner).Render(l))
	}
	pq := m.questions
	switch {
	case pq != nil && pq.note != nil:
		return append(body, pq.note.view(s, inner)...)
	case pq != nil && pq.raise != nil:
		what := "new token budget: "
		if b.usd() {
			what = "new budget in US dollars: "
		}
		body = append(body, lipgloss.NewStyle().Width(inner).Render(what+pq.raise.text+"▏"))
		if pq.raise.refused != "" {
			body = append(body, s.removed.Width(inner).Render(pq.raise.refused))
		}
		return append(body, lipgloss.NewStyle().Bold(true).Width(inner).Render("Enter continues the run under it · Esc goes back"))
	}
	return append(body, lipgloss.NewStyle().Bold(true).Width(inner).
		Render("1 raise the budget · 3 deny (the run ends) · Esc goes back (the question stays parked)"))
}

// questionSummary is a parked question's one line: the call's summary, or for a budget
// question the limit and the spending.
func questionSummary(q PendingQuestion) string {
	if q.Budget {
		return "budget · " + readBudgetAsk(q.Input).lines()[1]
	}
	return summary(q.Tool, q.Input)
}
