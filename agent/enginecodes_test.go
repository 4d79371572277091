package agent

import (
	"testing"

	"github.com/sema-agent/sema/internal/recorder"
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
