// Package agent runs one task — a prompt against a workspace — through a model-and-tools
// loop.
//
// A Runner holds only its Deps (what the embedding deployment configured); every call to
// Run prepares a fresh leg from the TaskSpec, runs it, and keeps nothing afterwards, so
// one Runner serves many concurrent tasks.
//
// A leg has three phases, each in its own file:
//   - prepare (prepare.go): the doors refuse a bad spec by name before anything runs; the
//     fence resolves roots and faces once; the tool roster and the system prompt are built;
//   - loop (loop.go): the model is asked, its tool calls run (dispatch.go), the results go
//     back, until the model stops, the turn limit is reached, or ctx ends;
//   - finish: the TaskResult is assembled from what the leg recorded.
//
// Every tool call gets a tool result, also when the tool fails, panics or is cancelled.
package agent
