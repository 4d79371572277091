package agent_test

import (
	"context"
	"testing"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/session"
)

// allowClassifier answers every question it is given with allow.
type allowClassifier struct{}

func (allowClassifier) Classify(context.Context, permission.ClassifyRequest) (permission.Behavior, string, error) {
	return permission.Allow, "looks fine", nil
}

// A question put to the answerers is a permission event that says who answered it and
// how; a refusal keeps its own event after it.
func TestQuestionsArePermissionEvents(t *testing.T) {
	t.Parallel()
	allow := permission.ApproverFunc(func(context.Context, permission.ApprovalRequest) (permission.ApprovalDecision, error) {
		return permission.ApprovalDecision{Behavior: permission.Allow}, nil
	})
	cases := []struct {
		name     string
		deps     agent.Deps
		mode     permission.Mode
		onAsk    agent.OnAsk
		seat     agent.AnsweredBy
		behavior permission.Behavior
		denied   bool
	}{
		{"a Go approver allows", agent.Deps{Approver: allow}, "", "", agent.AnsweredByApprover, permission.Allow, false},
		{"the approver, by name", agent.Deps{Approver: allow}, "", agent.OnAskApprover, agent.AnsweredByApprover, permission.Allow, false},
		{"nobody to ask", agent.Deps{}, "", "", agent.AnsweredByNone, permission.Deny, true},
		{"deny passes the approver by", agent.Deps{Approver: allow}, "", agent.OnAskDeny, agent.AnsweredByNone, permission.Deny, true},
		{"dontAsk asks nobody", agent.Deps{Approver: allow}, permission.ModeDontAsk, "", agent.AnsweredByNone, permission.Deny, true},
		{"the classifier", agent.Deps{Classifier: allowClassifier{}}, permission.ModeAuto, "", agent.AnsweredByClassifier, permission.Allow, false},
		{"parked", agent.Deps{Approver: allow, Store: session.NewMemory()}, "", agent.OnAskPark, agent.AnsweredByPark, permission.Ask, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.deps.Provider = scripted.New(scripted.Script{Turns: []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{write("a.txt", "hello")}},
				{Text: "done"},
			}})
			r := agent.New(c.deps)
			var questions []*agent.PermissionQuestion
			var denials []*agent.PermissionDenial
			var order []string
			for ev, err := range r.Events(context.Background(), agent.TaskSpec{Prompt: "write", Root: t.TempDir(), PermissionMode: c.mode, OnAsk: c.onAsk}) {
				if err != nil {
					t.Fatal(err)
				}
				if ev.Type != agent.EventPermission {
					continue
				}
				switch {
				case ev.Question != nil && ev.Denial == nil:
					questions = append(questions, ev.Question)
					order = append(order, "question")
				case ev.Denial != nil && ev.Question == nil:
					denials = append(denials, ev.Denial)
					order = append(order, "denial")
				default:
					t.Fatalf("a permission event carries %+v and %+v", ev.Question, ev.Denial)
				}
			}
			if len(questions) != 1 {
				t.Fatalf("%d question events, want 1 (order %v)", len(questions), order)
			}
			q := questions[0]
			if q.Tool != "Write" || q.AnsweredBy != c.seat || q.Behavior != c.behavior || q.Gate != permission.GateToolPermission || q.Message == "" || len(q.Input) == 0 {
				t.Fatalf("question %+v; want seat %s, behavior %s", q, c.seat, c.behavior)
			}
			if c.denied != (len(denials) == 1) || len(denials) > 1 {
				t.Fatalf("denials %+v, want denied %v", denials, c.denied)
			}
			if c.denied && (order[0] != "question" || denials[0].Code != "permission.denied") {
				t.Fatalf("events %v, denial %+v: the question comes first, the refusal keeps its shape", order, denials[0])
			}
		})
	}
}
