package scripted_test

import (
	"encoding/json"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/providertest"
	"github.com/sema-agent/sema/model/scripted"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Harness{
		New: newScripted,
	})
}

// newScripted scripts a conformance run: a server failure is the error turn the
// provider would have ended with; a stream has no wire to cut or to stall.
func newScripted(t *testing.T, turns ...providertest.Turn) model.Provider {
	var s scripted.Script
	for _, turn := range turns {
		s.Turns = append(s.Turns, scriptTurn(t, turn))
	}
	return scripted.New(s)
}

// failureCodes are the codes a provider ends with for each failure once it stops
// retrying.
var failureCodes = map[providertest.Failure]string{
	providertest.FailRateLimited: model.CodeRateLimited,
	providertest.FailOverloaded:  model.CodeOverloaded,
	providertest.FailBadRequest:  model.CodeBadRequest,
	providertest.FailAuth:        model.CodeAuth,
}

func scriptTurn(t *testing.T, turn providertest.Turn) scripted.Turn {
	switch turn.Failure {
	case providertest.FailTruncated, providertest.FailStall:
		t.Skip("a script has no stream to cut or to stall")
	case providertest.FailNone:
	default:
		return scripted.Turn{Error: &sema.Error{Code: failureCodes[turn.Failure], Message: "the scripted server failed"}}
	}
	st := scripted.Turn{Text: turn.Text, StopReason: turn.StopReason, Usage: &turn.Usage}
	for _, c := range turn.ToolCalls {
		st.ToolCalls = append(st.ToolCalls, scripted.ToolCall{ID: c.ID, Name: c.Name, Input: json.RawMessage(c.Input)})
	}
	return st
}
