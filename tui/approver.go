package tui

import (
	"context"
	"sync"

	tea "charm.land/bubbletea/v2"

	"github.com/sema-agent/sema/permission"
)

// Approver is the permission.Approver of an interactive session: it hands each question
// to the screen as a QuestionMsg and waits for the person's choice. The questions travel
// on the same channel as the legs' events (the session's inbox), so a question is shown
// after every event the leg sent before asking it. A choice of "allow
// always" adds a rule for the rest of the process (Rule says which), and later calls it
// covers are allowed without asking; a person-only question (the plan gate, the safety
// stations) is asked every time. A run that ends while its question is open gets a
// refusal.
type Approver struct {
	inbox chan tea.Msg

	mu     sync.Mutex
	always map[string]bool // rules the person allowed always
}

// NewApprover returns an approver for one session's screen (Options.Approver).
func NewApprover() *Approver {
	return &Approver{inbox: newInbox(), always: map[string]bool{}}
}

// newInbox is the channel a session's screen reads: the legs' events and the questions.
func newInbox() chan tea.Msg { return make(chan tea.Msg, 64) }

// QuestionMsg is one permission question on its way to the person.
type QuestionMsg struct {
	// Request is the gate's question: the tool, its input as it would run, the reason.
	Request permission.ApprovalRequest
	// reply takes the person's choice; buffered, so answering never blocks the screen.
	reply chan reply
}

// reply is the person's choice with the sentence a denial carries to the model ("" for none).
type reply struct {
	choice Choice
	note   string
}

// Choice is the person's answer to a permission question.
type Choice int

// The choices of the permission dialog, numbered as the keys that pick them.
const (
	ChoiceNone        Choice = iota // no answer: the question went away
	ChoiceAllowOnce                 // 1
	ChoiceAllowAlways               // 2: adds the question's Rule for this session
	ChoiceDeny                      // 3, and Esc
)

// Approve implements permission.Approver.
func (a *Approver) Approve(ctx context.Context, req permission.ApprovalRequest) (permission.ApprovalDecision, error) {
	rule := Rule(req)
	a.mu.Lock()
	remembered := !req.Ask.PersonOnly && a.always[rule]
	a.mu.Unlock()
	if remembered {
		return permission.ApprovalDecision{Behavior: permission.Allow, Reason: "allowed by " + rule + ", which the person allowed always in this session"}, nil
	}
	q := QuestionMsg{Request: req, reply: make(chan reply, 1)}
	select {
	case a.inbox <- q:
	case <-ctx.Done():
		return deny("the run was cancelled before the question was shown"), nil
	}
	var r reply
	select {
	case r = <-q.reply:
	case <-ctx.Done():
		return deny("the run was cancelled while the question was open"), nil
	}
	c := r.choice
	switch {
	case c == ChoiceAllowAlways && !req.Ask.PersonOnly:
		a.mu.Lock()
		a.always[rule] = true
		a.mu.Unlock()
		return permission.ApprovalDecision{Behavior: permission.Allow, Reason: "allowed always in this session by the person (" + rule + ")"}, nil
	case c == ChoiceAllowOnce || c == ChoiceAllowAlways:
		return permission.ApprovalDecision{Behavior: permission.Allow, Reason: "allowed once by the person"}, nil
	case c == ChoiceDeny && r.note != "":
		return deny("the person denied it in the terminal session and says: " + r.note), nil
	case c == ChoiceDeny:
		return deny("the person denied it in the terminal session"), nil
	default:
		return deny("the question went unanswered"), nil
	}
}

func deny(why string) permission.ApprovalDecision {
	return permission.ApprovalDecision{Behavior: permission.Deny, Reason: why}
}

// answer sends the person's choice to the waiting Approve. It never blocks: the reply
// channel holds one answer and each question is answered once.
func (q QuestionMsg) answer(c Choice) { q.answerWith(c, "") }

// answerWith sends the choice with a sentence for the model (a denial's reason).
func (q QuestionMsg) answerWith(c Choice, note string) {
	if q.reply == nil {
		return
	}
	select {
	case q.reply <- reply{choice: c, note: note}:
	default:
	}
}
