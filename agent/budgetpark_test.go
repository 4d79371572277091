package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/pricing"
	"github.com/sema-agent/sema/session"
)

// budgetRun is a session that spends 100,000 tokens on its first turn, under a token
// budget of 100,001: the second request's estimate passes it.
type budgetRun struct {
	st   stores
	p    *scripted.Provider
	deps agent.Deps
	root string
}

func newBudgetRun(t *testing.T, turns ...scripted.Turn) *budgetRun {
	t.Helper()
	st := newStores(t)
	all := append([]scripted.Turn{{ToolCalls: []scripted.ToolCall{globCall}, Usage: used(100_000, 0, 0, 0)}}, turns...)
	p := scripted.New(scripted.Script{Turns: all})
	return &budgetRun{st: st, p: p, deps: agent.Deps{Provider: p, Store: st.sessions, History: st.history}, root: t.TempDir()}
}

func (b *budgetRun) spec(onAsk agent.OnAsk) agent.TaskSpec {
	return agent.TaskSpec{Prompt: "do it", Root: b.root, OnAsk: onAsk, MaxTokensTotal: 100_001}
}

func (b *budgetRun) resumeSpec(sessionID string) agent.TaskSpec {
	return agent.TaskSpec{Root: b.root, OnAsk: agent.OnAskPark, MaxTokensTotal: 100_001, Resume: &agent.Resume{SessionID: sessionID}}
}

func (b *budgetRun) park(t *testing.T) *agent.TaskResult {
	t.Helper()
	res, err := agent.New(b.deps).Run(context.Background(), b.spec(agent.OnAskPark))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sema.StatusAwaitingApproval || res.Checkpoint == nil || res.Checkpoint.Gate != "budget" {
		t.Fatalf("status %s, checkpoint %+v, notices %+v", res.Status, res.Checkpoint, res.Notices)
	}
	return res
}

// A run that parks its questions asks a person before the request that would pass its
// budget, with what it spent against the limit, instead of ending budget_exceeded; the
// same run without parking still ends budget_exceeded, as before.
func TestBudgetParksAQuestionWhenTheRunParks(t *testing.T) {
	t.Parallel()
	b := newBudgetRun(t, scripted.Turn{Text: "done"})
	res := b.park(t)
	cp := res.Checkpoint
	if len(b.p.Requests()) != 1 || res.NumTurns != 1 {
		t.Fatalf("%d requests, %d turns: the question comes before the second request", len(b.p.Requests()), res.NumTurns)
	}
	if !strings.Contains(cp.Message, "100000 of 100001 tokens are spent") || !strings.Contains(cp.Message, "--max-tokens-total") {
		t.Fatalf("message %q", cp.Message)
	}
	var q map[string]any
	if err := json.Unmarshal(cp.Input, &q); err != nil || q["budget"] != "tokens" || q["spent_tokens"] != float64(100_000) || q["max_tokens_total"] != float64(100_001) {
		t.Fatalf("input %s (%v)", cp.Input, err)
	}
	if noticeOf(res, agent.CodeBudgetExceeded) != nil {
		t.Fatalf("a parked budget is not exceeded: %+v", res.Notices)
	}
	stored, err := b.st.sessions.Checkpoint(context.Background(), cp.ID)
	if err != nil || stored.Gate != session.GateBudget || stored.Decision != nil {
		t.Fatalf("stored %+v (%v)", stored, err)
	}

	// Calibration: the same run that does not park ends as it always did.
	c := newBudgetRun(t, scripted.Turn{Text: "done"})
	old, err := agent.New(c.deps).Run(context.Background(), c.spec(""))
	if err != nil {
		t.Fatal(err)
	}
	if old.Status != sema.StatusBudgetExceeded || old.Checkpoint != nil || noticeOf(old, agent.CodeBudgetExceeded) == nil {
		t.Fatalf("without parking: %s %+v", old.Status, old.Checkpoint)
	}

	// A firm limit is the deployment's: a parking run ends at it as before.
	d := newBudgetRun(t, scripted.Turn{Text: "done"})
	sp := d.spec(agent.OnAskPark)
	sp.FirmTokensTotal = true
	firm, err := agent.New(d.deps).Run(context.Background(), sp)
	if err != nil {
		t.Fatal(err)
	}
	if firm.Status != sema.StatusBudgetExceeded || firm.Checkpoint != nil {
		t.Fatalf("a firm limit: %s %+v", firm.Status, firm.Checkpoint)
	}
}

// Allowed with a higher limit, the run goes on with the request it paused before — the
// same conversation — and completes; a second answer is refused as already claimed.
func TestBudgetRaiseContinuesTheRunOnce(t *testing.T) {
	t.Parallel()
	b := newBudgetRun(t, scripted.Turn{Text: "done"})
	res := b.park(t)
	raise := agent.Answer{CheckpointID: res.Checkpoint.ID, Allow: true, Budget: &agent.BudgetRaise{MaxTokensTotal: 1_000_000}}
	done, err := agent.New(b.deps).Resume(context.Background(), b.resumeSpec(res.SessionID), raise)
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != sema.StatusCompleted || done.Result != "done" {
		t.Fatalf("after the raise: %s %q %v %+v", done.Status, done.Result, done.Error, done.Notices)
	}
	reqs := b.p.Requests()
	if len(reqs) != 2 || len(reqs[1].Messages) != 3 {
		t.Fatalf("%d requests; the resumed one has %d messages, want the paused conversation's 3", len(reqs), len(reqs[len(reqs)-1].Messages))
	}
	checkToolResults(t, reqs[1])
	cp, _ := b.st.sessions.Checkpoint(context.Background(), res.Checkpoint.ID)
	if cp.Decision == nil || cp.Decision.Verdict != session.VerdictAllow || !strings.Contains(string(cp.Decision.Args), `"max_tokens_total":1000000`) {
		t.Fatalf("recorded decision %+v", cp.Decision)
	}
	_, err = agent.New(b.deps).Resume(context.Background(), b.resumeSpec(res.SessionID), raise)
	if sema.CodeOf(err) != session.CodeAlreadyClaimed {
		t.Fatalf("second answer: %v", err)
	}
	if len(b.p.Requests()) != 2 {
		t.Fatal("a second answer sent a request")
	}
}

// An answer that allows without a raise the run can use is refused by name and leaves
// the question open: the same question then takes a proper raise.
func TestBudgetRaiseRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		answer agent.Answer
		want   string
	}{
		{"no raise", agent.Answer{Allow: true}, "needs a new budget"},
		{"an empty raise", agent.Answer{Allow: true, Budget: &agent.BudgetRaise{}}, "needs a new budget"},
		{"not above the spend", agent.Answer{Allow: true, Budget: &agent.BudgetRaise{MaxTokensTotal: 100_000}}, "not above the 100000 tokens"},
		{"another limit than the one passed", agent.Answer{Allow: true, Budget: &agent.BudgetRaise{MaxBudgetUSD: 5}}, "token budget, which the answer leaves as it was"},
		{"negative", agent.Answer{Allow: true, Budget: &agent.BudgetRaise{MaxTokensTotal: -1}}, "positive number"},
		{"a denial with a raise", agent.Answer{Budget: &agent.BudgetRaise{MaxTokensTotal: 1_000_000}}, "a denial carries no new budget"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := newBudgetRun(t, scripted.Turn{Text: "done"})
			res := b.park(t)
			a := c.answer
			a.CheckpointID = res.Checkpoint.ID
			_, err := agent.New(b.deps).Resume(context.Background(), b.resumeSpec(res.SessionID), a)
			if sema.CodeOf(err) != agent.CodeBudgetRaiseInvalid || !strings.Contains(sema.MessageOf(err), c.want) {
				t.Fatalf("got %v, want %s saying %q", err, agent.CodeBudgetRaiseInvalid, c.want)
			}
			if cp, _ := b.st.sessions.Checkpoint(context.Background(), res.Checkpoint.ID); cp.Decision != nil {
				t.Fatalf("a refused answer claimed the question: %+v", cp.Decision)
			}
			if len(b.p.Requests()) != 1 {
				t.Fatal("a refused answer sent a request")
			}
			a.Allow, a.Budget = true, &agent.BudgetRaise{MaxTokensTotal: 1_000_000}
			done, err := agent.New(b.deps).Resume(context.Background(), b.resumeSpec(res.SessionID), a)
			if err != nil || done.Status != sema.StatusCompleted {
				t.Fatalf("the question did not stay open: %v %+v", err, done)
			}
		})
	}
}

// A denial ends the run budget_exceeded, without another request; a later plain resume
// goes on under its own budget.
func TestBudgetDenialEndsTheRun(t *testing.T) {
	t.Parallel()
	b := newBudgetRun(t, scripted.Turn{Text: "done"})
	res := b.park(t)
	done, err := agent.New(b.deps).Resume(context.Background(), b.resumeSpec(res.SessionID), agent.Answer{CheckpointID: res.Checkpoint.ID, Reason: "too dear"})
	if err != nil {
		t.Fatal(err)
	}
	n := noticeOf(done, agent.CodeBudgetExceeded)
	if done.Status != sema.StatusBudgetExceeded || n == nil || !strings.Contains(n.Message, "too dear") || len(b.p.Requests()) != 1 {
		t.Fatalf("after the denial: %s %+v, %d requests", done.Status, done.Notices, len(b.p.Requests()))
	}
	cp, _ := b.st.sessions.Checkpoint(context.Background(), res.Checkpoint.ID)
	if cp.Decision == nil || cp.Decision.Verdict != session.VerdictDeny {
		t.Fatalf("decision %+v", cp.Decision)
	}
	again, err := agent.New(b.deps).Run(context.Background(), agent.TaskSpec{Prompt: "go on", Root: b.root, Resume: &agent.Resume{SessionID: res.SessionID}})
	if err != nil || again.Status != sema.StatusCompleted {
		t.Fatalf("plain resume after the denial: %v %+v", err, again)
	}
}

// A dollar budget on a priced model parks the same way, with dollars in the message,
// and a dollar raise continues it.
func TestBudgetDollarQuestion(t *testing.T) {
	t.Parallel()
	tenDollars := map[string]pricing.Price{"scripted": {Input: 10, Output: 10, CacheWrite: 10, CacheRead: 10}}
	b := newBudgetRun(t, scripted.Turn{Text: "done"})
	b.deps.Prices = tenDollars
	sp := b.spec(agent.OnAskPark)
	sp.Model, sp.MaxTokensTotal, sp.MaxBudgetUSD = "scripted", 0, 1.0001
	res, err := agent.New(b.deps).Run(context.Background(), sp)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sema.StatusAwaitingApproval || res.Checkpoint == nil || res.Checkpoint.Gate != "budget" ||
		!strings.Contains(res.Checkpoint.Message, "$1.0000 of $1.0001 is spent") {
		t.Fatalf("status %s checkpoint %+v", res.Status, res.Checkpoint)
	}
	rs := agent.TaskSpec{Root: b.root, Model: "scripted", OnAsk: agent.OnAskPark, MaxBudgetUSD: 1.0001, Resume: &agent.Resume{SessionID: res.SessionID}}
	_, err = agent.New(b.deps).Resume(context.Background(), rs, agent.Answer{CheckpointID: res.Checkpoint.ID, Allow: true, Budget: &agent.BudgetRaise{MaxBudgetUSD: 0.5}})
	if sema.CodeOf(err) != agent.CodeBudgetRaiseInvalid {
		t.Fatalf("a dollar limit below the spend: %v", err)
	}
	done, err := agent.New(b.deps).Resume(context.Background(), rs, agent.Answer{CheckpointID: res.Checkpoint.ID, Allow: true, Budget: &agent.BudgetRaise{MaxBudgetUSD: 2}})
	if err != nil || done.Status != sema.StatusCompleted {
		t.Fatalf("after the raise: %v %+v", err, done)
	}
}

// The raised limit holds for later legs: a resume that re-supplies the spec the run
// started with still runs under the raise.
func TestBudgetRaiseIsKeptByALaterResume(t *testing.T) {
	t.Parallel()
	b := newBudgetRun(t,
		scripted.Turn{ToolCalls: []scripted.ToolCall{write("a.txt", "x")}},
		scripted.Turn{ToolCalls: []scripted.ToolCall{globCall}, Usage: used(150_000, 0, 0, 0)},
		scripted.Turn{Text: "done"})
	res := b.park(t)
	mid, err := agent.New(b.deps).Resume(context.Background(), b.resumeSpec(res.SessionID),
		agent.Answer{CheckpointID: res.Checkpoint.ID, Allow: true, Budget: &agent.BudgetRaise{MaxTokensTotal: 1_000_000}})
	if err != nil || mid.Status != sema.StatusAwaitingApproval || mid.Checkpoint.Tool != "Write" {
		t.Fatalf("after the raise: %v %+v", err, mid)
	}
	// This leg spends 150,000 tokens on its own, past the 100,001 the spec still says.
	done, err := agent.New(b.deps).Resume(context.Background(), b.resumeSpec(res.SessionID), agent.Answer{CheckpointID: mid.Checkpoint.ID, Allow: true})
	if err != nil || done.Status != sema.StatusCompleted || done.Result != "done" {
		t.Fatalf("the later leg: %v %s %+v", err, done.Status, done.Checkpoint)
	}
	if got := len(b.p.Requests()); got != 4 {
		t.Fatalf("%d requests, want 4", got)
	}
}

// A raise answers a budget question only.
func TestBudgetRaiseOnACallQuestionIsRefused(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	root := t.TempDir()
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{write("a.txt", "x")}}, {Text: "done"}}})
	deps := agent.Deps{Provider: p, Store: st.sessions, History: st.history}
	res, err := agent.New(deps).Run(context.Background(), agent.TaskSpec{Prompt: "write", Root: root, OnAsk: agent.OnAskPark})
	if err != nil || res.Checkpoint == nil {
		t.Fatalf("%v %+v", err, res)
	}
	rs := agent.TaskSpec{Root: root, OnAsk: agent.OnAskPark, Resume: &agent.Resume{SessionID: res.SessionID}}
	_, err = agent.New(deps).Resume(context.Background(), rs, agent.Answer{CheckpointID: res.Checkpoint.ID, Allow: true, Budget: &agent.BudgetRaise{MaxTokensTotal: 5}})
	if sema.CodeOf(err) != agent.CodeBudgetRaiseInvalid {
		t.Fatalf("got %v", err)
	}
	done, err := agent.New(deps).Resume(context.Background(), rs, agent.Answer{CheckpointID: res.Checkpoint.ID, Allow: true})
	if err != nil || done.Status != sema.StatusCompleted {
		t.Fatalf("calibration: %v %+v", err, done)
	}
}

// A plain resume moves past an open budget question under its own budget; the question
// can then no longer be answered.
func TestBudgetQuestionMovedPastIsStale(t *testing.T) {
	t.Parallel()
	b := newBudgetRun(t, scripted.Turn{Text: "done"})
	res := b.park(t)
	again, err := agent.New(b.deps).Run(context.Background(), agent.TaskSpec{Prompt: "go on", Root: b.root, Resume: &agent.Resume{SessionID: res.SessionID}})
	if err != nil || again.Status != sema.StatusCompleted {
		t.Fatalf("plain resume: %v %+v", err, again)
	}
	_, err = agent.New(b.deps).Resume(context.Background(), b.resumeSpec(res.SessionID),
		agent.Answer{CheckpointID: res.Checkpoint.ID, Allow: true, Budget: &agent.BudgetRaise{MaxTokensTotal: 1_000_000}})
	if sema.CodeOf(err) != agent.CodeStale {
		t.Fatalf("answering a question the session moved past: %v", err)
	}
}
