package agent

import (
	"testing"

	"github.com/sema-agent/sema/internal/answercheck"
	"github.com/sema-agent/sema/internal/childleg"
	"github.com/sema-agent/sema/internal/permreport"
	"github.com/sema-agent/sema/internal/recorder"
	"github.com/sema-agent/sema/internal/runend"
	"github.com/sema-agent/sema/internal/shellchange"
	"github.com/sema-agent/sema/internal/todo"
)

// The engine's parts give their notices and tool results codes (and the todo list its
// statuses) of their own; the ones embedders match on are agent's. Each pair must stay
// one string.
func TestEngineCodesAreAgentCodes(t *testing.T) {
	for _, c := range []struct{ agent, part string }{
		{CodeBashUncovered, shellchange.CodeUncovered},
		{CodeBashUnrecorded, shellchange.CodeUnrecorded},
		{CodeBashRecovered, shellchange.CodeRecovered},
		{CodeBashRecoveryFailed, shellchange.CodeRecoveryFailed},
		{CodeAfterFailed, shellchange.CodeAfterFailed},
		{CodeCancelled, runend.CodeCancelled},
		{CodeStale, answercheck.CodeStale},
		{CodeEditDenied, answercheck.CodeEditDenied},
		{CodeAnswerInvalid, answercheck.CodeAnswerInvalid},
		{CodeTampered, answercheck.CodeTampered},
		{CodeSubagentFailed, childleg.CodeFailed},
		{CodeSubagentBudget, childleg.CodeBudget},
		{CodeSessionRecordFailed, recorder.CodeRecordFailed},
		{CodeTodoContentEmpty, todo.CodeContentEmpty},
		{CodeTodoStatusInvalid, todo.CodeStatusInvalid},
		{CodeTodoActiveFormEmpty, todo.CodeActiveFormEmpty},
		{CodeTodoIDDuplicate, todo.CodeIDDuplicate},
		{string(TodoPending), string(todo.Pending)},
		{string(TodoInProgress), string(todo.InProgress)},
		{string(TodoCompleted), string(todo.Completed)},
	} {
		if c.agent != c.part {
			t.Errorf("agent's code %q is %q in the engine", c.agent, c.part)
		}
	}
}

// The permission report's seats are the same strings in agent and the report's
// assembly.
func TestReportOriginsAreAgentOrigins(t *testing.T) {
	for _, c := range []struct {
		agent RuleOrigin
		part  string
	}{
		{OriginSettings, permreport.OriginSettings},
		{OriginTaskAllowed, permreport.OriginTaskAllowed},
		{OriginTaskDisallowed, permreport.OriginTaskDisallowed},
		{OriginTaskAsk, permreport.OriginTaskAsk},
		{OriginPolicy, permreport.OriginPolicy},
	} {
		if string(c.agent) != c.part {
			t.Errorf("agent's origin %q is %q in the report", c.agent, c.part)
		}
	}
}
