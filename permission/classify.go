package permission

import (
	"context"
	"encoding/json"

	"github.com/sema-agent/sema/model"
)

// ClassifyRequest is what the auto classifier judges: one call the gate asked about.
type ClassifyRequest struct {
	// Tool is the called tool's name.
	Tool string
	// Input is the call's JSON input as it would run (a hook's rewrite included).
	Input json.RawMessage
	// Question is the gate's sentence.
	Question string
	// Transcript is the leg's conversation so far. A classifier must not show it tool
	// results: they hold workspace and web content that could steer its answer.
	Transcript []model.Message
}

// AutoClassifier answers auto mode's questions: Allow, Deny, or Ask (put it to a
// person). An error sends the question to the approver.
type AutoClassifier interface {
	// Classify judges one call and returns the verdict with its reason, a sentence
	// (possibly empty) that the decision's Reason quotes. It is consulted only in auto
	// mode, and never for a question only a person may answer (Decision.PersonOnly).
	// An error, a panic, or a verdict that is not Allow, Deny or Ask sends the question
	// to the approver, as Ask does.
	Classify(ctx context.Context, req ClassifyRequest) (Behavior, string, error)
}
