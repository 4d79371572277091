package agent

import (
	"testing"

	"github.com/sema-agent/sema/internal/shellchange"
)

// The engine's parts give their notices codes of their own; the codes embedders match on
// are agent's. Each pair must stay one string.
func TestEngineCodesAreAgentCodes(t *testing.T) {
	for _, c := range []struct{ agent, part string }{
		{CodeBashUncovered, shellchange.CodeUncovered},
		{CodeBashUnrecorded, shellchange.CodeUnrecorded},
		{CodeBashRecovered, shellchange.CodeRecovered},
		{CodeBashRecoveryFailed, shellchange.CodeRecoveryFailed},
		{CodeAfterFailed, shellchange.CodeAfterFailed},
	} {
		if c.agent != c.part {
			t.Errorf("agent's code %q is %q in the engine", c.agent, c.part)
		}
	}
}
