// Package replay records what a model answered and serves it again: a [Recorder] wraps
// a real model.Provider and keeps each response it returns as a turn of a
// model/scripted script; a [Provider] serves a recorded script's responses in order,
// with no network and no key. An embedder records a run once, commits the file, and
// tests against the replay; `--model scripted` can serve the same file.
//
// A recording keeps what the engine acts on, and loses the rest:
//   - Kept: each response's text, its tool calls (ID, name, input), its stop reason and
//     usage, and the coded error of a call that failed (code, message, detail).
//   - Lost: thinking blocks; the order of text written after a tool call (the text
//     blocks are joined, ahead of the calls); the model's name (a replay reports
//     "scripted"); calls that ended because their context did, which are the caller's
//     doing and are not recorded.
//
// Responses are recorded in the order the calls finish and replayed in the order the
// calls arrive, so a run whose model calls overlap (parallel agents) replays
// deterministically only when they finish in the order they start; record such a run
// with one agent at a time.
package replay
