package agent

import (
	"testing"

	"github.com/sema-agent/sema/internal/answercheck"
)

// The answer check refuses with codes of its own; embedders match on agent's. Each pair
// must stay one string.
func TestAnswerCheckCodesAreAgentCodes(t *testing.T) {
	for _, c := range []struct{ agent, part string }{
		{CodeStale, answercheck.CodeStale},
		{CodeEditDenied, answercheck.CodeEditDenied},
		{CodeAnswerInvalid, answercheck.CodeAnswerInvalid},
		{CodeTampered, answercheck.CodeTampered},
	} {
		if c.agent != c.part {
			t.Errorf("agent's code %q is %q in the answer check", c.agent, c.part)
		}
	}
}
