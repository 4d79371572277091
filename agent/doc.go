// Package agent runs one task — a prompt against a workspace — through a model-and-tools
// loop, and continues it later from what a session store kept.
//
// A Runner holds only its Deps (what the embedding deployment configured: the Provider,
// the stores, the answerers, and the Hooks, Policy and Shell groups); every call
// prepares a fresh leg from the TaskSpec, runs it, and keeps nothing afterwards, so one
// Runner serves many concurrent tasks. What a caller can ask of it:
//   - Run runs a leg to its end and returns the TaskResult; Events runs it as a stream
//     of Events whose last one carries the TaskResult.
//   - A TaskSpec with Resume continues a stored session: from its head, from an earlier
//     entry (Resume.At, a branch), in a copy (Resume.Fork), or with its files first
//     returned to a turn (Resume.Files).
//   - TaskSpec.OnAsk says who answers a question only a person may answer: Deps.Approver,
//     nobody (the answer is no), or parking — the leg ends with status
//     sema.StatusAwaitingApproval and a checkpoint (TaskResult.Parked) that
//     Runner.Resume or Runner.ResumeEvents answers later, in any process, with an Answer.
//     A parking leg that would pass its own budget parks a budget question the same way
//     (gate budget); an Answer with a higher limit (Answer.Budget) goes on under it.
//   - Rewind returns a session's files and/or conversation to the start of a turn.
//   - A Control in TaskSpec.Control changes the permission mode of a leg while it runs.
//
// A leg ends with a sema.Status, the same word the session store records on the leg:
// completed, awaiting_approval, max_turns, budget_exceeded, error or cancelled. A Go
// error from Run, Events, Resume or ResumeEvents means the run was refused before its
// first turn, by a coded *sema.Error; every failure after that is a status, and
// TaskResult.Error says why for error and cancelled.
//
// A leg refuses a bad TaskSpec or Deps by name before anything runs (a *sema.Error
// whose code says which field to change), then asks the model, runs its tool calls
// through the permission check, and sends the results back, until the model stops, the
// turn limit or a budget is reached, a question parks the leg, or ctx ends.
//
// Every tool call gets a tool result, also when the tool fails, panics or is cancelled.
package agent
