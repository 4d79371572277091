package hooks

import (
	"context"
	"encoding/json"

	"github.com/sema-agent/sema/env"
)

// Codes of the hooks package.
const (
	// CodeConfigInvalid refuses a hooks configuration that is not Claude Code's shape:
	// an unknown event, a matcher that is not a regular expression, a hook type other
	// than command, a command that is empty, a timeout that is not a positive number.
	CodeConfigInvalid = "config.hooks_invalid"
	// CodeFailed is the notice of a hook that failed without blocking: a non-zero exit
	// other than 2, a timeout, a crash, output that is not the protocol's.
	CodeFailed = "hooks.failed"
	// CodeMessage is the notice of a hook's systemMessage, or of its stdout shown to the
	// person.
	CodeMessage = "hooks.message"
)

// Set is a compiled list of hooks, ready to match and run. It is safe for concurrent
// use.
type Set struct {
	// unexported: compiled matchers by event.
}

// NewSet compiles hooks: every Event known, every Matcher a regular expression, every
// hook a Command or a Func (exactly one). Otherwise config.hooks_invalid naming the
// hook's Source.
func NewSet(hooks []Hook) (*Set, error) {
	panic("hooks: NewSet not built yet")
}

// Has reports whether any hook is registered for event (whatever its matcher): the
// caller's fast path that builds no Input for an event nobody listens to.
func (s *Set) Has(event Event) bool {
	panic("hooks: Has not built yet")
}

// Matching returns the hooks of event whose matcher matches target, in declaration
// order, identical commands once.
func (s *Set) Matching(event Event, target string) []Hook {
	panic("hooks: Matching not built yet")
}

// Runner is where command hooks run.
type Runner struct {
	// Exec starts the commands. Nil: command hooks fail (a Func still runs).
	Exec env.Executor
	// Wrap confines a command (the leg's sandbox policy); nil runs it as it is.
	Wrap func(env.ExecRequest) (env.ExecRequest, error)
	// ProjectDir is the task root: the commands' working directory, and
	// $CLAUDE_PROJECT_DIR and $SEMA_PROJECT_DIR in their environment.
	ProjectDir string
	// Env holds NAME=value entries added to the commands' environment (the settings'
	// env).
	Env []string
	// OutputCap bounds what is kept of each command's stdout and of its stderr. Zero:
	// DefaultOutputCap.
	OutputCap int
}

// DefaultOutputCap is what is kept of a hook's stdout, and of its stderr, by default.
const DefaultOutputCap = 64 << 10

// Run runs the hooks of s that match event and target, in parallel, and merges their
// answers. in.HookEventName is set to event. It returns when every hook has ended; a
// command that outlives its timeout, or ctx, is killed with its process group.
func (s *Set) Run(ctx context.Context, r *Runner, event Event, target string, in Input) Result {
	panic("hooks: Run not built yet")
}

// Result is the merged answer of the hooks of one event.
type Result struct {
	// Ran is how many hooks ran.
	Ran int
	// Block reports a hook that blocked: exit code 2, or decision "block". BlockReason
	// is its stderr (exit 2) or its reason, the blocking hooks' joined by newlines.
	Block       bool
	BlockReason string
	// Stop reports a hook that answered continue: false; StopReason is its stopReason.
	Stop       bool
	StopReason string
	// Permission (PreToolUse) is the strictest permission answer: deny over ask over
	// allow, "" when none gave one. The old decision words count: "approve" is allow,
	// "block" is deny. PermissionReason is the deciding hooks' reasons.
	Permission       string
	PermissionReason string
	// UpdatedInput (PreToolUse) is the hooks' rewrite of the input; Conflict reports
	// hooks that rewrote it differently.
	UpdatedInput json.RawMessage
	Conflict     bool
	// Context is what the hooks add for the model: additionalContext, and the plain
	// stdout of exit-0 UserPromptSubmit and SessionStart hooks, in declaration order.
	Context []string
	// Messages are what is shown to the person: systemMessage, and the plain stdout of
	// other events' hooks unless suppressOutput.
	Messages []string
	// Failures are the hooks that failed: timed out, crashed (killed by a signal,
	// could not start), exited with a code other than 0 and 2, or printed stdout that
	// begins with "{" and is not the protocol's JSON. For PreToolUse the caller fails
	// closed on any of them; for the other events they are notices.
	Failures []Failure
}

// Failure is one hook's failure.
type Failure struct {
	// Hook is the hook that failed.
	Hook Hook
	// Why is one sentence: "timed out after 60s", "exited with status 1: <stderr>", ….
	Why string
	// TimedOut reports a hook killed at its timeout.
	TimedOut bool
}
