package permission

import (
	"context"
	"encoding/json"
	"errors"

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

// ClassifierArmer is what an AutoClassifier implements when it must be made ready
// before its first question (a model to reach, a policy to load). The runner arms a
// leg's classifier when the leg's effective mode becomes auto — at the leg's first
// decision, or on a steer — and asks it nothing until Arm succeeded. A failed arming
// leaves the leg with no classifier: a steer to auto is refused (CodeAutoArmFailed) and
// rolled back to the mode the leg had; an arming the leg started itself is announced
// and the leg's questions go to the approver, as under default. Arm may be called once
// per leg, so a delegated child arms again.
type ClassifierArmer interface {
	// Arm makes the classifier ready for a leg; an error leaves the leg without it.
	Arm(ctx context.Context) error
}

// NoClassifier, set as a deployment's classifier, says it wires no auto-mode
// classifier face at all (not even the built-in one): a leg that asks for auto then
// runs as default, and the mode receipt and a notice say why (FoldFaceAbsent).
var NoClassifier AutoClassifier = noClassifier{}

type noClassifier struct{}

// Classify is never consulted: a leg without a classifier face never runs in auto.
func (noClassifier) Classify(context.Context, ClassifyRequest) (Behavior, string, error) {
	return Ask, "", errNoClassifier
}

var errNoClassifier = errors.New("no auto-mode classifier is wired")
