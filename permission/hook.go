package permission

import (
	"context"
	"encoding/json"
)

// HookDecision is a PreToolUse hook's answer. The zero value has no opinion.
type HookDecision struct {
	// Behavior is allow, deny, ask, or "" (no opinion). Any other word fails closed
	// (deny).
	Behavior Behavior
	// Reason is the hook's sentence, shown with its deny or ask.
	Reason string
	// UpdatedInput, with an allow (or no opinion), replaces the call's input for the
	// rest of the fold and for the tool.
	UpdatedInput json.RawMessage
}

// Hook is a PreToolUse hook. An error or a panic fails closed: the call is denied. The
// gate calls hooks from concurrent calls at once; a hook must be safe for that.
type Hook func(ctx context.Context, call Call) (HookDecision, error)
