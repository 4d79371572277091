package agent

import (
	"testing"

	"github.com/sema-agent/sema/internal/answercheck"
	"github.com/sema-agent/sema/internal/childleg"
	"github.com/sema-agent/sema/internal/permreport"
)

// The answer check and the Task call's answers refuse with codes of their own;
// embedders match on agent's. Each pair must stay one string.
func TestSeamCodesAreAgentCodes(t *testing.T) {
	for _, c := range []struct{ agent, part string }{
		{CodeStale, answercheck.CodeStale},
		{CodeEditDenied, answercheck.CodeEditDenied},
		{CodeAnswerInvalid, answercheck.CodeAnswerInvalid},
		{CodeTampered, answercheck.CodeTampered},
		{CodeSubagentFailed, childleg.CodeFailed},
		{CodeSubagentBudget, childleg.CodeBudget},
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
