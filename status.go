package sema

// Status is how a leg of a session stands: running while it runs, then how it ended.
// The runner's TaskResult reports it, and a session store records it on the leg, so a
// host reads one vocabulary whether it holds a result or lists a session's legs. The
// words are part of the command line's JSON output ("status").
type Status string

const (
	// StatusRunning: the leg has started and not ended. A TaskResult never carries it;
	// a stored leg does until EndLeg.
	StatusRunning Status = "running"
	// StatusCompleted: the model answered without calling a tool.
	StatusCompleted Status = "completed"
	// StatusAwaitingApproval: the leg parked at a question for a person; the checkpoint
	// holds the exact pending call.
	StatusAwaitingApproval Status = "awaiting_approval"
	// StatusMaxTurns: the leg reached the task's turn limit.
	StatusMaxTurns Status = "max_turns"
	// StatusBudgetExceeded: the leg stopped before a model request that would have passed
	// the task's token or cost budget (or a budget its parent leg passed down to it).
	StatusBudgetExceeded Status = "budget_exceeded"
	// StatusError: a model failure, a broken stream, or a store failure ended the leg.
	StatusError Status = "error"
	// StatusCancelled: the caller's context ended the leg.
	StatusCancelled Status = "cancelled"
)
