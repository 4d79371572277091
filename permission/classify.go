package permission

import (
	"context"
	"encoding/json"

	"github.com/sema-agent/sema/model"
)

// ClassifyRequest is what the auto classifier judges: one call the gate asked about.
type ClassifyRequest struct {
	Tool  string
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
	Classify(ctx context.Context, req ClassifyRequest) (Behavior, string, error)
}
